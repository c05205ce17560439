"""Hand scoring and the game-end rule, worked by hand from docs/rules.md (Scoring a hand, End of the game).

Bids and tricks are by seat (0..3); team 0 = seats 0 and 2, team 1 = seats 1 and 3.
"""

import pytest

from spades_env import PRESETS, Rules, game_outcome, score_hand


def test_rules_worked_example_made_contract():
    # docs/rules.md: bids 3 + 2 = 5, tricks 7 -> +52 and 2 bags.
    t0, t1 = score_hand([3, 4, 2, 4], [4, 3, 3, 3], [0, 0])
    assert (t0.contract, t0.made, t0.contract_points, t0.bags) == (5, True, 52, 2)
    assert (t0.nil_points, t0.bag_penalty, t0.hand_points, t0.total, t0.bags_after) == (0, 0, 52, 52, 2)
    # team 1 bid 8 and took 6: set
    assert (t1.contract, t1.made, t1.contract_points, t1.bags, t1.hand_points) == (8, False, -80, 0, -80)


def test_rules_worked_example_bag_rollover_9_to_11():
    # docs/rules.md: with 9 bags before: 11 bags -> -100, 1 bag left, so the hand nets -48.
    t0, _ = score_hand([3, 4, 2, 4], [4, 3, 3, 3], [9, 0], scores_before=(100, 0))
    assert t0.contract_points == 52 and t0.bags == 2
    assert t0.bag_penalty == -100
    assert t0.bags_after == 1
    assert t0.hand_points == -48
    assert t0.total == 52


def test_two_bag_penalties_in_one_hand():
    # bids 1 + 1 = 2, team takes all 13: 10*2 + 11 = 31, 11 bags; 9 + 11 = 20 bags -> two
    # penalties (-200), 0 carried: hand = 31 - 200 = -169.
    t0, t1 = score_hand([1, 3, 1, 3], [7, 0, 6, 0], [9, 4])
    assert (t0.contract_points, t0.bags, t0.bag_penalty, t0.bags_after) == (31, 11, -200, 0)
    assert t0.hand_points == -169
    # team 1 bid 6 and took nothing: set, bags unchanged
    assert (t1.contract_points, t1.bags, t1.bag_penalty, t1.bags_after) == (-60, 0, 0, 4)


def test_exactly_ten_bags_over_several_hands():
    # 4 bags, then 3 (7), then 3 (10): the third hand pays -100 and carries 0.
    bags = [0, 0]
    totals = [0, 0]
    history = []
    for tricks in ([6, 0, 4, 3], [5, 0, 4, 4], [6, 0, 3, 4]):
        # team 0 bids 3 + 3 = 6; team 1 bids 4 + 3 (seat 1 takes nothing: set)
        t0, t1 = score_hand([3, 4, 3, 3], tricks, bags, scores_before=totals)
        bags = [t0.bags_after, t1.bags_after]
        totals = [t0.total, t1.total]
        history.append((t0.bags, t0.bag_penalty, t0.bags_after, t0.hand_points))
    assert history == [(4, 0, 4, 64), (3, 0, 7, 63), (3, -100, 0, -37)]
    assert totals[0] == 64 + 63 - 37


def test_set_contract_scores_no_bags():
    # team 0 bids 4 + 3 = 7 and takes 6 -> -70; the 6 tricks are not bags.
    t0, t1 = score_hand([4, 3, 3, 3], [3, 4, 3, 3], [5, 0])
    assert (t0.made, t0.contract_points, t0.bags, t0.bag_penalty, t0.bags_after) == (False, -70, 0, 0, 5)
    assert t0.hand_points == -70
    assert (t1.made, t1.contract_points, t1.bags) == (True, 61, 1)


def test_failed_nil_trick_does_not_count_for_partner():
    # Seat 0 bids Nil and takes 1 trick; seat 2 bids 4 and takes 3. With the Nil's trick the
    # team would have 4 = the contract, but it does not count: set -40, Nil -100, 1 bag.
    t0, _ = score_hand([0, 3, 4, 3], [1, 5, 3, 4], [0, 0])
    assert t0.contract == 4
    assert (t0.made, t0.contract_points) == (False, -40)
    assert t0.nil_points == -100
    assert t0.bags == 1  # a failed Nil's trick is a bag ...
    assert t0.hand_points == -140  # ... but worth no point
    assert t0.bags_after == 1


def test_failed_nil_bags_trigger_penalty():
    # Nil took 2 tricks with 8 bags before: 10 bags -> -100, 0 carried; partner made 3 exactly.
    t0, _ = score_hand([0, 5, 3, 3], [2, 5, 3, 3], [8, 0])
    assert (t0.contract_points, t0.nil_points, t0.bags, t0.bag_penalty, t0.bags_after) == (30, -100, 2, -100, 0)
    assert t0.hand_points == -170


