"""Game flow: game end, the Blind Nil exchange, save/load/replay, clone and bad input.

Scripted deals where one seat holds a whole suit make the trick count certain: the seat holding all
13 spades takes all 13 tricks whatever anybody plays.
"""

import json

import numpy as np
import pytest

import spades_env as se
from spades_env import (
    BLIND_NIL_ACTION, LOOK_ACTION, IllegalActionError, Phase, Rules, SpadesGame, bid_action,
    game_outcome, parse_card, parse_cards,
)
from spades_env.render import render_game, render_score_table, render_view

SUITS = {s: " ".join(r + s for r in "2 3 4 5 6 7 8 9 10 J Q K A".split()) for s in "CDHS"}
# seat 0 all spades (takes every trick); seats 1..3 hearts, diamonds, clubs
SPADES_AT_0 = [SUITS["S"], SUITS["H"], SUITS["D"], SUITS["C"]]
# seat 1 all spades
SPADES_AT_1 = [SUITS["H"], SUITS["S"], SUITS["D"], SUITS["C"]]
# seat 0 all spades, seat 1 all hearts, seat 2 all diamonds, seat 3 all clubs
SUIT_HANDS = [[c for c in range(52) if c // 13 == s] for s in (3, 2, 1, 0)]


def play_hand(g, bids):
    """Bid ``bids`` by seat (None = the current seat's Blind Nil handled by caller) and play the
    hand out with the lowest legal card; returns the hand's score table."""
    first = g.current_player
    for i in range(4):
        s = (first + i) % 4
        assert g.current_player == s
        g.apply(bid_action(bids[s]))
    n = g.hand_number
    while g.hand_number == n:
        g.apply(g.legal_actions()[0])
    return g.hand_results[-1]


def random_game(seed, rules, max_hands=50):
    g = SpadesGame(rules, seed)
    rng = np.random.default_rng(seed + 1)
    while not g.is_over and g.hand_number < max_hands:
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
    return g


def _play_suit_hand(g: SpadesGame, bids) -> None:
    for b in bids:
        g.apply(se.bid_action(b))
    hn = g.hand_number
    while g.hand_number == hn and not g.is_over:
        g.apply(g.legal_actions()[0])


# ---------------------------------------------------------------- game end

def test_whole_suit_deal_gives_all_tricks_to_spade_holder():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, seed=0)
    h = play_hand(g, [4, 3, 4, 3])
    assert h.tricks == (13, 0, 0, 0)
    t0, t1 = h.teams
    assert (t0.contract_points, t0.bags, t1.contract_points) == (85, 5, -60)
    assert g.scores == [85, -60] and g.bags == [5, 0]


def test_both_teams_over_target_higher_wins():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, scores=(400, 350), seed=0)
    # team 0: 10 + 3 = 13, takes 13 -> +130 = 530; team 1 both Nil, no trick -> +200 = 550
    play_hand(g, [10, 0, 3, 0])
    assert g.scores == [530, 550]
    assert g.is_over and g.phase == Phase.GAME_OVER and g.winner == 1
    assert g.current_player == -1 and g.legal_actions() == [] and g.legal_mask() == 0
    assert g.explain_illegal(0) == "the game is over"
    with pytest.raises(IllegalActionError, match="game is over"):
        g.apply(bid_action(1))


def test_exact_tie_over_target_plays_another_hand_and_dealer_rotates():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, scores=(400, 330), seed=5)
    play_hand(g, [10, 0, 3, 0])
    assert g.scores == [530, 530]
    assert not g.is_over and g.winner is None
    assert g.phase == Phase.BIDDING and g.hand_number == 1
    assert g.dealer == 0 and g.current_player == 1
    assert [h.bit_count() for h in g.hands] == [13, 13, 13, 13]
    # play on (random legal moves, a seed where the next hand separates the totals)
    rng = np.random.default_rng(3)
    while not g.is_over and g.hand_number < 10:
        n = g.hand_number
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
        if g.hand_number > n and not g.is_over:
            assert game_outcome(g.scores, g.rules) is None
    assert g.is_over and g.hand_number == 2
    assert g.scores[0] != g.scores[1]
    assert g.winner == game_outcome(g.scores, g.rules) == 0


