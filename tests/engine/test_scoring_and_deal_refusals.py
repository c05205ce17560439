"""``score_hand`` refuses trick counts that are not a hand; ``from_deal`` refuses starting totals
that already end the game."""

from __future__ import annotations

import pytest

from spades_env import Rules, SpadesGame, score_hand

SUITS = [list(range(13 * s, 13 * s + 13)) for s in (3, 2, 1, 0)]  # seat 0 spades, ...


@pytest.mark.parametrize("tricks", [[4, 3, 3, 2], [4, 3, 3, 4], [0, 0, 0, 0], [13, 13, 0, 0]])
def test_score_hand_refuses_trick_counts_that_do_not_sum_to_13(tricks):
    with pytest.raises(ValueError, match="sum to 13"):
        score_hand([3, 3, 3, 3], tricks, [0, 0])


def test_score_hand_still_scores_real_hands():
    # docs/rules.md: team 0 bids 3 + 2 = 5 and takes 4 + 3 = 7: 50 + 2 overtricks = 52, 2 bags
    t0, t1 = score_hand([3, 4, 2, 4], [4, 3, 3, 3], [0, 0])
    assert (t0.contract_points, t0.bags, t0.total) == (52, 2, 52)
    # team 1 bids 8, takes 6: set, -80
    assert (t1.contract_points, t1.made, t1.total) == (-80, False, -80)


@pytest.mark.parametrize("kwargs,match", [
    ({"bags_before": [10, 0]}, "bag_limit"),
    ({"bags_before": [True, 0]}, "ints"),
    ({"blind": [1, 0, 0, 0]}, "bools"),
    ({"blind": "none"}, "flags"),
    ({"scores_before": [0.5, 0]}, "ints"),
    ({"scores_before": None}, "scores"),
    ({"rules": "standard"}, "Rules"),
    ({"bids": [3, 3, True, 3]}, "ints"),
    ({"tricks": 13}, "trick counts"),
])
def test_score_hand_bad_arguments_are_value_errors(kwargs, match):
    args = {"bids": [3, 3, 3, 3], "tricks": [4, 3, 3, 3], "bags_before": [0, 0], **kwargs}
    with pytest.raises(ValueError, match=match):
        score_hand(**args)


@pytest.mark.parametrize("rules,scores", [
    (Rules(), (500, 0)),                       # team 0 reached the target
    (Rules(), (120, 731)),
    (Rules(target_score=250), (250, 249)),
    (Rules(loss_threshold=-200), (-200, 50)),  # team 0 at the loss threshold: team 1 wins
    (Rules(loss_threshold=-200), (0, -350)),
])
def test_from_deal_refuses_totals_that_already_end_the_game(rules, scores):
    with pytest.raises(ValueError, match="already end the game"):
        SpadesGame.from_deal(SUITS, 0, scores=scores, rules=rules)


@pytest.mark.parametrize("rules,scores", [
    (Rules(), (499, 499)),
    (Rules(), (510, 510)),                     # both over, level: another hand (docs/rules.md)
    (Rules(loss_threshold=-200), (-199, 0)),
    (Rules(), (-5000, 0)),                     # no loss threshold: plays on
])
def test_from_deal_accepts_totals_that_leave_the_game_running(rules, scores):
    g = SpadesGame.from_deal(SUITS, 0, scores=scores, rules=rules)
    assert g.scores == list(scores) and not g.is_over


def test_from_deal_refuses_totals_beyond_the_exact_float_range():
    with pytest.raises(ValueError, match="within"):
        SpadesGame.from_deal(SUITS, 0, scores=(-10 ** 400, 0))