def test_successful_nil_plus_made_contract():
    t0, _ = score_hand([0, 4, 5, 3], [0, 4, 6, 3], [0, 0])
    assert (t0.contract, t0.contract_points, t0.nil_points, t0.bags, t0.hand_points) == (5, 51, 100, 1, 151)


def test_both_partners_nil_one_failing():
    # Seats 1 and 3 both Nil: no contract; seat 3 takes 2 tricks: +100 - 100 = 0, 2 bags.
    _, t1 = score_hand([4, 0, 5, 0], [6, 0, 5, 2], [0, 3])
    assert t1.contract == 0 and t1.made is None and t1.contract_points == 0
    assert (t1.nil_points, t1.bags, t1.hand_points, t1.bags_after) == (0, 2, 0, 5)


def test_both_partners_nil_both_succeed_and_both_fail():
    _, t1 = score_hand([6, 0, 7, 0], [6, 0, 7, 0], [0, 0])
    assert (t1.nil_points, t1.hand_points, t1.bags) == (200, 200, 0)
    _, t1 = score_hand([6, 0, 7, 0], [5, 1, 5, 2], [0, 0])
    assert (t1.nil_points, t1.hand_points, t1.bags) == (-200, -200, 3)


def test_bid_zero_is_always_nil():
    # A bid of 0 is scored as Nil: +100 with no trick, -100 (and bags) with tricks; never as a
    # made "contract of 0".
    t0, _ = score_hand([0, 3, 3, 3], [0, 4, 5, 4], [0, 0])
    assert (t0.contract, t0.nil_points, t0.contract_points, t0.hand_points) == (3, 100, 32, 132)
    t0, _ = score_hand([0, 3, 3, 3], [2, 4, 3, 4], [0, 0])
    assert (t0.nil_points, t0.contract_points, t0.bags, t0.hand_points) == (-100, 30, 2, -70)


def test_blind_nil_scores_200():
    blind = [True, False, False, False]
    t0, _ = score_hand([0, 3, 4, 3], [0, 5, 4, 4], [0, 0], blind=blind)
    assert (t0.blind, t0.nil_points, t0.contract_points, t0.hand_points) == ((True, False), 200, 40, 240)
    t0, _ = score_hand([0, 3, 4, 3], [1, 5, 3, 4], [0, 0], blind=blind)
    assert (t0.nil_points, t0.contract_points, t0.bags, t0.hand_points) == (-200, -40, 1, -240)


def test_big_contract_no_cap():
    # bids of 8 and 7 make a contract of 15 (docs/rules.md: no cap): always set, -150.
    t0, _ = score_hand([8, 0, 7, 0], [7, 0, 6, 0], [0, 0])
    assert (t0.contract, t0.made, t0.contract_points) == (15, False, -150)


def test_switches_change_scoring():
    r = Rules(nil_bonus=50, blind_nil_bonus=150, bag_limit=5, bag_penalty=50)
    t0, t1 = score_hand([0, 2, 3, 0], [0, 6, 3, 4], [4, 0], r, blind=[False, False, False, True])
    assert (t0.nil_points, t0.contract_points, t0.bags_after) == (50, 30, 4)
    # team 1: blind nil failed (-150, 4 bags) and 2 made with 6 (+24, 4 bags): 8 bags -> -50, 3 left
    assert (t1.nil_points, t1.contract_points, t1.bags, t1.bag_penalty, t1.bags_after) == (-150, 24, 8, -50, 3)


@pytest.mark.parametrize("bids,tricks,bags,blind,match", [
    ([3, 3, 3], [3, 3, 3, 4], [0, 0], None, "4 bids"),
    ([14, 3, 3, 3], [3, 3, 3, 4], [0, 0], None, "bid of seat 0"),
    ([3, 3, 3, -1], [3, 3, 3, 4], [0, 0], None, "bid of seat 3"),
    ([3, 3, 3, 3], [3, -1, 3, 4], [0, 0], None, "tricks of seat 1"),
    ([3, 3, 3, 3], [3, 3, 3, 4], [0, 0], [False, True, False, False], "Blind Nil"),
    ([None, 3, 3, 3], [3, 3, 3, 4], [0, 0], None, "must be ints"),
    ([3, 3, 3, 3], [3, 3, 3, 4], [-1, 0], None, "bags_before"),
])
def test_score_hand_bad_input(bids, tricks, bags, blind, match):
    with pytest.raises(ValueError, match=match):
        score_hand(bids, tricks, bags, blind=blind)


