"""Saved games load by replaying their moves through the engine (``spades_env.saved_game``).

A save with a move log is replayed from its starting point; a save without one replays its
current hand from the deal it shows (hands plus played cards). Either way every saved field must
be the same JSON value as the engine's, and the rules are decided by ``SpadesGame.apply`` alone,
so a card the rules forbid is refused even where every derived field agrees with it.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from spades_env import Rules, SpadesGame, bid_action, parse_card
from spades_env.rules import HandResult, failed_to_follow, spades_broken_after
from spades_env.saved_game import FORMAT_TAG, check_score_tables, load

SUITS = {s: " ".join(r + s for r in "2 3 4 5 6 7 8 9 10 J Q K A".split()) for s in "CDHS"}
# seat 0: the low clubs and low spades; seat 2: the high ones; seat 1 hearts, seat 3 diamonds
MIXED = [
    "2C 3C 4C 5C 6C 7C 2S 3S 4S 5S 6S 7S 8S",
    SUITS["H"],
    "8C 9C 10C JC QC KC AC 9S 10S JS QS KS AS",
    SUITS["D"],
]


def _no_log(g: SpadesGame) -> dict:
    d = g.to_dict()
    d["moves"], d["initial"] = [], {}
    return d


def _as_if_played(d: dict, card: int) -> dict:
    """A copy of save ``d`` (play phase) in which the player to act played ``card``, whatever the
    rules say: every field moved as a play moves it (the hand, the played cards, the play log,
    the trick, the voids and spades broken by the rules' own functions, the next player)."""
    d = copy.deepcopy(d)
    p = d["current_player"]
    led = d["trick"][0] // 13 if d["trick"] else -1
    d["hands"][p] &= ~(1 << card)
    d["played"][p] |= 1 << card
    d["plays"].append([p, card])
    d["trick"].append(card)
    d["voids"][p] |= failed_to_follow(card, led)
    d["spades_broken"] = spades_broken_after(card, led, d["spades_broken"], False)
    d["current_player"] = (p + 1) % 4
    return d


def _after_bids(dealer=3) -> SpadesGame:
    g = SpadesGame.from_deal(MIXED, dealer=dealer, seed=0)
    for _ in range(4):
        g.apply(bid_action(3))
    return g


def test_a_card_the_rules_forbid_is_refused_in_a_save_without_a_log():
    # dealer 3: seat 0 leads. Leading the 2 of spades while holding clubs, spades unbroken: the
    # rules forbid it (docs/rules.md, Play: leading spades), though every field agrees with it.
    g = _after_bids()
    d = _as_if_played(_no_log(g), parse_card("2S"))
    with pytest.raises(ValueError, match="seat 0, action 39.*spades are not broken"):
        SpadesGame.from_dict(d)
    # seat 0 leads the 2 of clubs; seat 1 (hearts only) may play anything; seat 2 holds clubs,
    # so its 9 of spades fails to follow suit: refused, though voids say seat 2 has no club
    g.apply(parse_card("2C"))
    g.apply(parse_card("2H"))
    d = _as_if_played(_no_log(g), parse_card("9S"))
    assert d["voids"][2] == 1 and d["spades_broken"]
    with pytest.raises(ValueError, match="must follow suit"):
        SpadesGame.from_dict(d)
    # the legal 8 of clubs loads, and is the engine's own state
    h = SpadesGame.from_dict(_as_if_played(_no_log(g), parse_card("8C")))
    g.apply(parse_card("8C"))
    assert h.to_dict() == {**g.to_dict(), "moves": [], "initial": {}}


def test_json_types_are_compared_exactly():
    """``true`` is not ``1`` and ``1.0`` is not ``1``, in a save with a log and without."""
    g = _after_bids()
    g.apply(parse_card("2C"))
    for d in (g.to_dict(), _no_log(g)):
        SpadesGame.from_dict(copy.deepcopy(d))
        for key, edit in (("spades_broken", lambda x: x.__setitem__("spades_broken", 0)),
                          ("hand_number", lambda x: x.__setitem__("hand_number", 0.0)),
                          ("rng", lambda x: x["rng"].__setitem__("has_uint32", False)),
                          ("tricks_won", lambda x: x["tricks_won"].__setitem__(0, False))):
            e = copy.deepcopy(d)
            edit(e)
            with pytest.raises(ValueError, match=f"[(]{key} differ[)]"):
                SpadesGame.from_dict(e)


def test_the_message_names_every_field_that_differs():
    g = _after_bids()
    for card in ("2C", "2H", "8C", "2D"):  # one trick, won by seat 2's 8 of clubs
        g.apply(parse_card(card))
    d = g.to_dict()
    d["tricks_won"] = [1, 0, 0, 0]
    d["current_player"] = 0
    with pytest.raises(ValueError, match=r"does not replay to the saved state "
                                         r"\(current_player, tricks_won differ\)"):
        SpadesGame.from_dict(d)
    d = _no_log(g)
    d["trick_leader"] = 1
    with pytest.raises(ValueError, match=r"\(trick_leader differ\)"):
        SpadesGame.from_dict(d)


def _second_hand() -> SpadesGame:
    """Hand 2 started from a deal with hand 1's score table (as ``SpadesVectorEnv.get_game``
    does), one bid into it: its ``initial`` carries the table."""
    first = SpadesGame.from_deal(MIXED, dealer=3, seed=0)
    while first.hand_number == 0:
        first.apply(first.legal_actions()[0])
    g = SpadesGame.from_deal(MIXED, dealer=0, scores=first.scores, bags=first.bags, seed=1)
    g.hand_results = list(first.hand_results)
    g.hand_number = 1
    g.apply(bid_action(2))
    assert "hand_results" in g.initial
    return g


@pytest.mark.parametrize("edit,match", [
    (lambda i: i["scores"].__setitem__(0, i["scores"][0] + 10), "do not follow the last score"),
    (lambda i: i["bags"].__setitem__(1, (i["bags"][1] + 1) % 10), "do not follow the last score"),
    (lambda i: i.__setitem__("dealer", 2), "do not follow the last score"),
    (lambda i: i["hand_results"][0]["teams"][0].__setitem__(
        "hand_points", i["hand_results"][0]["teams"][0]["hand_points"] + 1),
     "not the scoring of its bids"),
    (lambda i: i["hand_results"][0].__setitem__("hand_number", 1), "has hand number 1"),
])
def test_replay_checks_the_score_tables_its_start_carries(edit, match):
    g = _second_hand()
    assert SpadesGame.replay(g.moves, initial=g.initial).to_json() == g.to_json()
    init = g.initial
    edit(init)
    with pytest.raises(ValueError, match=match):
        SpadesGame.replay(g.moves, initial=init)
    d = g.to_dict()
    d["initial"] = init
    with pytest.raises(ValueError, match="bad initial state.*" + match):
        SpadesGame.from_dict(d)


def test_a_starting_state_must_have_no_log_of_its_own():
    g = _after_bids()
    with pytest.raises(ValueError, match="no move log"):
        SpadesGame.replay([], initial={"state": g.to_dict()})
    loaded = SpadesGame.from_dict(_no_log(g))  # mid-hand, no log: its own starting point
    loaded.apply(parse_card("2C"))
    assert set(loaded.initial) == {"state"}
    assert SpadesGame.from_json(loaded.to_json()).to_json() == loaded.to_json()


def test_a_finished_game_without_its_log_replays_its_last_hand():
    rules = Rules(target_score=200, loss_threshold=-200)
    g = SpadesGame(rules, seed=5)
    rng = np.random.default_rng(5)
    while not g.is_over:
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
    d = _no_log(g)
    h = SpadesGame.from_dict(d)
    assert h.is_over and h.winner == g.winner and h.to_dict() == d
    bad = copy.deepcopy(d)  # the last table's trick counts moved between two seats
    t = bad["hand_results"][-1]
    t["tricks"][0] += 1
    t["tricks"][1] -= 1
    with pytest.raises(ValueError, match="corrupt spades_env saved game"):
        SpadesGame.from_dict(bad)


def test_rules_may_leave_fields_out_and_save_whole():
    d = SpadesGame(seed=2).to_dict()
    d["rules"] = {}
    g = SpadesGame.from_dict(d)
    assert g.rules == Rules() and g.to_dict()["rules"] == Rules().to_dict()


def test_saved_game_module_loads_for_any_game_class():
    """``load`` is given the class (it does not import the engine): a subclass comes back."""
    class Sub(SpadesGame):
        __slots__ = ()

    g = _after_bids()
    g.apply(parse_card("2C"))
    text = g.to_json()
    assert json.loads(text)["format"] == FORMAT_TAG
    h = load(Sub, json.loads(text))
    assert type(h) is Sub and h.to_json() == text
    assert type(Sub.from_json(text)) is Sub


def test_check_score_tables_names_the_first_bad_table():
    g = _second_hand()
    check_score_tables(g.hand_results, g.rules)
    t = g.hand_results[0].to_dict()
    t["blind"] = [True, False, False, False]
    t["teams"][0]["blind"] = [True, False]
    with pytest.raises(ValueError, match="score table 0 has a Blind Nil"):
        check_score_tables([HandResult.from_dict(t)], g.rules)


def test_vector_get_game_after_two_hands_round_trips_json():
    pytest.importorskip("torch")
    from spades_env.vector import SpadesVectorEnv

    env = SpadesVectorEnv(2, seed=1)
    obs, mask, seat = env.reset()
    for _ in range(2 * 56 + 5):  # two full hands, then 4 bids and the opening lead
        first_legal = mask.int().argmax(1)
        obs, mask, seat, rewards, dones, info = env.step(first_legal)
    g = env.get_game(0)
    assert g.hand_number == 2
    g2 = SpadesGame.from_json(g.to_json())
    assert g2.to_dict() == g.to_dict()
