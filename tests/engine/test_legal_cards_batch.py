"""The batched legal-card rule (``spades_env.rules.legal_cards_batch``, numpy, used by the
``expert`` bot's deal weighting) against the engine, and on a hand worked out by hand. Needs no
torch (moved here from ``tests/bots/test_expert.py``, which does)."""

from __future__ import annotations

import numpy as np

from spades_env import SpadesGame
from spades_env.cards import BID_OFFSET, parse_cards
from spades_env.rules import legal_cards_batch


def _mask(text: str) -> int:
    m = 0
    for c in parse_cards(text):
        m |= 1 << c
    return m


def test_legal_cards_batch_matches_the_engine():
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(30):
        g = SpadesGame(seed=seed)
        for _ in range(4):
            g.apply(BID_OFFSET + 3)
        for _ in range(int(rng.integers(0, 48))):
            la = g.legal_actions()
            g.apply(la[int(rng.integers(len(la)))])
        hand = g.hands[g.current_player]
        bits = np.array([(hand >> c) & 1 for c in range(52)], dtype=bool)
        led = g.trick[0] // 13 if g.trick else -1
        got = legal_cards_batch(bits[None], np.array([led]), np.array([g.spades_broken]))[0]
        assert sorted(np.flatnonzero(got).tolist()) == g.legal_actions()
        checked += 1
    assert checked == 30


def test_legal_cards_batch_hand_examples():
    hand = _mask("AS 2H 3H")
    bits = np.array([[(hand >> c) & 1 for c in range(52)]] * 4, dtype=bool)
    led = np.array([1, 2, -1, -1])  # diamonds led (void), hearts led, lead unbroken, lead broken
    got = legal_cards_batch(bits, led, np.array([False, False, False, True]))
    cards = [sorted(np.flatnonzero(r).tolist()) for r in got]
    assert cards[0] == sorted(parse_cards("AS 2H 3H"))  # void in diamonds: anything
    assert cards[1] == sorted(parse_cards("2H 3H"))     # must follow hearts
    assert cards[2] == sorted(parse_cards("2H 3H"))     # no spade lead before spades are broken
    assert cards[3] == sorted(parse_cards("AS 2H 3H"))
