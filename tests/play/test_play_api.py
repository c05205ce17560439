"""API tests of the browser game (``spades_env.play``) through FastAPI's test client.

Fast bots stand in for the slow PIMC levels where whole games are played (``lineups=``); the real
difficulty mapping is checked separately. Every response of the played games is checked on the wire
for cards the player may not see.
"""

from __future__ import annotations

import json
import re
import sqlite3

import numpy as np
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from spades_env import PRESETS, Rules, SpadesGame  # noqa: E402
from spades_env.cards import BID_OFFSET, card_str, mask_to_cards  # noqa: E402
from spades_env.play import cli  # noqa: E402
from spades_env.play.app import COOKIE, MAX_BODY, create_app  # noqa: E402
from spades_env.play.replay import (  # noqa: E402
    RECORD_FORMAT, frames_from_game, load_record_file, write_game_record,
)
from spades_env.play.session import HUMAN_SEAT, LINEUPS, GameSession  # noqa: E402
from spades_env.play.store import Store  # noqa: E402
from tests.helpers import _run  # noqa: E402

FAST = {k: {"partner": "medium", "opponents": "medium"} for k in ("easy", "medium", "hard",
                                                                   "insane")}
CARD_RE = re.compile(r"^(10|[2-9JQKA])[SHDC]$")
SHIPPED = "checkpoints/shipped/agent.pt"


_OPEN: list = []  # clients entered by _client, closed after each test (fixture below)


def _client(app, cookies=None) -> TestClient:
    """An entered test client (one event-loop portal for all its requests: 3x faster) that has
    its player cookie (given, or received from the first request)."""
    c = TestClient(app, raise_server_exceptions=False, cookies=cookies)
    c.__enter__()
    _OPEN.append(c)
    if cookies is None:
        assert c.get("/api/config").status_code == 200  # gets the player cookie
    return c


@pytest.fixture(autouse=True)
def _close_clients():
    n = len(_OPEN)
    yield
    while len(_OPEN) > n:
        _OPEN.pop().__exit__(None, None, None)


def _true_game(app, game_id: str) -> SpadesGame:
    """The full stored state (test-side referee; never sent to the browser)."""
    row = app.state.store._db.execute("SELECT state FROM games WHERE id = ?", (game_id,)).fetchone()
    return SpadesGame.from_json(row[0])


def _true_state(app, game_id: str) -> dict:
    """The stored engine state as plain data (``SpadesGame.to_dict`` fields), read fast."""
    row = app.state.store._db.execute("SELECT state FROM games WHERE id = ?", (game_id,)).fetchone()
    return json.loads(row[0])


def _card_strings(obj, out: set) -> set:
    if isinstance(obj, dict):
        for v in obj.values():
            _card_strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _card_strings(v, out)
    elif isinstance(obj, str) and CARD_RE.match(obj):
        out.add(obj)
    return out


def assert_no_leak(app, resp) -> None:
    """No card held by another seat (or by the player before looking) appears in the response:
    neither as a card string anywhere in the JSON, nor as a token in the raw text."""
    body = resp.json()
    game_id = body["id"] if "id" in body else body["game"]["id"]
    g = _true_state(app, game_id)
    looked = g["looked"][HUMAN_SEAT]
    hidden = set()
    for s in range(4):
        if s != HUMAN_SEAT or not looked:
            hidden |= {card_str(c) for c in mask_to_cards(g["hands"][s])}
    view = body if "hand" in body else body["game"]
    text = resp.text
    if view["hand_table"] and view["last_trick"] and view["last_trick"]["number"] == 13:
        # the finished hand's last trick (public: it was played) is shown with its score table
        # while the next deal already exists; it must be exactly the last 4 cards played
        assert [x["card"] for x in view["last_trick"]["cards"]] == [
            card_str(a) for a in g["moves"][-4:]]
        # and the hand's 13 tricks, exactly its 52 cards in the order they were played
        assert [x["card"] for t in view["hand_tricks"] for x in t["cards"]] == [
            card_str(a) for a in g["moves"][-52:]]
        view = dict(view, last_trick=None, last_move=None, hand_tricks=[])
        body = view
        text = json.dumps(view)
    # own cards, played cards and the current hand's history are allowed; nothing hidden
    found = _card_strings(body, set())
    assert not (found & hidden), f"hidden cards on the wire: {sorted(found & hidden)}"
    text = text.replace(game_id, "")
    for c in hidden:
        assert not re.search(rf"(?<![0-9A-Za-z]){c}(?![0-9A-Za-z])", text), c
    # the hand on the wire is exactly the player's own cards (none before looking)
    own = {card_str(c) for c in mask_to_cards(g["hands"][HUMAN_SEAT])} if looked else set()
    if view["hand_table"]:  # the next deal waits behind the score table: none of it is shown
        own = set()
    assert {h["card"] for h in view["hand"]} == own


def human_choice(view: dict) -> dict:
    """The test player (from its view only): bids Nil with no ace, king or queen and at most
    three spades, else 3 (within
    the offered range); plays its first legal card (the highest, in display order), or its last
    one while its Nil stands."""
    me = view["seats"][HUMAN_SEAT]
    if view["bidding"]:
        b = view["bidding"]
        if b["min"] is None:
            return {"action": 67, "seq": view["seq"]}  # look at the cards
        low = (not any(h["card"][:-1] in "AKQ" for h in view["hand"])
               and sum(h["card"].endswith("S") for h in view["hand"]) <= 3)
        if b["nil"] and low:
            return {"action": BID_OFFSET, "seq": view["seq"]}
        return {"action": BID_OFFSET + max(b["min"], min(3, b["max"])), "seq": view["seq"]}
    legal = [h["action"] for h in view["hand"] if h["legal"]]
    nil = me["bid"] == 0 and me["tricks"] == 0
    return {"action": legal[-1] if nil else legal[0], "seq": view["seq"]}


def next_move(c: TestClient, view: dict):
    """One move of the game in ``view``: the test player's choice (``human_choice``) on its turn,
    else the bots' next move. Returns the response."""
    gid = view["id"]
    if view["your_turn"]:
        return c.post(f"/api/games/{gid}/action", json=human_choice(view))
    return c.post(f"/api/games/{gid}/advance", json={"seq": view["seq"]})


def play_to_end(app, c: TestClient, view: dict, check_leaks: bool = True, limit: int = 3000):
    """Drive a game through the API to its results screen; returns (final view, responses)."""
    gid = view["id"]
    responses = 0
    while not (view["result"] and not view["hand_table"]):
        r = c.post(f"/api/games/{gid}/next") if view["hand_table"] else next_move(c, view)
        assert r.status_code == 200, r.text
        if check_leaks:
            assert_no_leak(app, r)
        view = r.json()
        responses += 1
        assert responses < limit, "the game did not end"
    return view, responses


# ---------------------------------------------------------------------- whole games, stats
@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """Three games to 250 against fast bots in one database: easy, easy, medium. Every response
    of the first game is checked for hidden cards."""
    db = tmp_path_factory.mktemp("play") / "games.sqlite3"
    app = create_app(str(db), lineups=FAST, seed=0)  # seed 0: short games, a win, a loss, a Nil
    c = TestClient(app, raise_server_exceptions=False)
    c.__enter__()
    assert c.get("/api/config").status_code == 200
    finals = []
    for i, difficulty in enumerate(("easy", "easy", "medium")):
        r = c.post("/api/games", json={"difficulty": difficulty, "target": 250})
        assert r.status_code == 201
        assert_no_leak(app, r)
        final, n = play_to_end(app, c, r.json(), check_leaks=i == 0)
        finals.append(final)
    yield app, c, finals
    c.__exit__(None, None, None)


