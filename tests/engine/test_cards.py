"""Cards, parsing, formatting and the fixed action id space (docs/rules.md: Notation and action ids)."""

import numpy as np
import pytest

import spades_env as se
from spades_env import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, Rank, Seat, Suit, action_str,
    bid_action, card_id, card_str, format_hand, mask_to_cards, parse_card, parse_cards,
    partner_of, team_of,
)
from spades_env.cards import cards_to_mask


def test_card_id_layout_matches_openspiel():
    # suit * 13 + rank, clubs=0 diamonds=1 hearts=2 spades=3, ranks 2..A = 0..12
    assert card_id(Suit.CLUBS, Rank.TWO) == 0
    assert card_id(Suit.CLUBS, Rank.ACE) == 12
    assert card_id(Suit.DIAMONDS, Rank.TWO) == 13
    assert card_id(Suit.HEARTS, Rank.TEN) == 34
    assert card_id(Suit.SPADES, Rank.ACE) == 51


@pytest.mark.parametrize("text,expected", [
    ("AS", 51), ("as", 51), ("A♠", 51), ("a♠", 51), ("10H", 34), ("TH", 34), ("th", 34),
    ("10♥", 34), ("2c", 0), ("2C", 0), ("2♣", 0), ("KD", 24), ("K♦", 24), ("QS", 49),
    ("JC", 9), (" 9D ", 20),
])
def test_parse_card(text, expected):
    assert parse_card(text) == expected


@pytest.mark.parametrize("bad", ["", "S", "1S", "11H", "0D", "AX", "ZZ", "10", "A S", "QQS",
                                 "♠A"])
def test_bad_card_string_raises_value_error_naming_it(bad):
    with pytest.raises(ValueError) as e:
        parse_card(bad)
    assert repr(bad) in str(e.value)


def test_parse_card_rejects_non_strings():
    with pytest.raises(ValueError, match="not a card"):
        parse_card(51)


def test_card_str_round_trip_all_cards():
    for c in range(52):
        assert parse_card(card_str(c)) == c
        assert parse_card(card_str(c, symbols=True)) == c
    assert card_str(34) == "10H"
    assert card_str(51, symbols=True) == "A♠"
    with pytest.raises(ValueError, match="out of range"):
        card_str(52)


def test_parse_cards_list_and_text():
    assert parse_cards("AS, 10H 2c") == [51, 34, 0]
    assert parse_cards(["KD", "TH"]) == [24, 34]
    with pytest.raises(ValueError, match="'XX'"):
        parse_cards("AS XX")


def test_masks():
    cards = [0, 13, 25, 26, 38, 39, 51]
    m = cards_to_mask(cards)
    assert mask_to_cards(m) == cards
    assert mask_to_cards(0) == []
    assert mask_to_cards((1 << 52) - 1) == list(range(52))


def test_format_hand_sorted_spades_first_high_to_low():
    m = cards_to_mask(parse_cards("2S AS 10H 3C KS"))
    assert format_hand(m, symbols=False) == "S A K 2  H 10  D -  C 3"
    assert format_hand(m).startswith("♠ A K 2  ♥ 10")


def test_action_ids():
    assert BID_OFFSET == 52
    assert bid_action(0) == 52  # Nil
    assert bid_action(13) == 65
    assert BLIND_NIL_ACTION == 66 and LOOK_ACTION == 67 and NUM_ACTIONS == 68
    assert action_str(52) == "bid Nil"
    assert action_str(55) == "bid 3"
    assert action_str(66) == "bid Blind Nil"
    assert action_str(67) == "look at cards"
    assert action_str(51) == "AS"
    with pytest.raises(ValueError, match="out of range"):
        bid_action(14)
    with pytest.raises(ValueError, match="out of range"):
        bid_action(-1)


def test_seats_and_teams():
    assert [team_of(s) for s in range(4)] == [0, 1, 0, 1]
    assert [partner_of(s) for s in range(4)] == [2, 3, 0, 1]
    assert Seat.NORTH.next == Seat.EAST and Seat.WEST.next == Seat.NORTH
    assert Seat.EAST.partner == Seat.WEST and Seat.SOUTH.team == 0


