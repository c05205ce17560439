"""Speed of the code now against an earlier commit, side by side in one run (for restructurings
that must not cost speed: the limit is 5%).

The earlier commit is checked out into a temporary ``git worktree``; each workload runs in a fresh
subprocess per tree, the two trees interleaved repeat by repeat (before, after, before, ...), so
both see the same machine load. Workloads (each the same work in both trees):

- ``engine``: random single hands on ``SpadesGame`` (deal, 4 bids, 52 cards from
  ``legal_actions()``), decisions/s;
- ``env``: the AEC env ``spades_v1`` with random legal actions from the mask, decisions/s;
- ``batched``: ``SpadesVectorEnv`` (C kernel, 256 games, one thread) with ``sample_actions``,
  decisions/s (needs torch);
- ``playout``: the search bots' play-outs (``bots.solver.playouts``, the C play-out) on sampled
  deals of a fixed position, play-outs/s;
- ``playout_py``: the same with the Python play-out (``native=False``), play-outs/s;
- ``view``: ``SpadesGame.view`` with ``known_voids`` and ``observation.encode`` at every decision
  of random hands, views/s.

Prints the median of each tree and the ratio after / before (> 1: faster now).

Usage: ``python benchmarks/bench_before_after.py --before REV [--repeats 7] [--only engine env]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKLOADS = {
    "engine": """
        import random, time
        import numpy as np
        from spades_env import SpadesGame
        pick, rng, n = random.Random(0), np.random.default_rng(0), 0
        t = time.perf_counter()
        for _ in range(300):
            g = SpadesGame(seed=rng)
            while g.hand_number == 0:
                la = g.legal_actions()
                g.apply(la[pick.randrange(len(la))])
                n += 1
        rate = n / (time.perf_counter() - t)
    """,
    "env": """
        import random, time
        import numpy as np
        from spades_env import spades_v1
        pick, n = random.Random(0), 0
        env = spades_v1.env(hands_per_episode=1)
        t = time.perf_counter()
        for ep in range(60):
            env.reset(seed=ep)
            for agent in env.agent_iter():
                obs, r, term, trunc, info = env.last()
                if term or trunc:
                    env.step(None)
                    continue
                legal = np.flatnonzero(obs["action_mask"])
                env.step(int(legal[pick.randrange(len(legal))]))
                n += 1
        rate = n / (time.perf_counter() - t)
    """,
    "batched": """
        import time
        import torch
        torch.set_num_threads(1)
        from spades_env.vector import SpadesVectorEnv
        venv = SpadesVectorEnv(num_envs=256, device="cpu", seed=0, threads=1, validate=False,
                               copy=False)
        venv.reset()
        for _ in range(56):
            venv.step(venv.sample_actions())
        t = time.perf_counter()
        for _ in range(56 * 20):
            venv.step(venv.sample_actions())
        rate = 256 * 56 * 20 / (time.perf_counter() - t)
    """,
    "playout": """
        import random, time
        from spades_env import SpadesGame
        from spades_env.bots.sampler import DealSampler
        from spades_env.bots import solver
        g = SpadesGame(seed=3)
        while g.phase.name != "PLAY":
            g.apply(g.legal_actions()[len(g.legal_actions()) // 2])
        for _ in range(9):
            g.apply(g.legal_actions()[0])
        view = g.view(g.current_player)
        rnd = random.Random(0)
        sampler = DealSampler(view)
        deals = [sampler.sample(rnd) for _ in range(200)]
        legal = g.legal_actions()
        cards = [legal[i % len(legal)] for i in range(len(deals))]
        bids = [b for b in g.bids]
        trick = list(g.trick)
        t = time.perf_counter()
        n = 0
        for _ in range(20):
            solver.playouts(deals, bids, cards, trick, g.trick_leader, list(g.tricks_won),
                            g.spades_broken, g.current_player, native=NATIVE)
            n += len(deals)
        rate = n / (time.perf_counter() - t)
    """,
    "playout_py": None,  # the same, with the Python play-out (the reference)
    "view": """
        import random, time
        import numpy as np
        from spades_env import SpadesGame
        from spades_env.observation import encode
        pick, rng, n = random.Random(0), np.random.default_rng(0), 0
        t = time.perf_counter()
        for _ in range(40):
            g = SpadesGame(seed=rng)
            while g.hand_number == 0:
                v = g.view(g.current_player)
                v.known_voids
                encode(v)
                la = g.legal_actions()
                g.apply(la[pick.randrange(len(la))])
                n += 1
        rate = n / (time.perf_counter() - t)
    """,
}


def run(tree: str, name: str) -> float:
    """One repeat of workload ``name`` in a fresh interpreter on the source tree ``tree``."""
    native = name != "playout_py"
    body = WORKLOADS["playout" if name == "playout_py" else name]
    code = f"NATIVE = {native}\n" + textwrap.dedent(body) + "\nimport json; print(json.dumps(rate))\n"
    env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True,
                       text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"{name} in {tree} failed:\n{r.stderr[-2000:]}")
    return float(json.loads(r.stdout.strip().splitlines()[-1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="the earlier commit (any git revision)")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--only", nargs="+", choices=sorted(WORKLOADS), default=None)
    args = p.parse_args(argv)
    names = args.only or list(WORKLOADS)
    with tempfile.TemporaryDirectory() as tmp:
        before = os.path.join(tmp, "before")
        subprocess.run(["git", "worktree", "add", "--detach", before, args.before], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            rows = []
            for name in names:
                got = {"before": [], "after": []}
                for _ in range(args.repeats):
                    got["before"].append(run(before, name))
                    got["after"].append(run(ROOT, name))
                b, a = statistics.median(got["before"]), statistics.median(got["after"])
                rows.append((name, b, a))
                print(f"{name:8s} before {b:12,.0f}/s  after {a:12,.0f}/s  after/before "
                      f"{a / b:.3f}", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", before], cwd=ROOT,
                           capture_output=True)
    print(f"\n| workload | before (median of {args.repeats}) | after | after / before |")
    print("|---|---|---|---|")
    for name, b, a in rows:
        print(f"| {name} | {b:,.0f}/s | {a:,.0f}/s | {a / b:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
