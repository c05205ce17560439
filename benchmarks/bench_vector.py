"""Decisions per second of the batched engine (``spades_env.vector``) against OpenSpiel.

For each ``num_envs`` the loop is: a uniformly random legal action per game drawn from the action
mask (``env.sample_actions``), then ``env.step`` -- which returns the observation and the
action mask of the next decision for every game. The observation is float32 (``OBS_SIZE``
floats, 2844 bytes) or, with ``obs_format="compact"``, ``spades_env.compact``'s 120 bytes
(``--formats float32 compact``, both by default). Decisions/s = ``num_envs * steps / seconds``; the
figure *without* the random-action draw (env step only) is printed too.

OpenSpiel's reference loop (``pyspiel`` game ``spades``, full games, no observations): at chance
nodes a random outcome, otherwise ``legal_actions()`` + ``random.choice`` + ``apply_action``; only
player decisions are counted. Both run in the same process, an OpenSpiel run right before each
timed run, so the ratio is meaningful on a noisy machine; figures are medians of ``--repeats``.

Also printed: memory per game (env state incl. the 4 per-seat observation buffers, after the
first hand, plus the returned obs and mask) and, as a ceiling, the time of one plain ``copy_`` of a ``(num_envs,
OBS_SIZE)`` float32 tensor (every step must write that much).

Two settings per size: ``default`` (``validate=True, copy=True``: every action checked, fresh
output tensors each step) and ``lean`` (``validate=False, copy=False``: the env's output buffers
are reused; fresh multi-MB tensors per step can cost page faults until glibc raises its mmap
threshold, which it did within the first hands here).

Backends (``--backends``): ``torch`` (tensor ops, CPU or CUDA) and ``native`` (the fused C kernel of
``spades_env.native``, CPU only; ``native/T`` = with T OpenMP threads, ``--kernel-threads 1 2``),
timed in the same run.

``--busy``: the same table again with one busy process beside it (a Python loop spinning on one
core), to show what a loaded machine does to each row.

Usage: ``python benchmarks/bench_vector.py [--sizes 256 1024 4096] [--device cpu|cuda]
[--backends torch native] [--kernel-threads 1 2] [--formats float32 compact] [--busy]
[--threads 1] [--hands 2] [--min-decisions 1000000] [--repeats 3] [--mallopt] [--out FILE]``

A timed run is at least ``--min-decisions`` decisions (more hands at small sizes: 70 hands of 256
games, 18 of 1024, 5 of 4096), so that every row times a stretch of steady stepping as a training loop does
(about 0.1 s): two hands of 256 games are 3 ms, most of it the caches refilling after the
OpenSpiel run just before, and read 14% slower at 256 games (lean: 18.3x against 21.4x with 20
hands, the same code on 6 December).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch

from spades_env.observation import OBS_SIZE
from spades_env.vector import HAND_STEPS, SpadesVectorEnv


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench_vector(n: int, device: torch.device, hands: int, repeats: int, validate: bool,
                 copy: bool, os_seconds: float, backend: str = "torch", threads: int = 1,
                 obs_format: str = "float32"):
    """Median decisions/s of ``repeats`` timed runs of ``hands`` hands, each run paired with an
    OpenSpiel run of ``os_seconds`` just before it (ratios are medians of the paired ratios, so a
    change in machine load hits both sides)."""
    env = SpadesVectorEnv(n, device=device, seed=0, validate=validate, copy=copy,
                          backend=backend, threads=threads, obs_format=obs_format)
    gen = torch.Generator(device=device)
    gen.manual_seed(0)
    obs, mask, seat = env.reset()
    for _ in range(HAND_STEPS):  # warm-up hand
        obs, mask, seat, *_ = env.step(env.sample_actions(gen))
    env_bytes = env.memory_bytes()  # before the timed hands grow the games' score records
    steps = hands * HAND_STEPS
    full, env_only, os_dps = [], [], []
    for _ in range(repeats):
        os_dps.append(bench_openspiel(os_seconds))
        sync(device)
        t_sel = 0.0
        t0 = time.perf_counter()
        for _ in range(steps):
            t1 = time.perf_counter()
            a = env.sample_actions(gen)
            if device.type == "cuda":
                sync(device)
            t_sel += time.perf_counter() - t1
            obs, mask, seat, rew, done, info = env.step(a)
        sync(device)
        dt = time.perf_counter() - t0
        full.append(n * steps / dt)
        env_only.append(n * steps / (dt - t_sel))
    out_bytes = obs.shape[1] * obs.element_size() + mask.shape[1]
    ref = torch.zeros((n, OBS_SIZE), device=device)
    src = torch.rand((n, OBS_SIZE), device=device)
    sync(device)
    t0 = time.perf_counter()
    for _ in range(20):
        ref.copy_(src)
    sync(device)
    copy_s = (time.perf_counter() - t0) / 20
    have_os = os_dps[0] is not None
    return {
        "n": n, "dps": statistics.median(full), "dps_env": statistics.median(env_only),
        "os": statistics.median(os_dps) if have_os else None,
        "ratio": statistics.median(f / o for f, o in zip(full, os_dps)) if have_os else None,
        "ratio_env": statistics.median(f / o for f, o in zip(env_only, os_dps))
        if have_os else None,
        "bytes_per_game": env_bytes / n + out_bytes, "copy_ceiling": n / copy_s,
    }


def bench_openspiel(seconds: float, seed: int = 0) -> float | None:
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("spades")
    rng = random.Random(seed)
    decisions = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
            else:
                state.apply_action(rng.choice(state.legal_actions()))
                decisions += 1
    return decisions / (time.perf_counter() - t0)


def start_spinner():
    """A child process that keeps one core busy until terminated (the ``--busy`` rows)."""
    import subprocess
    import sys
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def tune_malloc() -> None:
    """glibc ``mallopt``: serve large allocations from the heap and never trim it, so the fresh
    multi-MB tensors each step returns reuse already-mapped pages (no page faults)."""
    import ctypes
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    libc.mallopt(m_mmap_threshold, 256 << 20)
    libc.mallopt(m_trim_threshold, 1 << 30)
    libc.mallopt(m_top_pad, 256 << 20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1: on a shared 2-core machine more "
                         "threads contend with other processes and run many times slower; "
                         "0 = torch's choice)")
    ap.add_argument("--hands", type=int, default=2,
                    help="least hands (56 steps each) per timed run")
    ap.add_argument("--min-decisions", type=int, default=1_000_000,
                    help="least decisions per timed run: more hands where num_envs is small")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--openspiel-seconds", type=float, default=1.0,
                    help="OpenSpiel seconds before each timed run")
    ap.add_argument("--backends", nargs="+", default=["torch", "native"],
                    help="SpadesVectorEnv backends to time (native: the fused C kernel, CPU only)")
    ap.add_argument("--kernel-threads", type=int, nargs="+", default=[1],
                    help="OpenMP thread counts to time for the native backend (e.g. 1 2)")
    ap.add_argument("--formats", nargs="+", default=["float32", "compact"],
                    choices=["float32", "compact"], help="observation formats to time")
    ap.add_argument("--busy", action="store_true",
                    help="also time every row with one busy process spinning beside it")
    ap.add_argument("--out", default=None,
                    help="also write the table as markdown to this file (atomically)")
    ap.add_argument("--mallopt", action="store_true",
                    help="glibc: keep freed memory (mmap threshold 256 MiB, no trimming), so fresh "
                         "per-step output tensors do not page-fault; process-wide, Linux only")
    args = ap.parse_args()
    if args.mallopt:
        tune_malloc()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, device {device}, threads {torch.get_num_threads()}, "
          f"mallopt {args.mallopt}")
    # two settings: the defaults (validate every action, fresh output tensors) and "lean"
    # (validate=False, copy=False: the env's reused output buffers)
    modes = (("default", True, True), ("lean", False, False))
    rows = []
    backends = [b for b in args.backends if b == "torch" or device.type == "cpu"]
    runs = [(b, 1) for b in backends if b == "torch"]
    runs += [("native", t) for t in args.kernel_threads if "native" in backends]
    for load in (("idle", "busy") if args.busy else ("idle",)):
        spinner = start_spinner() if load == "busy" else None
        try:
            for n in args.sizes:
                for backend, threads in runs:
                    for fmt in args.formats:
                        for name, validate, copy in modes:
                            hands = max(args.hands, -(-args.min_decisions // (n * HAND_STEPS)))
                            r = bench_vector(n, device, hands, args.repeats, validate, copy,
                                             args.openspiel_seconds, backend, threads, fmt)
                            r["mode"] = name
                            r["backend"] = backend if backend == "torch" else f"native/{threads}"
                            r["format"], r["load"] = fmt, load
                            rows.append(r)
        finally:
            if spinner is not None:
                spinner.terminate()
                spinner.wait()
    lines = []
    if rows[0]["os"] is None:
        lines.append("pyspiel not installed: no OpenSpiel figures")
    lines.append("OpenSpiel: spades random loop without observations, measured before each timed "
                 "run; ratios are medians of the paired ratios")
    lines.append(f"{'load':>4} {'num_envs':>8} {'backend':>9} {'obs':>7} {'mode':>7} "
                 f"{'decisions/s':>13} "
                 f"{'env step only':>14} {'OpenSpiel':>10} {'ratio':>6} {'ratio env':>9} "
                 f"{'bytes/game':>11} {'obs-copy ceiling':>17}")
    for r in rows:
        os_txt = f"{r['os']:,.0f}" if r["os"] else "-"
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "-"
        ratio_env = f"{r['ratio_env']:.2f}" if r["ratio_env"] else "-"
        lines.append(f"{r['load']:>4} {r['n']:>8} {r['backend']:>9} {r['format']:>7} "
                     f"{r['mode']:>7} {r['dps']:>13,.0f} "
                     f"{r['dps_env']:>14,.0f} {os_txt:>10} {ratio:>6} {ratio_env:>9} "
                     f"{r['bytes_per_game']:>11,.0f} {r['copy_ceiling']:>17,.0f}")
    print("\n".join(lines))
    if args.out:
        import datetime
        import os
        import platform
        import sys
        import tempfile
        head = (f"# Batched engine vs OpenSpiel's random loop\n\nGenerated by `python "
                f"benchmarks/bench_vector.py {' '.join(sys.argv[1:])}` on "
                f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
                f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
                f"torch threads {torch.get_num_threads()}. Columns: see the script's docstring "
                f"(decisions/s include drawing a random legal action per game with "
                f"`sample_actions`; 'env step only' leaves that out).\n\n```\n")
        folder = os.path.dirname(os.path.abspath(args.out))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".bench-")
        with os.fdopen(fd, "w") as f:
            f.write(head + "\n".join(lines) + "\n```\n")
        os.replace(tmp, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
