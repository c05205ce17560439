"""The play server's requests and replays: bodies and Host headers refused at the door, uploads
bounded and off the event loop, replays served hand by hand, the hint and the replay analysis
(from one seat's view only), the list of games to continue, the finished hand behind its score
table.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from spades_env import Rules, SpadesGame  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.cards import BID_OFFSET  # noqa: E402
from spades_env.play import replay  # noqa: E402
from spades_env.play.analysis import Analyst, default_checkpoint  # noqa: E402
from spades_env.play.app import COOKIE, create_app  # noqa: E402
from spades_env.play.session import HUMAN_SEAT, LINEUPS  # noqa: E402

FAST = {k: {"partner": "medium", "opponents": "easy"} for k in LINEUPS}  # fast bots


class NoAnalysis(Analyst):
    def __init__(self):
        super().__init__(None)


def _client(app, player="p" * 20) -> TestClient:
    c = TestClient(app)
    c.cookies.set(COOKIE, player)
    return c


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """The app under uvicorn in a thread (a real event loop, real sockets)."""

    def __init__(self, app):
        self.port = _free_port()
        self.srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                 log_level="warning"))
        self.thread = threading.Thread(target=self.srv.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while not self.srv.started:
            assert time.time() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.port}"

    def raw(self, data: bytes) -> tuple[int, bytes]:
        """Send raw bytes; the status code and the body of the answer."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(data)
            out = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    break
                if not chunk:
                    break
                out += chunk
                if b"\r\n\r\n" in out:
                    head, _, body = out.partition(b"\r\n\r\n")
                    n = [int(h.split(b":")[1]) for h in head.split(b"\r\n")
                         if h.lower().startswith(b"content-length:")]
                    if n and len(body) >= n[0]:
                        break
        head, _, body = out.partition(b"\r\n\r\n")
        return int(head.split(b" ")[1]), body

    def stop(self):
        self.srv.should_exit = True
        self.thread.join(10)


@pytest.fixture()
def served(tmp_path):
    s = Served(create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=1,
                          analyst=NoAnalysis()))
    yield s
    s.stop()


# ---------------------------------------------------------------------- at the door
def test_chunked_body_over_the_limit_is_413(served):
    body = b'{"difficulty": "easy", "pad": "' + b"x" * 6000 + b'"}'
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 1000]), body[i:i + 1000])
                      for i in range(0, len(body), 1000)) + b"0\r\n\r\n"
    status, answer = served.raw(
        b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunks)
    assert status == 413, answer
    assert json.loads(answer)["detail"] == ("request body too large: more than 4096 bytes, the "
                                            "limit is 4096")
    # a chunked body within the limit still reaches the route whole
    ok = json.dumps({"difficulty": "easy", "target": 250}).encode()
    status, answer = served.raw(
        b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        + b"%x\r\n%s\r\n" % (10, ok[:10]) + b"%x\r\n%s\r\n" % (len(ok) - 10, ok[10:])
        + b"0\r\n\r\n")
    assert status == 201 and json.loads(answer)["target"] == 250


def test_empty_or_missing_host_header_refused(served):
    status, answer = served.raw(b"GET /api/config HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n")
    assert status == 400 and json.loads(answer)["detail"] == "missing or empty Host header"
    status, answer = served.raw(b"GET /api/config HTTP/1.0\r\n\r\n")
    assert status == 400 and json.loads(answer)["detail"] == "missing or empty Host header"
    status, answer = served.raw(b"GET /api/config HTTP/1.1\r\nHost: evil.example\r\n"
                                b"Connection: close\r\n\r\n")
    assert status == 400 and "not served here" in json.loads(answer)["detail"]
    status, _ = served.raw(b"GET /api/config HTTP/1.1\r\nHost: localhost:1\r\n"
                           b"Connection: close\r\n\r\n")
    assert status == 200


