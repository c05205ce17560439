"""A checkpoint bot's torch threads: one per decision (``CheckpointBot(threads=1)``, the default)
against torch's own setting (``threads=None``: one thread per core), side by side.

Each measurement runs the same arena match, the checkpoint against ``hard`` over ``--hands``
single-hand duplicate deals, in ``--procs`` processes at once (what ``spades arena
--workers 2`` or two evaluations side by side do), and takes the wall time of the slowest. The
two settings alternate for ``--repeats`` rounds; printed: the median of each and the ratio.

Usage::

    python benchmarks/bench_checkpoint_threads.py                        # shipped agent, 2 procs
    python benchmarks/bench_checkpoint_threads.py --hands 10 --repeats 5 --procs 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _match(job) -> float:
    """One process: the match with the given thread setting; returns its wall seconds."""
    path, threads, hands, seed = job
    from spades_env.bots.checkpoint_bot import CheckpointBot
    from spades_env.arena import play_match
    t = time.perf_counter()
    play_match(lambda s: CheckpointBot(path, seed=s, threads=threads), "hard", hands=hands,
               seed=seed)
    return time.perf_counter() - t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default=os.path.join(ROOT, "checkpoints", "shipped", "agent.pt"))
    p.add_argument("--hands", type=int, default=6, help="single-hand deals per match (each twice)")
    p.add_argument("--procs", type=int, default=2, help="matches run at once, one per process")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    from spades_env.workers import worker_pool
    times = {1: [], None: []}
    with worker_pool(a.procs) as pool:  # spawn; ends its workers on SIGTERM/Ctrl-C too
        pool.map(_match, [(a.checkpoint, 1, 2, a.seed)] * a.procs)  # warm the imports
        for r in range(a.repeats):
            for threads in (1, None):
                jobs = [(a.checkpoint, threads, a.hands, a.seed + k) for k in range(a.procs)]
                times[threads].append(max(pool.map(_match, jobs)))
                print(f"round {r + 1}: threads={threads}: {times[threads][-1]:.1f} s", flush=True)
    one, default = statistics.median(times[1]), statistics.median(times[None])
    print(f"\n{a.procs} processes at once, {a.hands} deals each against hard, os.cpu_count() = "
          f"{os.cpu_count()}, medians of {a.repeats}:")
    print(f"  threads=1 (default):             {one:7.1f} s")
    print(f"  threads=None (torch's setting):  {default:7.1f} s")
    print(f"  ratio: {default / one:.1f}x faster with one thread per decision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
