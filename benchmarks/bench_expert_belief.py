"""How well a search bot's weighted deals place the hidden cards: the belief behind ``expert``.

Positions: ``--games`` hands played by four ``hard`` bots (30 deals per card, 16 per bid; seeds
0..games-1), every fifth decision with more than one legal action (bids and cards). For each
position and each variant, the bot's own deals for that decision (``bot._deals(view, 400)``: drawn
from the view, weighted, resampled) give each hidden card a probability of being held by each
other seat; the score is the mean over hidden cards of ``log q(true holder)`` (floored at
``log 0.001``), averaged over positions. Higher is better; uniform deals that agree with the view
(``inference=none``) are the reference. Differences between variants are paired by position,
with a 95% normal interval. No play-out is run: this measures inference alone, fast and with
little noise, where a match measures everything at once.

Usage::

    python benchmarks/bench_expert_belief.py --games 12 \\
        --variant none:inference=none --variant insane --variant expert \\
        --out benchmarks/results/expert_belief.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_expert import parse_variant  # noqa: E402

from spades_env import SpadesGame  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.engine import Phase  # noqa: E402
from spades_env.fileio import write_atomic  # noqa: E402


def positions(games: int) -> list:
    """``(view, hands)`` pairs from one hand of ``hard`` bots per seed 0..games-1."""
    out = []
    for seed in range(games):
        g = SpadesGame(seed=seed)
        bots = [make_bot("hard", seed=seed * 10 + s, samples=30, bid_samples=16)
                for s in range(4)]
        k = 0
        while not g.hand_results:
            seat = g.current_player
            v = g.view(seat)
            if k % 5 == 2 and len(v.legal_actions) > 1 and g.phase in (Phase.BIDDING, Phase.PLAY):
                out.append((v, list(g.hands)))
            g.apply(bots[seat].act(v))
            k += 1
    return out


def belief_score(bot, view, hands, n: int = 400) -> float:
    """Mean ``log q(true holder)`` over the cards hidden from ``view``'s seat."""
    deals = bot._deals(view, n)
    total = sum(w for _d, w in deals)
    lp = []
    for c in range(52):
        holder = next((s for s in range(4) if (hands[s] >> c) & 1), None)
        if holder is None or holder == view.seat:
            continue
        q = sum(w for d, w in deals if (d[holder] >> c) & 1) / total
        lp.append(np.log(max(q, 1e-3)))
    return float(np.mean(lp))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=12)
    ap.add_argument("--variant", action="append", required=True,
                    help="NAME:KEY=VALUE,... (expert options) or a bot name; repeatable")
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    args = ap.parse_args(argv)
    pos = positions(args.games)
    lines = [f"{len(pos)} positions from {args.games} hands of `hard` bots (seeds 0..."
             f"{args.games - 1}); score: mean log-probability of each hidden card's true holder "
             f"under the bot's deals (higher is better)", "",
             "| variant | options | score | vs first [95% CI] | seconds |", "|---|---|---|---|---|"]
    first = None
    for label, name, opts in (parse_variant(v) for v in args.variant):
        t = time.perf_counter()
        bot = make_bot(name, seed=1, **opts)
        s = np.array([belief_score(bot, v, h) for v, h in pos])
        secs = time.perf_counter() - t
        if first is None:
            first, rel = s, "-"
        else:
            d = s - first
            h = 1.96 * d.std(ddof=1) / np.sqrt(len(d))
            rel = f"{d.mean():+.4f} [{d.mean() - h:+.4f}, {d.mean() + h:+.4f}]"
        lines.append(f"| {label} | {opts or name} | {s.mean():.4f} | {rel} | {secs:.0f} |")
        print(lines[-1], flush=True)
    if args.out:
        write_atomic(args.out, ("\n".join(lines) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