@pytest.mark.slow
def test_whole_game_through_the_api(played):
    app, c, finals = played
    for f in finals:
        g = _true_game(app, f["id"])
        assert g.is_over and f["phase"] == "over"
        assert [t["score"] for t in f["teams"]] == g.scores
        assert max(g.scores) >= 250
        assert f["result"]["winner"] == g.winner
        won = g.winner == 0
        assert f["result"]["you_won"] == won
        assert f["result"]["text"].startswith("You win" if won else "You lose")
        # contracts made / missed per team, counted from the public score tables
        for t in (0, 1):
            made = sum(1 for h in f["hand_results"] if h["teams"][t]["made"] is True)
            missed = sum(1 for h in f["hand_results"] if h["teams"][t]["made"] is False)
            assert f["result"]["contracts"][t] == {"team": t, "made": made, "missed": missed}
        # the stored move log is the engine's, and the finished game refuses further moves
        log = app.state.store.move_log(f["id"])
        assert [a for _, _, a in log] == g.moves
        r = c.post(f"/api/games/{f['id']}/action", json={"action": 0})
        assert r.status_code == 409 and r.json()["detail"] == "the game is over"
        assert c.post(f"/api/games/{f['id']}/advance").status_code == 409


def test_statistics_after_several_games(played):
    app, c, finals = played
    stats = {(s["difficulty"], s["target"]): s for s in c.get("/api/stats").json()["stats"]}
    assert set(stats) == {("easy", 250), ("medium", 250)}
    # these seeded games cover a win and a loss at easy, and a Nil bid of the player
    assert stats[("easy", 250)]["wins"] == 1 and stats[("easy", 250)]["nil_bids"] >= 1
    for key, games in ((("easy", 250), finals[:2]), (("medium", 250), finals[2:])):
        s = stats[key]
        hands = [h for f in games for h in f["hand_results"]]
        wins = sum(f["result"]["winner"] == 0 for f in games)
        points = sum(h["teams"][0]["hand_points"] for h in hands)
        contracts = [h["teams"][0]["made"] for h in hands if h["teams"][0]["made"] is not None]
        nils = [h for h in hands if h["bids"][HUMAN_SEAT] == 0]
        assert s["games"] == len(games)
        assert s["wins"] == wins
        assert s["win_rate"] == pytest.approx(wins / len(games))
        assert s["hands"] == len(hands)
        assert s["points"] == points
        assert s["avg_points_per_hand"] == pytest.approx(points / len(hands))
        assert s["contracts"] == len(contracts)
        assert s["contracts_made"] == sum(contracts)
        assert s["nil_bids"] == len(nils)
        assert s["nil_made"] == sum(h["tricks"][HUMAN_SEAT] == 0 for h in nils)
    # the results screen of the last game shows its own bucket
    assert finals[2]["result"]["stats"]["games"] == 1
    assert finals[2]["result"]["stats"]["difficulty"] == "medium"
    # another player has no statistics
    other = _client(app)
    assert other.get("/api/stats").json() == {"stats": []}


def test_hand_table_waits_for_next(tmp_path):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST)
    c = _client(app)
    view = c.post("/api/games", json={"difficulty": "easy", "target": 500}).json()
    gid = view["id"]
    while not view["hand_table"]:
        if view["your_turn"]:
            r = c.post(f"/api/games/{gid}/action", json=human_choice(view))
        else:
            r = c.post(f"/api/games/{gid}/advance")
        view = r.json()
    g = _true_game(app, gid)
    hr = g.hand_results[0]
    assert view["hand_table"] == hr.to_dict()
    assert view["last_trick"]["number"] == 13 and len(view["last_trick"]["cards"]) == 4
    # the hand's points are the engine's: contract points + Nil points + bag penalty
    for t in hr.teams:
        assert t.hand_points == t.contract_points + t.nil_points + t.bag_penalty
        assert [x["score"] for x in view["teams"]][t.team] == t.total
    # nothing moves until Next
    before = c.get(f"/api/games/{gid}").json()
    for path in ("advance", "action"):
        r = c.post(f"/api/games/{gid}/{path}", json={"action": 52} if path == "action" else None)
        assert r.status_code == 409 and "Next" in r.json()["detail"]
    assert c.get(f"/api/games/{gid}").json() == before
    after = c.post(f"/api/games/{gid}/next").json()
    assert after["hand_table"] is None and after["hand_number"] == 2
    assert c.post(f"/api/games/{gid}/next").status_code == 409  # no table open now


# ---------------------------------------------------------------------- refusals
@pytest.fixture()
def seeded(tmp_path):
    """An app, a client, and a game with a fixed seed whose dealer is East (seat 1), so that the
    player (seat 2, on the dealer's left) bids first and leads the first trick."""
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST)
    c = _client(app)
    player = c.cookies[COOKIE]
    seed = next(s for s in range(100) if SpadesGame(Rules(target_score=250), seed=s).dealer == 1)
    s = GameSession.create(app.state.store, app.state.bots, player, "easy", FAST["easy"], 250,
                           seed=seed)
    return app, c, s.row.id


def _unchanged(app, c, gid, before_view, before_moves):
    assert c.get(f"/api/games/{gid}").json() == before_view
    assert len(app.state.store.move_log(gid)) == before_moves


