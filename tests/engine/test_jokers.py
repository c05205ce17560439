"""``Rules.jokers``, "Joker Joker Deuce Deuce" (docs/rules.md, Jokers): the switch at the edges of
the engine: refused combinations, the preset and rules mappings, saved games and pickles (files
from before the switch load unchanged), the text view and the deck's tables."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from spades_env import PRESETS, Rules, SpadesGame
from spades_env import rules as R
from spades_env.cards import BIG_JOKER, LITTLE_JOKER, card_str


def test_jokers_with_the_two_of_clubs_lead_is_refused_naming_both_fields():
    with pytest.raises(ValueError, match="Rules.jokers and Rules.two_of_clubs_leads cannot both "
                                         "be on: the deck with jokers has no 2 of clubs"):
        Rules(jokers=True, two_of_clubs_leads=True)
    with pytest.raises(ValueError, match="Rules.jokers must be a bool"):
        Rules(jokers=1)
    # every other switch holds with it
    for name in ("blind_nil", "forced_spade_lead_breaks", "failed_nil_tricks_count", "suicide",
                 "mirror", "whiz", "bid_total_not_13", "spades_lead_any_time", "moon_wins"):
        assert Rules(jokers=True, **{name: True}).deck is R.JOKERS_DECK


def test_the_preset_and_rules_mappings():
    r = Rules.preset("joker_joker_deuce_deuce")
    assert r == Rules(jokers=True) and PRESETS["joker_joker_deuce_deuce"] is r
    assert Rules.parse("standard,jokers=True") == r and r.spec() == "joker_joker_deuce_deuce"
    assert Rules.parse({"preset": "mirror", "jokers": True}).spec() == \
        "standard,loss_threshold=-200,mirror=True,jokers=True"
    assert Rules().deck is R.STANDARD_DECK and r.deck is R.JOKERS_DECK


def test_the_decks_tables_worked_by_hand():
    """The jokers' deck: 16 spades, 12 cards in each other suit, the trumps from the top BJ (26),
    LJ (0), 2D (13), 2S (39), AS (51) ... 3S (40); the standard deck is ``card // 13``."""
    d = R.JOKERS_DECK
    assert [bin(m).count("1") for m in d.suit_masks] == [12, 12, 12, 16]
    assert d.ranked[3][:6] == (BIG_JOKER, LITTLE_JOKER, 13, 39, 51, 50) and d.ranked[3][-1] == 40
    assert d.ranked[1] == tuple(range(25, 13, -1))  # AD .. 3D: the 2D (13) is a spade
    assert (d.suit_of[0], d.suit_of[13], d.suit_of[26], d.suit_of[39]) == (3, 3, 3, 3)
    assert R.STANDARD_DECK.suit_of == tuple(c // 13 for c in range(52))
    assert R.STANDARD_DECK.beats == R.BEATS and R.STANDARD_DECK.legal_table is \
        R.LEGAL_CARDS_BY_SUITS


def _played_jokers_game(moves: int = 30) -> SpadesGame:
    g = SpadesGame(Rules(jokers=True, blind_nil=True), seed=12)
    rng = np.random.default_rng(0)
    for _ in range(moves):
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
    return g


def test_saved_games_keep_jokers_and_older_files_load_unchanged():
    g = _played_jokers_game()
    back = SpadesGame.from_json(g.to_json())
    assert back.rules.jokers and back.to_dict() == g.to_dict()
    assert SpadesGame.replay(g.moves, initial=g.initial).to_dict() == g.to_dict()
    # a save written before the switch existed: its rules have no "jokers" key, and it loads
    # as the standard deck it was played with
    s = SpadesGame(Rules(), seed=3)
    rng = np.random.default_rng(1)
    for _ in range(40):
        la = s.legal_actions()
        s.apply(la[int(rng.integers(len(la)))])
    old = json.loads(s.to_json())
    del old["rules"]["jokers"], old["initial"]["rules"]["jokers"]
    loaded = SpadesGame.from_dict(old)
    assert loaded.rules == Rules() and loaded.to_dict() == s.to_dict()


def test_pickles_keep_jokers_and_older_pickles_unpickle_with_it_off():
    r = Rules(jokers=True, mirror=True)
    assert pickle.loads(pickle.dumps(r)) == r and pickle.loads(pickle.dumps(r)).deck is \
        R.JOKERS_DECK
    state = Rules().__getstate__()
    del state["jokers"]  # an earlier version's Rules
    old = Rules.__new__(Rules)
    old.__setstate__(state)
    assert old == Rules() and old.deck is R.STANDARD_DECK
    assert pickle.loads(pickle.dumps(R.JOKERS_DECK)) is R.JOKERS_DECK


def test_text_views_name_the_jokers():
    hands = ["BJ AD KD QD 3C 4C 5C 6C 7C 8C 9C 10C JC", "2D 3D 4D 3H 4H 5H 6H 7H 8H 9H 10H JH QH",
             "5D 6D 7D 8D JD QC KC AC KH AH 3S 4S 5S", "9D 10D LJ 2S AS KS QS JS 10S 9S 8S 7S 6S"]
    g = SpadesGame.from_deal(hands, dealer=3, rules=Rules(jokers=True))
    text = str(g)
    assert "♠ BJ  ♥ -  ♦ A K Q  ♣ J 10 9 8 7 6 5 4 3" in text
    assert "♠ LJ 2 A K Q J 10 9 8 7 6  ♥ -  ♦ 10 9  ♣ -" in text
    assert "♠ 2♦  ♥ Q J 10 9 8 7 6 5 4 3  ♦ 4 3  ♣ -" in text
    from spades_env.render import render_view
    for _ in range(4):
        g.apply(52 + 3)
    assert "Legal: 3♣ 4♣ 5♣ 6♣ 7♣ 8♣ 9♣ 10♣ J♣ Q♦ K♦ A♦" in render_view(g.view(0))
    assert g.explain_illegal(BIG_JOKER) == ("spades are not broken yet: lead another suit (the "
                                            "jokers and the 2D are spades)")
    assert card_str(LITTLE_JOKER, jokers=True) + ": that card is not in your hand" == \
        g.explain_illegal(LITTLE_JOKER)
    from spades_env.render_image import draw_table
    assert draw_table(g).shape == (480, 640, 3)