def test_loss_threshold_exactly_minus_200():
    rules = Rules(loss_threshold=-200)
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, scores=(0, -100), rules=rules, seed=0)
    # team 0: 1 + 1 = 2, takes 13: 20 + 11 = 31, 11 bags -> -100, 1 left: -69
    # team 1: 5 + 5 = 10, takes 0: set -100 -> exactly -200: loses
    play_hand(g, [1, 5, 1, 5])
    assert g.scores == [-69, -200] and g.bags == [1, 0]
    assert g.is_over and g.winner == 0


def test_loss_threshold_just_above_plays_on():
    rules = Rules(loss_threshold=-200)
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, scores=(0, -99), rules=rules, seed=0)
    play_hand(g, [1, 5, 1, 5])
    assert g.scores == [-69, -199]
    assert not g.is_over and g.phase == Phase.BIDDING


def test_loss_threshold_both_ending_higher_wins():
    rules = Rules(loss_threshold=-200)
    # team 0 reaches the target (520) while team 1 falls to -230: higher total wins
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, scores=(390, -130), rules=rules, seed=0)
    play_hand(g, [10, 4, 3, 3])
    assert g.scores == [520, -200] and g.winner == 0


def test_target_250():
    rules = Rules(target_score=250)
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, scores=(120, 0), rules=rules, seed=0)
    play_hand(g, [7, 1, 6, 1])  # +130 -> 250; team 1 set -20
    assert g.scores == [250, -20] and g.is_over and g.winner == 0


def test_exactly_ten_bags_in_game_pays_penalty():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, bags=(9, 0), seed=0)
    h = play_hand(g, [6, 2, 6, 2])  # contract 12, 13 tricks: 121, 1 bag -> 10 -> -100, 0 left
    assert (h.teams[0].bag_penalty, h.teams[0].hand_points) == (-100, 21)
    assert g.bags == [0, 0] and g.scores == [21, -40]


def test_bid_zero_is_nil_in_the_game():
    g = SpadesGame.from_deal(SPADES_AT_1, dealer=3, seed=0)
    h = play_hand(g, [0, 13, 0, 0])
    assert h.bids == (0, 13, 0, 0) and h.tricks == (0, 13, 0, 0)
    # team 0 both Nil, no trick: +200; team 1: seat 1 made 13 (+130), seat 3 Nil +100
    assert [t.hand_points for t in h.teams] == [200, 230]


def test_scores_equal_sum_of_hand_records_over_full_game():
    g = random_game(3, Rules(loss_threshold=-200, target_score=250))
    assert g.is_over
    for t in (0, 1):
        assert g.scores[t] == sum(h.teams[t].hand_points for h in g.hand_results)
        assert g.bags[t] == g.hand_results[-1].teams[t].bags_after
    assert g.winner == game_outcome(g.scores, g.rules)


# ---------------------------------------------------------------- Blind Nil

