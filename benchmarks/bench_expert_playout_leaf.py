"""Which play-out makes the better leaf for ``expert``'s search: the rule-based one or the network.

A PIMC search values a candidate card on each sampled deal by playing that deal out, and averages;
what it needs from a leaf is the candidate's value when every card is known (the perfect-information
value), and above all the order of the candidates on the same deal. Late in a hand that value can be
computed exactly (``solver.solve``, double-dummy), so the leaves can be graded against it.

Positions: the card decisions with 4 to ``--max-left`` tricks left and more than one candidate
(``PIMCBot._candidates``) of ``--hands`` single hands from 0-0 played by four ``hard`` bots. On the
true deal, each candidate is valued three ways, for the deciding seat's team in points
(``solver.HandUtility``, bags at their long-run cost):

- exact: the double-dummy value (``solve`` after the candidate, ``finish_trick``);
- rule-based play-out: ``solver.playouts``, what ``insane`` and ``expert`` use;
- network play-out: the hand played out by the trained network (``--checkpoint``, default the
  shipped agent), each seat choosing its most probable legal action from its own observation.

Per leaf: how often its best candidate is an exactly best one, its regret (the exact value of the
best candidate minus that of the leaf's choice, points per decision, 95% normal interval), the
paired difference of the two regrets, the mean absolute error of the values, and the time per
play-out. This grades leaves on single deals, not the search's strength in play
(``bench_expert.py``).

Usage: ``python benchmarks/bench_expert_playout_leaf.py --hands 60 [--out FILE.md]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_agent import emit_table, normal_interval  # noqa: E402

from spades_env import Phase, SpadesGame  # noqa: E402
from spades_env.agents import SHIPPED_CHECKPOINT  # noqa: E402
from spades_env.agents.checkpoint import build_agent, load_checkpoint  # noqa: E402
from spades_env.agents.model import torch_threads  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.bots.pimc import PIMCBot  # noqa: E402
from spades_env.bots.solver import HandUtility, finish_trick, playouts, solve  # noqa: E402
from spades_env.cards import NUM_ACTIONS, TEAM  # noqa: E402
from spades_env.observation import encode  # noqa: E402


@torch.no_grad()
def network_playout(agent, game: SpadesGame) -> tuple:
    """Play ``game``'s hand to its end, every seat taking the network's most probable legal action
    from its own observation; return the hand's tricks by seat (4 ints). ``game`` is changed."""
    hand = game.hand_number
    while game.hand_number == hand and game.phase != Phase.GAME_OVER:
        s = game.current_player
        mask = torch.zeros((1, NUM_ACTIONS), dtype=torch.bool)
        mask[0, game.legal_actions()] = True
        logits = agent.policy_logits(torch.as_tensor(encode(game.view(s)))[None])
        game.apply(int(agent.masked(logits, mask)[0].argmax()))
    return game.hand_results[-1].tricks