def test_refusals_leave_the_game_unchanged(seeded):
    app, c, gid = seeded
    view = c.get(f"/api/games/{gid}").json()
    # East (seat 1) deals: the player, on the dealer's left, bids first, then West
    assert view["dealer"] == 1 and view["to_act"] == HUMAN_SEAT and view["your_turn"]
    assert view["bidding"]["min"] == 1 and view["bidding"]["max"] == 13 and view["bidding"]["nil"]
    moves = len(app.state.store.move_log(gid))
    bad = [
        ({"action": 99}, 422, "action 99 is out of range 0..67"),
        ({"action": -1}, 422, "action -1 is out of range 0..67"),
        ({"action": 5}, 422, "it is the bidding phase: bid 0..13, not play 7C"),
        ({"action": 66}, 422, "Blind Nil is not allowed under these rules"),
        ({"action": "AS"}, 422, "bad request: action: Input should be a valid integer"),
        ({"action": True}, 422, "bad request: action: Input should be a valid integer"),
        ({"action": 1.5}, 422, "bad request: action: Input should be a valid integer"),
        ({}, 422, "bad request: action: Field required"),
        ({"action": 55, "extra": 1}, 422, "bad request: extra: Extra inputs are not permitted"),
        ({"action": 55, "seq": 3}, 409, "stale move: the game is at move 0, not 3; reload it"),
    ]
    for body, status, detail in bad:
        r = c.post(f"/api/games/{gid}/action", json=body)
        assert (r.status_code, r.json()["detail"]) == (status, detail), body
        _unchanged(app, c, gid, view, moves)
    # malformed JSON, a JSON list, a body over the limit
    r = c.post(f"/api/games/{gid}/action", content=b"{not json",
               headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"].startswith("bad request")
    r = c.post(f"/api/games/{gid}/action", json=[55])
    assert r.status_code == 422
    r = c.post(f"/api/games/{gid}/action", content=b'{"action": 55, "pad": "' + b"x" * MAX_BODY
               + b'"}', headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "too large" in r.json()["detail"]
    _unchanged(app, c, gid, view, moves)
    # advance on the player's turn
    r = c.post(f"/api/games/{gid}/advance")
    assert r.status_code == 409 and "your turn" in r.json()["detail"]
    _unchanged(app, c, gid, view, moves)
    # after the player's bid it is West's turn: another action is out of turn
    view = c.post(f"/api/games/{gid}/action", json={"action": BID_OFFSET + 3, "seq": 0}).json()
    assert view["seats"][HUMAN_SEAT]["bid"] == 3 and view["to_act"] == 3
    r = c.post(f"/api/games/{gid}/action", json={"action": BID_OFFSET + 3})
    assert r.status_code == 409 and r.json()["detail"] == "not your turn: Lily is to act"
    _unchanged(app, c, gid, view, 1)
    # unknown ids
    for path, body in (("", None), ("/action", {"action": 55}), ("/advance", {}), ("/next", None)):
        url = f"/api/games/{gid[:-2]}xy{path}"
        r = c.get(url) if not path else c.post(url, json=body)
        assert r.status_code == 404 and r.json()["detail"] == "unknown game id"
    assert c.get("/api/games/" + "a" * 500).status_code == 404
    # a bad new game
    r = c.post("/api/games", json={"difficulty": "godlike", "target": 500})
    assert r.status_code == 422 and "unknown difficulty 'godlike'" in r.json()["detail"]
    r = c.post("/api/games", json={"difficulty": "easy", "target": 300})
    assert r.status_code == 422 and "game length must be one of [500, 250]" in r.json()["detail"]


def test_illegal_cards_refused_in_the_engines_words(seeded):
    app, c, gid = seeded
    view = c.get(f"/api/games/{gid}").json()
    while view["phase"] != "play":
        if view["your_turn"]:
            r = c.post(f"/api/games/{gid}/action", json=human_choice(view))
        else:
            r = c.post(f"/api/games/{gid}/advance")
        view = r.json()
    # the player leads the first trick (East dealt): a spade is refused while others are held
    assert view["your_turn"] and view["trick"] == [] and not view["spades_broken"]
    spade = next(h for h in view["hand"] if h["card"].endswith("S"))
    assert not spade["legal"]
    assert all(h["legal"] != h["card"].endswith("S") for h in view["hand"])
    moves = len(app.state.store.move_log(gid))
    r = c.post(f"/api/games/{gid}/action", json={"action": spade["action"]})
    assert r.status_code == 422
    assert r.json()["detail"] == "spades are not broken yet: lead another suit"
    _unchanged(app, c, gid, view, moves)
    # a card the player does not hold
    own = {h["action"] for h in view["hand"]}
    other = next(a for a in range(52) if a not in own)
    r = c.post(f"/api/games/{gid}/action", json={"action": other})
    assert r.status_code == 422
    assert r.json()["detail"] == f"{card_str(other)}: that card is not in your hand"
    # play on until the player must follow suit while holding another suit too
    found = False
    while not found and not view["hand_table"]:
        if view["your_turn"] and view["trick"]:
            led = view["trick"][0]["card"][-1]
            off = [h for h in view["hand"] if not h["card"].endswith(led)]
            if off and any(h["card"].endswith(led) for h in view["hand"]):
                assert not any(h["legal"] for h in off)
                moves = len(app.state.store.move_log(gid))
                r = c.post(f"/api/games/{gid}/action", json={"action": off[0]["action"]})
                suit = {"C": "club", "D": "diamond", "H": "heart", "S": "spade"}[led]
                assert r.status_code == 422
                assert r.json()["detail"] == f"must follow suit: you hold a {suit}"
                _unchanged(app, c, gid, view, moves)
                found = True
                break
        if view["your_turn"]:
            r = c.post(f"/api/games/{gid}/action", json=human_choice(view))
        else:
            r = c.post(f"/api/games/{gid}/advance")
        view = r.json()
    assert found, "no follow-suit situation in the first hand of this seed"


def test_another_player_cannot_read_or_change_a_game(seeded):
    app, c, gid = seeded
    before = c.get(f"/api/games/{gid}").json()
    stranger = _client(app)
    assert stranger.cookies[COOKIE] != c.cookies[COOKIE]
    assert stranger.get(f"/api/games/{gid}").status_code == 404
    for path, body in (("/action", {"action": 55}), ("/advance", {}), ("/next", None)):
        r = stranger.post(f"/api/games/{gid}{path}", json=body)
        assert r.status_code == 404 and r.json()["detail"] == "unknown game id"
    assert stranger.get(f"/api/watch/game/{gid}").status_code == 404
    assert stranger.get("/api/games/active").json() == {"game": None}
    assert stranger.get("/api/watch").json()["games"] == []
    # a forged cookie is just another player
    forged = _client(app, cookies={COOKIE: "x" * 10})
    assert forged.get(f"/api/games/{gid}").status_code == 404
    assert c.get(f"/api/games/{gid}").json() == before


def test_game_ids_are_unguessable(tmp_path):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST)
    c = _client(app)
    ids = {c.post("/api/games", json={"difficulty": "easy"}).json()["id"] for _ in range(5)}
    assert len(ids) == 5
    for i in ids:
        assert re.fullmatch(r"[A-Za-z0-9_-]{24}", i)  # secrets.token_urlsafe(18): 144 bits


def test_foreign_host_header_refused(tmp_path):
    """DNS rebinding: a page on another domain pointing at 127.0.0.1 cannot use the API."""
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST)
    c = TestClient(app, base_url="http://evil.example", raise_server_exceptions=False)
    assert c.get("/api/config").status_code == 400


def test_blind_nil_decision_hides_the_players_own_cards(tmp_path):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST)
    c = _client(app)
    r = c.post("/api/games", json={"difficulty": "easy", "target": 250, "blind_nil": True})
    view = r.json()
    assert view["blind_nil_rule"] is True
    gid = view["id"]
    while not view["your_turn"]:
        r = c.post(f"/api/games/{gid}/advance")
        assert_no_leak(app, r)
        view = r.json()
    assert not view["looked"] and view["hand"] == []
    assert view["bidding"] == {"min": None, "max": None, "nil": False, "blind_nil": True,
                               "look": True, "bids": [], "refused": {}}
    assert_no_leak(app, r)  # the player's own 13 cards count as hidden here
    r = c.post(f"/api/games/{gid}/action", json={"action": 52 + 3})
    assert r.status_code == 422
    assert r.json()["detail"] == "decide first: bid Blind Nil or look at your cards"
    r = c.post(f"/api/games/{gid}/action", json={"action": 67})
    assert r.status_code == 200
    assert_no_leak(app, r)
    view = r.json()
    assert view["looked"] and len(view["hand"]) == 13 and view["bidding"]["min"] == 1


def test_blind_nil_bid_and_card_exchange(tmp_path):
    """The player bids Blind Nil: the partner passes 3 cards, the player passes 3 back (docs/rules.md
    Blind Nil exchange), all through the API, with no hidden card on the wire."""
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=1)
    c = _client(app)
    view = c.post("/api/games", json={"difficulty": "easy", "target": 250,
                                      "blind_nil": True}).json()
    gid = view["id"]
    while not view["your_turn"]:
        view = c.post(f"/api/games/{gid}/advance").json()
    r = c.post(f"/api/games/{gid}/action", json={"action": 66})
    assert r.status_code == 200
    assert_no_leak(app, r)
    view = r.json()
    assert view["seats"][HUMAN_SEAT]["bid_text"] == "Blind Nil" and view["looked"]
    own = {h["card"] for h in view["hand"]}
    while not view["your_turn"]:
        r = c.post(f"/api/games/{gid}/advance")
        assert_no_leak(app, r)
        view = r.json()
    assert view["phase"] == "exchange"  # (the partner did not bid Blind Nil too)
    assert len(view["hand"]) == 16 and all(h["legal"] for h in view["hand"])
    assert view["status"] == "Your turn: pass a card to your partner"
    assert len({h["card"] for h in view["hand"]} - own) == 3  # the partner's 3 cards
    for _ in range(3):
        r = c.post(f"/api/games/{gid}/action", json={"action": view["hand"][0]["action"]})
        assert_no_leak(app, r)
        view = r.json()
        assert view["last_move"] == {"seat": HUMAN_SEAT, "kind": "pass", "text": "passes a card",
                                     "completed_trick": False}
    assert len(view["hand"]) == 13 and view["phase"] == "play"


# ---------------------------------------------------------------------- difficulty mapping
def test_difficulty_lineups(tmp_path):
    assert LINEUPS == {
        "easy": {"partner": "hard", "opponents": "easy"},
        "medium": {"partner": "hard", "opponents": "medium"},
        "hard": {"partner": "hard", "opponents": "hard"},
        "insane": {"partner": "insane", "opponents": "insane"},
        "expert": {"partner": "expert", "opponents": "expert"},  # torch and the shipped network
    }
    app = create_app(str(tmp_path / "db.sqlite3"), checkpoint=SHIPPED)
    c = _client(app)
    levels = c.get("/api/config").json()["levels"]
    assert [lv["key"] for lv in levels] == ["easy", "medium", "hard", "insane", "expert",
                                            "checkpoint"]
    assert levels[5] == {"key": "checkpoint", "partner": "hard", "opponents": "agent"}
    store = app.state.store
    player = c.cookies[COOKIE]
    expect = {"easy": ("hard", "easy"), "medium": ("hard", "medium"), "hard": ("hard", "hard"),
              "insane": ("insane", "insane"), "expert": ("expert", "expert"),
              "checkpoint": ("hard", f"checkpoint:{SHIPPED}")}
    for difficulty, (partner, opp) in expect.items():
        view = c.post("/api/games", json={"difficulty": difficulty}).json()
        assert store.load_game(view["id"], player).lineup == {"0": partner, "1": opp, "3": opp}
        labels = {s["seat"]: s["level"] for s in view["seats"]}
        assert labels == {0: partner, 1: _label(opp), 2: None, 3: _label(opp)}
    assert type(app.state.bots.get("insane")).__name__ == "InsaneBot"
    assert type(app.state.bots.get("hard")).__name__ == "HardBot"
    assert type(app.state.bots.get("expert")).__name__ == "ExpertBot"
    # the real bots decide: East (an opponent) bids first when North deals, then West, North
    seed = next(s for s in range(100) if SpadesGame(Rules(), seed=s).dealer == 0)
    for difficulty in ("easy", "checkpoint"):
        s = GameSession.create(store, app.state.bots, player, difficulty,
                               app.state.lineups[difficulty], 500, seed=seed)
        view = c.get(f"/api/games/{s.row.id}").json()
        for seat in (1, 2, 3, 0):
            assert view["to_act"] == seat
            if seat == HUMAN_SEAT:
                view = c.post(f"/api/games/{s.row.id}/action", json={"action": 55}).json()
            else:
                r = c.post(f"/api/games/{s.row.id}/advance")
                assert r.status_code == 200, r.text
                view = r.json()
                assert 0 <= view["seats"][seat]["bid"] <= 13
        assert view["phase"] == "play"