def test_local_names_share_one_host(tmp_path):
    """The page asked for as 127.0.0.1 is sent to the canonical localhost (one cookie jar)."""
    app = create_app(str(tmp_path / "db.sqlite3"), canonical_host="localhost",
                     analyst=NoAnalysis())
    c = TestClient(app, follow_redirects=False)
    r = c.get("http://127.0.0.1:8123/?delay=0")
    assert r.status_code == 307 and r.headers["location"] == "http://localhost:8123/?delay=0"
    assert c.get("http://localhost:8123/").status_code == 200
    assert c.get("http://127.0.0.1:8123/api/config").status_code == 200  # the API is not moved


# ---------------------------------------------------------------------- uploads and replays
def _long_record(hands: int, seed: int = 1) -> bytes:
    rules = Rules(target_score=1_000_000, bag_penalty=0, nil_bonus=0)
    g = SpadesGame(rules, seed=seed)
    rng = np.random.default_rng(seed)
    while g.hand_number < hands:
        la = g.legal_actions()
        g.apply(55 if 55 in la else la[int(rng.integers(len(la)))])
    return json.dumps({"format": "spades_env.game_record", "version": 1,
                       "players": ["N", "E", "S", "W"], "game": g.to_dict()},
                      separators=(",", ":")).encode()


def test_upload_is_off_the_event_loop_and_answers_one_hand(served):
    body = _long_record(600)
    assert len(body) > 350_000
    done, slowest = {}, []

    def upload():
        t = time.time()
        r = httpx.post(served.url + "/api/watch/upload", content=body, timeout=120)
        done["r"], done["s"] = r, time.time() - t

    th = threading.Thread(target=upload)
    th.start()
    while th.is_alive():  # other requests are answered while the upload is worked on
        t = time.time()
        assert httpx.get(served.url + "/api/config", timeout=30).status_code == 200
        slowest.append(time.time() - t)
    th.join()
    r = done["r"]
    assert r.status_code == 200, r.text
    assert max(slowest) < 2.0, slowest  # (before: every request waited for the whole upload)
    # the answer: the summary and the first hand's frames, not every frame of 600 hands
    rep = r.json()
    assert len(rep["hands"]) == 600 and rep["frame_count"] == rep["moves"] + 600
    assert len(rep["frames"]) == rep["hands"][0]["frames"] and len(r.content) < len(body) / 3
    last = httpx.get(served.url + f"/api/watch/{rep['key']}/hand/599", timeout=30,
                     cookies=r.cookies)
    assert last.status_code == 200 and len(last.content) < 100_000
    page = last.json()
    assert page["first_frame"] == rep["hands"][599]["first_frame"]
    assert page["frames"][-1]["hand_result"]["hand_number"] == 599


def test_upload_limits_answer_413(tmp_path, monkeypatch):
    c = _client(create_app(str(tmp_path / "db.sqlite3"), analyst=NoAnalysis()))
    body = _long_record(20)
    moves = len(json.loads(body)["game"]["moves"])
    monkeypatch.setattr(replay, "MAX_REPLAY_MOVES", moves - 1)
    r = c.post("/api/watch/upload", content=body, headers={"X-File-Name": "long.json"})
    assert r.status_code == 413
    assert r.json()["detail"] == (f"long.json: {moves} moves; the replay view opens games of at "
                                  f"most {moves - 1} moves")
    monkeypatch.setattr(replay, "MAX_REPLAY_MOVES", moves)
    monkeypatch.setattr(replay, "MAX_UPLOAD_MOVES", 2 * moves - 1)
    r = c.post("/api/watch/upload", content=body + b"\n" + body + b"\n",
               headers={"X-File-Name": "two.jsonl"})
    assert r.status_code == 413 and r.json()["detail"] == (
        f"two.jsonl: {2 * moves} moves in all; an upload may hold at most {2 * moves - 1}")
    monkeypatch.setattr(replay, "MAX_UPLOAD_MOVES", 2 * moves)
    r = c.post("/api/watch/upload", content=body + b"\n" + body + b"\n",
               headers={"X-File-Name": "two.jsonl"})
    assert r.status_code == 200 and r.json()["game_count"] == 2
    assert [g["title"] for g in r.json()["games"]] == ["two.jsonl #0", "two.jsonl #1"]
    # deep nesting is a clear 422, not a server error
    r = c.post("/api/watch/upload", content=b"[" * 100_000 + b"]" * 100_000)
    assert r.status_code == 422 and "nested too deeply" in r.json()["detail"]
    # an upload is its uploader's: another player gets 404
    key = c.post("/api/watch/upload", content=body).json()["key"]
    assert c.get(f"/api/watch/{key}/hand/1").status_code == 200
    other = _client(c.app, player="q" * 20)
    assert other.get(f"/api/watch/{key}/hand/1").status_code == 404


