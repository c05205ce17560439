"""How well each leaf of ``expert``'s search predicts a hand's result, offline.

For the card decisions (with more than one legal card) of single hands from 0-0 played by four
bots of one level, on the true deal: the privileged critic of the network (``ExpertBot``'s
``leaf="critic"``: the seat's own observation and the other three hands) and the rule-based
play-out to the end of the hand (``solver.playouts``, scored by ``score_hand`` with bags at 10
points), against the hand's actual result for the deciding seat's team (its points minus the
other team's, bags at 10 points, in hundreds of points: the trainer's reward scale). Printed per
stage of the hand (tricks played): the correlation and the root-mean-square error of each leaf
and of their mixes.

This measures a leaf's reading of positions, not the search's strength: that is
``benchmarks/bench_expert.py`` (duplicate matches).

Usage: ``python benchmarks/bench_expert_leaf.py --level hard --hands 60 [--out FILE.md]``
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spades_env import Phase, Rules, SpadesGame  # noqa: E402
from spades_env.agents import SHIPPED_CHECKPOINT  # noqa: E402
from spades_env.agents.checkpoint import build_agent, load_checkpoint  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.bots.solver import playouts  # noqa: E402
from spades_env.cards import TEAM  # noqa: E402
from spades_env.fileio import write_atomic  # noqa: E402
from spades_env.observation import OBS_SIZE, encode  # noqa: E402
from spades_env.rules import score_hand  # noqa: E402
from spades_env.training.envs import seat_priv  # noqa: E402
from spades_env.training.teacher_records import team_points  # noqa: E402

BAG = 10.0
STAGES = ((0, 4), (4, 8), (8, 13))
MIXES = (0.3, 0.5, 0.7)


def positions(level: str, hands: int, agent) -> np.ndarray:
    """Rows ``(trick number, critic, play-out, result)`` of every card decision with a choice."""
    rows = []
    for h in range(hands):
        bots = [make_bot(level, seed=1000 * h + s) for s in range(4)]
        g = SpadesGame(Rules(), seed=h)
        found = []
        while g.phase != Phase.GAME_OVER and g.hand_number == 0:
            p = g.current_player
            if g.phase == Phase.PLAY and len(g.legal_actions()) > 1:
                obs = np.zeros(OBS_SIZE, np.float32)
                encode(g.view(p), obs)
                t = playouts([list(g.hands)], [tuple(g.bids)], [-1], list(g.trick),
                             g.trick_leader, list(g.tricks_won), g.spades_broken, p)[0]
                ts = score_hand(list(g.bids), list(t), list(g.bags))
                pv = (team_points(ts[TEAM[p]], BAG) - team_points(ts[1 - TEAM[p]], BAG)) / 100
                found.append((p, g.trick_number, obs, seat_priv(g.hands, p), pv))
            g.apply(bots[p].act(g.view(p)))
        teams = g.hand_results[0].teams
        with torch.no_grad():
            cv = agent.critic_value(torch.from_numpy(np.stack([f[2] for f in found])),
                                    torch.from_numpy(np.stack([f[3] for f in found])
                                                     .astype(np.float32))).numpy()
        for (p, tn, _o, _q, pv), c in zip(found, cv):
            out = (team_points(teams[TEAM[p]], BAG) - team_points(teams[1 - TEAM[p]], BAG)) / 100
            rows.append((tn, float(c), pv, out))
    return np.array(rows)


def table(a: np.ndarray) -> list[str]:
    def stats(x, y):
        return f"{np.corrcoef(x, y)[0, 1]:.3f} / {np.sqrt(np.mean((x - y) ** 2)):.3f}"

    lines = ["| tricks played | positions | play-out: corr / rmse | critic | "
             + " | ".join(f"mix {w} critic" for w in MIXES) + " |",
             "|---|---|---|---|" + "---|" * len(MIXES)]
    for lo, hi in STAGES:
        m = (a[:, 0] >= lo) & (a[:, 0] < hi)
        c, pv, out = a[m, 1], a[m, 2], a[m, 3]
        mixes = " | ".join(stats(w * c + (1 - w) * pv, out) for w in MIXES)
        lines.append(f"| {lo}-{hi - 1} | {int(m.sum())} | {stats(pv, out)} | {stats(c, out)} | "
                     f"{mixes} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", nargs="+", default=["hard"], help="bots that play the hands")
    ap.add_argument("--hands", type=int, nargs="+", default=[60], help="hands per level")
    ap.add_argument("--checkpoint", default=str(SHIPPED_CHECKPOINT))
    ap.add_argument("--out", default=None, help="also write the tables to this Markdown file")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    agent = build_agent(load_checkpoint(args.checkpoint))
    agent.eval()
    text = []
    for level, hands in zip(args.level, args.hands * len(args.level)):
        a = positions(level, hands, agent)
        text += [f"Hands played by four `{level}` bots: {hands} hands, {len(a)} card decisions "
                 f"with a choice", ""] + table(a) + [""]
    print("\n".join(text))
    if args.out:
        head = (f"# The leaves of `expert`'s search, offline\n\n`python benchmarks/"
                f"bench_expert_leaf.py --level {' '.join(args.level)} --hands "
                f"{' '.join(map(str, args.hands))}`; checkpoint `{os.path.relpath(args.checkpoint)}`."
                f" Correlation with the hand's actual result (higher is better) / root-mean-square"
                f" error in hundreds of points (lower is better).\n\n")
        write_atomic(args.out, (head + "\n".join(text)).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
