"""Arena throughput against the number of Ray workers (needs Ray: run in the rllib nox
environment, ``.nox/rllib/bin/python benchmarks/bench_ray_arena.py``).

Starts a local Ray cluster (``tests_frameworks/ray_local.py``: a head plus worker nodes of one CPU
each, on a loopback address) for each worker count, plays the same duplicate match with
``--ray``, and prints duplicate hands per second next to the one-process run and ``--workers``.
Every run must give the same pair results (checked). On a 2-core machine more than 2 CPUs cannot
help; on a real cluster each node adds its CPUs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests_frameworks"))

from ray_local import LocalRayCluster  # noqa: E402

from spades_env.arena import play_match  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--team0", default="hard")
    p.add_argument("--team1", default="medium")
    p.add_argument("--hands", type=int, default=16, help="duplicate single-hand pairs")
    p.add_argument("--nodes", type=int, nargs="+", default=[1, 2],
                   help="cluster sizes (nodes of 1 CPU, the head included)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    rows = []
    t0 = time.perf_counter()
    ref = play_match(args.team0, args.team1, hands=args.hands, seed=args.seed)
    rows.append(("1 process", time.perf_counter() - t0))
    t0 = time.perf_counter()
    r = play_match(args.team0, args.team1, hands=args.hands, seed=args.seed, workers=2)
    rows.append(("--workers 2", time.perf_counter() - t0))
    assert r.pair_diffs == ref.pair_diffs
    def on_ray(address, hands, seed, out):
        # the CLI in a fresh process, as a user runs it (Ray reads its token settings once per
        # process); the time includes connecting and shipping the package
        subprocess.run([sys.executable, "-m", "spades_env", "arena", "--team0", args.team0,
                        "--team1", args.team1, "--hands", str(hands), "--seed", str(seed),
                        "--ray", address, "--quiet", "--out", out], check=True,
                       capture_output=True)
        return json.loads(Path(out).read_text())

    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            with LocalRayCluster(workers=n - 1, cpus_per_node=1) as address:
                t0 = time.perf_counter()
                on_ray(address, 2, 0, f"{tmp}/warm.json")  # connect + ship + import, once
                connect_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                r = on_ray(address, args.hands, args.seed, f"{tmp}/r.json")
                rows.append((f"Ray, {n} node(s) x 1 CPU (minus {connect_s:.0f} s start-up of a "
                             f"2-pair run)", time.perf_counter() - t0 - connect_s))
                assert r["pair_diffs"] == ref.pair_diffs, "Ray result differs from one process"
    print(f"{args.team0} vs {args.team1}, {args.hands} duplicate pairs ({2 * args.hands} hands)")
    print(f"| run | seconds | hands/s | speed-up |\n|---|---|---|---|")
    for name, s in rows:
        print(f"| {name} | {s:.1f} | {2 * args.hands / s:.2f} | {rows[0][1] / s:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