def test_score_table_fields_round_trip():
    t0, _ = score_hand([3, 4, 2, 4], [4, 3, 3, 3], [9, 0])
    d = t0.to_dict()
    assert d["bids"] == [3, 2] and d["tricks"] == [4, 3]
    for key in ("contract_points", "bags", "nil_points", "bag_penalty", "hand_points", "total",
                "bags_after"):
        assert key in d


# ---------------------------------------------------------------- game end (pure rule)

def test_game_outcome_target():
    r = Rules()
    assert game_outcome([499, 200], r) is None
    assert game_outcome([500, 200], r) == 0
    assert game_outcome([200, 512], r) == 1
    # both over: higher wins; equal totals play on
    assert game_outcome([530, 550], r) == 1
    assert game_outcome([560, 550], r) == 0
    assert game_outcome([530, 530], r) is None
    # scores can drift very negative with no loss threshold: no end
    assert game_outcome([-900, -1200], r) is None


def test_game_outcome_loss_threshold():
    r = Rules(loss_threshold=-200)
    assert game_outcome([-200, 50], r) == 1  # exactly -200 loses
    assert game_outcome([-199, 50], r) is None
    assert game_outcome([50, -250], r) == 0
    # both reach an ending condition: higher total wins, equal plays on
    assert game_outcome([-210, -300], r) == 0
    assert game_outcome([-250, -250], r) is None
    assert game_outcome([510, -300], r) == 0
    assert game_outcome([-300, 500], r) == 1


def test_game_outcome_target_250():
    r = PRESETS["short"]
    assert r.target_score == 250
    assert game_outcome([249, 0], r) is None
    assert game_outcome([250, 0], r) == 0


@pytest.mark.parametrize("kwargs,field", [
    ({"target_score": 0}, "target_score"),
    ({"target_score": 250.0}, "target_score"),
    ({"bag_limit": 0}, "bag_limit"),
    ({"loss_threshold": 600}, "loss_threshold"),
    ({"loss_threshold": "x"}, "loss_threshold"),
    ({"blind_nil": 1}, "blind_nil"),
    ({"bag_penalty": -5}, "bag_penalty"),
])
def test_rules_invalid_values_raise(kwargs, field):
    with pytest.raises(ValueError, match=field):
        Rules(**kwargs)


def test_rules_presets_and_dict():
    assert Rules.preset("standard") == Rules()
    house = Rules.preset("house")
    assert (house.target_score, house.loss_threshold, house.blind_nil) == (500, -200, True)
    assert Rules.from_dict(house.to_dict()) == house
    with pytest.raises(ValueError, match="unknown rules field"):
        Rules.from_dict({"target": 300})
    with pytest.raises(ValueError, match="unknown rules preset"):
        Rules.preset("nope")
    d = Rules()
    assert (d.target_score, d.loss_threshold, d.blind_nil, d.forced_spade_lead_breaks, d.bag_limit,
            d.bag_penalty, d.nil_bonus, d.blind_nil_bonus) == (500, None, False, False, 10, 100, 100, 200)


# ---------------------------------------------------------------- failed_nil_tricks_count
FNC = Rules(failed_nil_tricks_count=True)


def test_failed_nil_tricks_count_toward_the_partner_contract():
    # docs/rules.md S14 (S5's hand): Nil 4 4 3, tricks 2 4 3 4. Off: the Nil's 2 tricks are bags and
    # seat 2's 3 tricks set the 4 bid (-40 - 100). On: 3 + 2 = 5 >= 4, made with one overtrick.
    off, _ = score_hand([0, 4, 4, 3], [2, 4, 3, 4], [0, 0])
    on, t1 = score_hand([0, 4, 4, 3], [2, 4, 3, 4], [0, 0], FNC)
    assert (off.made, off.contract_points, off.bags, off.hand_points) == (False, -40, 2, -140)
    assert (on.made, on.contract_points, on.nil_points, on.bags, on.hand_points) == \
        (True, 41, -100, 1, -59)
    assert (t1.contract_points, t1.bags, t1.hand_points) == (71, 1, 71)  # no Nil: unchanged


