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