def test_blind_nil_with_exchange():
    rules = Rules(blind_nil=True)
    g = SpadesGame.from_deal(SPADES_AT_1, dealer=3, rules=rules, seed=0)
    # nobody has looked: own hands are hidden, only the Blind Nil decision is legal
    assert g.legal_actions() == [BLIND_NIL_ACTION, LOOK_ACTION]
    for s in range(4):
        assert g.view(s).hand == 0 and not g.view(s).looked
    assert "decide first" in g.explain_illegal(bid_action(3))
    g.apply(BLIND_NIL_ACTION)
    assert g.bids == [0, None, None, None] and g.blind == [True, False, False, False]
    assert g.view(0).hand == g.hands[0]
    assert g.view(1).hand == 0
    g.apply(LOOK_ACTION)
    assert g.view(1).hand == g.hands[1] and g.current_player == 1
    assert "already looked" in g.explain_illegal(BLIND_NIL_ACTION)
    assert g.legal_actions() == list(range(52, 66))
    g.apply(bid_action(5))
    g.apply(LOOK_ACTION)
    g.apply(bid_action(3))
    g.apply(LOOK_ACTION)
    g.apply(bid_action(4))
    # the exchange: partner (seat 2) passes 3 cards, then the Blind Nil bidder passes 3 back
    assert g.phase == Phase.EXCHANGE and g.current_player == 2
    assert g.legal_actions() == sorted(parse_cards(SUITS["D"]))
    assert "bidding is over" in g.explain_illegal(bid_action(2))
    for card in ("2D", "3D", "4D"):
        assert g.current_player == 2
        g.apply(parse_card(card))
    assert [h.bit_count() for h in g.hands] == [16, 13, 10, 13]
    assert g.view(3).hand_sizes == (16, 13, 10, 13)
    assert g.current_player == 0
    assert "not in your hand" in g.explain_illegal(parse_card("5D"))
    for card in ("AH", "2D", "KH"):  # passing back a card just received is allowed
        assert g.current_player == 0
        g.apply(parse_card(card))
    assert g.phase == Phase.PLAY and g.current_player == 0
    assert [h.bit_count() for h in g.hands] == [13, 13, 13, 13]
    exp0 = parse_cards("3D 4D") + parse_cards(SUITS["H"])
    for x in parse_cards("AH KH"):
        exp0.remove(x)
    assert sorted(g.hand(0)) == sorted(exp0)
    # what each seat knows of the others' cards from the exchange
    v0, v2 = g.view(0), g.view(2)
    assert v0.known_cards == (0, 0, sum(1 << x for x in parse_cards("AH KH 2D")), 0)
    assert v2.known_cards == (sum(1 << x for x in parse_cards("3D 4D")), 0, 0, 0)
    assert g.view(1).known_cards == (0, 0, 0, 0) and g.view(3).known_cards == (0, 0, 0, 0)
    # a known card leaves known_cards once played
    while g.hand_number == 0:
        g.apply(g.legal_actions()[0])
    h = g.hand_results[0]
    assert h.blind == (True, False, False, False)
    assert h.tricks == (0, 13, 0, 0)
    t0, t1 = h.teams
    assert (t0.nil_points, t0.contract_points, t0.hand_points) == (200, -30, 170)
    assert (t1.contract_points, t1.bags, t1.hand_points) == (94, 4, 94)
    # next hand: everyone decides again, blind flags reset
    assert g.blind == [False] * 4 and g.looked == [False] * 4
    assert g.legal_actions() == [BLIND_NIL_ACTION, LOOK_ACTION]


def test_both_partners_blind_nil_no_exchange():
    g = SpadesGame.from_deal(SPADES_AT_1, dealer=3, rules=Rules(blind_nil=True), seed=0)
    g.apply(BLIND_NIL_ACTION)
    g.apply(LOOK_ACTION)
    g.apply(bid_action(5))
    g.apply(BLIND_NIL_ACTION)
    g.apply(LOOK_ACTION)
    g.apply(bid_action(4))
    assert g.phase == Phase.PLAY and g.exchanges == []
    while g.hand_number == 0:
        g.apply(g.legal_actions()[0])
    assert g.hand_results[0].teams[0].nil_points == 400


def test_blind_nil_failed_costs_200():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, rules=Rules(blind_nil=True), seed=0)
    g.apply(BLIND_NIL_ACTION)  # seat 0 holds all spades: must take tricks
    for s in (1, 2, 3):
        g.apply(LOOK_ACTION)
        g.apply(bid_action(2))
    for _ in range(6):
        g.apply(g.legal_actions()[0])  # seat 2 passes 2D 3D 4D, seat 0 passes 2S 3S 4S back
    assert g.hands[0].bit_count() == 13
    while g.hand_number == 0:
        g.apply(g.legal_actions()[0])
    h = g.hand_results[0]
    # seat 2 now holds 2S 3S 4S: seat 0 still takes trick 1 (it leads and the spades are its own)
    assert h.tricks[0] > 0 and sum(h.tricks) == 13
    t0 = h.teams[0]
    assert t0.nil_points == -200
    assert t0.bags == h.tricks[0] + max(0, h.tricks[2] - 2)