def _label(level: str) -> str:
    return "agent" if level.startswith("checkpoint:") else level


# ---------------------------------------------------------------------- save, kill, continue
def test_save_kill_restart_continue_identically(tmp_path):
    db = tmp_path / "db.sqlite3"
    app1 = create_app(str(db), lineups=FAST)
    c1 = _client(app1)
    view = c1.post("/api/games", json={"difficulty": "medium", "target": 500}).json()
    gid = view["id"]
    for _ in range(17):  # into the play phase, mid-trick
        if view["your_turn"]:
            r = c1.post(f"/api/games/{gid}/action", json=human_choice(view))
        else:
            r = c1.post(f"/api/games/{gid}/advance")
        view = r.json()
    assert view["phase"] == "play" and view["seq"] == 17
    # a second copy of the database as it is now (SQLite's online backup)
    db2 = tmp_path / "copy.sqlite3"
    src, dst = sqlite3.connect(db), sqlite3.connect(db2)
    src.backup(dst)
    src.close()
    dst.close()
    # "kill": app1 is dropped without any shutdown; a new app opens the same file
    app2 = create_app(str(db), lineups=FAST)
    c2 = _client(app2, cookies={COOKIE: c1.cookies[COOKIE]})
    active = c2.get("/api/games/active").json()["game"]
    assert active == view
    assert _true_game(app2, gid).to_json() == _true_game(app1, gid).to_json()
    # continuing after the restart plays exactly the moves an uninterrupted server plays
    app3 = create_app(str(db2), lineups=FAST)
    c3 = _client(app3, cookies={COOKIE: c1.cookies[COOKIE]})
    v2, v3 = active, c3.get(f"/api/games/{gid}").json()
    for _ in range(12):
        for c, v in ((c2, v2), (c3, v3)):
            path = "action" if v["your_turn"] else "advance"
            r = c.post(f"/api/games/{gid}/{path}", json=human_choice(v) if v["your_turn"] else None)
            assert r.status_code == 200
            if c is c2:
                v2 = r.json()
            else:
                v3 = r.json()
        assert v2 == v3


def test_kill_in_the_middle_of_a_move_loses_nothing(tmp_path, monkeypatch):
    db = tmp_path / "db.sqlite3"
    app = create_app(str(db), lineups=FAST)
    c = _client(app)
    view = c.post("/api/games", json={"difficulty": "easy"}).json()
    gid = view["id"]
    while view["your_turn"]:
        view = c.post(f"/api/games/{gid}/action", json=human_choice(view)).json()
    before = c.get(f"/api/games/{gid}").json()
    state_before = _true_game(app, gid).to_json()

    def die(*args, **kwargs):  # the move row is written, the state not yet
        raise RuntimeError("killed")
    monkeypatch.setattr(Store, "_write_state", staticmethod(die))
    r = c.post(f"/api/games/{gid}/advance")
    assert r.status_code == 500
    monkeypatch.undo()
    app2 = create_app(str(db), lineups=FAST)
    c2 = _client(app2, cookies={COOKIE: c.cookies[COOKIE]})
    assert c2.get(f"/api/games/{gid}").json() == before
    assert _true_game(app2, gid).to_json() == state_before
    assert len(app2.state.store.move_log(gid)) == before["seq"]
    # and the first app, after the failure, serves the stored state again
    assert c.get(f"/api/games/{gid}").json() == before
    assert c.post(f"/api/games/{gid}/advance").status_code == 200


class _Server:
    """``spades play`` as a user starts it (real line-ups, uvicorn), in its own
    process on a free port; ``kill()`` is SIGKILL (no shutdown code runs)."""

    def __init__(self, db, port: int, log):
        import subprocess
        import sys
        self.base = f"http://127.0.0.1:{port}"
        self.log = log
        with open(log, "ab") as f:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "spades_env", "play", "--no-browser", "--port", str(port),
                 "--db", str(db)], stdout=f, stderr=subprocess.STDOUT)

    def wait_ready(self, cookie: str | None = None, timeout: float = 300.0) -> str:
        """Wait until the server answers; returns the player cookie (given or received)."""
        import time
        import urllib.error
        deadline = time.time() + timeout
        while True:
            assert self.proc.poll() is None, f"the server exited: {self.log.read_text()[-2000:]}"
            try:
                status, _, headers = self.call("GET", "/api/config", cookie=cookie)
                assert status == 200
                if cookie is None:
                    cookie = re.search(rf"{COOKIE}=([A-Za-z0-9_-]+)",
                                       headers.get("set-cookie", "")).group(1)
                return cookie
            except (urllib.error.URLError, ConnectionError):
                assert time.time() < deadline, f"no answer: {self.log.read_text()[-2000:]}"
                time.sleep(0.2)

    def call(self, method: str, path: str, body=None, cookie: str | None = None,
             timeout: float = 300.0):
        """One HTTP request; returns (status, JSON body, headers)."""
        import urllib.error
        import urllib.request
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if cookie is not None:
            req.add_header("Cookie", f"{COOKIE}={cookie}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read()), {k.lower(): v for k, v in r.headers.items()}
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read()), {}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=60)


def _step(view: dict) -> tuple[str, dict]:
    """The request that moves ``view``'s game on by one move: the player's, or a bot's."""
    if view["your_turn"]:
        return "action", human_choice(view)
    return "advance", {"seq": view["seq"]}


