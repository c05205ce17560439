"""Merge several ``bench_contract_quality.py --json`` chunk files into one contract-quality figure.

Long self-play runs of ``insane`` are run in chunks (one seed per chunk, each its own deals), e.g.::

    for k in $(seq 101 120); do
        python benchmarks/bench_contract_quality.py --level insane --hands 50 --seed $k \
            --workers 2 --json runs/cq/chunk_$k.json
    done
    python benchmarks/merge_contract_quality.py runs/cq/chunk_*.json

Counts (contracts set, Nil bids made) add exactly; the table-bid mean and its Student-t 95% interval
are pooled from each chunk's mean and interval (the per-hand variance is recovered from the chunk's
standard error). Intervals for rates: Clopper-Pearson (``scipy.stats.binomtest``).
"""

from __future__ import annotations

import argparse
import json
import math

from scipy import stats


def merge(chunks: list[dict]) -> dict:
    """Pool chunk summaries (dicts as written by ``bench_contract_quality.py --json``)."""
    hands = contracts = n_set = nil_bids = nil_made = 0
    sum_x = sum_xx = 0.0
    for d in chunks:
        n = d["hands"]
        hands += n
        contracts += d["contracts"]
        n_set += d["set"]
        nil_bids += d["nil_bids"]
        nil_made += d["nil_made"]
        m = d["table_bid_mean"]
        sem = (d["table_bid_ci"][1] - m) / stats.t.ppf(0.975, n - 1)
        var = sem * sem * n
        sum_x += m * n
        sum_xx += (n - 1) * var + n * m * m
    mean = sum_x / hands
    sem = math.sqrt((sum_xx - hands * mean * mean) / (hands - 1) / hands)
    half = stats.t.ppf(0.975, hands - 1) * sem
    set_ci = stats.binomtest(n_set, contracts).proportion_ci()
    nil_ci = stats.binomtest(nil_made, nil_bids).proportion_ci()
    return {"hands": hands, "contracts": contracts, "set": n_set, "set_rate": n_set / contracts,
            "set_ci": [set_ci.low, set_ci.high], "nil_bids": nil_bids, "nil_made": nil_made,
            "nil_success": nil_made / nil_bids, "nil_ci": [nil_ci.low, nil_ci.high],
            "table_bid_mean": mean, "table_bid_ci": [mean - half, mean + half]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Merge contract-quality chunk JSON files.")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    s = merge([json.load(open(f)) for f in args.files])
    print(f"{s['hands']} hands from {len(args.files)} chunks")
    print(f"contracts set   {s['set']}/{s['contracts']} = {100 * s['set_rate']:.1f}% "
          f"(95% CI {100 * s['set_ci'][0]:.1f}..{100 * s['set_ci'][1]:.1f}%)   target < 10%")
    print(f"Nil success     {s['nil_made']}/{s['nil_bids']} = {100 * s['nil_success']:.1f}% "
          f"(95% CI {100 * s['nil_ci'][0]:.1f}..{100 * s['nil_ci'][1]:.1f}%)   target > 70%")
    print(f"table bid total {s['table_bid_mean']:.2f} (95% CI {s['table_bid_ci'][0]:.2f}.."
          f"{s['table_bid_ci'][1]:.2f})   target 9.5..11.5")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