def test_blind_nil_action_refused_when_switch_off():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, seed=0)
    with pytest.raises(IllegalActionError, match="Blind Nil is not allowed"):
        g.apply(BLIND_NIL_ACTION)
    with pytest.raises(IllegalActionError, match="no Blind Nil decision"):
        g.apply(LOOK_ACTION)


# ---------------------------------------------------------------- save / load / replay / clone

def test_to_json_round_trip_with_hand_results_and_continuation():
    rules = Rules(blind_nil=True)
    g = SpadesGame(rules, seed=11)
    rng = np.random.default_rng(1)
    while g.hand_number < 2:
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
    for _ in range(17):
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
    text = g.to_json()
    h = SpadesGame.from_json(text)
    assert h.to_json() == text
    assert h.hand_results == g.hand_results and len(h.hand_results) == 2
    assert h.view(2) == g.view(2)
    # both continue identically, RNG included (later deals match)
    rng2 = np.random.default_rng(99)
    while not g.is_over and g.hand_number < 5:
        la = g.legal_actions()
        assert la == h.legal_actions()
        a = la[int(rng2.integers(len(la)))]
        g.apply(a)
        h.apply(a)
    assert g.to_json() == h.to_json()


def test_finished_game_replays_to_same_result():
    rules = Rules(loss_threshold=-200, target_score=250, blind_nil=True)
    g = random_game(21, rules)
    assert g.is_over
    r = SpadesGame.replay(g.moves, initial=g.initial)
    assert r.rules == rules  # rules travel in game.initial
    assert r.to_json() == g.to_json() and r.winner == g.winner
    r2 = SpadesGame.replay(g.moves, rules=rules, seed=21)
    assert r2.scores == g.scores and r2.winner == g.winner
    # a finished game loads back
    assert SpadesGame.from_json(g.to_json()).winner == g.winner


def test_replay_from_deal():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=2, scores=(10, 20), bags=(3, 4), seed=4)
    for _ in range(30):
        g.apply(g.legal_actions()[-1])
    r = SpadesGame.replay(g.moves, initial=g.initial)
    assert r.to_json() == g.to_json()
    with pytest.raises(ValueError, match="corrupt initial"):
        SpadesGame.replay([], initial={"hands": SPADES_AT_0})


def test_start_set_up_by_hand_before_first_move_saves_and_replays():
    # e.g. a training env that starts games at random totals: set before the first bid
    g = SpadesGame(Rules(loss_threshold=-200), seed=31)
    g.scores = [120, -70]
    g.bags = [7, 2]
    assert SpadesGame.from_json(g.to_json()).scores == [120, -70]  # no move yet
    for _ in range(9):
        g.apply(g.legal_actions()[0])
    assert g.initial["scores"] == [120, -70] and g.initial["bags"] == [7, 2]
    text = g.to_json()
    assert SpadesGame.from_json(text).to_json() == text
    assert SpadesGame.replay(g.moves, initial=g.initial).to_json() == text
    # a change after the first move is not explained by the log: refused on load
    g.scores = [125, -70]
    with pytest.raises(ValueError, match="does not replay"):
        SpadesGame.from_json(g.to_json())


def test_same_seed_same_game():
    a = random_game(7, Rules(loss_threshold=-200))
    b = random_game(7, Rules(loss_threshold=-200))
    assert a.moves == b.moves and a.to_json() == b.to_json()
    c = random_game(8, Rules(loss_threshold=-200))
    assert c.moves != a.moves


def test_clone_is_independent():
    g = SpadesGame(Rules(loss_threshold=-200), seed=2)
    for _ in range(10):
        g.apply(g.legal_actions()[0])
    before = g.to_json()
    k = g.clone()
    assert k.to_json() == before
    while k.hand_number == 0:
        k.apply(k.legal_actions()[0])
    assert g.to_json() == before
    # the clone's RNG is a copy: the original deals the same next hand
    while g.hand_number == 0:
        g.apply(g.legal_actions()[0])
    assert g.hands == k.hands