@pytest.mark.slow
def test_real_server_killed_during_a_move_continues_where_it_stopped(tmp_path):
    """A real server process (``spades play``) plays moves over HTTP, is SIGKILLed
    while a move is in flight, and is started again on the same database: every answered move is
    there, the game is at the last answered move or (if the killed move had committed) exactly
    one move further, and it plays on exactly as a server that was never killed (an in-process
    app on a copy of the database taken before the kill)."""
    import socket
    import threading
    import time
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    db, log = tmp_path / "play.sqlite3", tmp_path / "server.log"
    srv = _Server(db, port, log)
    try:
        cookie = srv.wait_ready()
        status, view, _ = srv.call("POST", "/api/games", {"difficulty": "easy", "target": 500},
                                   cookie=cookie)
        assert status == 201, view
        gid = view["id"]
        answered = [view]
        while view["seq"] < 20:  # the bids, then into the first tricks
            path, body = _step(view)
            status, view, _ = srv.call("POST", f"/api/games/{gid}/{path}", body, cookie=cookie)
            assert status == 200, view
            answered.append(view)
        assert view["phase"] == "play"
        log_before = [(seat, a) for _, seat, a in _move_log(db, gid)]
        assert len(log_before) == view["seq"] == 20
        # the uninterrupted reference: a copy of the database as it is now
        ref_db = tmp_path / "reference.sqlite3"
        src, dst = sqlite3.connect(db), sqlite3.connect(ref_db)
        src.backup(dst)
        src.close()
        dst.close()
        # the next move goes out; the server is killed while it works on it
        path, body = _step(view)
        in_flight = threading.Thread(target=lambda: _ignore_errors(
            srv.call, "POST", f"/api/games/{gid}/{path}", body, cookie=cookie), daemon=True)
        in_flight.start()
        time.sleep(0.1)  # sent; the server is on it (or has just saved it)
        srv.kill()
        in_flight.join(timeout=30)
    finally:
        srv.kill()
    srv = _Server(db, port, log)  # started again on the same file and port
    try:
        assert srv.wait_ready(cookie) == cookie
        status, active, _ = srv.call("GET", "/api/games/active", cookie=cookie)
        assert status == 200
        now = active["game"]
        log_after = [(seat, a) for _, seat, a in _move_log(db, gid)]
        assert log_after[:20] == log_before  # nothing answered is lost
        assert now["seq"] == len(log_after) in (20, 21)
        print(f"killed during {path}: the game restarts at move {now['seq']}")
        ref = create_app(str(ref_db))
        c = _client(ref, cookies={COOKIE: cookie})
        if now["seq"] == 20:
            assert now == view  # exactly the last answered state
        else:  # the killed move had committed: the same move on the reference
            r = c.post(f"/api/games/{gid}/{path}", json=body)
            assert r.status_code == 200 and r.json()["seq"] == 21
            if path == "action":
                assert log_after[20] == (HUMAN_SEAT, body["action"])
        assert c.get(f"/api/games/{gid}").json() == now
        # both play on identically (bots are reseeded from the game seed and move number)
        for _ in range(8):
            path, body = _step(now)
            status, now, _ = srv.call("POST", f"/api/games/{gid}/{path}", body, cookie=cookie)
            assert status == 200, now
            r = c.post(f"/api/games/{gid}/{path}", json=body)
            assert r.status_code == 200 and r.json() == now
        assert len(_move_log(db, gid)) == now["seq"]
    finally:
        srv.kill()


def _ignore_errors(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception:  # the connection dies with the killed server
        pass


def _move_log(db, gid: str) -> list:
    """(seq, seat, action) rows of a game, read straight from the database file."""
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT seq, seat, action FROM moves WHERE game_id = ? ORDER BY seq",
                           (gid,)).fetchall()
    finally:
        con.close()


# ---------------------------------------------------------------------- bad database files
def test_corrupt_database_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "garbage.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ValueError, match=r"garbage\.sqlite3: not a usable spades_env play "
                                         r"database \(file is not a database\)"):
        create_app(str(bad))
    assert cli.main(["--db", str(bad), "--no-browser", "--port", "8999"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "garbage.sqlite3" in err and "Traceback" not in err
    foreign = tmp_path / "foreign.sqlite3"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE people (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match="a SQLite database of another program"):
        create_app(str(foreign))
    # a file damaged after a good start: truncated in the middle
    good = tmp_path / "good.sqlite3"
    app = create_app(str(good), lineups=FAST)
    c = _client(app)
    for _ in range(30):
        c.post("/api/games", json={"difficulty": "easy"})
    app.state.store.close()
    data = good.read_bytes()
    good.write_bytes(data[:4096] + b"\xff" * 4096 + data[8192:])
    with pytest.raises(ValueError, match=r"good\.sqlite3: not a usable spades_env play database"):
        create_app(str(good))


def test_database_failure_while_serving_is_a_clear_error(tmp_path, monkeypatch):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST)
    c = _client(app)
    view = c.post("/api/games", json={"difficulty": "easy"}).json()

    def broken(*args, **kwargs):
        raise sqlite3.DatabaseError("database disk image is malformed")
    monkeypatch.setattr(Store, "_write_state", staticmethod(broken))
    r = c.post(f"/api/games/{view['id']}/{'action' if view['your_turn'] else 'advance'}",
               json={"action": 55} if view["your_turn"] else None)
    assert r.status_code == 503
    assert r.json()["detail"] == (f"the database {tmp_path / 'db.sqlite3'} failed (database disk "
                                  f"image is malformed); nothing was changed")
    monkeypatch.undo()
    assert c.get(f"/api/games/{view['id']}").json() == view


def test_damaged_game_row_answers_a_clear_error(tmp_path):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST)
    c = _client(app)
    view = c.post("/api/games", json={"difficulty": "easy"}).json()
    app.state.store._db.execute("UPDATE games SET state = '{\"format\": 1}', moves = 1")
    r = c.get(f"/api/games/{view['id']}")
    assert r.status_code == 500
    assert r.json()["detail"].startswith(f"saved game {view['id']} is damaged")


def test_cli_warns_off_localhost(monkeypatch, capsys, tmp_path):
    import uvicorn
    ran = {}
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: ran.setdefault(
        "host", self.config.host))
    monkeypatch.setattr(cli, "listen", lambda host, port: [])  # no real port taken
    assert cli.main(["--host", "0.0.0.0", "--no-browser", "--db", str(tmp_path / "x.db")]) == 1
    assert ran["host"] == "0.0.0.0"
    assert "warning: binding to 0.0.0.0" in capsys.readouterr().err
    assert cli.main(["--no-browser", "--db", str(tmp_path / "x.db")]) == 1
    assert "warning" not in capsys.readouterr().err
    # Host headers: any when serving the network; else localhost names and the bound address
    import spades_env.play.app as app_module
    seen = []
    real = app_module.create_app
    monkeypatch.setattr(app_module, "create_app",
                        lambda *a, **k: seen.append(k["allowed_hosts"]) or real(*a, **k))
    for host in ("0.0.0.0", "127.0.0.2"):
        cli.main(["--host", host, "--no-browser", "--db", str(tmp_path / "x.db")])
    assert seen[0] == ["*"]
    assert "127.0.0.2" in seen[1] and "localhost" in seen[1] and "*" not in seen[1]
    c = _client(real(str(tmp_path / "y.db"), allowed_hosts=seen[1]), cookies={COOKIE: "p" * 20})
    assert c.get("http://127.0.0.2:8000/api/config").status_code == 200
    assert c.get("http://localhost:8000/api/config").status_code == 200
    assert c.get("http://evil.example:8000/api/config").status_code == 400
    assert cli.is_local_host("127.0.0.1") and cli.is_local_host("localhost")
    assert cli.is_local_host("::1") and not cli.is_local_host("192.168.1.2")


def test_play_db_whose_folder_cannot_be_created_is_one_error_line(tmp_path):
    from spades_env.play.store import Store
    (tmp_path / "afile").write_text("")
    db = str(tmp_path / "afile" / "x.sqlite3")
    with pytest.raises(ValueError, match=r"x\.sqlite3: cannot create its folder .*afile: "):
        Store(db)
    r = _run("-m", "spades_env", "play", "--no-browser", "--port", "8131", "--db", db)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == [f"error: {db}: cannot create its folder "
                                             f"{tmp_path / 'afile'}: File exists"]


# ---------------------------------------------------------------------- watch / replays
def whole_replay(c, url: str, summary: dict | None = None) -> dict:
    """A replay through the paged API: the summary (with the first hand's frames), then each
    further hand's frames; checks that the pages follow one another. Returns the summary with
    ``frames`` holding every frame."""
    base, _, query = url.partition("?")
    rep = summary if summary is not None else c.get(url).json()
    frames = []
    for h in rep["hands"]:
        page = rep if h["hand"] == 0 else c.get(
            f"{base}/hand/{h['hand']}" + (f"?{query}" if query else "")).json()
        assert page["hand"] == h["hand"] and page["first_frame"] == len(frames)
        assert len(page["frames"]) == h["frames"]
        assert page["frames"][0]["move"] == h["start"]
        frames += page["frames"]
    assert len(frames) == rep["frame_count"]
    return dict(rep, frames=frames)


