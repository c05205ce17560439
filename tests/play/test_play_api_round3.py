"""API tests of the routes and answers added with the browser game's round 3: loading
a difficulty ahead of play (``POST /api/warm``), ... Through FastAPI's test client, with fast
bots."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from spades_env.play.app import create_app  # noqa: E402
from spades_env.play.session import BotPool  # noqa: E402

FAST = {k: {"partner": "medium", "opponents": "easy"} for k in ("easy", "medium", "hard",
                                                                 "insane")}


@pytest.fixture()
def client(tmp_path):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=1, analysis_checkpoint=None)
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.get("/api/config").status_code == 200  # the player cookie
        c.app_ = app
        yield c


def _wait_ready(c, body, timeout=60.0) -> dict:
    deadline = time.time() + timeout
    while True:
        r = c.post("/api/warm", json=body)
        assert r.status_code == 200, r.text
        st = r.json()
        if st["ready"]:
            return st
        assert time.time() < deadline, st
        time.sleep(0.05)


def test_warm_loads_a_difficulty_and_a_game_and_refuses_the_rest(client, tmp_path):
    st = _wait_ready(client, {"difficulty": "easy", "hints": False})
    assert [it["key"] for it in st["items"]] == ["bot:medium", "bot:easy"]
    assert all(it["state"] == "ready" and it["seconds"] >= 0 for it in st["items"])
    assert (st["done"], st["total"]) == (2, 2)
    st = _wait_ready(client, {"difficulty": "hard", "hints": True})
    assert [it["key"] for it in st["items"]] == ["bot:medium", "bot:easy", "analysis"]
    gid = client.post("/api/games", json={"difficulty": "easy", "target": 250}).json()["id"]
    st = _wait_ready(client, {"game": gid, "hints": False})
    assert sorted(it["key"] for it in st["items"]) == ["bot:easy", "bot:medium"]
    for body, status, words in [
        ({"difficulty": "grandmaster"}, 422, "unknown difficulty 'grandmaster'"),
        ({}, 422, "give either difficulty or game"),
        ({"difficulty": "easy", "game": gid}, 422, "give either difficulty or game"),
        ({"game": "nope"}, 404, "unknown game id"),
        ({"difficulty": "easy", "extra": 1}, 422, "extra"),
    ]:
        r = client.post("/api/warm", json=body)
        assert r.status_code == status and words in r.json()["detail"], r.text
    other = TestClient(client.app_, raise_server_exceptions=False)
    other.get("/api/config")
    assert other.post("/api/warm", json={"game": gid}).status_code == 404  # not its game


def test_bot_pool_builds_a_level_once_and_tells_how_far():
    pool = BotPool()
    assert pool.status("medium")["state"] == "cold"
    pool.warm(["medium", "medium"])
    got = []
    threads = [threading.Thread(target=lambda: got.append(pool.get("medium"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(got) == 3 and all(b is got[0] for b in got)  # one bot, built once
    st = pool.status("medium")
    assert st["state"] == "ready" and st["label"] == "Medium" and st["seconds"] >= 0
    pool.warm(["no-such-bot"])
    deadline = time.time() + 10
    while pool.status("no-such-bot")["state"] == "loading":
        assert time.time() < deadline
        time.sleep(0.01)
    st = pool.status("no-such-bot")
    assert st["state"] == "failed" and "no-such-bot" in st["error"]
    with pytest.raises(ValueError, match="no-such-bot"):
        pool.get("no-such-bot")


def test_hand_tricks_are_the_tricks_played_this_hand(client):
    """``hand_tricks``: each completed trick of the hand in play order with its winner, from the
    game state (the same on a fresh GET); the finished hand's 13 stay behind its score table,
    and Next clears them."""
    from tests.play.test_play_api import next_move  # the test player of the API tests

    c = client
    view = c.post("/api/games", json={"difficulty": "easy", "target": 500}).json()
    gid = view["id"]
    assert view["hand_tricks"] == []
    plays = []  # (seat, card) of every card seen played, from last_move and the trick
    seen_tricks = []
    while not view["hand_table"]:
        r = next_move(c, view)
        assert r.status_code == 200, r.text
        view = r.json()
        if view["last_trick"] and view["last_move"]["completed_trick"]:
            seen_tricks.append(view["last_trick"])
        if view["phase"] == "play" and not view["hand_table"]:
            done = view["hand_tricks"]
            assert len(done) == view["trick_number"] == len(seen_tricks)
            assert c.get(f"/api/games/{gid}").json()["hand_tricks"] == done
            if done:
                last = done[-1]
                assert last["number"] == len(done)
                assert last["cards"] == seen_tricks[-1]["cards"]
                assert last["winner"] == seen_tricks[-1]["winner"]
                # the winner of a trick leads the next one
                if view["trick"]:
                    assert view["trick"][0]["seat"] == last["winner"]
    tricks = view["hand_tricks"]
    assert [t["number"] for t in tricks] == list(range(1, 14))
    assert [t["cards"] for t in tricks] == [t["cards"] for t in seen_tricks]
    wins = [0, 0, 0, 0]
    for t in tricks:
        wins[t["winner"]] += 1
    assert wins == view["hand_table"]["tricks"]
    cards = [x["card"] for t in tricks for x in t["cards"]]
    assert len(set(cards)) == 52
    assert c.get(f"/api/games/{gid}").json()["hand_tricks"] == tricks  # a reload sees them
    after = c.post(f"/api/games/{gid}/next").json()
    assert after["hand_tricks"] == [] and after["hand_number"] == 2


# ---------------------------------------------------------------------- round 3: rules and stats
def test_rules_name_the_house_rules_of_a_game(client):
    """``rules.house``: the rules of the game that differ from the standard rules (what the help
    dialog lists as this game's house rules); empty for the standard rules."""
    std = client.post("/api/rules", json={"rules": {"preset": "standard"}}).json()
    assert std["house"] == []
    info = client.post("/api/rules", json={"rules": {"preset": "suicide"}}).json()
    assert info["house"] == [
        "A team at -200 points or below loses",
        "Bidding: suicide: in each partnership exactly one partner bids Nil",
        "Each partnership bids at least 4 together (Nil counts 0)"]
    assert all(x in info["items"] for x in info["house"])
    view = client.post("/api/games", json={"difficulty": "easy", "rules": {
        "preset": "suicide", "target_score": 150}}).json()
    assert view["rules"]["house"] == ["Game to 150 points"] + info["house"]
    assert client.get(f"/api/games/{view['id']}").json()["rules"] == view["rules"]


def _expected(finals: list[dict]) -> dict:
    """The statistics of the player's team over finished games, from their public score
    tables (``hand_results``), in the order played."""
    hands = [h for f in finals for h in f["hand_results"]]
    ours = [h["teams"][0] for h in hands]  # the player's team is team 0
    nils = [h for h in hands if h["bids"][2] == 0]
    streak = best = 0
    for f in finals:
        won = f["result"]["you_won"]
        streak = max(streak, 0) + 1 if won else min(streak, 0) - 1
        best = max(best, streak)
    return {"games": len(finals), "hands": len(hands),
            "sets": sum(t["made"] is False for t in ours),
            "contracts_made": sum(t["made"] is True for t in ours),
            "nil_bids": len(nils), "nil_made": sum(h["tricks"][2] == 0 for h in nils),
            "nil_failed": sum(h["tricks"][2] > 0 for h in nils),
            "bags": sum(t["bags"] for t in ours), "bag_hands": len(hands),
            "streak": streak, "best_streak": best}


def test_statistics_count_sets_nils_bags_and_streaks(client):
    """Sets, Nils made and failed, bags per hand and the win/loss streak (current and best) of
    ``/api/stats``, and the results screen's own game (``result.game``), against what the
    public score tables of the games played say."""
    from tests.play.test_play_api import play_to_end

    finals = []
    for _ in range(4):
        view = client.post("/api/games", json={"difficulty": "easy", "rules": {
            "preset": "standard", "target_score": 100}}).json()
        final, _ = play_to_end(client.app_, client, view, check_leaks=False)
        finals.append(final)
        mine = _expected([final])
        game = final["result"]["game"]
        for k in ("hands", "sets", "contracts_made", "nil_bids", "nil_made", "nil_failed",
                  "bags"):
            assert game[k] == mine[k], (k, game, mine)
        assert game["bags_per_hand"] == pytest.approx(mine["bags"] / mine["hands"])
    want = _expected(finals)
    assert len({f["result"]["you_won"] for f in finals}) == 2, "seeded: a win and a loss"
    (st,) = client.get("/api/stats").json()["stats"]
    for k, v in want.items():
        assert st[k] == v, (k, st, want)
    assert st["bags_per_hand"] == pytest.approx(want["bags"] / want["hands"])
    assert finals[-1]["result"]["stats"]["streak"] == want["streak"]


def test_statistics_columns_are_added_to_an_older_database(tmp_path):
    """A schema-2 database from before bags and streaks were kept opens: its rows get the new
    counters at 0 (bags per hand unknown: None), and the next game counts them."""
    import sqlite3

    from spades_env.play.rules_text import stats_summary
    from spades_env.play.store import StatsDelta, Store

    db = tmp_path / "old.sqlite3"
    Store(str(db)).close()
    con = sqlite3.connect(db)
    for col in ("bags", "bag_hands", "streak", "best_streak"):
        con.execute(f"ALTER TABLE stats DROP COLUMN {col}")
    con.execute("INSERT INTO stats (player, difficulty, rules, target, games, wins, hands, "
                "contracts, contracts_made) VALUES ('p', 'easy', 'standard', 500, 3, 2, 30, 28, "
                "20)")
    con.commit()
    con.close()
    store = Store(str(db))
    (old,) = [stats_summary(r) for r in store.stats("p")]
    assert (old["bags"], old["streak"], old["best_streak"], old["sets"]) == (0, 0, 0, 8)
    assert old["bags_per_hand"] is None
    store._tx(lambda d: Store._add_stats(d, "p", "easy", "standard", 500, StatsDelta(
        wins=0, hands=8, bags=5, bag_hands=8)))
    (new,) = [stats_summary(r) for r in store.stats("p")]
    assert (new["games"], new["streak"], new["best_streak"], new["bags"]) == (4, -1, 0, 5)
    assert new["bags_per_hand"] == pytest.approx(5 / 8)
    store.close()