@pytest.mark.parametrize("text", [
    "not json", "", "[1, 2]", "{}", '{"format": "chess.game", "version": 1}',
    '{"format": "spades_env.game", "version": 99}', b"\xff\xfe",
])
def test_corrupt_or_foreign_json_raises_value_error(text):
    with pytest.raises(ValueError):
        SpadesGame.from_json(text)


def _tampered(mutate):
    g = SpadesGame(Rules(loss_threshold=-200), seed=9)
    rng = np.random.default_rng(0)
    while g.hand_number < 1:
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
    for _ in range(10):  # 4 bids and 6 cards: mid-trick in the second hand
        g.apply(g.legal_actions()[0])
    d = json.loads(g.to_json())
    SpadesGame.from_dict(json.loads(g.to_json()))  # the untouched state loads
    mutate(d)
    return json.dumps(d)


def _move_card(d):
    c = (d["hands"][0] & -d["hands"][0])
    d["hands"][0] ^= c
    d["hands"][1] |= c


def _dup_card(d):
    d["hands"][1] |= d["hands"][0] & -d["hands"][0]


@pytest.mark.parametrize("mutate", [
    lambda d: d.pop("hands"),
    lambda d: d.__setitem__("hands", [1, 2, 3]),
    lambda d: d.__setitem__("phase", 9),
    lambda d: d.__setitem__("dealer", 4),
    lambda d: d.__setitem__("current_player", (d["current_player"] + 1) % 4),
    lambda d: d.__setitem__("bags", [10, 0]),
    lambda d: d.__setitem__("scores", [d["scores"][0] + 1, d["scores"][1]]),
    lambda d: d.__setitem__("tricks_won", [d["tricks_won"][0] + 1] + d["tricks_won"][1:]),
    lambda d: d.__setitem__("bids", [14, 3, 3, 3]),
    lambda d: d.__setitem__("bids", ["3", 3, 3, 3]),
    lambda d: d.__setitem__("spades_broken", not d["spades_broken"]),
    lambda d: d.__setitem__("voids", [15, 0, 0, 0]),
    lambda d: d.__setitem__("trick", d["trick"][:-1]),
    lambda d: d.__setitem__("rules", {"target": 5}),
    lambda d: d.__setitem__("rng", {"bit_generator": "NoSuchRNG"}),
    lambda d: d.__setitem__("winner", 0),
    lambda d: d.__setitem__("hand_results", [{"bogus": 1}]),
    lambda d: d.__setitem__("plays", d["plays"][:-1]),
    lambda d: d.__setitem__("moves", d["moves"][:-1]),
    lambda d: d["moves"].__setitem__(3, 52 if d["moves"][3] != 52 else 53),
    lambda d: d["initial"].pop("rng"),
    _move_card,
    _dup_card,
])
def test_tampered_save_raises_value_error(mutate):
    text = _tampered(mutate)
    with pytest.raises(ValueError, match="corrupt|not a spades_env|unknown"):
        SpadesGame.from_json(text)


def test_game_set_up_mid_way_round_trips_json():
    # Hand 1 (dealer 3, bids 3 / Nil / Nil / Nil): seat 0 takes all 13 tricks.
    # Team 0: contract 3 made with 10 overtricks: 30 + 10 = 40, 10 bags -> -100 (0 left),
    # seat 2's Nil +100: hand 40. Team 1: two Nils made: +200.
    first = SpadesGame.from_deal(SUIT_HANDS, dealer=3)
    _play_suit_hand(first, (3, 0, 0, 0))
    assert first.scores == [40, 200] and first.bags == [0, 0]
    # Start hand 2 from a given deal carrying the earlier score table, as
    # SpadesVectorEnv.get_game does, then save and load it.
    g = SpadesGame.from_deal(SUIT_HANDS, dealer=0, scores=first.scores, bags=first.bags)
    g.hand_results = list(first.hand_results)
    g.hand_number = 1
    g.apply(se.bid_action(2))  # seat 1 bids first (left of dealer 0)
    g2 = SpadesGame.from_json(g.to_json())  # raised "does not replay" before the fix
    assert g2.to_dict() == g.to_dict()
    assert g2.hand_number == 1 and g2.hand_results[0].teams[1].hand_points == 200


