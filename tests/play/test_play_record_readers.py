"""One reader and one error path for every record file: the same file gets the same answer on
every replay route, from ``--records`` (``spades play``, ``create_app``) and from the upload."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from spades_env import Rules, SpadesGame  # noqa: E402
from spades_env.play import cli, replay  # noqa: E402
from spades_env.play.analysis import Analyst  # noqa: E402
from spades_env.play.app import COOKIE, create_app  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED = os.path.join(ROOT, "checkpoints", "records", "hard_records.npz")


class NoAnalysis(Analyst):
    def __init__(self):
        super().__init__(None)


def _client(app) -> TestClient:
    c = TestClient(app, raise_server_exceptions=False)
    c.cookies.set(COOKIE, "p" * 20)
    return c


def _game(seed: int = 3, hands: int = 2) -> SpadesGame:
    """A game of ``hands`` hands of random legal moves (bids of 3, so it stays short)."""
    g = SpadesGame(Rules(target_score=1000), seed=seed)
    rng = np.random.default_rng(seed)
    while g.hand_number < hands:
        la = g.legal_actions()
        g.apply(55 if 55 in la else la[int(rng.integers(len(la)))])
    return g


def _record(g: SpadesGame) -> str:
    return json.dumps(replay.game_record(g, ["A", "B", "C", "D"]))


def _hands(tmp_path, name: str, n: int = 3, swap=(), spoil=()) -> str:
    """``n`` teacher hands of the shipped records; ``swap``: hands whose moves 10 and 20 are
    swapped (move 10 then no longer legal); ``spoil``: hands whose first bid is a card."""
    d = dict(np.load(SHIPPED))
    for k in ("seed", "scores", "bags", "moves"):
        d[k] = d[k][:n].copy()
    for h in swap:
        d["moves"][h, 10], d["moves"][h, 20] = d["moves"][h, 20], d["moves"][h, 10]
    for h in spoil:
        d["moves"][h, 0] = d["moves"][h, 4]
    path = str(tmp_path / name)
    np.savez(path, **d)
    return path


def _bad_game_line(g: SpadesGame) -> str:
    d = json.loads(_record(g))
    d["game"]["moves"][5] = (d["game"]["moves"][5] + 1) % 52
    return json.dumps(d)


ROUTES = ["", "/hand/0", "/analysis?move=0", "/analysis?move=30"]


@pytest.mark.parametrize("fmt", ["npz", "jsonl"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_refused_game_gets_one_answer_on_every_route(tmp_path, fmt, route):
    """A game whose moves the engine refuses is found when the file is read; every route of it
    answers 422 with that reason, given with --records or uploaded; the file's other games
    open. (Before: the summary and hand answered 422, the analysis 500.)"""
    g = _game()
    if fmt == "npz":
        path = _hands(tmp_path, "bad.npz", swap=(0,))
        why = "bad.npz: hand 0: move 10 (16) is refused by the engine: must follow suit"
    else:
        path = str(tmp_path / "bad.jsonl")
        with open(path, "w") as f:
            f.write(_bad_game_line(g) + "\n" + _record(g) + "\n")
        why = "bad.jsonl: line 1: corrupt spades_env saved game"
    c = _client(create_app(str(tmp_path / "db.sqlite3"), records=[path], analyst=NoAnalysis()))
    with open(path, "rb") as f:
        up = c.post("/api/watch/upload", content=f.read(),
                    headers={"X-File-Name": os.path.basename(path)})
    assert up.status_code == 200, up.text
    assert up.json()["game"] == 1 and up.json()["games"][0]["refused"].startswith(why)
    assert c.get("/api/watch").json()["records"][0]["refused"] == 1
    answers = []
    for key in ("file/0", up.json()["key"]):
        base, _, query = route.partition("?")
        r = c.get(f"/api/watch/{key}{base}?game=0" + (f"&{query}" if query else ""))
        assert r.status_code == 422, r.text
        answers.append(r.json()["detail"])
        ok = c.get(f"/api/watch/{key}{base}?game=1" + (f"&{query}" if query else ""))
        assert ok.status_code == 200, ok.text
    assert answers[0] == answers[1] and answers[0].startswith(why)


def _files(tmp_path) -> dict[str, bytes]:
    g, h = _game(3), _game(4)
    rec, save = _record(g), g.to_json()
    one = json.loads(rec)
    one["players"] = "nobody"
    deep = "[" * 100_000 + "]" * 100_000
    hands = open(_hands(tmp_path, "h.npz"), "rb").read()
    all_bad = open(_hands(tmp_path, "hb.npz", n=2, spoil=(0, 1)), "rb").read()
    return {
        "one.json": rec.encode(),
        "save.json": save.encode(),
        "bom.json": b"\xef\xbb\xbf" + rec.encode(),
        "pretty.json": json.dumps(json.loads(rec), indent=1).encode(),
        "two.jsonl": (rec + "\n\n" + _record(h) + "\n").encode(),
        "lines.json": (rec + "\n" + save + "\n").encode(),  # JSON lines in a .json name
        "single.jsonl": (rec + "\n").encode(),
        "some_bad.jsonl": (_bad_game_line(g) + "\n" + rec + "\n").encode(),
        "hands.npz": hands,
        "hands.bin": hands,  # the format is the content, not the name
        "all_bad.npz": all_bad,
        "bad.json": _bad_game_line(g).encode(),
        "players.json": json.dumps(one).encode(),
        "chess.json": b'{"format": "chess"}',
        "empty.jsonl": b"\n \n",
        "latin1.json": rec.encode()[:-2] + b"\xe9}",
        "broken.jsonl": (rec + "\n{oops\n").encode(),
        "deep.json": deep.encode(),
        "text.npz": b"not an archive",
        "zip.npz": b"PK\x03\x04 not really",
    }


def test_the_command_line_and_the_upload_answer_a_file_the_same(tmp_path, capsys):
    """Each file is accepted by ``--records`` (``create_app``; ``spades play`` exits 2 with one
    ``error:`` line otherwise) exactly when the upload accepts it, with the same games and the
    same reason (the path in place of the name). (Before: a teacher ``.npz`` was refused by the
    upload, JSON lines in a ``.json`` file by ``--records``; a JSON lines file with one line that
    is not JSON by both.)"""
    outcomes = {}
    for name, data in _files(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(data)
        db = str(tmp_path / f"{name}.sqlite3")
        try:
            app = create_app(db, records=[str(path)], analyst=NoAnalysis())
            listed = _client(app).get("/api/watch").json()["records"][0]
            cli_answer = ("ok", listed["games"], listed["refused"])
        except ValueError as e:
            cli_answer = ("refused", str(e).replace(str(path), name))
            assert cli.main(["--no-browser", "--db", db, "--port", "1",
                             "--records", str(path)]) == 2
            err = capsys.readouterr().err
            assert err == f"error: {e}\n"
        r = _client(create_app(str(tmp_path / "up.sqlite3"), analyst=NoAnalysis())).post(
            "/api/watch/upload", content=data, headers={"X-File-Name": name})
        assert r.status_code in (200, 413, 422), (name, r.status_code, r.text)
        if r.status_code == 200:
            up = r.json()
            up_answer = ("ok", up["game_count"], sum(g["refused"] is not None
                                                     for g in up["games"]))
        else:
            up_answer = ("refused", r.json()["detail"])
        assert cli_answer == up_answer, name
        outcomes[name] = cli_answer[0]
    assert [n for n, o in outcomes.items() if o == "ok"] == [
        "one.json", "save.json", "bom.json", "pretty.json", "two.jsonl", "lines.json",
        "single.jsonl", "some_bad.jsonl", "hands.npz", "hands.bin", "broken.jsonl"]
    # a line that is not JSON is one refused game, not a refused file (before: the whole file)
    assert _client(create_app(str(tmp_path / "b.sqlite3"), analyst=NoAnalysis())).post(
        "/api/watch/upload", content=_files(tmp_path)["broken.jsonl"],
        headers={"X-File-Name": "broken.jsonl"}).json()["games"][1]["problem"] == \
        "line 2: not JSON"


def test_the_shipped_teacher_records_open_by_upload():
    """The shipped ``hard_records.npz`` (5,600 hands) is checked hand by hand when read; an
    upload holds at most ``MAX_UPLOAD_GAMES`` hands (413)."""
    src = replay.load_record_file(SHIPPED)
    assert src.kind == "teacher" and src.count == 5600 and not src.refused
    with open(SHIPPED, "rb") as f:
        data = f.read()
    with pytest.raises(replay.TooLarge, match="declares 5600 records; at most 2000"):
        replay.read_records(data, "hard_records.npz", upload=True)


def test_names_that_are_not_unicode_are_answered_not_500(tmp_path):
    """A lone surrogate reaches an answer from a record's player name, a teacher's name or a
    ``--records`` file whose name is not UTF-8; every route answers it (as a ``\\uXXXX``
    escape) with its usual status, never 500. (Before: 500 on the listing, the replay routes,
    the upload and a refusal naming the file.)"""
    g = _game(3)
    bad_name = os.fsencode(str(tmp_path)) + b"/caf\xe9.jsonl"
    with open(bad_name, "wb") as f:
        f.write((_record(g) + "\n" + _bad_game_line(g) + "\n").encode())
    c = _client(create_app(str(tmp_path / "db.sqlite3"), records=[os.fsdecode(bad_name)],
                           analyst=NoAnalysis()))
    listed = c.get("/api/watch")
    assert listed.status_code == 200 and listed.json()["records"][0]["name"] == "caf\udce9.jsonl"
    for url in ["/api/watch/file/0", "/api/watch/file/0/hand/0",
                "/api/watch/file/0/analysis?move=0"]:
        assert c.get(url).status_code == 200, url
        r = c.get(url + ("&" if "?" in url else "?") + "game=1")
        assert r.status_code == 422 and r.json()["detail"].startswith("caf\udce9.jsonl: line 2")
    one = json.loads(_record(g))
    one["players"][1] = "B\ud800"
    r = c.post("/api/watch/upload", content=json.dumps(one).encode(),
               headers={"X-File-Name": "p.json"})
    assert r.status_code == 200 and r.json()["players"][1] == "B\ud800"
    d = dict(np.load(SHIPPED))
    d = {k: (v[:2] if k in ("seed", "scores", "bags", "moves") else v) for k, v in d.items()}
    d["teacher"] = np.array("t\ud800")
    path = tmp_path / "t.npz"
    np.savez(path, **d)
    r = c.post("/api/watch/upload", content=path.read_bytes(), headers={"X-File-Name": "t.npz"})
    assert r.status_code == 200 and r.json()["players"][0] == "North (t\ud800)"


@pytest.mark.parametrize("ref", ["%C2%B2", "%D9%A3", "9" * 5000, "-0", "+0", "0x0", " 0"])
def test_a_record_file_ref_that_is_not_a_small_number_is_404(tmp_path, ref):
    """``file/REF`` names a ``--records`` file by its number (ASCII digits); anything else is
    404 on every replay route. (Before: ``²`` (``isdigit`` but not ``int``) or 5,000 digits
    (past Python's int conversion limit) answered 500, and ``٣`` opened file 3.)"""
    path = tmp_path / "a.json"
    path.write_text(_record(_game(3)))
    c = _client(create_app(str(tmp_path / "db.sqlite3"), records=[str(path)],
                           analyst=NoAnalysis()))
    for sub in ["", "/hand/0", "/analysis?move=0"]:
        r = c.get(f"/api/watch/file/{ref}{sub}")
        assert r.status_code == 404, (sub, r.text)
        assert r.json()["detail"].startswith("no record file")
    assert c.get("/api/watch/file/00").status_code == 200


def test_replay_frames_of_a_jokers_game_use_its_deck():
    """docs/rules.md, Jokers: the replay of a game under ``joker_joker_deuce_deuce`` names the
    jokers BJ and LJ, shows the hands with the trumps first, and every completed trick's winner
    is the engine's (the big joker wins whatever is led)."""
    from spades_env import Rules, SpadesGame
    from spades_env.bots import make_bot
    from spades_env.play.replay import frames_from_game
    rules = Rules.preset("joker_joker_deuce_deuce")
    g = SpadesGame(rules, seed=8)
    bots = [make_bot("medium", seed=s) for s in range(4)]
    winners = []
    while g.hand_number == 0:
        before = g.trick_number
        g.apply(bots[g.current_player].act(g.view(g.current_player)))
        if g.trick_number != before or g.hand_number:
            winners.append(g.trick_leader if not g.hand_number else None)
    frames = frames_from_game(g)["frames"]
    names = {x for f in frames for h in f["hands"] for x in h}
    assert {"BJ", "LJ"} <= names and not {"2C", "2H"} & names
    first = frames[0]["hands"]
    for hand in first:
        trumps = [x for x in hand if x in ("BJ", "LJ", "2D") or x.endswith("S")]
        assert hand[:len(trumps)] == trumps  # spades (the jokers' deck's) shown first
        order = ["BJ", "LJ", "2D", "2S", "AS", "KS", "QS", "JS", "10S", "9S", "8S", "7S", "6S",
                 "5S", "4S", "3S"]
        assert trumps == sorted(trumps, key=order.index)
    done = [f for f in frames if f["trick_complete"]]
    assert len(done) == 13
    bj = [f for f in done if any(t["card"] == "BJ" for t in f["trick"])]
    assert len(bj) == 1 and [t["seat"] for t in bj[0]["trick"] if t["card"] == "BJ"] == \
        [bj[0]["trick_winner"]]
    assert [f["trick_winner"] for f in done[:-1]] == winners[:-1]


def test_jokers_records_replay_under_their_rules(tmp_path):
    """Both record formats keep the jokers (docs/rules.md, Jokers). Hand records (``.npz``) whose
    ``rules`` is ``joker_joker_deuce_deuce`` replay their 56 moves under the jokers' deck and
    name BJ and LJ; a JSON game record keeps ``jokers`` in its rules. The same moves labelled
    ``standard`` do not replay: somewhere a seat follows a diamond lead with the 2D while
    holding other diamonds, or leads a joker as a spade, which the standard deck refuses."""
    from spades_env.records import HAND_FORMAT, HAND_VERSION, MOVES_PER_HAND
    rules = Rules.preset("joker_joker_deuce_deuce")
    seeds, moves = [], []
    for s in range(12):
        g = SpadesGame(rules, seed=100 + s)
        rng = np.random.default_rng(s)
        while g.hand_number == 0:
            la = g.legal_actions()
            g.apply(int(la[int(rng.integers(len(la)))]))
        assert len(g.moves) == MOVES_PER_HAND
        seeds.append(100 + s)
        moves.append(g.moves)

    def write(preset):
        path = tmp_path / f"{preset}.npz"
        np.savez(path, format=np.array(HAND_FORMAT), version=np.array(HAND_VERSION),
                 teacher=np.array("random"), rules=np.array(preset),
                 seed=np.array(seeds, dtype=np.int64),
                 scores=np.zeros((len(seeds), 2), dtype=np.int16),
                 bags=np.zeros((len(seeds), 2), dtype=np.int8),
                 moves=np.array(moves, dtype=np.uint8))
        return path.read_bytes()

    src = replay.read_records(write("joker_joker_deuce_deuce"), "j.npz")
    names = set()
    for i in range(len(seeds)):
        rg = src.game(i)
        assert rg.rules.jokers
        names |= {x for f in rg.full()["frames"] for h in f["hands"] for x in h}
    assert {"BJ", "LJ"} <= names and not {"2C", "2H"} & names
    with pytest.raises(replay.RecordError, match="refused by the engine"):
        replay.read_records(write("standard"), "s.npz")
    back = SpadesGame.from_dict(json.loads(_record(g))["game"])
    assert back.rules == rules and back.moves == g.moves
