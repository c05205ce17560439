"""Where a player loses to another: its bids or its card play (checkpoints/README.md, Where the
agent loses to ``hard``).

Three players meet ``--vs`` on the same single-hand deals (the arena's duplicate hands mode, seed
``--seed``), side by side in one run:

- ``A``: the player as it is (``--player``);
- ``A bids, B plays``: the player's bids, the opponent's card play;
- ``B bids, A plays``: the opponent's bids, the player's card play.

For each it prints the point difference per hand and the bag-adjusted one (each bag at 10 points)
with 95% intervals, and the sets, Nil bids made and bags per hand. If the mixed player with
the opponent's card play does as well as the opponent, the bids are sound and the card play is
where the points go.

Usage::

    python benchmarks/bench_bid_vs_play.py --player checkpoint:checkpoints/shipped/agent.pt \\
        --vs hard --hands 150 --seed 11

(about 20 minutes on one core with ``hard``: its moves are the cost).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from spades_env.arena import play_match  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.engine import Phase  # noqa: E402


class MixedPlayer:
    """Bids (and decides Blind Nil and the exchange) with ``bidder``, plays cards with ``player``.

    Both are bots that act from the seat's view only, so the mix does too."""

    def __init__(self, bidder, player, name: str):
        self.bidder, self.player, self.name = bidder, player, name

    def act(self, view) -> int:
        return (self.player if view.phase == Phase.PLAY else self.bidder).act(view)


def players(a: str, b: str) -> dict:
    """The three players of the comparison, as arena factories ``f(seed) -> player``."""
    return {
        a: lambda s: make_bot(a, seed=s),
        f"{a} bids, {b} plays": lambda s: MixedPlayer(make_bot(a, seed=s), make_bot(b, seed=s),
                                                      "mixed"),
        f"{b} bids, {a} plays": lambda s: MixedPlayer(make_bot(b, seed=s), make_bot(a, seed=s),
                                                      "mixed"),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--player", default="checkpoint:checkpoints/shipped/agent.pt")
    p.add_argument("--vs", default="hard")
    p.add_argument("--hands", type=int, default=150, help="single-hand deals (each played twice)")
    p.add_argument("--seed", type=int, default=11)
    a = p.parse_args(argv)
    make_bot(a.player)  # a bad name or file fails here, before any hand
    make_bot(a.vs)
    rows = []
    for label, factory in players(a.player, a.vs).items():
        r = play_match(factory, a.vs, hands=a.hands, seed=a.seed, names=(label, a.vs))
        me = r.sides[0]
        rows.append((label, r.point_diff_per_hand, r.point_diff_ci, r.bag_adjusted_diff,
                     r.bag_adjusted_ci, f"{me.contracts_set}/{me.contracts}",
                     f"{me.nil_made}/{me.nil_bids}", me.bags / max(1, me.hands)))
        print(f"done: {label}", flush=True)
    print(f"\nagainst {a.vs}, {a.hands} single-hand deals (each twice), seed {a.seed}")
    print(f"{'player':<58} {'points/hand':>24} {'bag-adjusted':>24} {'sets':>8} "
          f"{'Nil made':>9} {'bags':>5}")
    for label, d, ci, bd, bci, sets, nil, bags in rows:
        print(f"{label:<58} {d:+7.1f} [{ci[0]:+6.1f}, {ci[1]:+6.1f}] "
              f"{bd:+7.1f} [{bci[0]:+6.1f}, {bci[1]:+6.1f}] {sets:>8} {nil:>9} {bags:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
