"""Legal moves, trick winner, breaking spades, dealer and lead order (docs/rules.md, A hand).

Scripted deals via ``SpadesGame.from_deal``; every expected value is worked out by hand.
"""

import pytest

from spades_env import (
    IllegalActionError, Phase, Rules, SpadesGame, bid_action, parse_card, parse_cards,
    trick_winner,
)

# Deal A (dealer 3, so seat 0 bids first and leads):
#   hearts: seat 0 A K Q; seat 1 J 10 9 8; seat 2 none; seat 3 7..2
#   clubs:  seat 0 A K Q J; seat 1 10 9; seat 2 8..4; seat 3 3 2
#   diamonds: seat 0 A K Q J; seat 1 10 9 8; seat 2 7..4; seat 3 3 2
#   spades: seat 0 2 3; seat 1 4..7; seat 2 8..J; seat 3 Q K A
DEAL_A = [
    "AH KH QH AC KC QC JC AD KD QD JD 2S 3S",
    "JH 10H 9H 8H 10C 9C 10D 9D 8D 4S 5S 6S 7S",
    "8C 7C 6C 5C 4C 7D 6D 5D 4D 8S 9S 10S JS",
    "7H 6H 5H 4H 3H 2H 3C 2C 3D 2D QS KS AS",
]

# Deal B (dealer 3): seat 0 holds 11 spades and two top hearts; seat 1 holds A K of spades.
DEAL_B = [
    "AH KH 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS",
    "QH JH KS AS AC KC QC JC 10C 9C 8C 7C 6C",
    "10H 9H 8H 7H 5C 4C 3C 2C AD KD QD JD 10D",
    "6H 5H 4H 3H 2H 9D 8D 7D 6D 5D 4D 3D 2D",
]


def c(text):
    return parse_card(text)


def play(g, *cards):
    for t in cards:
        g.apply(c(t))


def bid_all(g, bids=(3, 3, 3, 3)):
    for b in bids:
        g.apply(bid_action(b))


def game_a(rules=None):
    g = SpadesGame.from_deal(DEAL_A, dealer=3, rules=rules, seed=1)
    bid_all(g)
    return g


def test_renege_rejected_with_reason_and_state_unchanged():
    g = game_a()
    play(g, "AH")
    before = g.to_json()
    with pytest.raises(IllegalActionError, match="must follow suit: you hold a heart"):
        g.apply(c("10C"))
    assert g.explain_illegal(c("10C")) == "must follow suit: you hold a heart"
    assert g.to_json() == before
    assert g.legal_actions() == parse_and_sort("8H 9H 10H JH")


def parse_and_sort(text):
    return sorted(parse_cards(text))


def test_led_suit_is_first_card_of_trick():
    g = game_a()
    play(g, "AH", "JH")
    # seat 2 is void in hearts: any card, trumping on the first trick too
    assert g.legal_actions() == sorted(parse_cards(DEAL_A[2]))
    play(g, "8S")
    # seat 3 holds hearts and spades: the led suit is hearts (the first card), not spades
    with pytest.raises(IllegalActionError, match="must follow suit: you hold a heart"):
        g.apply(c("AS"))
    assert g.legal_actions() == parse_and_sort("2H 3H 4H 5H 6H 7H")
    play(g, "2H")
    # trump wins the first trick; seat 2 leads next and spades are broken
    assert g.tricks_won == [0, 0, 1, 0]
    assert g.current_player == 2 and g.trick_leader == 2
    assert g.spades_broken
    assert g.voids[2] == 1 << 2  # void in hearts shown


def test_follow_suit_message_names_the_suit():
    g = game_a()
    play(g, "AH", "JH", "8S", "2H")  # seat 2 wins, leads
    play(g, "7D")  # seat 3 has 3D 2D
    assert g.explain_illegal(c("AS")) == "must follow suit: you hold a diamond"
    play(g, "3D")
    assert g.explain_illegal(c("AC")) == "must follow suit: you hold a diamond"
    play(g, "AD", "10D")
    assert g.tricks_won == [1, 0, 1, 0]


def test_spades_cannot_be_led_until_broken():
    g = game_a()
    assert g.current_player == 0
    with pytest.raises(IllegalActionError, match="spades are not broken yet"):
        g.apply(c("2S"))
    assert c("2S") not in g.legal_actions() and c("3S") not in g.legal_actions()
    # after spades are broken the winner may lead one
    play(g, "AH", "JH", "8S", "2H")
    assert c("9S") in g.legal_actions()
    play(g, "9S")  # seat 2 leads a spade now
    assert g.led_suit == 3


