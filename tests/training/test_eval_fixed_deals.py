"""The in-run evaluation measures progress: every evaluation plays the same duplicate deals,
counts bags at their long-run cost (the arena's bag-adjusted figure), and compares each point
with the best one before it deal by deal."""

from __future__ import annotations

import math

import pytest
import torch

import spades_env.training.run_log as run_log
from spades_env import Rules
from spades_env.agents.model import Agent
from spades_env.scoring import score_hand
from spades_env.training.config import Args
from spades_env.training.evaluate import bag_adjusted, paired_difference


class _Writer:
    def __init__(self):
        self.scalars = []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))


def test_bag_adjusted_points_by_hand():
    """A made 5 with one overtrick: 51 points, one bag at 10 -> 41. Bags 9 before, 2 more taken
    (4 bid, 6 made): 40 + 2 - 100 penalty = -58 in the score table, but at the long-run cost
    the penalty is left out and the 2 bags cost 20: 42 - 20 = 22."""
    r = Rules()
    made = score_hand([3, 3, 2, 3], [4, 3, 2, 4], [0, 0], r)[0]
    assert (made.hand_points, made.bags) == (51, 1)
    assert bag_adjusted(made, r) == 41.0
    over = score_hand([2, 3, 2, 3], [3, 4, 3, 3], [9, 0], r)[0]
    assert (over.hand_points, over.bag_penalty, over.bags) == (-58, -100, 2)
    assert bag_adjusted(over, r) == 22.0


def test_paired_difference_by_hand():
    m, lo, hi = paired_difference([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    half = 4.302652729911275 / math.sqrt(3)  # t(0.975, 2) * sd 1 / sqrt(3)
    assert m == 2.0 and lo == pytest.approx(2.0 - half) and hi == pytest.approx(2.0 + half)
    assert paired_difference([5.0, -3.0], [5.0, -3.0]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="same deals, got 2 and 3"):
        paired_difference([1.0, 2.0], [1.0, 2.0, 3.0])


def test_evaluations_reuse_the_deals_and_compare_with_the_best_deal_by_deal(tmp_path):
    torch.manual_seed(0)
    agent = Agent([16], 8)
    args = Args(eval_opponents=["random"], hidden=[16], head_hidden=8)
    progress = {"iteration": 1, "decisions": 100, "seconds": 0.0}
    evals = []
    books = dict(clock=run_log.Clock(progress), evals=evals, writer=_Writer(),
                 ckpt_dir=str(tmp_path), log=lambda *_: None)
    first, best = run_log.record_eval(agent, args, 12, args.seed, **books)
    assert best and "vs_best" not in first[0]
    assert len(first[0]["per_deal_adj"]) == 12
    assert first[0]["adj"] == pytest.approx(sum(first[0]["per_deal_adj"]) / 12)
    progress.update(iteration=2, decisions=200)
    same, _ = run_log.record_eval(agent, args, 12, args.seed, **books)
    # the same network on the same deals against the same seeded bot: the same games
    assert same[0]["deals_digest"] == first[0]["deals_digest"]
    assert same[0]["per_deal_adj"] == first[0]["per_deal_adj"]
    assert same[0]["vs_best"] == {"iteration": 1, "diff": 0.0, "lo": 0.0, "hi": 0.0}
    with torch.no_grad():  # another network: other games on the same deals
        for p in agent.parameters():
            p.add_(torch.randn_like(p))
    progress.update(iteration=3, decisions=300)
    other, _ = run_log.record_eval(agent, args, 12, args.seed, **books)
    assert other[0]["deals_digest"] == first[0]["deals_digest"]
    want = paired_difference(other[0]["per_deal_adj"], first[0]["per_deal_adj"])
    v = other[0]["vs_best"]
    assert (v["diff"], v["lo"], v["hi"]) == want and v["iteration"] == 1
    assert "vs best" in run_log.eval_summary(other)
    # other deals: no pairing
    progress.update(iteration=4, decisions=400)
    moved, _ = run_log.record_eval(agent, args, 12, args.seed + 1, **books)
    assert moved[0]["deals_digest"] != first[0]["deals_digest"] and "vs_best" not in moved[0]
    assert (tmp_path / "curve.png").exists()


def test_the_final_table_leads_with_the_bag_adjusted_difference():
    """The figure the arena's full games agree with comes first (the plain one counts a bag as +1
    point in a single hand from 0-0, so the two can differ in sign)."""
    from spades_env.training.evaluate import format_table
    row = {"opponent": "medium", "deals": 1000, "diff": -1.9, "diff_lo": -4.5, "diff_hi": 0.7,
           "adj": 3.7, "adj_lo": 1.0, "adj_hi": 6.4, "win_rate": 0.545, "win_lo": 0.529,
           "win_hi": 0.561, "hand_stats": {"bid_error": -0.48, "set_rate": 0.112,
                                           "nil_rate": 0.086, "nil_success": 0.709, "bags": 1.07}}
    lines = format_table([row], "final").splitlines()
    assert lines[1].startswith("| opponent | deals (x2 hands) | points/hand, bags at cost")
    assert lines[3] == ("| medium | 1000 | +3.7 [+1.0, +6.4] | -1.9 | [-4.5, +0.7] | "
                        "0.545 [0.529, 0.561] | -0.48 | 0.112 | 0.086 | 0.709 | 1.07 |")
