"""The batched engine's native kernel with 1 and 2 threads, side by side, on the machine as it is
and with busy processes beside it.

A user's machine is rarely idle: with one busy process on a 2-core machine, OpenMP threads that
wait for a core that is not theirs made ``threads=2`` slower than ``threads=1``. This measures
decisions/s of ``SpadesVectorEnv(n, threads=T, validate=False, copy=False)`` stepping random legal
actions (``sample_actions``) for ``threads=1``, ``threads=2`` (adapting to the load, the default
where the installed version has ``adapt_threads``) and ``threads=2, adapt_threads=False`` (the old
fixed setting), on the machine as it is and with ``--busy`` spinning Python processes
(a Python loop) started beside it, each measurement ``--seconds`` long after ``--settle``
seconds of untimed steps under its load. Every round measures each (load, setting) cell once, in
an order that alternates between rounds, so drifting load from other programs hits all cells
alike; printed are the medians over ``--repeats`` rounds and each setting's ratio to threads=1
under the same load (the median of the rounds' paired ratios, and their min and max). One torch
thread.

Usage::

    python benchmarks/bench_kernel_load.py                                  # 1024 and 4096 games
    python benchmarks/bench_kernel_load.py --sizes 1024 --repeats 9 --seconds 1 --out FILE.md
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import os
import platform
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from spades_env.vector import SpadesVectorEnv  # noqa: E402

# spins until stopped, or until the benchmark is gone (even killed outright: no orphan spinner)
BUSY = ("import os\nparent = os.getppid()\n"
        "while os.getppid() == parent:\n    for _ in range(10**5): pass")


def start_busy(k: int) -> list[subprocess.Popen]:
    """``k`` spinning Python processes (ended by ``stop_busy``)."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(k)]
    time.sleep(0.3)  # let them get on a core
    return procs


def stop_busy(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
        p.wait()


def rate(env: SpadesVectorEnv, gen: torch.Generator, seconds: float) -> float:
    """Decisions/s of steps of random legal actions for about ``seconds`` (whole steps)."""
    t0 = time.perf_counter()
    steps = 0
    while True:
        env.step(env.sample_actions(gen))
        steps += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return env.num_envs * steps / dt


ADAPTS = "adapt_threads" in inspect.signature(SpadesVectorEnv).parameters
# the settings side by side: threads=1, threads=2 (the default: adapting to the load, where the
# installed version has adapt_threads), and threads=2 held fixed (the old behaviour)
SETTINGS = {"1": dict(threads=1), "2": dict(threads=2)}
if ADAPTS:
    SETTINGS["2 fixed"] = dict(threads=2, adapt_threads=False)


def measure(n: int, seconds: float, settle: float, repeats: int, busy: int, log=print) -> dict:
    """``{(load, setting): [decisions/s per round]}`` for load "idle" / "busy" and each of
    ``SETTINGS``: each timed for ``seconds`` after ``settle`` seconds of untimed steps under the
    same load (an adapting env finds its setting; a load lasts longer than that)."""
    envs, gens = {}, {}
    for k, (name, kw) in enumerate(SETTINGS.items()):
        envs[name] = env = SpadesVectorEnv(n, seed=k, validate=False, copy=False,
                                           backend="native", **kw)
        if env.threads != kw["threads"]:
            raise SystemExit(f"the kernel runs {env.threads} thread(s), not {kw['threads']} "
                             f"(built without OpenMP?)")
        gens[name] = torch.Generator().manual_seed(k)
        env.reset()
        rate(env, gens[name], 0.2)  # warm-up
    out = {(load, name): [] for load in ("idle", "busy") for name in SETTINGS}
    for r in range(repeats):
        loads = ("idle", "busy") if r % 2 == 0 else ("busy", "idle")
        names = list(SETTINGS) if r % 2 == 0 else list(SETTINGS)[::-1]
        for load in loads:
            procs = start_busy(busy) if load == "busy" else []
            try:
                for name in names:
                    rate(envs[name], gens[name], settle)
                    out[load, name].append(rate(envs[name], gens[name], seconds))
            finally:
                stop_busy(procs)
        log(f"  {n} games, round {r + 1}: " + ", ".join(
            f"{load}/t{t} {v[-1] / 1e6:.2f}M" for (load, t), v in out.items()), flush=True)
    return out


def table(results: dict, busy: int) -> list[str]:
    """Medians per setting and, per setting other than 1 thread, its ratio to threads=1 (median of
    the rounds' paired ratios, and their min and max)."""
    names = [k for k in SETTINGS if k != "1"]
    head = f"{'num_envs':>9} {'load':>8} {'threads=1':>12}"
    for name in names:
        head += f" {'threads=' + name:>15} {'/t1':>5} {'min':>5} {'max':>5}"
    lines = [head]
    for n, out in results.items():
        for load in ("idle", "busy"):
            one = out[load, "1"]
            label = "as is" if load == "idle" else f"+{busy} busy"
            row = f"{n:>9} {label:>8} {statistics.median(one):>12,.0f}"
            for name in names:
                ratios = [b / a for a, b in zip(one, out[load, name])]
                row += (f" {statistics.median(out[load, name]):>15,.0f} "
                        f"{statistics.median(ratios):>5.2f} {min(ratios):>5.2f} "
                        f"{max(ratios):>5.2f}")
            lines.append(row)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement")
    ap.add_argument("--settle", type=float, default=1.0,
                    help="untimed seconds before each measurement, under its load")
    ap.add_argument("--repeats", type=int, default=7, help="rounds (medians over them)")
    ap.add_argument("--busy", type=int, default=1, help="spinning processes beside it")
    ap.add_argument("--out", default=None, help="also write the table to this Markdown file")
    ap.add_argument("--label", default="", help="a note for the table's heading")
    a = ap.parse_args(argv)
    for name in ("repeats", "busy"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be at least 1")
    if not (0 < a.seconds <= 600 and 0 <= a.settle <= 600):
        ap.error("--seconds must be in (0, 600] and --settle in [0, 600]")
    if any(n < 1 for n in a.sizes):
        ap.error("--sizes must be positive")
    torch.set_num_threads(1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # busy processes end in finally
    results = {n: measure(n, a.seconds, a.settle, a.repeats, a.busy) for n in a.sizes}
    lines = table(results, a.busy)
    print("\n".join(lines))
    if a.out:
        env = {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                         "SPADES_KERNEL_THREADS") if k in os.environ}
        head = (f"`python benchmarks/bench_kernel_load.py --sizes {' '.join(map(str, a.sizes))} "
                f"--seconds {a.seconds:g} --settle {a.settle:g} --repeats {a.repeats} "
                f"--busy {a.busy}`"
                f"{' ' + str(env) if env else ''} on "
                f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
                f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
                f"1 torch thread. Decisions/s (random legal actions, validate=False, copy=False), "
                f"medians of {a.repeats} interleaved rounds; t2/t1: median of the rounds' paired "
                f"ratios, min and max of them.")
        with open(a.out, "a") as f:
            f.write(f"\n### {a.label or 'run'}\n\n{head}\n\n```\n" + "\n".join(lines) + "\n```\n")
        print(f"appended to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