def test_not_your_turn_and_not_in_hand_messages():
    g = game_a()
    with pytest.raises(IllegalActionError, match="not your turn"):
        g.apply(c("AH"), seat=1)
    with pytest.raises(IllegalActionError, match="that card is not in your hand"):
        g.apply(c("JH"))
    assert g.explain_illegal(c("AH"), seat=0) is None
    g.apply(c("AH"), seat=0)
    assert g.current_player == 1


@pytest.mark.parametrize("ranks", [
    "A K", "K Q", "Q J", "J 10", "10 9", "9 8", "8 7", "7 6", "6 5", "5 4", "4 3", "3 2",
])
def test_rank_order_adjacent(ranks):
    hi, lo = ranks.split()
    for suit in "CDHS":
        # low card led by seat 1, high card played third: seat 3 wins
        cards = [c(lo + suit), c("2" + ("D" if suit != "D" else "C")), c(hi + suit),
                 c("3" + ("D" if suit != "D" else "C"))]
        if suit == "S":
            cards = [c(lo + "S"), c("2D"), c(hi + "S"), c("3D")]
        assert trick_winner(cards, 1) == 3


def test_rank_order_full_and_ten_beats_nine():
    order = "2 3 4 5 6 7 8 9 10 J Q K A".split()
    for i, lo in enumerate(order):
        for hi in order[i + 1:]:
            assert trick_winner([c(lo + "H"), c(hi + "H"), c("2C") if lo != "2" else c("3C"),
                                 c("4C")], 0) == 1
    assert trick_winner(parse_cards("9D 10D 2D 3D"), 2) == 3
    assert trick_winner(parse_cards("10D AD KD QD"), 0) == 1


def test_trick_winner_trump_and_off_suit():
    # highest spade wins; otherwise highest of the led suit; off-suit aces never win
    assert trick_winner(parse_cards("KH AH 2S AD"), 0) == 2
    assert trick_winner(parse_cards("KH 3S 2S AS"), 1) == 0  # seat 1 led; AS by seat 0
    assert trick_winner(parse_cards("5C AD AH 6C"), 3) == 2  # 6C by seat 2
    assert trick_winner(parse_cards("2S AH AD AC"), 0) == 0  # spade lead, nobody follows


def test_engine_trick_winner_matches_rule_with_trump():
    g = game_a()
    play(g, "AH", "JH", "8S", "2H")
    play(g, "4C", "3C", "AC", "10C")  # seat 2 leads clubs; AC by seat 0 wins
    assert g.tricks_won == [1, 0, 1, 0]
    assert g.current_player == 0


def test_only_spades_hand_may_lead_spade_without_breaking():
    g = SpadesGame.from_deal(DEAL_B, dealer=3, seed=0)
    bid_all(g)
    play(g, "AH", "QH", "10H", "6H")  # seat 0 wins
    play(g, "KH", "JH", "9H", "5H")  # seat 0 wins
    assert g.current_player == 0 and not g.spades_broken
    assert g.legal_actions() == sorted(parse_cards("2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS"))
    play(g, "2S")
    assert not g.spades_broken  # the forced lead does not break spades (standard)
    play(g, "AS", "2C", "2D")  # seat 1 follows with AS and wins; others discard
    assert g.tricks_won == [2, 1, 0, 0]
    assert not g.spades_broken  # discarding on a spade lead breaks nothing
    assert g.current_player == 1
    with pytest.raises(IllegalActionError, match="spades are not broken yet"):
        g.apply(c("KS"))
    assert g.legal_actions() == sorted(parse_cards("AC KC QC JC 10C 9C 8C 7C 6C"))


def test_forced_spade_lead_breaks_with_switch_on():
    g = SpadesGame.from_deal(DEAL_B, dealer=3, seed=0,
                             rules=Rules(forced_spade_lead_breaks=True))
    bid_all(g)
    play(g, "AH", "QH", "10H", "6H", "KH", "JH", "9H", "5H")
    assert not g.spades_broken
    play(g, "2S")
    assert g.spades_broken
    play(g, "AS", "2C", "2D")
    assert c("KS") in g.legal_actions()
    play(g, "KS")


