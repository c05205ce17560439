"""The PIMC deal sampler drawing deal by deal in Python against the batched numpy draw
(``DealSampler.samples``, ``batched=False`` / ``True``), side by side in one process:

1. ``samples(n, rnd)`` per call on the samplers of real label production (every ``DealSampler``
   that ``label_chunk(native=False)`` built for its card decisions, captured once, then drawn
   from again; the default labels draw most deals in C: ``bench_label_path.py``), for
   several ``n``: where numpy's fixed cost per call pays (``sampler.BATCH_MIN``);
2. ``label_chunk(checkpoint, hands, 1, 1, native=False)`` end to end (torch on one thread), the two draws
   alternating run by run (``sampler.BATCH_MIN`` raised past any ``n`` for the old draw).

    python benchmarks/bench_sampler.py         # default_20m/latest.pt if present, else shipped
    python benchmarks/bench_sampler.py --hands 40 --repeats 7 --checkpoint PATH

Prints medians (microseconds per call, seconds per chunk) and the ratios old / new.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def capture(checkpoint: str, hands: int) -> list:
    """The samplers ``label_chunk(checkpoint, hands, 1, 1)`` draws from (one per ``samples``
    call)."""
    from spades_env.bots import sampler
    from spades_env.training.labelling import label_chunk
    got = []
    orig = sampler.DealSampler.samples

    def rec(self, n, rnd, batched=None):
        got.append(self)
        return orig(self, n, rnd, batched)

    sampler.DealSampler.samples = rec
    try:
        label_chunk(checkpoint, hands, 1, 1, native=False)
    finally:
        sampler.DealSampler.samples = orig
    return got


def per_call(samplers: list, n: int, batched: bool) -> float:
    """Microseconds per ``samples(n, rnd, batched)`` call over ``samplers``, each as if it were
    its first (the batched draw's arrays built again: a sampler serves one decision)."""
    rnd = random.Random(0)
    t = time.perf_counter()
    for s in samplers:
        s._arrays = None
        s.samples(n, rnd, batched=batched)
    return (time.perf_counter() - t) / len(samplers) * 1e6


def chunk_seconds(checkpoint: str, hands: int, batched: bool) -> float:
    from spades_env.bots import sampler
    from spades_env.training.labelling import label_chunk
    keep = sampler.BATCH_MIN
    sampler.BATCH_MIN = keep if batched else 1 << 62
    try:
        t = time.perf_counter()
        label_chunk(checkpoint, hands, 1, 1, native=False)
        return time.perf_counter() - t
    finally:
        sampler.BATCH_MIN = keep


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.path.join(ROOT, "checkpoints", "default_20m", "latest.pt")
    if not os.path.exists(default):
        from spades_env.agents import SHIPPED_CHECKPOINT
        default = str(SHIPPED_CHECKPOINT)
    p.add_argument("--checkpoint", default=default)
    p.add_argument("--hands", type=int, default=40, help="hands of the timed label_chunk")
    p.add_argument("--capture-hands", type=int, default=10,
                   help="hands whose samplers the per-call timing draws from")
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8, 40, 160])
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from spades_env.bots import sampler
    samplers = capture(a.checkpoint, a.capture_hands)
    pools = {}
    for s in samplers:
        pools[len(s.pools)] = pools.get(len(s.pools), 0) + 1
    print(f"checkpoint {os.path.relpath(a.checkpoint, ROOT)}; {len(samplers)} samplers of "
          f"{a.capture_hands} labelled hands (pools: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(pools.items())) + f"); "
          f"BATCH_MIN = {sampler.BATCH_MIN}; median of {a.repeats}")
    print()
    print("| deals per call | deal by deal (us/call) | batched (us/call) | old / new |")
    print("|---|---|---|---|")
    for n in a.sizes:
        old, new = [], []
        for _ in range(a.repeats):
            old.append(per_call(samplers, n, False))
            new.append(per_call(samplers, n, True))
        mo, mn = statistics.median(old), statistics.median(new)
        print(f"| {n} | {mo:.1f} | {mn:.1f} | {mo / mn:.2f} |", flush=True)
    print()
    chunk_seconds(a.checkpoint, 2, True)  # warm: the checkpoint read, the kernel loaded
    old, new = [], []
    for _ in range(a.repeats):
        old.append(chunk_seconds(a.checkpoint, a.hands, False))
        new.append(chunk_seconds(a.checkpoint, a.hands, True))
    mo, mn = statistics.median(old), statistics.median(new)
    print(f"| label_chunk({a.hands} hands) | deal by deal (s) | batched (s) | old / new |")
    print("|---|---|---|---|")
    print(f"| median of {a.repeats} | {mo:.2f} | {mn:.2f} | {mo / mn:.2f} |")
    print(f"| runs | {', '.join(f'{x:.2f}' for x in old)} | {', '.join(f'{x:.2f}' for x in new)} "
          f"| |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
