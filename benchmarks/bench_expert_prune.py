"""What candidate pruning by the network's prior (``make_bot("expert", prune=P)``) costs and saves.

Positions: the card decisions with more than one candidate among ``--games`` hands played by four
``hard`` bots (``bench_expert_belief.positions``: every fifth decision). At each, ``expert``
(default options, seed 1) values every candidate (``card_values``) and plays the best; with
pruning it would play the best of the candidates whose class the network plays with probability
at least ``P`` (the most probable class always kept), valued by the same search. Both choices are
then judged by a second, independent ``expert`` search (seed 2, the referee), so the noise that
picked a card does not also grade it. Per threshold: the share of candidates pruned (the search's
work saved on those decisions), the share of decisions whose card changes, and the referee's
value of the pruned choice minus the unpruned one (points per decision, 95% normal interval;
above 0: the prior removes cards the search overrates).

Usage::

    python benchmarks/bench_expert_prune.py --games 30 --prune 0.01 --prune 0.03 --prune 0.1 \\
        --out benchmarks/results/expert_prune.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_agent import emit_table, normal_interval  # noqa: E402
from bench_expert_belief import positions  # noqa: E402

from spades_env.bots import make_bot  # noqa: E402
from spades_env.bots.expert import class_mass  # noqa: E402
from spades_env.bots.pimc import best_candidate  # noqa: E402
from spades_env.engine import Phase  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=30)
    ap.add_argument("--prune", type=float, action="append", required=True)
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pos = [(v, h) for v, h in positions(args.games) if v.phase == Phase.PLAY]
    chooser = make_bot("expert", seed=1)
    referee = make_bot("expert", seed=2)
    rows, secs = [], []
    for v, _hands in pos:
        t = time.perf_counter()
        cands, values = chooser.card_values(v)
        if len(cands) < 2:
            continue
        secs.append(time.perf_counter() - t)
        rc, rv = referee.card_values(v)
        assert rc == cands
        judge = dict(zip(rc, rv))
        mass = class_mass(v.legal_actions, cands, chooser.card_prior(v, v.legal_actions))
        rows.append((cands, values, judge, mass))
    if len(rows) < 2:
        ap.error(f"{len(rows)} card decisions with 2 or more candidates: play more --games")
    n_cands = sum(len(r[0]) for r in rows)
    lines = [f"{len(rows)} card decisions with 2 or more candidates ({n_cands} candidates) from "
             f"{args.games} hands of `hard` bots; `expert` chooses (seed 1), a second `expert` "
             f"search judges (seed 2); median `card_values` time {np.median(secs) * 1000:.0f} ms "
             f"({time.perf_counter() - t0:.0f} s in all)", "",
             "| prune | candidates pruned | decisions changed | referee: pruned - unpruned, "
             "points per decision [95% CI] | best candidate by the referee pruned |",
             "|---|---|---|---|---|"]
    for p in args.prune:
        pruned = changed = lost_best = 0
        diffs = []
        for cands, values, judge, mass in rows:
            top = max(cands, key=mass.__getitem__)
            keep = [c for c in cands if c == top or mass[c] >= p]
            pruned += len(cands) - len(keep)
            full = best_candidate(cands, values)
            kv = dict(zip(cands, values))
            mine = best_candidate(keep, [kv[c] for c in keep])
            changed += mine != full
            lost_best += max(cands, key=judge.__getitem__) not in keep
            diffs.append(judge[mine] - judge[full])
        m, lo, hi = normal_interval(diffs)
        lines.append(f"| {p:g} | {pruned / n_cands:.1%} | {changed / len(rows):.1%} | "
                     f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
                     f"{lost_best / len(rows):.1%} |")
    emit_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