def test_replay_of_a_finished_game(played, tmp_path):
    app, c, finals = played
    gid = finals[0]["id"]
    g = _true_game(app, gid)
    rep = whole_replay(c, f"/api/watch/game/{gid}")
    frames = rep["frames"]
    # one frame per move, plus the deal, plus a new-deal frame after every hand but the last
    assert len(frames) == 1 + len(g.moves) + g.hand_number - 1
    first = frames[0]
    assert first["move"] == 0
    assert [sorted(h) for h in first["hands"]] == [
        sorted(card_str(c) for c in mask_to_cards(m)) for m in g.initial["hands"]]
    assert all(len(h) == 13 for h in first["hands"])
    # every frame shows the whole deck: held cards plus the cards taken in tricks or on the table
    ends = [f for f in frames if f["hand_result"]]
    assert [f["hand_result"] for f in ends] == [h.to_dict() for h in g.hand_results]
    assert ends[-1]["scores"] == g.scores and frames[-1] is not None
    assert frames[-1]["hand_result"] == g.hand_results[-1].to_dict()
    for f in frames:
        held = sum(len(h) for h in f["hands"])
        if f["trick_complete"]:
            assert held + 4 == 52 - 4 * (sum(f["tricks"]) - 1)
        else:
            assert held + len(f["trick"]) == 52 - 4 * sum(f["tricks"])
    # the list of finished games, the record download, and the same replay from that record
    keys = [x["key"] for x in c.get("/api/watch").json()["games"]]
    assert f"game/{gid}" in keys and len(keys) == 3
    rec = c.get(f"/api/watch/game/{gid}/record").json()
    assert rec["format"] == RECORD_FORMAT and rec["players"][2] == "You"
    assert rec["players"][0] == "Max (medium)"
    up = c.post("/api/watch/upload", content=json.dumps(rec).encode())
    assert up.status_code == 200
    assert whole_replay(c, f"/api/watch/{up.json()['key']}", up.json())["frames"] == frames
    # a bare engine save works too, and garbage is refused by name
    up = c.post("/api/watch/upload", content=g.to_json().encode())
    assert up.status_code == 200
    assert whole_replay(c, f"/api/watch/{up.json()['key']}", up.json())["frames"] == frames
    r = c.post("/api/watch/upload", content=b'{"format": "chess"}')
    assert r.status_code == 422 and r.json()["detail"].startswith(
        "the uploaded file: not a spades_env game record")
    broken = json.loads(g.to_json())
    broken["moves"][5] = (broken["moves"][5] + 1) % 52
    r = c.post("/api/watch/upload", content=json.dumps(broken).encode())
    assert r.status_code == 422 and "corrupt spades_env saved game" in r.json()["detail"]


def test_unfinished_game_has_no_replay(seeded):
    app, c, gid = seeded
    r = c.get(f"/api/watch/game/{gid}")
    assert r.status_code == 409 and "not finished" in r.json()["detail"]
    assert c.get(f"/api/watch/game/{gid}/record").status_code == 409


def test_record_files_in_the_replay_view(tmp_path):
    g = SpadesGame(Rules(target_score=100), seed=3)
    bots = [__import__("spades_env.bots", fromlist=["make_bot"]).make_bot("medium", seed=s)
            for s in range(4)]
    while not g.is_over:
        g.apply(bots[g.current_player].act(g.view(g.current_player)))
    path = tmp_path / "one.json"
    write_game_record(str(path), g, ["A", "B", "C", "D"])
    lines = tmp_path / "many.jsonl"
    lines.write_text(g.to_json() + "\n\n" + path.read_text() + "\n")
    # teacher records of training (npz): two hands of random bots
    from spades_env.training.teacher_records import generate_chunk, save_records
    npz = tmp_path / "teacher.npz"
    save_records(str(npz), generate_chunk("random", 2, seed=1, chunk=0), "random")
    app = create_app(str(tmp_path / "db.sqlite3"), records=[str(path), str(lines), str(npz)])
    c = _client(app)
    recs = c.get("/api/watch").json()["records"]
    assert [(r["name"], r["kind"], r["games"]) for r in recs] == [
        ("one.json", "games", 1), ("many.jsonl", "games", 2), ("teacher.npz", "teacher", 2)]
    want = frames_from_game(g)["frames"]
    assert whole_replay(c, "/api/watch/file/0")["frames"] == want
    assert c.get("/api/watch/file/0").json()["players"] == ["A", "B", "C", "D"]
    assert whole_replay(c, "/api/watch/file/1?game=0")["frames"] == want
    assert c.get("/api/watch/file/1?game=1").json()["players"] == ["A", "B", "C", "D"]
    r = c.get("/api/watch/file/1?game=2")
    assert r.status_code == 422 and "holds 2 game(s)" in r.json()["detail"]
    assert c.get("/api/watch/file/7").status_code == 404
    # a teacher hand: 56 moves from its recorded start, ending on its score table
    t = whole_replay(c, "/api/watch/file/2?game=1")
    assert len(t["frames"]) == 57
    rec = np.load(npz)
    h = SpadesGame(Rules(), seed=int(rec["seed"][1]))
    h.scores = [int(x) for x in rec["scores"][1]]
    h.bags = [int(x) for x in rec["bags"][1]]
    for a in rec["moves"][1]:
        h.apply(int(a))
    assert t["frames"][-1]["hand_result"] == h.hand_results[0].to_dict()
    # bad files fail when the app starts, naming the file
    bad = tmp_path / "bad.jsonl"
    # a line that is not JSON is one refused game, the file's others open
    bad.write_text(g.to_json() + "\n{oops\n")
    src = load_record_file(str(bad))
    assert src.count == 2 and list(src.refused) == [1] and src.problem(1) == "line 2: not JSON"
    assert src.refused[1].startswith("bad.jsonl: line 2: invalid JSON")
    bad.write_text("{oops\n")  # no game loads: the file is refused, naming it and the line
    with pytest.raises(ValueError, match=r"bad\.jsonl: not a spades_env game record: invalid JSON"):
        load_record_file(str(bad))
    with pytest.raises(ValueError, match="no such record file"):
        create_app(str(tmp_path / "db2.sqlite3"), records=[str(tmp_path / "missing.json")])


def test_arena_records_open_in_the_replay_view(tmp_path, capsys):
    """The arena's --records file is listed by the replay view and every game replays through
    the API: the deals of the pair's seed, the seats' names, and the hand points and wins the
    arena counted."""
    from spades_env.arena import main as arena_main
    out, res = tmp_path / "arena.jsonl", tmp_path / "arena.json"
    assert arena_main(["--team0", "medium", "--team1", "easy", "--games", "4", "--target", "150",
                       "--seed", "3", "--quiet", "--records", str(out),
                       "--out", str(res)]) == 0
    capsys.readouterr()
    result = json.loads(res.read_text())
    app = create_app(str(tmp_path / "db.sqlite3"), records=[str(out)])
    c = _client(app)
    assert c.get("/api/watch").json()["records"] == [
        {"key": "file/0", "name": "arena.jsonl", "kind": "games", "games": 4, "refused": 0}]
    points, won = [0, 0], [0, 0]
    for i in range(4):
        pair, rot = divmod(i, 2)
        r = c.get(f"/api/watch/file/0?game={i}")
        assert r.status_code == 200, r.text
        rep = whole_replay(c, f"/api/watch/file/0?game={i}", r.json())
        assert rep["title"] == f"arena.jsonl #{i}"
        a, b = "(A: medium)", "(B: easy)"
        assert rep["players"] == ([f"North {a}", f"East {b}", f"South {a}", f"West {b}"]
                                  if rot == 0 else
                                  [f"North {b}", f"East {a}", f"South {b}", f"West {a}"])
        first = rep["frames"][0]
        deal = SpadesGame(Rules(target_score=150), seed=result["pair_seeds"][pair])
        assert [sorted(h) for h in first["hands"]] == [
            sorted(card_str(x) for x in mask_to_cards(deal.hands[s])) for s in range(4)]
        assert all(len(h) == 13 for h in first["hands"])
        tables = [f["hand_result"] for f in rep["frames"] if f["hand_result"]]
        for t in tables:
            points[rot] += t["teams"][0]["hand_points"]
            points[1 - rot] += t["teams"][1]["hand_points"]
        last = rep["frames"][-1]
        assert last["scores"] == [tables[-1]["teams"][0]["total"], tables[-1]["teams"][1]["total"]]
        if rep["winner"] is not None:
            assert max(last["scores"]) >= 150
            won[(rep["winner"] + rot) % 2] += 1
    assert points == [result["sides"][0]["points"], result["sides"][1]["points"]]
    assert won == [result["sides"][0]["games_won"], result["sides"][1]["games_won"]]


