"""The PIMC labels' fast path against the reference path, side by side in one run.

``training.labelling.label_chunk`` with ``native=True`` (the policy's decisions in numpy,
``hard``'s deals drawn in C: ``CheckpointBot(numpy_forward=True)``, ``PIMCBot(native_deals=True)``)
and with ``native=False`` (torch and the Python sampler), on the same chunks, alternating which
runs first, ``--repeats`` times; prints the median seconds a hand of each and the ratio. One
process, one torch thread, as a label worker runs.

    python benchmarks/bench_label_path.py [--checkpoint PATH] [--hands 20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main(argv=None) -> int:
    import torch

    from spades_env.agents import SHIPPED_CHECKPOINT
    from spades_env.training.labelling import label_chunk
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default=str(SHIPPED_CHECKPOINT))
    p.add_argument("--hands", type=int, default=20, help="hands a run (one chunk)")
    p.add_argument("--samples", type=int, default=40, help="deals per card decision")
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    label_chunk(a.checkpoint, 1, 1, 0, a.samples)  # imports, kernel and caches warm
    times: dict = {True: [], False: []}
    for r in range(a.repeats):
        for native in ((True, False) if r % 2 == 0 else (False, True)):
            t0 = time.perf_counter()
            label_chunk(a.checkpoint, a.hands, 1, r + 1, a.samples, native=native)
            times[native].append((time.perf_counter() - t0) / a.hands)
            print(f"run {r + 1}, {'fast' if native else 'reference'}: "
                  f"{times[native][-1] * 1e3:.1f} ms a hand", flush=True)
    fast, ref = statistics.median(times[True]), statistics.median(times[False])
    print(f"\n{a.hands} hands a run, {a.samples} deals per card, median of {a.repeats}: "
          f"fast path {fast * 1e3:.1f} ms a hand ({1 / fast:.1f} hands/s), reference "
          f"{ref * 1e3:.1f} ms ({1 / ref:.1f} hands/s); ratio {ref / fast:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