def test_failed_nil_tricks_count_blind_nil_and_no_contract():
    # a failed Blind Nil's trick counts too (S13's hand: 4 + 1 = 5 on a 3 bid: +32, 2 bags)
    t0, _ = score_hand([0, 4, 3, 4], [1, 4, 4, 4], [0, 0], FNC, blind=[True] + [False] * 3)
    assert (t0.made, t0.contract_points, t0.nil_points, t0.bags, t0.hand_points) == \
        (True, 32, -200, 2, -168)
    # both partners Nil (S16): no contract, the failed Nil's tricks stay bags
    assert score_hand([0, 4, 0, 5], [0, 6, 2, 5], [0, 0], FNC) == \
        score_hand([0, 4, 0, 5], [0, 6, 2, 5], [0, 0])
    # a made Nil (no trick): the switch changes nothing
    assert score_hand([0, 3, 4, 3], [0, 3, 5, 5], [0, 0], FNC) == \
        score_hand([0, 3, 4, 3], [0, 3, 5, 5], [0, 0])


def test_failed_nil_tricks_count_bags_can_trip_the_penalty():
    # 8 bags carried; Nil 13 tricks beside a bid of 1 (seat 2 took none): on, 13 - 1 = 12 bags,
    # 20 in all, two penalties; off, the contract is set and the 13 tricks are bags (21: two too)
    on, _ = score_hand([0, 4, 1, 4], [13, 0, 0, 0], [8, 0], FNC)
    assert (on.made, on.contract_points, on.bags, on.bag_penalty, on.bags_after) == \
        (True, 22, 12, -200, 0)
    off, _ = score_hand([0, 4, 1, 4], [13, 0, 0, 0], [8, 0])
    assert (off.made, off.contract_points, off.bags, off.bag_penalty, off.bags_after) == \
        (False, -10, 13, -200, 1)


def test_failed_nil_tricks_count_is_a_checked_saved_switch():
    assert Rules().failed_nil_tricks_count is False
    assert all(not r.failed_nil_tricks_count for r in PRESETS.values())
    with pytest.raises(ValueError, match="failed_nil_tricks_count"):
        Rules(failed_nil_tricks_count=1)
    assert Rules.from_dict(FNC.to_dict()) == FNC
    old = Rules().to_dict()
    del old["failed_nil_tricks_count"]  # a rules dict saved before the switch existed
    assert Rules.from_dict(old) == Rules()


def test_a_game_saved_before_the_switch_loads_with_it_off():
    import json

    from spades_env import SpadesGame
    g = SpadesGame(Rules(), seed=3)
    for _ in range(30):
        g.apply(g.legal_actions()[0])
    d = json.loads(g.to_json())
    for rules in (d["rules"], d["initial"]["rules"]):
        del rules["failed_nil_tricks_count"]
    loaded = SpadesGame.from_json(json.dumps(d))
    assert loaded.rules == Rules() and loaded.to_dict() == g.to_dict()
    # a game saved mid-hand and played on keeps a whole state as its starting point
    d = g.to_dict()
    d["moves"], d["initial"] = [], {}
    g = SpadesGame.from_dict(d)
    for _ in range(5):
        g.apply(g.legal_actions()[0])
    d = json.loads(g.to_json())
    for rules in (d["rules"], d["initial"]["state"]["rules"]):
        del rules["failed_nil_tricks_count"]
    assert SpadesGame.from_json(json.dumps(d)).to_dict() == g.to_dict()


def test_hand_tally_counts_sets_nils_and_bags_as_worked_out_by_hand():
    """House rules (Blind Nil). Seat 0 bids Blind Nil and takes 1 trick (failed: -200, its trick
    a bag); seat 2 bids 4 and takes 3 (set: -40). Seat 1 bids Nil and takes none (+100); seat 3
    bids 5 and takes 9 (made: 50 + 4 bags)."""
    from spades_env.rules import HandTally
    team0, team1 = score_hand([0, 0, 4, 5], [1, 0, 3, 9], [0, 0], PRESETS["house"],
                              blind=[True, False, False, False])
    t0, t1 = HandTally(), HandTally()
    t0.add(team0)
    t1.add(team1)
    assert (t0.hands, t0.points, t0.bags, t0.bid_total) == (1, -240, 1, 4)
    assert (t0.contracts, t0.contracts_made, t0.contracts_set) == (1, 0, 1)
    assert (t0.nil_bids, t0.nil_made, t0.blind_nil_bids, t0.blind_nil_made) == (0, 0, 1, 0)
    assert (t1.points, t1.bags, t1.contracts, t1.contracts_made, t1.contracts_set) == (
        154, 4, 1, 1, 0)
    assert (t1.nil_bids, t1.nil_made, t1.blind_nil_bids) == (1, 1, 0)
    seat2 = HandTally()
    seat2.add(team0, partners=(1,))  # seat 2 only (the team's higher seat): no Nil
    assert (seat2.blind_nil_bids, seat2.nil_bids, seat2.contracts_set) == (0, 0, 1)


