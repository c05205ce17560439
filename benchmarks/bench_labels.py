"""Labels per second of the search-distillation stage (``training.labelling.produce_labels``), by
teacher, with 1 and 2 local worker processes and, given ``--ray ADDRESS``, through a Ray cluster;
then the wall time a config's labelling needs on 8, 64 and 512 cores, on paper, from the measured
rate per core.

    python benchmarks/bench_labels.py --teachers hard expert --chunks 4 --chunk-hands 4
    python benchmarks/bench_labels.py --ray 127.0.0.2:6379 --ray-cpus 2     # also through Ray
    .nox/rllib/bin/python benchmarks/bench_labels.py --ray-local   # a local 2-node cluster

A label is one valued decision (a card decision with more than one candidate, or a bid). Every
setting labels the same chunks (same seeds), so they compare side by side in one run; the rate is
labels made divided by wall-clock seconds, start-up of the workers included. The shipped agent is
the labelled network (and ``expert``'s), as in a distillation round of ``configs/long.yaml``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def run(checkpoint, teacher, workers, chunks, hands, samples, bid_samples, ray=None) -> dict:
    """Label ``chunks`` chunks into a fresh folder; returns labels, seconds and labels/s."""
    from spades_env.training.labelling import lock_labels, produce_labels
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "labels")
        lock = lock_labels(folder)
        stats: dict = {}
        t0 = time.perf_counter()
        try:
            produce_labels(checkpoint, folder, 1e4, chunks, hands, 1, samples, workers,
                           log=lambda m: None, teacher=teacher, bid_samples=bid_samples,
                           ray_address=ray, stats=stats)
        finally:
            lock.release()
        sec = time.perf_counter() - t0
    n = stats["made_labels"]
    return {"labels": n, "seconds": sec, "rate": n / sec, "regret": stats["regret"],
            "hands": stats["hands"]}


def main(argv=None) -> int:
    from spades_env.agents import SHIPPED_CHECKPOINT
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default=str(SHIPPED_CHECKPOINT))
    p.add_argument("--teachers", nargs="+", default=["hard", "expert"])
    p.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    p.add_argument("--chunks", type=int, default=4, help="chunks per setting (>= workers)")
    p.add_argument("--chunk-hands", type=int, default=4)
    p.add_argument("--samples", type=int, default=40, help="deals per card decision")
    p.add_argument("--bid-samples", type=int, default=48, help="deals per bid (0: no bid labels)")
    p.add_argument("--repeats", type=int, default=1, help="runs per setting (median quoted)")
    p.add_argument("--ray", default=None, metavar="ADDRESS", help="also label through this Ray "
                   "cluster")
    p.add_argument("--ray-cpus", type=int, default=2, help="CPUs of that cluster (for per core)")
    p.add_argument("--ray-local", action="store_true",
                   help="start a local cluster for the Ray rows: a head and a second node, one "
                        "CPU each, on 127.0.0.2 (tests_frameworks/ray_local.py)")
    p.add_argument("--cluster-hands", type=int, default=0,
                   help="hands a config labels in all (default: configs/cluster.yaml's rounds x "
                        "chunks x chunk_hands), for the wall time on paper")
    a = p.parse_args(argv)
    if a.ray_local:
        sys.path.insert(0, os.path.join(ROOT, "tests_frameworks"))
        from ray_local import LocalRayCluster
        with tempfile.TemporaryDirectory() as logs, \
                LocalRayCluster(workers=1, cpus_per_node=1, log_dir=logs) as address:
            a.ray, a.ray_cpus = address, 2
            return bench(a)
    return bench(a)


def bench(a) -> int:
    rows = []
    for teacher in a.teachers:
        settings = [(f"{w} local worker{'s' * (w > 1)}", w, None, w) for w in a.workers]
        if a.ray:
            settings.append((f"Ray, {a.ray_cpus} CPUs", 1, a.ray, a.ray_cpus))
        for what, w, ray, cores in settings:
            runs = [run(a.checkpoint, teacher, w, a.chunks, a.chunk_hands, a.samples,
                        a.bid_samples, ray) for _ in range(a.repeats)]
            rate = statistics.median(r["rate"] for r in runs)
            rows.append((teacher, what, cores, runs[0]["labels"], rate, rate / cores,
                         runs[0]["hands"] / statistics.median(r["seconds"] for r in runs)))
            print(f"{teacher:7s} {what:20s} {runs[0]['labels']:6d} labels  {rate:7.1f} labels/s  "
                  f"{rate / cores:6.1f} per core", flush=True)
    print()
    print(f"checkpoint {os.path.relpath(a.checkpoint, ROOT)}, {a.chunks} chunks of "
          f"{a.chunk_hands} hands per setting, {a.samples} deals per card, {a.bid_samples} per "
          f"bid; median of {a.repeats}")
    print()
    print("| teacher | where | cores | labels | labels/s | per core | hands/s |")
    print("|---|---|---|---|---|---|---|")
    for t, what, cores, n, rate, per, hps in rows:
        print(f"| {t} | {what} | {cores} | {n} | {rate:.1f} | {per:.1f} | {hps:.2f} |")
    hands = a.cluster_hands
    if not hands:
        from spades_env.training.config import load_yaml
        c = load_yaml(os.path.join(ROOT, "configs", "cluster.yaml"))
        hands = c.distill_rounds * c.distill_chunks * c.distill_chunk_hands
    if hands:
        print()
        print(f"On paper: {hands:,} labelled hands (the cluster config's rounds x chunks x "
              f"hands), at each teacher's rate per core with every core busy (its setting with "
              f"the most cores: Ray if measured), assuming linear scaling:")
        print()
        print("| teacher | hands/s per core | 8 cores | 64 cores | 512 cores |")
        print("|---|---|---|---|---|")
        for t in a.teachers:
            busy = max((r for r in rows if r[0] == t), key=lambda r: (r[2], r[2] > 1 and
                                                                       "Ray" in r[1]))
            per_core = busy[6] / busy[2]
            cells = [f"{hands / (per_core * n) / 3600:.1f} h" for n in (8, 64, 512)]
            print(f"| {t} | {per_core:.2f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