def test_broken_stays_broken_and_resets_next_deal():
    g = game_a()
    play(g, "AH", "JH", "8S", "2H")
    assert g.spades_broken
    dealer = g.dealer
    while g.hand_number == 0:
        assert g.spades_broken
        g.apply(g.legal_actions()[0])
    assert g.phase == Phase.BIDDING
    assert not g.spades_broken
    assert g.dealer == (dealer + 1) % 4
    assert g.trick_number == 0 and g.tricks_won == [0, 0, 0, 0]


@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_first_bid_and_first_lead_left_of_dealer(dealer):
    g = SpadesGame.from_deal(DEAL_A, dealer=dealer, seed=0)
    order = []
    for _ in range(4):
        order.append(g.current_player)
        g.apply(bid_action(2))
    assert order == [(dealer + 1 + i) % 4 for i in range(4)]
    assert g.phase == Phase.PLAY
    assert g.current_player == (dealer + 1) % 4 == g.trick_leader


def test_deal_is_one_at_a_time_from_left_of_dealer():
    # With a seeded game, re-create the shuffle: card i of the permutation goes to seat
    # (dealer + 1 + i) % 4 (docs/rules.md: one at a time, clockwise, starting left of the dealer).
    import numpy as np
    g = SpadesGame(seed=123)
    rng = np.random.default_rng(123)
    dealer = int(rng.integers(4))
    perm = rng.permutation(52).tolist()
    assert g.dealer == dealer
    for i, card in enumerate(perm):
        assert (g.hands[(dealer + 1 + i) % 4] >> card) & 1


def test_bidding_phase_rejects_cards_and_out_of_range():
    g = SpadesGame.from_deal(DEAL_A, dealer=3, seed=0)
    assert g.legal_actions() == list(range(52, 66))
    assert "bidding" in g.explain_illegal(c("AH"))
    assert "out of range" in g.explain_illegal(68)
    assert "Blind Nil is not allowed" in g.explain_illegal(66)
    assert g.explain_illegal(67) is not None
    assert "int action id" in g.explain_illegal("AH")
    assert "int action id" in g.explain_illegal(True)
    with pytest.raises(IllegalActionError):
        g.apply(-1)
    g.apply(bid_action(13))
    assert g.bids == [13, None, None, None]


def test_no_cards_during_bidding_and_no_bids_during_play():
    g = game_a()
    with pytest.raises(IllegalActionError, match="bidding is over"):
        g.apply(bid_action(3))


def test_numpy_int_actions_and_mask_array():
    import numpy as np
    g = game_a()
    m = g.legal_actions_mask()
    assert m.shape == (68,) and m.dtype == np.int8
    assert list(np.flatnonzero(m)) == sorted(parse_cards("AH KH QH AC KC QC JC AD KD QD JD"))
    g.apply(np.int64(c("AH")))  # numpy ints are accepted (slow path)
    assert g.moves[-1] == c("AH") and type(g.moves[-1]) is int
    with pytest.raises(IllegalActionError, match="must follow suit"):
        g.apply(np.int64(c("10C")))
    with pytest.raises(IllegalActionError, match="int action id"):
        g.apply(float(c("JH")))


def test_refused_blind_nil_names_blind_nil_and_the_rule():
    """A Blind Nil refused by a bidding house rule is named Blind Nil, not "Nil", with the rule
    that refuses it (``min_team_bid`` after the partner's Nil; ``bid_total_not_13``)."""
    hands = [sum(1 << c for c in range(52)[i::4]) for i in range(4)]
    g = SpadesGame.from_deal(hands, dealer=0, rules=Rules(blind_nil=True, min_team_bid=4))
    for a in (67, 52, 67, 56):  # seat 1 looks, bids Nil; seat 2 looks, bids 4
        g.apply(a)
    assert g.legal_actions() == [67]
    assert g.explain_illegal(66) == ("Blind Nil is not allowed: your partnership must bid at "
                                     "least 4 (your partner bid Nil)")
    g = SpadesGame.from_deal(hands, dealer=0, rules=Rules(blind_nil=True, bid_total_not_13=True))
    for a in (67, 57, 67, 56, 67, 56):  # 5, 4, 4: seat 0 may not bring the total to 13
        g.apply(a)
    assert g.legal_actions() == [67]
    assert g.explain_illegal(66) == "Blind Nil is not allowed: the four bids may not add up to 13"
    with pytest.raises(IllegalActionError, match="^Blind Nil is not allowed: the four"):
        g.apply(66)
    assert g.bids == [None, 5, 4, 4] and not g.looked[0]  # nothing changed
