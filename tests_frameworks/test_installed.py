"""The package as a user gets it: run by the ``wheel`` and ``sdist`` nox sessions (``noxfile.py``)
in a fresh virtual environment holding the installed wheel (or the sdist, built at install), from
a folder outside the checkout, with no C compiler on ``PATH``, ``CC`` unset and an empty home.

``SPADES_CHECKOUT_PYTHON`` names the interpreter of a checkout install (``pip install -e .``, the
Makefile's ``.venv``): the ``hard`` and ``insane`` decisions are timed in both, interleaved in
the same run, and the installed median must be within 10% of the checkout's.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import spades_env

SITE = Path(spades_env.__file__).resolve().parent
CHECKOUT_PYTHON = os.environ.get("SPADES_CHECKOUT_PYTHON")
BIN = Path(sys.executable).parent


def test_the_installed_package_runs_without_a_compiler():
    assert "site-packages" in SITE.parts, SITE  # not a checkout on sys.path
    assert "CC" not in os.environ
    for cc in ("cc", "gcc", "clang", "c99", "tcc"):
        assert shutil.which(cc) is None, f"{cc} on PATH"
    from spades_env import native
    path = Path(native.kernel_path())
    assert path.parent == SITE and path.name.startswith("_kernel.")
    assert native.load_kernel().sp_source_digest().decode() == native.source_digest()


def test_nothing_is_written_under_the_home_folder():
    """Imports, the kernel and a bot decision leave the (empty) home as it was: no cache."""
    home = Path(os.environ["HOME"])
    code = ("from spades_env.vector import SpadesVectorEnv; from spades_env.bots import make_bot\n"
            "from spades_env import SpadesGame, Rules\n"
            "e = SpadesVectorEnv(4, seed=1); e.reset(); e.step(e.sample_actions())\n"
            "g = SpadesGame(Rules(), seed=1); make_bot('hard', seed=1).act(g.view(g.current_player))")
    before = sorted(home.rglob("*"))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    assert sorted(home.rglob("*")) == before
    assert not (home / ".cache" / "spades_env").exists()


def test_the_native_batched_engine_matches_the_torch_path():
    import torch

    from spades_env.vector import SpadesVectorEnv
    nat = SpadesVectorEnv(256, seed=3, threads=2, adapt_threads=False)
    ref = SpadesVectorEnv(256, seed=3, backend="torch")
    assert nat.backend == "native" and ref.backend == "torch"
    if sys.platform.startswith("linux"):
        assert nat.threads == 2  # built with OpenMP (libgomp bundled in the wheel)
    a, b = nat.reset(), ref.reset()
    gen = torch.Generator().manual_seed(5)
    scored = 0
    for _ in range(3 * 55):
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and torch.equal(a[2], b[2])
        acts = ref.sample_actions(gen)
        a, b = nat.step(acts), ref.step(acts)
        assert torch.equal(a[3], b[3]) and torch.equal(a[4], b[4])
        scored += int((b[3] != 0).any())
    assert scored >= 2  # hands ended and were scored alike
    from spades_env.bots import solver
    assert solver.native_playouts()


_WORKER = r"""
import copy, sys, time
from spades_env import Rules, SpadesGame, native
from spades_env.bots import make_bot
level, n = sys.argv[1], int(sys.argv[2])
native.load_kernel()
games, seed = [], 0
while len(games) < n:  # seeded positions: real card choices (more than one legal card)
    seed += 1
    g, mover = SpadesGame(Rules(), seed=seed), make_bot("medium", seed=seed)
    while not g.is_over and g.hand_number < 1 and len(games) < n:
        v = g.view(g.current_player)
        if v.legal_actions and min(v.legal_actions) < 52 and len(v.legal_actions) > 1:
            games.append(copy.deepcopy(g))
        g.apply(mover.act(v))
print(native.kernel_path(), flush=True)
for line in sys.stdin:  # "k": time the decision at position k
    k = int(line)
    g = games[k]
    bot = make_bot(level, seed=k)
    v = g.view(g.current_player)
    t = time.perf_counter()
    bot.act(v)
    print(time.perf_counter() - t, flush=True)