# ---------------------------------------------------------------------- house rules
def rules_choice(view: dict) -> dict:
    """A test player for any rules (from its view only): bids 3 or the legal count nearest it
    (``bidding.bids``), Nil when only Nil is legal, looks at its cards when it must decide
    Blind Nil first; plays like ``human_choice``."""
    b = view["bidding"]
    if not b:
        return human_choice(view)
    if b["look"]:
        return {"action": 67, "seq": view["seq"]}
    bid = min(b["bids"], key=lambda x: (x == 0, abs(x - 3)))
    return {"action": BID_OFFSET + bid, "seq": view["seq"]}


def test_new_game_with_a_rules_mapping(tmp_path):
    """A game under a house preset with a field changed: created from the rules mapping, its
    rules shown (line, full list, spec) and stored, the engine's reason for a bid it refuses,
    illegal bids marked from the legal actions, played to the end with no hidden card on the
    wire, and its statistics kept under its rules."""
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=2)
    c = _client(app)
    config = c.get("/api/config").json()
    assert config["presets"] == {k: r.to_dict() for k, r in PRESETS.items()}
    assert "nil_pass" in config["rule_fields"] and "target_score" in config["rule_fields"]
    rules = {"preset": "suicide", "target_score": 100}
    r = c.post("/api/games", json={"difficulty": "easy", "rules": rules})
    assert r.status_code == 201, r.text
    assert_no_leak(app, r)
    view = r.json()
    want = Rules.parse(rules)
    assert view["rules"]["spec"] == want.spec() and view["rules"]["fields"] == want.to_dict()
    assert view["rules"]["line"] == "Suicide \u00b7 board 4 \u00b7 100/-200"
    assert "Bidding: suicide: in each partnership exactly one partner bids Nil" in \
        view["rules"]["items"]
    assert view["target"] == 100
    assert _true_game(app, view["id"]).rules == want
    player = app.state.store._db.execute("SELECT player FROM games").fetchone()[0]
    row = app.state.store.load_game(view["id"], player)
    assert row.rules == want.spec() and row.target == 100
    gid = view["id"]
    refused_once = False
    while not (view["result"] and not view["hand_table"]):
        if view["hand_table"]:
            r = c.post(f"/api/games/{gid}/next")
        elif view["your_turn"]:
            b = view["bidding"]
            if b and not refused_once and b["refused"]:
                # the legal bids are those of the engine; each refused one says why
                g = _true_game(app, gid)
                legal = [a - BID_OFFSET for a in g.legal_actions() if a < BID_OFFSET + 14]
                assert b["bids"] == legal
                assert set(b["refused"]) == {str(x) for x in range(14)} - {str(x) for x in legal}
                bad = int(next(iter(b["refused"])))
                r = c.post(f"/api/games/{gid}/action",
                           json={"action": BID_OFFSET + bad, "seq": view["seq"]})
                assert r.status_code == 422
                assert r.json()["detail"] == b["refused"][str(bad)]
                assert r.json()["detail"] == g.explain_illegal(BID_OFFSET + bad, seat=HUMAN_SEAT)
                assert "suicide" in r.json()["detail"] or "at least 4" in r.json()["detail"]
                refused_once = True
                continue
            r = c.post(f"/api/games/{gid}/action", json=rules_choice(view))
        else:
            r = c.post(f"/api/games/{gid}/advance", json={"seq": view["seq"]})
        assert r.status_code == 200, r.text
        assert_no_leak(app, r)
        view = r.json()
        assert view["rules"]["spec"] == want.spec()
    assert refused_once
    g = _true_game(app, gid)
    for hr in g.hand_results:  # suicide: exactly one Nil in each partnership
        assert all((hr.bids[t] == 0) != (hr.bids[t + 2] == 0) for t in (0, 1))
    st = view["result"]["stats"]
    assert st["rules"] == want.spec() and st["games"] == 1 and st["target"] == 100
    assert st["rules_line"] == view["rules"]["line"]
    # a standard game to 250 is kept apart from the suicide game
    stats = c.get("/api/stats").json()["stats"]
    assert [(s["difficulty"], s["rules"]) for s in stats] == [("easy", want.spec())]
    # the listing of finished games names the rules too
    games = c.get("/api/watch").json()["games"]
    assert games[0]["rules"] == view["rules"]["line"]


def test_nil_passing_exchange_through_the_api(tmp_path):
    """Nil passing: the player bids Nil, the partner passes 2 cards, the player passes 2 back,
    through the API as in the Blind Nil exchange; the status says so, and no hidden card (nor
    a card the partner passed to an opponent's Nil) appears on the wire."""
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=4)
    c = _client(app)
    rules = {"preset": "standard", "nil_pass": 2, "target_score": 100}
    for attempt in range(12):
        view = c.post("/api/games", json={"difficulty": "easy", "rules": rules}).json()
        gid = view["id"]
        assert view["rules"]["line"] == "Custom \u00b7 Nil pass 2 \u00b7 100"
        while not view["your_turn"]:
            r = c.post(f"/api/games/{gid}/advance")
            assert_no_leak(app, r)
            view = r.json()
        if view["seats"][0]["bid"] == 0 or not view["bidding"]["nil"]:
            continue  # the partner bid Nil first: no exchange for the player's Nil; next deal
        own = {h["card"] for h in view["hand"]}
        r = c.post(f"/api/games/{gid}/action", json={"action": BID_OFFSET, "seq": view["seq"]})
        assert r.status_code == 200
        view = r.json()
        while not view["your_turn"]:
            r = c.post(f"/api/games/{gid}/advance")
            assert_no_leak(app, r)
            view = r.json()
            if view["seats"][0]["bid"] == 0:
                break
        if view["seats"][0]["bid"] == 0:
            continue  # the partner bid Nil too: no exchange
        break
    else:
        pytest.fail("no deal where the player alone bid Nil")
    assert view["phase"] == "exchange"
    assert view["status"] == "Your turn: pass a card to your partner (Nil passing)"
    assert len(view["hand"]) == 15 and all(h["legal"] for h in view["hand"])
    assert len({h["card"] for h in view["hand"]} - own) == 2  # the partner's 2 cards
    for _ in range(2):
        r = c.post(f"/api/games/{gid}/action", json={"action": view["hand"][0]["action"],
                                                       "seq": view["seq"]})
        assert r.status_code == 200
        assert_no_leak(app, r)
        view = r.json()
        assert view["last_move"]["kind"] == "pass" and view["last_move"]["text"] == \
            "passes a card"
    assert len(view["hand"]) == 13
    g = _true_game(app, gid)
    assert [(f, t) for f, t, _ in g.exchanges] == [(0, 2), (0, 2), (2, 0), (2, 0)]


def test_refused_rules_create_nothing(tmp_path):
    """A combination the engine refuses is answered 422 with the engine's one line, by the
    check route and by the new game route, and nothing is stored."""
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST)
    c = _client(app)
    bad = {"preset": "mirror", "min_team_bid": 4}
    with pytest.raises(ValueError) as e:
        Rules.parse(bad)
    for path, body in (("/api/rules", {"rules": bad}),
                       ("/api/games", {"difficulty": "easy", "rules": bad}),
                       ("/api/games", {"difficulty": "easy", "rules": "mirror,min_team_bid=4"})):
        r = c.post(path, json=body)
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == str(e.value) and "\n" not in r.json()["detail"]
    for body, part in (({"rules": {"preset": "chess"}}, "unknown rules preset 'chess'"),
                       ({"rules": {"target_score": "100"}}, "target_score must be an int"),
                       ({"rules": {"nil_pass": 5}}, "nil_pass must be an int 0..3"),
                       ({"rules": {"colour": 1}}, "unknown rules field"),
                       ({"rules": {"preset": "house"}, "target": 250}, "inside rules"),
                       ({"rules": ["house"]}, "bad request")):
        r = c.post("/api/games", json={"difficulty": "easy", **body})
        assert r.status_code == 422 and part in r.json()["detail"], r.text
    assert app.state.store._db.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 0
    assert c.get("/api/games").json() == {"games": []}
    ok = c.post("/api/rules", json={"rules": "house,nil_pass=1"})
    assert ok.status_code == 200 and ok.json()["spec"] == "standard,loss_threshold=-200," \
        "blind_nil=True,nil_pass=1"
    assert app.state.store._db.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 0


