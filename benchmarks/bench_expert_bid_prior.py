"""What the network's bid prior in the bid search (``make_bot("expert", bid_prior=L)``) changes.

Positions: every bid with its cards seen in the bidding of ``--games`` deals by four ``insane``
bots (seeds 0..games-1, scores 0-0). At each, ``expert`` without the prior (``bid_prior=0``,
seed 1) values every candidate bid (``bid_values``) and bids the best; with ``bid_prior=L`` it would bid the best of
those values plus ``L * log p(bid)`` (``ExpertBot.bid_prior_values``, ``p`` the network's policy).
Both bids are judged by a second, independent bid search with ``--referee`` times the deals
(seed 2). Per weight: the share of bids changed and the referee's value of the bid with the prior
minus the bid without (points per bid, 95% normal interval). The referee is the same search with
less noise, so it shares the search's model (the play-outs, the shading, the estimated bids of
the seats still to bid): below 0 means the prior moves bids away from what the search believes,
which only matches in play can say is wrong (``bench_expert.py``, ``--variant NAME:bid_prior=L``).

Usage::

    python benchmarks/bench_expert_bid_prior.py --games 80 --prior 0.25 --prior 0.5 --prior 1 \\
        --out benchmarks/results/expert_bid_prior.md
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_agent import emit_table, normal_interval  # noqa: E402

from spades_env import SpadesGame  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.bots.expert import BID_PRIOR_FLOOR  # noqa: E402
from spades_env.cards import BID_OFFSET  # noqa: E402
from spades_env.engine import Phase  # noqa: E402


def bid_positions(games: int) -> list:
    """The views of every bid made with the cards seen, in one bidding of four ``insane`` bots
    per seed 0..games-1 (each bot's bid made as it would be in play)."""
    out = []
    for seed in range(games):
        g = SpadesGame(seed=seed)
        bots = [make_bot("insane", seed=seed * 10 + s) for s in range(4)]
        while g.phase == Phase.BIDDING:
            v = g.view(g.current_player)
            if v.looked and len(v.legal_actions) > 1:
                out.append(v)
            g.apply(bots[v.seat].act(v))
    return out


def _best(values) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=80)
    ap.add_argument("--prior", type=float, action="append", required=True,
                    help="bid_prior weight (points per nat); repeatable")
    ap.add_argument("--referee", type=int, default=5, help="the referee's deals per bid, "
                    "in multiples of expert's bid_samples")
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    chooser = make_bot("expert", seed=1, bid_prior=0)
    referee = make_bot("expert", seed=2, bid_prior=0,
                       bid_samples=chooser.bid_samples * args.referee)
    rows, secs, shift = [], [], collections.Counter()
    for v in bid_positions(args.games):
        t = time.perf_counter()
        bids, values = chooser.bid_values(v)
        secs.append(time.perf_counter() - t)
        rb, judge = referee.bid_values(v)
        assert rb == bids
        p = chooser.policy(v, v.legal_actions)[BID_OFFSET:BID_OFFSET + 14]
        logp = np.log(np.maximum(p[bids], BID_PRIOR_FLOOR))
        shift[int(np.argmax(p)) - bids[_best(values)]] += 1
        rows.append((np.array(values), np.array(judge), logp))
    n = len(rows)
    same = shift[0]
    lines = [f"{n} bids from {args.games} biddings of `insane` bots; `expert` with "
             f"`bid_prior=0` bids (seed 1, "
             f"{chooser.bid_samples} deals), a bid search with {args.referee}x the deals judges "
             f"(seed 2); median `bid_values` time {np.median(secs) * 1000:.0f} ms "
             f"({time.perf_counter() - t0:.0f} s in all)", "",
             f"The network's favourite bid is the search's in {same} of {n} bids ({same / n:.0%}); "
             "network minus search, bids: " + ", ".join(
                 f"{k:+d}: {shift[k]}" for k in sorted(shift)), "",
             "| bid_prior (points per nat) | bids changed | referee: with prior - without, "
             "points per bid [95% CI] |", "|---|---|---|"]
    for lam in args.prior:
        diffs, changed = [], 0
        for values, judge, logp in rows:
            i0, i = _best(values), _best(values + lam * logp)
            changed += i != i0
            diffs.append(judge[i] - judge[i0])
        m, lo, hi = normal_interval(diffs)
        lines.append(f"| {lam:g} | {changed / n:.1%} | {m:+.3f} [{lo:+.3f}, {hi:+.3f}] |")
    emit_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