"""


class _Worker:
    """A process of ``python`` that times ``level``'s decision at a given position on demand."""

    def __init__(self, python: str, level: str, n: int):
        self.proc = subprocess.Popen([python, "-c", _WORKER, level, str(n)], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.kernel = self.proc.stdout.readline().strip()
        assert self.kernel, f"{python}: the timing worker did not start"

    def time(self, k: int) -> float:
        self.proc.stdin.write(f"{k}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.mark.parametrize("level,n,rounds", [("hard", 41, 5), ("insane", 17, 5)])
def test_decisions_take_as_long_as_in_a_checkout_install(level, n, rounds):
    """The same card decisions (seeded positions, seeded bots) timed in this install and in the
    checkout's, one decision at a time in turn (which goes first alternates), ``rounds`` times
    each, so a change in the machine's load falls on both. A decision's time is its best of the
    rounds (the least disturbed: a busy machine only adds time); the median of those over the
    positions here is within 25% of the checkout's. What this catches runs 2 to 5 times slower
    (a kernel built without optimisation, the play-outs falling back to Python); 10% failed
    once at 1.139 for insane (17 positions) with two lanes and other jobs on 2 cores, while all
    its runs together gave 1.004."""
    assert CHECKOUT_PYTHON, "SPADES_CHECKOUT_PYTHON (the checkout install's python) is not set"
    mine, theirs = _Worker(sys.executable, level, n), _Worker(CHECKOUT_PYTHON, level, n)
    try:
        assert Path(mine.kernel).parent == SITE and Path(theirs.kernel).parent != SITE
        mine.time(0), theirs.time(0)  # warm-up
        a, b = [[] for _ in range(n)], [[] for _ in range(n)]
        for r in range(rounds):
            for k in range(n):
                if (r + k) % 2:
                    a[k].append(mine.time(k))
                    b[k].append(theirs.time(k))
                else:
                    b[k].append(theirs.time(k))
                    a[k].append(mine.time(k))
    finally:
        mine.close()
        theirs.close()
    ma, mb = statistics.median(map(min, a)), statistics.median(map(min, b))
    ra = statistics.median(t for ts in a for t in ts)
    rb = statistics.median(t for ts in b for t in ts)
    print(f"\n{level}: installed {ma * 1e3:.2f} ms, checkout {mb * 1e3:.2f} ms per decision "
          f"(median over {n} positions of the best of {rounds}), ratio {ma / mb:.3f}; all "
          f"{n * rounds} runs: {ra * 1e3:.2f} vs {rb * 1e3:.2f} ms, ratio {ra / rb:.3f}")
    assert ma <= 1.25 * mb, (ma, mb)


def test_the_arena_plays_a_few_hands(tmp_path):
    out = tmp_path / "arena.json"
    r = subprocess.run([str(BIN / "spades"), "arena", "--team0", "hard", "--team1", "easy",
                        "--hands", "2", "--seed", "1", "--json", str(out), "--no-progress"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["mode"] == "hands" and res["games"] == 4 and res["pairs"] == 2, res


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_spades_play_answers_a_request(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([str(BIN / "spades"), "play", "--port", str(port), "--no-browser",
                             "--db", str(tmp_path / "play.sqlite3")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, body = time.monotonic() + 120, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/config", timeout=5) as r:
                    body = json.loads(r.read())
                break
            except OSError:
                time.sleep(0.5)
        assert body is not None, proc.stdout.read() if proc.poll() is not None else "no answer"
        levels = [lv["key"] for lv in body["levels"]]
        # "expert" is offered only where torch and the shipped network (in the wheel) are found
        assert levels == ["easy", "medium", "hard", "insane", "expert"], levels
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            assert b"<html" in r.read().lower()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_shipped_agent_plays():
    from spades_env.agents import SHIPPED_CHECKPOINT
    from spades_env.arena import play_match
    from spades_env.bots import make_bot
    assert SHIPPED_CHECKPOINT.is_file() and SITE in SHIPPED_CHECKPOINT.resolve().parents
    bot = make_bot("checkpoint:" + str(SHIPPED_CHECKPOINT))
    res = play_match(bot, "easy", hands=2, seed=2)
    assert res.mode == "hands" and res.games == 4 and len(res.pair_diffs) == 2
    from spades_env import Rules, SpadesGame
    g = SpadesGame(Rules(), seed=4)
    expert = make_bot("expert", seed=1)
    a = expert.act(g.view(g.current_player))
    assert a in g.view(g.current_player).legal_actions