_SCHEMA_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE games (id TEXT PRIMARY KEY, player TEXT NOT NULL, difficulty TEXT NOT NULL,
    target INTEGER NOT NULL, lineup TEXT NOT NULL, seed INTEGER NOT NULL, state TEXT NOT NULL,
    moves INTEGER NOT NULL, hands_acked INTEGER NOT NULL DEFAULT 0,
    notes TEXT NOT NULL DEFAULT '{}', over INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL,
    updated REAL NOT NULL);
CREATE INDEX games_player ON games (player, updated);
CREATE TABLE moves (game_id TEXT NOT NULL REFERENCES games (id), seq INTEGER NOT NULL,
    seat INTEGER NOT NULL, action INTEGER NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (game_id, seq));
CREATE TABLE stats (player TEXT NOT NULL, difficulty TEXT NOT NULL, target INTEGER NOT NULL,
    games INTEGER NOT NULL DEFAULT 0, wins INTEGER NOT NULL DEFAULT 0,
    hands INTEGER NOT NULL DEFAULT 0, points INTEGER NOT NULL DEFAULT 0,
    contracts INTEGER NOT NULL DEFAULT 0, contracts_made INTEGER NOT NULL DEFAULT 0,
    nil_bids INTEGER NOT NULL DEFAULT 0, nil_made INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (player, difficulty, target));
"""


def test_game_saved_before_house_rules_still_loads(tmp_path):
    """A schema-1 database (games with only target and the Blind Nil switch in the engine state,
    statistics by target) opens: the game lists, loads and plays on with its rules, and the old
    statistics are filed under the plain rules of their length."""
    db = tmp_path / "old.sqlite3"
    pid = "p" * 24
    g = SpadesGame(Rules(target_score=250, blind_nil=True), seed=7)
    con = sqlite3.connect(db)
    con.executescript(_SCHEMA_V1)
    con.executemany("INSERT INTO meta VALUES (?, ?)",
                    [("app", "spades_env.play"), ("schema_version", "1")])
    con.execute("INSERT INTO games VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ("oldgame", pid, "easy", 250, json.dumps({"0": "medium", "1": "medium",
                                                          "3": "medium"}),
                 7, g.to_json(), 0, 0, json.dumps({"hands": 0}), 0, 1.0, 2.0))
    con.execute("INSERT INTO stats (player, difficulty, target, games, wins) "
                "VALUES (?, 'easy', 250, 2, 1)", (pid,))
    con.execute("INSERT INTO stats (player, difficulty, target, games, wins) "
                "VALUES (?, 'hard', 500, 1, 0)", (pid,))
    con.commit()
    con.close()
    app = create_app(str(db), lineups=FAST)
    c = _client(app, cookies={COOKIE: pid})
    listed = c.get("/api/games").json()["games"]
    assert [(x["id"], x["rules"], x["damaged"]) for x in listed] == [
        ("oldgame", "Custom \u00b7 Blind Nil \u00b7 250", None)]
    view = c.get("/api/games/oldgame").json()
    assert view["rules"]["spec"] == "standard,target_score=250,blind_nil=True"
    assert view["blind_nil_rule"] is True and view["target"] == 250
    assert app.state.store.load_game("oldgame", pid).rules == view["rules"]["spec"]
    while not view["your_turn"]:
        view = c.post("/api/games/oldgame/advance", json={"seq": view["seq"]}).json()
    assert view["bidding"]["blind_nil"] is True  # the old game's Blind Nil switch
    stats = {(s["difficulty"], s["rules"]): s for s in c.get("/api/stats").json()["stats"]}
    assert set(stats) == {("easy", "short"), ("hard", "standard")}
    assert stats[("easy", "short")]["games"] == 2 and stats[("easy", "short")]["target"] == 250
    assert stats[("easy", "short")]["rules_line"] == "Short \u00b7 250"
    meta = dict(app.state.store._db.execute("SELECT key, value FROM meta").fetchall())
    assert meta["schema_version"] == "2"
    Store(str(db)).close()  # opens again as schema 2


def test_rules_line_and_list_name_the_scoring_and_lead_switches():
    """The settings panel offers the 2-of-clubs lead, big bids and the moon (``PANEL_FIELDS``), and
    the rules line and list at the table name them."""
    from spades_env import Rules
    from spades_env.play.session import PANEL_FIELDS, rules_info
    assert {"two_of_clubs_leads", "big_bid_double", "moon_wins"} <= set(PANEL_FIELDS)
    info = rules_info(Rules(two_of_clubs_leads=True, big_bid_double=10, moon_wins=True))
    assert info["line"] == "Custom \u00b7 2\u2663 leads \u00b7 10 for 200 \u00b7 moon wins \u00b7 500"
    assert "The holder of the 2 of clubs leads it to the first trick" in info["items"]
    assert "A made team bid of 10 or more scores 20 per trick" in info["items"]
    assert "A team that bids 13 and takes every trick wins the game" in info["items"]


def test_a_jokers_game_names_the_jokers_and_shows_only_the_players_cards(tmp_path):
    """docs/rules.md, Jokers: a game under ``joker_joker_deuce_deuce`` through the API. Every
    response names the player's own cards as the engine does under jokers (``BJ``, ``LJ`` for
    ids 26 and 0; ``card_str(..., jokers=True)``), sorted with the trumps first, and no other
    seat's card (jokers included) is on the wire; the rules line and list say Joker Joker Deuce
    Deuce; a hand is played to its score table."""
    from spades_env.cards import BIG_JOKER, LITTLE_JOKER
    from spades_env.play.session import PANEL_FIELDS, display_order
    assert "jokers" in PANEL_FIELDS
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=3)
    c = _client(app)
    r = c.post("/api/games", json={"difficulty": "easy",
                                   "rules": {"preset": "joker_joker_deuce_deuce",
                                             "target_score": 100}})
    assert r.status_code == 201, r.text
    view = r.json()
    assert view["rules"]["line"] == "Joker Joker Deuce Deuce \u00b7 100"
    assert any(i.startswith("Joker Joker Deuce Deuce: a big and a little joker") for i in
               view["rules"]["items"])
    gid, jokers_seen = view["id"], set()
    while not view["hand_table"]:
        g = _true_game(app, gid)
        deck = g.rules.deck
        mine = display_order(mask_to_cards(g.hands[HUMAN_SEAT]), deck)
        assert [h["card"] for h in view["hand"]] == [card_str(x, jokers=True) for x in mine]
        hidden = {card_str(x, jokers=True) for s in range(4) if s != HUMAN_SEAT
                  for x in mask_to_cards(g.hands[s])}
        text = r.text.replace(gid, "")
        for name in hidden:
            assert not re.search(rf"(?<![0-9A-Za-z]){name}(?![0-9A-Za-z])", text), name
        jokers_seen |= {h["card"] for h in view["hand"]} & {"BJ", "LJ"}
        jokers_seen |= {t["card"] for t in view["trick"]} & {"BJ", "LJ"}
        r = next_move(c, view)
        assert r.status_code == 200, r.text
        view = r.json()
    g = _true_game(app, gid)
    assert {card_str(m, jokers=True) for m in g.moves if m < 52} >= {"BJ", "LJ"}
    assert (g.rules.deck.suit_of[BIG_JOKER], g.rules.deck.suit_of[LITTLE_JOKER]) == (3, 3)


def test_a_checkpoint_without_the_rules_piece_is_refused_under_other_rules(tmp_path):
    """The shipped network (observation version 2, trained under standard) cannot see house
    rules: a game against it under another preset is refused before anything is stored, with
    the reason; under the standard rules and a shorter target it starts."""
    pytest.importorskip("torch")
    app = create_app(str(tmp_path / "db.sqlite3"), checkpoint=SHIPPED)
    c = _client(app)
    r = c.post("/api/games", json={"difficulty": "checkpoint", "rules": {"preset": "mirror"}})
    assert r.status_code == 409, r.text
    assert "trained under the rules 'standard'" in r.text and "cannot play 'mirror'" in r.text
    assert c.get("/api/games").json() == {"games": []}  # nothing stored
    r = c.post("/api/games", json={"difficulty": "checkpoint", "target": 250})
    assert r.status_code == 201, r.text