# ---------------------------------------------------------------- bad input to from_deal

@pytest.mark.parametrize("hands,dealer,kwargs,match", [
    (SPADES_AT_0[:3], 0, {}, "need 4 hands"),
    ([SUITS["S"], SUITS["H"], SUITS["D"], SUITS["C"].rsplit(" ", 1)[0]], 0, {}, "13 cards"),
    ([SUITS["S"], SUITS["H"], SUITS["D"], SUITS["C"].replace("2C", "2D")], 0, {}, "twice|once"),
    ([SUITS["S"], SUITS["H"], SUITS["D"], SUITS["C"].replace("2C", "XX")], 0, {}, "'XX'"),
    (SPADES_AT_0, 4, {}, "dealer"),
    (SPADES_AT_0, 0, {"bags": (10, 0)}, "bags of team 0"),
    (SPADES_AT_0, 0, {"bags": (0, -1)}, "bags of team 1"),
    (SPADES_AT_0, 0, {"scores": (0,)}, "scores"),
    (SPADES_AT_0, 0, {"rules": "standard"}, "Rules"),
])
def test_from_deal_bad_input(hands, dealer, kwargs, match):
    with pytest.raises(ValueError, match=match):
        SpadesGame.from_deal(hands, dealer, **kwargs)


def test_from_deal_accepts_masks_and_ids():
    masks = [sum(1 << c for c in parse_cards(h)) for h in SPADES_AT_0]
    a = SpadesGame.from_deal(masks, 1)
    b = SpadesGame.from_deal([parse_cards(h) for h in SPADES_AT_0], 1)
    assert a.hands == b.hands == masks


def test_bad_seat_for_view():
    g = SpadesGame(seed=0)
    with pytest.raises(ValueError, match="seat"):
        g.view(4)
    with pytest.raises(ValueError, match="seat"):
        g.view(True)
    assert g.view(np.int64(2)).seat == 2


# ---------------------------------------------------------------- rendering

def test_render_game_and_score_table():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, seed=0)
    text = render_game(g)
    assert "♠ A K Q J 10 9 8 7 6 5 4 3 2" in text and "dealer: seat 3" in text
    play_hand(g, [4, 3, 4, 3])
    table = render_score_table(g.hand_results)
    assert "85" in table and "-60" in table
    assert "Score: team 0 85 (5 bags), team 1 -60 (0 bags)" in str(g)


def test_render_view_shows_only_own_hand():
    g = SpadesGame.from_deal(SPADES_AT_0, dealer=3, seed=0)
    text = render_view(g.view(1))
    assert "♥ A K Q J 10" in text
    assert "♠ A" not in text and "♦ A" not in text
    play_hand(g, [4, 3, 4, 3])
    g2 = SpadesGame.from_deal(SPADES_AT_1, dealer=3, seed=0)
    for b in (2, 2, 2, 2):
        g2.apply(bid_action(b))
    g2.apply(parse_card("2H"))
    g2.apply(parse_card("2S"))  # seat 1 has no heart: shown void
    text = render_view(g2.view(2))  # seat 2 is to act
    assert "Known voids: seat 1 void in ♥" in text
    assert "Score: team 0 0 (0 bags)" in text
    assert "Legal:" in text


def test_render_of_a_finished_game_names_the_last_hand():
    # From 480-0, the suit-split hand above gives team 0 +40: 520 wins after one hand.
    g = SpadesGame.from_deal(SUIT_HANDS, dealer=3, scores=(480, 0))
    _play_suit_hand(g, (3, 0, 0, 0))
    assert g.is_over and g.winner == 0 and g.scores == [520, 200]
    text = str(g)
    assert text.startswith("Hand 1, dealer: seat 3, phase: game over")  # was "Hand 2"
    assert "Trick 13: (hand over)" in text and "Trick 14" not in text