# ---------------------------------------------------------------------- the player's game
def _to_phase(c, gid, until, limit=400):
    v = c.get(f"/api/games/{gid}").json()
    for _ in range(limit):
        if until(v):
            return v
        if v["hand_table"]:
            v = c.post(f"/api/games/{gid}/next").json()
        elif v["your_turn"]:
            if v["bidding"]:
                b = v["bidding"]
                a = 67 if b["min"] is None else BID_OFFSET + max(b["min"], min(3, b["max"]))
            else:
                a = next(h["action"] for h in v["hand"] if h["legal"])
            v = c.post(f"/api/games/{gid}/action", json={"action": a, "seq": v["seq"]}).json()
        else:
            v = c.post(f"/api/games/{gid}/advance", json={"seq": v["seq"]}).json()
    raise AssertionError("never reached")


def test_finished_hand_stays_behind_its_score_table(tmp_path):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=5, analyst=NoAnalysis())
    c = _client(app)
    gid = c.post("/api/games", json={"difficulty": "easy", "target": 250}).json()["id"]
    v = _to_phase(c, gid, lambda v: v["hand_table"] is not None)
    hr = v["hand_table"]
    assert v["hand_number"] == 1 and v["phase"] == "hand over" and v["hand"] == []
    assert [s["bid"] for s in v["seats"]] == hr["bids"]
    assert [s["tricks"] for s in v["seats"]] == hr["tricks"]
    assert all(s["cards_left"] == 0 and not s["to_act"] for s in v["seats"])
    # the teams name the player first, and say where each named seat is in the score table
    assert v["teams"][0]["name"] == "You & Max" and v["teams"][0]["members"] == [2, 0]
    assert v["teams"][0]["order"] == [1, 0] and v["teams"][1]["order"] == [0, 1]
    assert v["teams"][1]["name"] == "Zoe & Lily"
    after = c.post(f"/api/games/{gid}/next").json()
    assert after["hand_number"] == 2 and len(after["hand"]) == 13


def test_unfinished_games_listed_damaged_one_discarded(tmp_path):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=5, analyst=NoAnalysis())
    c = _client(app)
    a = c.post("/api/games", json={"difficulty": "easy", "target": 250}).json()["id"]
    b = c.post("/api/games", json={"difficulty": "hard", "target": 500}).json()["id"]
    games = c.get("/api/games").json()["games"]
    assert [g["id"] for g in games] == [b, a] and all(g["damaged"] is None for g in games)
    assert games[0]["teams"] == [{"name": "You & Max", "score": 0},
                                 {"name": "Zoe & Lily", "score": 0}]
    app.state.store._db.execute("UPDATE games SET state = '{\"format\": 1}' WHERE id = ?", (a,))
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, analyst=NoAnalysis())  # restart
    c = _client(app)
    games = c.get("/api/games").json()["games"]
    assert games[1]["id"] == a and "damaged" in games[1]["damaged"]
    assert c.get("/api/games/active").json()["game"]["id"] == b
    assert c.get("/api/stats").status_code == 200
    assert _client(app, "q" * 20).delete(f"/api/games/{a}").status_code == 404
    assert c.delete(f"/api/games/{a}").json() == {"discarded": a}
    assert [g["id"] for g in c.get("/api/games").json()["games"]] == [b]
    assert c.get(f"/api/games/{a}").status_code == 404


# ---------------------------------------------------------------------- what the agent thinks
class Spy(Analyst):
    def __init__(self, checkpoint=None):
        super().__init__(checkpoint)
        self.views = []

    def analyse(self, view, key=(0,), played=None):
        self.views.append(view)
        return super().analyse(view, key, played)