def leaf_values(g: SpadesGame, cands, agent) -> tuple:
    """``(exact, rule, net, seconds)``: each candidate's value on ``g``'s true deal for the seat to
    move's team, in points (float64 ``[len(cands)]`` each), and the time of one rule-based and one
    network play-out (seconds, 2 floats)."""
    me = g.current_player
    sign = 1.0 if TEAM[me] == 0 else -1.0
    util = HandUtility(tuple(g.bids), tuple(g.blind), tuple(g.bags), tuple(g.scores), g.rules, 0)
    flb = g.rules.forced_spade_lead_breaks
    hands, trick, won = list(g.hands), list(g.trick), list(g.tricks_won)
    leader = g.trick_leader if trick else me
    exact = [sign * solve(*finish_trick(hands, trick, leader, won, g.spades_broken, c, me, flb),
                          util, flb) for c in cands]
    t = time.perf_counter()
    outs = playouts([hands] * len(cands), tuple(g.bids), list(cands), trick, leader, won,
                    g.spades_broken, me, flb, fnc=g.rules.failed_nil_tricks_count)
    rule = [sign * util(o) for o in outs]
    rule_secs = (time.perf_counter() - t) / len(cands)
    t = time.perf_counter()
    net = []
    for c in cands:
        g2 = g.clone()
        g2.apply(c)
        net.append(sign * util(network_playout(agent, g2)))
    secs = (time.perf_counter() - t) / len(cands)
    return np.array(exact), np.array(rule), np.array(net), (rule_secs, secs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hands", type=int, default=60)
    ap.add_argument("--max-left", type=int, default=6, help="most tricks left (4..6; the exact "
                    "values take seconds per decision at 6)")
    ap.add_argument("--checkpoint", default=str(SHIPPED_CHECKPOINT))
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    args = ap.parse_args(argv)
    if not 4 <= args.max_left <= 6:
        ap.error(f"--max-left must be in 4..6, got {args.max_left}")
    agent = build_agent(load_checkpoint(args.checkpoint), "cpu", args.checkpoint)
    pimc = PIMCBot(seed=0)
    rows, secs = [], []
    t0 = time.perf_counter()
    with torch_threads(1):
        for h in range(args.hands):
            g = SpadesGame(seed=h)
            bots = [make_bot("hard", seed=1000 * h + s, samples=30, bid_samples=16)
                    for s in range(4)]
            while g.hand_number == 0 and g.phase != Phase.GAME_OVER:
                v = g.view(g.current_player)
                if g.phase == Phase.PLAY and 4 <= 13 - g.trick_number <= args.max_left \
                        and not any(g.blind):
                    cands = pimc._candidates(v, sorted(v.legal_actions))
                    if len(cands) > 1:
                        exact, rule, net, s = leaf_values(g, cands, agent)
                        rows.append((13 - g.trick_number, exact, rule, net))
                        secs.append(s)
                g.apply(bots[v.seat].act(v))
    n = len(rows)
    if n < 2:
        ap.error(f"{n} decisions found: play more --hands")

    def regret(exact, leaf):
        return exact.max() - exact[int(np.argmax(leaf))]  # argmax: the first best, as act

    def ci(x):
        m, lo, hi = normal_interval(x)
        return f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]"

    lines = [f"{n} card decisions with 4 to {args.max_left} tricks left and more than one "
             f"candidate, from {args.hands} hands of `hard` bots; graded on the true deal against "
             f"the exact (double-dummy) value; network: `{os.path.basename(args.checkpoint)}`, "
             f"greedy ({time.perf_counter() - t0:.0f} s in all)", "",
             "| tricks left | decisions | leaf | exact best chosen | regret, points per decision "
             "[95% CI] | mean abs error, points |", "|---|---|---|---|---|---|"]
    for left in (None, *range(4, args.max_left + 1)):
        sel = [r for r in rows if left is None or r[0] == left]
        if len(sel) < 2:
            continue
        for name, k in (("rule-based play-out", 2), ("network play-out", 3)):
            reg = [regret(r[1], r[k]) for r in sel]
            best = np.mean([x < 1e-9 for x in reg])
            mae = np.mean([np.abs(r[k] - r[1]).mean() for r in sel])
            lines.append(f"| {'all' if left is None else left} | {len(sel)} | {name} | "
                         f"{best:.1%} | {ci(reg)} | {mae:.1f} |")
    paired = [regret(r[1], r[3]) - regret(r[1], r[2]) for r in rows]
    lines += ["", f"Network minus rule-based regret, paired over all {n} decisions: "
              f"{ci(paired)} points per decision (above 0: the network's play-out chooses worse).",
              f"Median time of one play-out, same run: rule-based "
              f"{np.median([a for a, _b in secs]) * 1000:.2f} ms (C kernel), network "
              f"{np.median([b for _a, b in secs]) * 1000:.1f} ms (unbatched, one thread): "
              f"{np.median([b for _a, b in secs]) / np.median([a for a, _b in secs]):.0f} times "
              f"as long."]
    emit_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
