"""Contract quality of a bot level in self-play (target: ``insane`` over 1000 hands should set
under 10% of contracts, make over 70% of its Nil bids, and bid 9.5..11.5 tricks per table).

Four copies of the bot play ``--hands`` independent single hands (standard rules, scores and bags
at 0, a fresh seeded deal each) and the script prints: contracts set (with a Clopper-Pearson 95%
interval), Nil bids and the share made, the average table bid total (sum of the four bids, Nil = 0)
with a Student-t 95% interval, and seconds per hand. Hands are independent, so they can be split
over processes with ``--workers``.

Usage::

    python benchmarks/bench_contract_quality.py --level insane --hands 100 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from spades_env import SpadesGame  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402


def play_hand(level: str, seed: int) -> dict:
    """One self-play hand from a seeded deal; returns bids, tricks and the two TeamScores."""
    g = SpadesGame(seed=seed)
    bots = [make_bot(level, seed=seed * 4 + s) for s in range(4)]
    while g.hand_number == 0:
        p = g.current_player
        g.apply(bots[p].act(g.view(p)))
    r = g.hand_results[0]
    return {"bids": list(r.bids), "tricks": list(r.tricks),
            "made": [t.made for t in r.teams], "nil_points": [t.nil_points for t in r.teams]}


def _run(args_tuple):
    level, seed = args_tuple
    return play_hand(level, seed)


def summarize(results: list[dict]) -> dict:
    contracts = [m for r in results for m in r["made"] if m is not None]
    n_set = sum(1 for m in contracts if m is False)
    nil_bids = nil_made = 0
    for r in results:
        for s in range(4):
            if r["bids"][s] == 0:
                nil_bids += 1
                nil_made += r["tricks"][s] == 0
    totals = np.array([sum(r["bids"]) for r in results], dtype=float)
    set_ci = stats.binomtest(n_set, len(contracts)).proportion_ci() if contracts else None
    bid_ci = stats.t.interval(0.95, len(totals) - 1, loc=totals.mean(),
                              scale=stats.sem(totals)) if len(totals) > 1 else (np.nan, np.nan)
    return {
        "hands": len(results), "contracts": len(contracts), "set": n_set,
        "set_rate": n_set / max(1, len(contracts)),
        "set_ci": [set_ci.low, set_ci.high] if set_ci else None,
        "nil_bids": nil_bids, "nil_made": nil_made,
        "nil_success": nil_made / nil_bids if nil_bids else float("nan"),
        "table_bid_mean": float(totals.mean()),
        "table_bid_ci": [float(bid_ci[0]), float(bid_ci[1])],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--level", default="insane")
    ap.add_argument("--hands", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.hands < 2:
        ap.error("--hands must be at least 2")
    jobs = [(args.level, args.seed * 100_000 + i) for i in range(args.hands)]
    t = time.perf_counter()
    if args.workers > 1:
        from spades_env.workers import worker_pool
        with worker_pool(args.workers, executor=True) as ex:  # ends them on SIGTERM/Ctrl-C
            results = list(ex.map(_run, jobs))
    else:
        results = [_run(j) for j in jobs]
    elapsed = time.perf_counter() - t
    s = summarize(results)
    s["level"] = args.level
    s["seconds_per_hand"] = elapsed / args.hands
    print(f"{args.level} self-play, {s['hands']} hands (seed {args.seed}), "
          f"{s['seconds_per_hand']:.1f} s per hand")
    ci = s["set_ci"]
    print(f"contracts set     {s['set']}/{s['contracts']} = {100 * s['set_rate']:.1f}% "
          f"(95% CI {100 * ci[0]:.1f}..{100 * ci[1]:.1f}%)   target < 10%")
    print(f"Nil success       {s['nil_made']}/{s['nil_bids']} = {100 * s['nil_success']:.1f}%"
          f"   target > 70%")
    print(f"table bid total   {s['table_bid_mean']:.2f} (95% CI {s['table_bid_ci'][0]:.2f}.."
          f"{s['table_bid_ci'][1]:.2f})   target 9.5..11.5")
    if args.json:
        d = os.path.dirname(os.path.abspath(args.json))
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(s, f, indent=2)
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
