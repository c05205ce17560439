"""Decision time of each bot level (targets: ``medium`` < 1 ms, ``hard`` < 50 ms, ``insane`` <
500 ms, median over a game).

For each level, four copies of the bot play ``--hands`` hands of one seeded game (standard rules);
every call to ``act`` is timed. Printed per level: decisions, median / 90th percentile / max over
all decisions, and the median over *real* card choices (more than one legal card) and over bids,
so that forced plays do not flatter the figure.

Usage::

    python benchmarks/bench_bot_speed.py                       # all levels, 2 hands each
    python benchmarks/bench_bot_speed.py --levels hard insane --hands 4 --seed 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from spades_env import Rules, SpadesGame  # noqa: E402
from spades_env.bots import BOT_LEVELS, make_bot  # noqa: E402


def time_level(level: str, hands: int, seed: int) -> dict:
    """Play ``hands`` hands with four ``level`` bots; return timing lists in milliseconds."""
    bots = [make_bot(level, seed=seed * 10 + s) for s in range(4)]
    g = SpadesGame(Rules(), seed=seed)
    all_ms, card_ms, bid_ms = [], [], []
    while g.hand_number < hands and not g.is_over:
        p = g.current_player
        v = g.view(p)
        t = time.perf_counter()
        a = bots[p].act(v)
        dt = (time.perf_counter() - t) * 1e3
        all_ms.append(dt)
        if a >= 52:
            bid_ms.append(dt)
        elif len(v.legal_actions) > 1:
            card_ms.append(dt)
        g.apply(a)
    return {"all": all_ms, "cards": card_ms, "bids": bid_ms}


def _q(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", nargs="+", default=list(BOT_LEVELS), help="bot levels to time")
    ap.add_argument("--hands", type=int, default=2, help="hands per level")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None, help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    rows = {}
    print(f"{'level':8} {'decisions':>9} {'median ms':>10} {'p90 ms':>9} {'max ms':>9} "
          f"{'cards med':>10} {'bids med':>9}")
    for level in args.levels:
        try:
            t = time_level(level, args.hands, args.seed)
        except ImportError as e:  # a level whose module is not there yet
            print(f"{level:8} unavailable: {e}")
            continue
        a = t["all"]
        row = {"decisions": len(a), "median_ms": statistics.median(a), "p90_ms": _q(a, 0.9),
               "max_ms": max(a),
               "card_choice_median_ms": statistics.median(t["cards"]) if t["cards"] else None,
               "bid_median_ms": statistics.median(t["bids"]) if t["bids"] else None}
        rows[level] = row
        print(f"{level:8} {len(a):9d} {row['median_ms']:10.3f} {row['p90_ms']:9.3f} "
              f"{row['max_ms']:9.2f} {row['card_choice_median_ms'] or float('nan'):10.3f} "
              f"{row['bid_median_ms'] or float('nan'):9.3f}")
    if args.json:
        d = os.path.dirname(os.path.abspath(args.json))
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"hands": args.hands, "seed": args.seed, "levels": rows}, f, indent=2)
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
