"""Speed of the code now against an earlier commit, side by side in one process (for restructurings
that must not cost speed: the limit is 5%).

The package of the earlier commit is extracted (``git archive``) into a temporary folder and
renamed ``spades_before`` (every ``spades_env`` in its source replaced), so both versions load in
one interpreter, and its C kernel is built under its own cache name. Each workload then runs
before, after, after, before, ... (the order alternating pair by pair) and the figure is the
median of the paired ratios after / before, with its quartiles: > 1 is faster now. The machine is
shared and noisy; pairs taken a fraction of a second apart see the same load.

Workloads (the same work in both versions):

- ``engine``: random single hands on ``SpadesGame`` (deal, 4 bids, 52 cards from
  ``legal_actions()``), decisions/s;
- ``env``: the AEC env ``spades_v1`` (observations and masks at every step), decisions/s;
- ``view``: ``SpadesGame.view`` with ``known_voids`` and ``observation.encode`` at every decision,
  views/s;
- ``batched``: ``SpadesVectorEnv`` (C kernel, 256 games, one thread, ``sample_actions``),
  decisions/s (needs torch); ``batched_torch``: the same on the torch backend;
- ``playout``: the search bots' C play-outs (``bots.solver.playouts``) on 100 sampled deals of a
  fixed position, play-outs/s; ``playout_py``: the same with the Python play-out;
- ``train``: two PPO iterations of ``configs/default.yaml`` as it trains (its env, network,
  privileged critic, opponents; rollout, GAE and update), learner decisions/s; the rollout
  storage's bytes per decision are printed once per version.

Usage: ``python benchmarks/bench_before_after.py --before REV [--repeats 15] [--only engine env]``
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def extract(rev: str, folder: str) -> None:
    """``spades_env`` of ``rev`` as the package ``spades_before`` in ``folder``."""
    data = subprocess.run(["git", "archive", rev, "spades_env"], cwd=ROOT, capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    os.rename(os.path.join(folder, "spades_env"), os.path.join(folder, "spades_before"))
    for base, _, files in os.walk(os.path.join(folder, "spades_before")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text.replace("spades_env", "spades_before"))
    build_kernel(rev, folder)


def build_kernel(rev: str, folder: str) -> None:
    """The C kernel of ``rev``, built by that commit's own ``setup.py`` in a copy of the commit,
    into ``folder/spades_before`` (without it the earlier version would run its torch fallback
    and the batched rows would compare the kernel with torch ops)."""
    import glob
    import shutil
    src = os.path.join(folder, "src")
    os.makedirs(src)
    data = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(src, filter="data")
    if not os.path.exists(os.path.join(src, "setup.py")):
        # before the kernel became an extension, native.py compiled it when first used
        print(f"note: {rev} has no setup.py: its native.py compiles its kernel at run time",
              flush=True)
        return
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=src,
                       capture_output=True, text=True)
    built = glob.glob(os.path.join(src, "spades_env", "_kernel*.so")) + \
        glob.glob(os.path.join(src, "spades_env", "_kernel*.pyd"))
    if r.returncode != 0 or not built:
        print(f"warning: the kernel of {rev} did not build; its batched rows run torch ops\n"
              f"{r.stderr[-800:]}", flush=True)
        return
    shutil.copy(built[0], os.path.join(folder, "spades_before"))


def workloads(pkg: str) -> dict:
    """``{name: zero-argument function returning a rate}`` on the package ``pkg``."""
    import importlib

    import numpy as np
    se = importlib.import_module(pkg)
    encode = importlib.import_module(f"{pkg}.observation").encode
    solver = importlib.import_module(f"{pkg}.bots.solver")
    sampler = importlib.import_module(f"{pkg}.bots.sampler")
    v1 = importlib.import_module(f"{pkg}.spades_v1")

    def engine():
        pick, rng, n = random.Random(0), np.random.default_rng(0), 0
        t = time.perf_counter()
        for _ in range(150):
            g = se.SpadesGame(seed=rng)
            legal_actions, apply = g.legal_actions, g.apply
            while g.hand_number == 0:
                la = legal_actions()
                apply(la[pick.randrange(len(la))])
                n += 1
        return n / (time.perf_counter() - t)

    def env():
        pick, n = random.Random(0), 0
        e = v1.env(hands_per_episode=1)
        t = time.perf_counter()
        for ep in range(12):
            e.reset(seed=ep)
            for agent in e.agent_iter():
                obs, r, term, trunc, info = e.last()
                if term or trunc:
                    e.step(None)
                    continue
                legal = np.flatnonzero(obs["action_mask"])
                e.step(int(legal[pick.randrange(len(legal))]))
                n += 1
        return n / (time.perf_counter() - t)

    def view():
        pick, rng, n = random.Random(0), np.random.default_rng(0), 0
        t = time.perf_counter()
        for _ in range(15):
            g = se.SpadesGame(seed=rng)
            while g.hand_number == 0:
                v = g.view(g.current_player)
                v.known_voids
                encode(v)
                la = g.legal_actions()
                g.apply(la[pick.randrange(len(la))])
                n += 1
        return n / (time.perf_counter() - t)

    g = se.SpadesGame(seed=3)
    while g.phase.name != "PLAY":
        g.apply(g.legal_actions()[len(g.legal_actions()) // 2])
    for _ in range(9):
        g.apply(g.legal_actions()[0])
    deals = [sampler.DealSampler(g.view(g.current_player)).sample(random.Random(i))
             for i in range(100)]
    legal = g.legal_actions()
    cards = [legal[i % len(legal)] for i in range(len(deals))]

    def playouts(native: bool, times: int):
        def run():
            t = time.perf_counter()
            for _ in range(times):
                solver.playouts(deals, list(g.bids), cards, list(g.trick), g.trick_leader,
                                list(g.tricks_won), g.spades_broken, g.current_player,
                                native=native)
            return times * len(deals) / (time.perf_counter() - t)
        return run

    out = {"engine": engine, "env": env, "view": view, "playout": playouts(True, 60),
           "playout_py": playouts(False, 3)}
    try:
        import torch
        torch.set_num_threads(1)
        vector = importlib.import_module(f"{pkg}.vector")
    except ImportError:
        return out

    def batched(hands: int, **kw):
        """Decisions/s of 256 games stepping random legal actions for ``hands`` hands."""
        def run():
            venv = vector.SpadesVectorEnv(num_envs=256, device="cpu", seed=0, validate=False,
                                          copy=False, **kw)
            venv.reset()
            for _ in range(56):
                venv.step(venv.sample_actions())
            t = time.perf_counter()
            for _ in range(56 * hands):
                venv.step(venv.sample_actions())
            return 256 * 56 * hands / (time.perf_counter() - t)
        return run

    out["batched"] = batched(6, threads=1)
    out["batched_torch"] = batched(2, backend="torch")
    try:
        out["train"] = training(pkg)
    except ImportError:  # the training extras are not installed
        pass
    except ValueError as e:  # a config the earlier commit cannot read (a field it lacks)
        print(f"  {pkg}: no train workload: {str(e)[:160]}", flush=True)
    return out


def training(pkg: str):
    """The ``train`` workload of package ``pkg`` (see the module docstring)."""
    import importlib

    import numpy as np
    import torch
    cfg = importlib.import_module(f"{pkg}.training.config")
    envs = importlib.import_module(f"{pkg}.training.envs")
    opponents = importlib.import_module(f"{pkg}.training.opponents")
    ppo = importlib.import_module(f"{pkg}.training.ppo_selfplay")
    args = cfg.load_yaml(os.path.join(ROOT, "configs", "default.yaml"))
    shown = []

    def run():
        torch.set_num_threads(args.torch_threads)
        env = envs.make_env(args, seed=0)
        torch.manual_seed(0)
        agent = ppo.make_agent(args)
        opt = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
        opp = opponents.Opponents(args, env.num_envs)
        rng = np.random.default_rng(0)
        for i in range(env.num_envs):
            opp.assign(i, rng)
        store = ppo.Storage(env.num_envs * args.num_steps, args.device)
        if not shown:
            row = store.obs[0].numel() * store.obs.element_size()
            print(f"  {pkg}: rollout storage {row} observation bytes a decision", flush=True)
            shown.append(row)
        cur = tuple(x.cpu() for x in env.reset())
        gen = torch.Generator().manual_seed(0)
        n = 0
        t = time.perf_counter()
        for i in range(2):
            opp.reseed_bots(0, i)
            agent.eval()
            cur = ppo.rollout(env, cur, agent, opp, store, args, rng, {"hands": []})
            agent.train()
            adv, ret = ppo.compute_gae(store, args.gamma, args.gae_lambda)
            ppo.ppo_update(agent, opt, store, adv, ret, args, gen)
            n += store.n
        return n / (time.perf_counter() - t)
    return run


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="the earlier commit (any git revision)")
    p.add_argument("--repeats", type=int, default=15, help="pairs per workload")
    p.add_argument("--only", nargs="+", default=None,
                   choices=["engine", "env", "view", "batched", "batched_torch", "playout",
                            "playout_py", "train"])
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        extract(args.before, tmp)
        sys.path.insert(0, tmp)
        before, after = workloads("spades_before"), workloads("spades_env")
        names = [n for n in (args.only or list(after)) if n in before]
        rows = []
        for name in names:
            b_fn, a_fn = before[name], after[name]
            b_fn(), a_fn()  # warm-up (kernel builds, caches)
            ratios, rb, ra = [], [], []
            for k in range(args.repeats):
                if k % 2 == 0:
                    b, a = b_fn(), a_fn()
                else:
                    a, b = a_fn(), b_fn()
                rb.append(b)
                ra.append(a)
                ratios.append(a / b)
            ratios.sort()
            r = statistics.median(ratios)
            q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
            rows.append((name, statistics.median(rb), statistics.median(ra), r, q1, q3))
            print(f"{name:10s} paired ratio after / before {r:.3f} [{q1:.3f}, {q3:.3f}]",
                  flush=True)
    print(f"\n| workload | before (median of {args.repeats}) | after | after / before: median of "
          f"the paired ratios [quartiles] |")
    print("|---|---|---|---|")
    for name, b, a, r, q1, q3 in rows:
        print(f"| {name} | {b:,.0f}/s | {a:,.0f}/s | {r:.3f} [{q1:.3f}, {q3:.3f}] |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