def test_hand_scorer_is_score_hand_with_the_tricks_left_open():
    # HandScorer fixes bids, bags, blind flags and scores once (the search scores many ways one
    # hand can end): the worked example above, then every split of the 13 tricks under rule sets
    # that change the scoring, equal to score_hand field by field.
    from itertools import product

    from spades_env.scoring import HandScorer
    t0, t1 = HandScorer([3, 4, 2, 4], [9, 0], scores_before=(100, 0))((4, 3, 3, 3))
    assert (t0.contract_points, t0.bag_penalty, t0.bags_after, t0.hand_points, t0.total) == \
        (52, -100, 1, -48, 52)
    assert (t1.contract, t1.made, t1.hand_points) == (8, False, -80)
    splits = [t for t in product(range(14), repeat=3) if sum(t) <= 13]
    cases = [([3, 4, 2, 4], [0, 0], None, Rules()),
             ([0, 4, 5, 0], [9, 8], (True, False, False, False), Rules()),
             ([0, 4, 5, 0], [4, 2], None, PRESETS["house"]),
             ([6, 0, 7, 3], [1, 9], None, Rules(failed_nil_tricks_count=True,
                                                 bags_score_points=False, big_bid_double=10))]
    for bids, bags, blind, rules in cases:
        score = HandScorer(bids, bags, rules, blind, (420, -30))
        for a, b, c in splits:
            tricks = (a, b, c, 13 - a - b - c)
            assert score(tricks) == score_hand(bids, tricks, bags, rules, blind, (420, -30))
    assert len(splits) == 560


def test_hand_scorer_refuses_bad_input():
    from spades_env.scoring import HandScorer
    with pytest.raises(ValueError, match="bid of seat 1 out of range"):
        HandScorer([3, 14, 2, 4], [0, 0])
    with pytest.raises(ValueError, match="below bag_limit"):
        HandScorer([3, 4, 2, 4], [10, 0])
    with pytest.raises(ValueError, match="Blind Nil but bid 3"):
        HandScorer([3, 4, 2, 4], [0, 0], blind=(True, False, False, False))
    score = HandScorer([3, 4, 2, 4], [0, 0])
    # the trick counts with score_hand's own checks and messages
    for tricks, match in (((4, 3, 3, 2), r"must sum to 13 .*\(sum 12\)"),
                          ((14, -1, 0, 0), "tricks of seat 1 negative: -1")):
        with pytest.raises(ValueError, match=match):
            score(tricks)
        with pytest.raises(ValueError, match=match):
            score_hand([3, 4, 2, 4], tricks, [0, 0])
    with pytest.raises(ValueError, match="4 bids, 4 trick counts"):
        score((13, 0, 0))
    with pytest.raises(ValueError, match="must be ints"):
        score((True, 4, 4, 4))


@pytest.mark.parametrize("rules", [Rules(), Rules(failed_nil_tricks_count=True),
                                   Rules(bags_score_points=False, big_bid_double=7),
                                   Rules(moon_wins=True)], ids=["standard", "fnc", "big", "moon"])
def test_pooled_tricks_score_alike(rules):
    """``pooled_tricks``: a team with no Nil bid keeps only its total (on its first seat), a Nil
    bidder's count stays its own, and every row scores exactly as its pooled row, hand by hand."""
    import numpy as np

    from spades_env.scoring import pooled_tricks
    rng = np.random.default_rng(3)
    for bids in ([3, 4, 2, 3], [0, 4, 5, 3], [3, 0, 4, 0], [6, 1, 7, 0]):
        cuts = np.sort(rng.integers(0, 14, (200, 3)), axis=1)
        tricks = np.diff(np.concatenate([np.zeros((200, 1), int), cuts,
                                         np.full((200, 1), 13)], 1), axis=1)
        pooled = pooled_tricks(bids, tricks)
        assert pooled.dtype == np.int32 and (pooled.sum(1) == 13).all()
        for t in (0, 1):
            if bids[t] and bids[t + 2]:
                assert (pooled[:, t] == tricks[:, t] + tricks[:, t + 2]).all()
                assert (pooled[:, t + 2] == 0).all()
            else:
                assert (pooled[:, [t, t + 2]] == tricks[:, [t, t + 2]]).all()
        for a, b in zip(tricks.tolist(), pooled.tolist()):
            assert _points(score_hand(bids, a, (3, 8), rules)) == \
                _points(score_hand(bids, b, (3, 8), rules))


def _points(teams):
    """A hand's two ``TeamScore`` without the trick counts they record (all the rest)."""
    import dataclasses
    return [dataclasses.replace(t, tricks=None) for t in teams]