def test_hint_uses_only_the_players_view(tmp_path):
    ckpt = default_checkpoint()
    if ckpt is None:
        pytest.skip("no shipped checkpoint in this checkout")
    pytest.importorskip("torch")
    spy = Spy(ckpt)
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=11, analyst=spy)
    c = _client(app)
    gid = c.post("/api/games", json={"difficulty": "easy", "target": 250}).json()["id"]
    v = _to_phase(c, gid, lambda v: v["your_turn"] and v["phase"] == "play"
                  and sum(h["legal"] for h in v["hand"]) > 2)
    r = c.get(f"/api/games/{gid}/hint")
    assert r.status_code == 200, r.text
    hint = r.json()["analysis"]
    store = app.state.store
    g = SpadesGame.from_json(store.load_game(gid, "p" * 20).state)
    assert spy.views == [g.view(HUMAN_SEAT)]
    legal = sorted(h["action"] for h in v["hand"] if h["legal"])
    assert [row["action"] for row in hint["rows"]] == legal
    assert abs(sum(row["prob"] for row in hint["rows"]) - 1) < 1e-3
    assert all(isinstance(row["value"], float) for row in hint["rows"])
    assert hint["seat"] == HUMAN_SEAT and hint["checkpoint"] == "agent.pt"
    # swap two unplayed cards of one suit between the opponents: the player's view is the same,
    # and so is the hint (nothing it shows depends on what the player cannot see)
    d = json.loads(g.to_json())
    east, west = d["initial"]["hands"][1], d["initial"]["hands"][3]
    played = set(g.moves)
    swap = None
    for suit in range(4):
        e = [x for x in range(13 * suit, 13 * suit + 13) if east >> x & 1 and x not in played]
        w = [x for x in range(13 * suit, 13 * suit + 13) if west >> x & 1 and x not in played]
        if e and w:
            swap = (e[0], w[0])
            break
    assert swap is not None
    d["initial"]["hands"][1] = east ^ (1 << swap[0]) ^ (1 << swap[1])
    d["initial"]["hands"][3] = west ^ (1 << swap[0]) ^ (1 << swap[1])
    other = _replayed(d)
    assert other.view(HUMAN_SEAT) == g.view(HUMAN_SEAT)
    assert other.hands[1] != g.hands[1]
    store._db.execute("UPDATE games SET state = ? WHERE id = ?", (other.to_json(), gid))
    # read by a server started again on the database (the first one keeps the game loaded)
    app2 = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=11, analyst=spy)
    assert SpadesGame.from_json(app2.state.store.load_game(gid, "p" * 20).state).hands \
        == other.hands
    again = _client(app2).get(f"/api/games/{gid}/hint").json()["analysis"]
    assert again == hint
    # not the player's turn: no hint (it would describe another seat's cards)
    c.post(f"/api/games/{gid}/action", json={"action": legal[0], "seq": v["seq"]})
    r = c.get(f"/api/games/{gid}/hint")
    assert r.status_code == 409 and r.json()["detail"] == "a hint is given on your turn only"


def _replayed(d: dict) -> SpadesGame:
    """The game of save ``d`` replayed from its (edited) first deal."""
    return SpadesGame.replay(d["moves"], initial=d["initial"])


def test_replay_analysis_marks_the_move_played(tmp_path):
    g = SpadesGame(Rules(target_score=100), seed=4)
    bots = [make_bot("medium", seed=s) for s in range(4)]
    while not g.is_over:
        g.apply(bots[g.current_player].act(g.view(g.current_player)))
    path = tmp_path / "one.json"
    replay.write_game_record(str(path), g, ["A", "B", "C", "D"])
    spy = Spy(None)
    c = _client(create_app(str(tmp_path / "db.sqlite3"), records=[str(path)], analyst=spy))
    # move 10 is a card played: the view of the seat that played it, the card marked
    probe = SpadesGame.replay(g.moves[:10], initial=g.initial)
    seat = probe.current_player
    r = c.get("/api/watch/file/0/analysis?move=10")
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["seat"] == seat and a["player"] == "ABCD"[seat]
    assert spy.views == [probe.view(seat)]
    rows = a["analysis"]["rows"]
    assert [row["action"] for row in rows] == sorted(probe.legal_actions())
    assert [row["action"] for row in rows if row["played"]] == [g.moves[10]]
    assert a["analysis"]["checkpoint_error"] == "no checkpoint given"
    assert c.get(f"/api/watch/file/0/analysis?move={len(g.moves)}").status_code == 404