def test_seat_tables_follow_the_table_of_docs_rules():
    # docs/rules.md, Table: N(0) E(1) S(2) W(3) clockwise; N-S team 0, E-W team 1
    from spades_env.cards import NEXT_SEAT, OPPONENTS, PARTNER, PREV_SEAT, SEATS_FROM, TEAM
    assert NEXT_SEAT == (1, 2, 3, 0)  # East plays after North, North after West
    # the turn order from each seat: after the dealer West (3), North leads, then East...
    assert SEATS_FROM[NEXT_SEAT[3]] == (0, 1, 2, 3) and SEATS_FROM[2] == (2, 3, 0, 1)
    assert PREV_SEAT == (3, 0, 1, 2)
    assert PARTNER == (2, 3, 0, 1)
    assert TEAM == (0, 1, 0, 1)
    assert OPPONENTS == ((1, 3), (2, 0), (3, 1), (0, 2))
    for s in range(4):
        assert PREV_SEAT[NEXT_SEAT[s]] == s and PARTNER[PARTNER[s]] == s
        assert TEAM[PARTNER[s]] == TEAM[s] and TEAM[NEXT_SEAT[s]] != TEAM[s]
        assert Seat(s).next == NEXT_SEAT[s] and Seat(s).partner == PARTNER[s]
        assert SEATS_FROM[s][0] == s and SEATS_FROM[s][1:] == (NEXT_SEAT[s], PARTNER[s],
                                                                 PREV_SEAT[s])


def test_bid_action_rejects_non_ints():
    assert se.bid_action(np.int64(3)) == 55 and type(se.bid_action(np.int64(3))) is int
    for bad in (3.0, True, None):
        with pytest.raises(ValueError):
            se.bid_action(bad)


def test_card_helpers_reject_wrong_types_with_value_error():
    assert se.card_str(np.int64(51)) == "AS" and se.parse_cards(("AS", "10h")) == [51, 34]
    for bad in (True, None, 3.0):
        with pytest.raises(ValueError):
            se.card_str(bad)  # True gave "3C"; None and 3.0 a TypeError
    for bad in (None, 5):
        with pytest.raises(ValueError):
            se.parse_cards(bad)  # was TypeError


def test_joker_names_read_and_written_under_jokers_only():
    """docs/rules.md, Jokers: the big joker takes id 26 (the 2H's), the little joker id 0 (the
    2C's); with ``jokers`` they are written and read BJ / LJ, and the 2C and 2H are no card of
    that deck; without it, BJ is no card and ids 26 / 0 are the 2H and 2C."""
    from spades_env.cards import (BIG_JOKER, LITTLE_JOKER, action_str, card_str, cards_to_mask,
                                  format_hand, parse_card, parse_cards)
    assert (BIG_JOKER, LITTLE_JOKER) == (26, 0)
    assert [card_str(c, jokers=True) for c in (26, 0, 13, 39, 51)] == ["BJ", "LJ", "2D", "2S",
                                                                       "AS"]
    assert [card_str(c) for c in (26, 0)] == ["2H", "2C"]
    assert action_str(26, True, jokers=True) == "BJ" and action_str(26, True) == "2♥"
    assert parse_cards("BJ lj 2D", jokers=True) == [26, 0, 13]
    assert [parse_card(t, jokers=True) for t in ("Big Joker", "little  joker")] == [26, 0]
    for bad, jokers in (("BJ", False), ("LJ", False), ("2C", True), ("2♥", True)):
        with pytest.raises(ValueError, match="not a card"):
            parse_card(bad, jokers=jokers)
    hand = cards_to_mask(parse_cards("BJ LJ 2D 2S AS 3S 3D AH 3C", jokers=True))
    assert format_hand(hand, jokers=True) == "♠ BJ LJ 2♦ 2 A 3  ♥ A  ♦ 3  ♣ 3"
    assert format_hand(hand, symbols=False, jokers=True) == "S BJ LJ 2D 2 A 3  H A  D 3  C 3"


def test_action_parts_names_each_kind_of_action_once_for_every_text():
    from spades_env.cards import BIG_JOKER, action_parts
    assert action_parts(12) == ("card", "A♣")
    assert action_parts(12, symbols=False) == ("card", "AC")
    assert action_parts(BIG_JOKER, jokers=True) == ("card", "BJ")
    assert action_parts(BID_OFFSET) == ("bid", "Nil")
    assert action_parts(BID_OFFSET + 13) == ("bid", "13")
    assert action_parts(BLIND_NIL_ACTION) == ("bid", "Blind Nil")
    assert action_parts(LOOK_ACTION) == ("look", "")
    assert action_parts(NUM_ACTIONS) == ("invalid", "")


@pytest.mark.parametrize("bad", [True, np.bool_(False), "5", None, 3.0])
def test_action_parts_refuses_what_is_not_an_int_action_id(bad):
    from spades_env.cards import action_parts
    with pytest.raises(ValueError, match="action must be an int action id"):
        action_parts(bad)