# ---------------------------------------------------------------------- one client's burst
_SERVER = """
import sys, time
import uvicorn
from spades_env.play.analysis import Analyst
from spades_env.play.app import create_app


class Burning(Analyst):  # 50 ms of pure-Python CPU per analysis, like a small search
    def __init__(self):
        super().__init__(None)

    def analyse(self, view, key=(0,), played=None):
        t = time.thread_time()
        while time.thread_time() - t < 0.05:
            pass
        return {"seat": int(view.seat), "rows": [], "played": played}


app = create_app(sys.argv[1], analyst=Burning())
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


_BURST = """
import http.client, json, sys, threading, time
port, cookie, key, moves, hands, seconds = sys.argv[1:]
moves, hands, stop = int(moves), int(hands), time.time() + float(seconds)
statuses = []


def one(path):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
    try:
        c.request("GET", path, headers={"Host": "localhost", "Cookie": f"spades_player={cookie}"})
        r = c.getresponse()
        r.read()
        return r.status, r.getheader("retry-after")
    finally:
        c.close()


def burst(i):
    k = 0
    while time.time() < stop:
        k += 1
        path = (f"/api/watch/{key}/analysis?move={moves - 1 - 97 * i - 7 * k}" if (i + k) % 2
                else f"/api/watch/{key}/hand/{hands - 1 - i}")
        try:
            st, retry = one(path)
        except OSError as e:
            statuses.append(type(e).__name__)
            continue
        statuses.append(st)
        if st == 429:
            if retry != "1":
                statuses.append("bad Retry-After")
            time.sleep(0.5)  # a client that retries twice a second


threads = [threading.Thread(target=burst, args=(i,)) for i in range(60)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(statuses))
"""


def test_one_clients_burst_does_not_hold_another_client(tmp_path):
    """Client A uploads a long game (about 50,000 moves) and fires 60 replay requests at once
    (analyses and hands near its end), again and again for 3 s; client B's requests meanwhile
    (the config, a hand of its own small upload) are each answered within 2 s. A gets 429 with
    Retry-After beyond its share; nothing answers 5xx. (Before: every such request replayed the
    game from move 0 in the shared thread pool, and B waited 10-20 s. The bound is 2 s, not the
    0.5 s first used: on a loaded 2-core machine B's answers reached 0.506 s while the fix held;
    the medians are in the figures of a failure.)"""
    import http.client
    import os
    import statistics
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    srv = subprocess.Popen([sys.executable, "-c", _SERVER, str(tmp_path / "db.sqlite3"),
                            str(port)], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    def req(path, cookie, body=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        t = time.time()
        try:
            c.request("POST" if body is not None else "GET", path, body=body,
                      headers={"Host": "localhost", "Cookie": f"{COOKIE}={cookie}"})
            r = c.getresponse()
            data = r.read()
            return r.status, data, time.time() - t, r.getheader("retry-after")
        finally:
            c.close()

    a, b = "a" * 20, "b" * 20
    burst = None
    try:
        long_body, short_body = _long_record(900), _long_record(2, seed=2)
        deadline = time.time() + 30
        while True:
            try:
                req("/api/config", a, timeout=2)
                break
            except OSError:
                assert time.time() < deadline and srv.poll() is None, "the server did not start"
                time.sleep(0.2)
        st, data, _, _ = req("/api/watch/upload", a, long_body)
        assert st == 200, data[:300]
        up = json.loads(data)
        moves, hands = up["moves"], len(up["hands"])
        assert moves > 45_000
        st, data, _, _ = req("/api/watch/upload", b, short_body)
        assert st == 200, data[:300]
        b_hand = f"/api/watch/{json.loads(data)['key']}/hand/1"
        idle = [req(path, b)[2] for _ in range(3) for path in ("/api/config", b_hand)]
        burst = subprocess.Popen([sys.executable, "-c", _BURST, str(port), a, up["key"],
                                  str(moves), str(hands), "3.0"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        stop = time.time() + 3.0
        time.sleep(0.3)
        lat = {"config": [], "hand": []}
        while time.time() < stop:
            for what, path in (("config", "/api/config"), ("hand", b_hand)):
                st, data, dt, _ = req(path, b)
                assert st == 200, data[:300]
                lat[what].append(dt)
            time.sleep(0.05)
        out, _ = burst.communicate(timeout=60)
        statuses = json.loads(out.strip().splitlines()[-1])
    finally:
        for p in (burst, srv):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
    figures = {k: (round(statistics.median(v), 3), round(max(v), 3), len(v))
               for k, v in lat.items()}
    print(f"client B without a burst: max {max(idle):.3f} s; "
          f"during client A's burst (median s, max s, probes): {figures}; "
          f"A's answers: {sorted(((s, statuses.count(s)) for s in set(statuses)), key=str)}")
    assert all(len(v) >= 5 for v in lat.values()), figures
    assert max(lat["config"]) < 2.0 and max(lat["hand"]) < 2.0, figures
    assert 200 in statuses and 429 in statuses
    assert not [s for s in statuses if not isinstance(s, int) or s >= 500], statuses


def test_heavy_work_limits_each_client():
    """A client's requests run one at a time, in order; one past its limit is answered 429
    (Retry-After: 1) at once, past the server's 503; another client's request runs meanwhile;
    a waiting request whose client went away is dropped unrun."""
    import asyncio

    from spades_env.play.app import Busy, HeavyWork
    heavy = HeavyWork(workers=2, per_client=3, most=5)
    gate = threading.Event()
    ran = []

    def job(name):
        ran.append(name)
        assert gate.wait(10)
        return name

    async def main():
        a = [asyncio.ensure_future(heavy.run("a", job, f"a{i}")) for i in range(3)]
        await asyncio.sleep(0.1)
        assert ran == ["a0"]  # one at a time per client
        with pytest.raises(Busy) as e:
            await heavy.run("a", job, "a3")
        assert e.value.status == 429 and e.value.headers == {"Retry-After": "1"}
        b = asyncio.ensure_future(heavy.run("b", lambda: "b0"))
        assert await asyncio.wait_for(b, 5) == "b0"  # not behind a's requests
        c = [asyncio.ensure_future(heavy.run("c", job, f"c{i}")) for i in range(2)]
        await asyncio.sleep(0.1)
        with pytest.raises(Busy) as e:  # five in flight in all
            await heavy.run("d", lambda: 1)
        assert e.value.status == 503
        a[1].cancel()  # its client went away while it waited
        await asyncio.sleep(0.05)
        gate.set()
        assert await asyncio.gather(a[0], a[2], *c) == ["a0", "a2", "c0", "c1"]
        assert ran.index("a2") > ran.index("a0") and "a1" not in ran
        assert await heavy.run("a", lambda: 7) == 7

    asyncio.run(main())
    heavy.close()


def test_replay_state_at_is_bounded_and_exact(monkeypatch):
    """A replay is indexed once: ``state_at`` applies at most ``CHECKPOINT_EVERY`` moves and
    gives the state (and view) a replay from move 0 gives; a repeated analysis is answered from
    the cache."""
    body = json.loads(_long_record(60))
    g = SpadesGame.from_dict(body["game"])
    rg = replay.ReplayGame.of_game(g, title="long")
    rg.hands()
    applied = []
    real_apply = SpadesGame.apply
    monkeypatch.setattr(SpadesGame, "apply",
                        lambda self, a, seat=None: (applied.append(a), real_apply(self, a, seat)))
    for move in (0, 1, replay.CHECKPOINT_EVERY, len(g.moves) - 1, len(g.moves) - 300):
        applied.clear()
        got = rg.state_at(move)
        assert len(applied) <= replay.CHECKPOINT_EVERY
        monkeypatch.setattr(SpadesGame, "apply", real_apply)
        want = SpadesGame.replay(g.moves[:move], initial=g.initial)
        assert got.to_dict() == want.to_dict()
        assert got.view(got.current_player) == want.view(want.current_player)
        monkeypatch.setattr(SpadesGame, "apply",
                            lambda self, a, seat=None: (applied.append(a),
                                                        real_apply(self, a, seat)))
    applied.clear()
    page = rg.hand_frames(len(rg.hands()) - 1)
    assert len(applied) <= replay.CHECKPOINT_EVERY + 60 and page["frames"]


class Slow(Analyst):  # 50 ms per analysis
    def __init__(self):
        super().__init__(None)

    def analyse(self, view, key=(0,), played=None):
        time.sleep(0.05)
        return {"seat": int(view.seat), "rows": [], "played": played}


def test_the_same_request_at_once_is_answered_once_not_429(tmp_path):
    """The page asks for a hand again while it is still coming (dragging the slider within a
    hand sends one request per step): a client's identical replay requests in flight are one
    piece of work and one place of its ``HEAVY_PER_CLIENT``, all answered 200 with the same
    frames. (Before: the fifth was answered 429, which the page shows as an error.) A different
    request past the limit is still 429."""
    s = Served(create_app(str(tmp_path / "db.sqlite3"), analyst=Slow()))
    try:
        cookies = {COOKIE: "p" * 20}
        with httpx.Client(base_url=s.url, cookies=cookies, timeout=30) as c:
            r = c.post("/api/watch/upload", content=_long_record(60),
                       headers={"X-File-Name": "long.json"})
            assert r.status_code == 200, r.text
            key = r.json()["key"]
        for url in [f"/api/watch/{key}/hand/40", f"/api/watch/{key}/analysis?move=2000"]:
            out = [None] * 12
            go = threading.Barrier(12)

            def get(i, url=url):
                with httpx.Client(base_url=s.url, cookies=cookies, timeout=30) as c:
                    go.wait()
                    out[i] = c.get(url)
            threads = [threading.Thread(target=get, args=(i,)) for i in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert [r.status_code for r in out] == [200] * 12, [r.text for r in out]
            assert all(r.json() == out[0].json() for r in out)
        # different requests: one running, three waiting, the fifth refused at once
        out = [None] * 12
        go = threading.Barrier(12)

        def get_move(i):
            with httpx.Client(base_url=s.url, cookies=cookies, timeout=30) as c:
                go.wait()
                out[i] = c.get(f"/api/watch/{key}/analysis?move={100 + i}")
        threads = [threading.Thread(target=get_move, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert 429 in [r.status_code for r in out]
    finally:
        s.stop()


def test_uploads_being_received_hold_bounded_memory():
    """Upload bodies are read whole before the route (and its per-client limit) runs: slow or
    many uploads at once hold at most ``UPLOADS_RECEIVING`` bytes together; one more is answered
    503 (Retry-After) at once, and their room is free again when they end. (Before: 40 uploads of
    7 MiB, sent slowly, held 280 MiB.)"""
    import asyncio

    from spades_env.play.app import MAX_UPLOAD, UPLOADS_RECEIVING, BodyLimit

    async def app(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    limit = BodyLimit(app, 4096, MAX_UPLOAD, "/api/watch/upload")
    chunk = b"x" * (MAX_UPLOAD - 1024 * 1024)

    async def upload(hold: asyncio.Event, statuses: list):
        sent = []

        async def receive():
            if not sent:
                sent.append(1)
                return {"type": "http.request", "body": chunk, "more_body": True}
            await hold.wait()
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(msg):
            if msg["type"] == "http.response.start":
                statuses.append(msg["status"])
        scope = {"type": "http", "method": "POST", "path": "/api/watch/upload", "headers": []}
        await limit(scope, receive, send)

    async def main():
        hold, statuses = asyncio.Event(), []
        n = UPLOADS_RECEIVING // len(chunk) + 3
        tasks = [asyncio.ensure_future(upload(hold, statuses)) for _ in range(n)]
        await asyncio.sleep(0.2)
        assert statuses == [503] * 3  # the rest wait for their bodies, within the bound
        hold.set()
        await asyncio.gather(*tasks)
        assert statuses.count(200) == n - 3
        statuses.clear()
        await upload(hold, statuses)
        assert statuses == [200]

    asyncio.run(main())
