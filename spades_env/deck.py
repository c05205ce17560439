"""The decks of Spades as tables (docs/rules.md, Table and Jokers): ``Deck``, built once per deck,
``STANDARD_DECK`` and ``JOKERS_DECK`` (``Rules.deck``), by name in ``DECKS``. Every rule that asks
a card's suit or which card ranks higher reads these tables (``spades_env.rules``; the C kernel
and the torch backend through the same tables). A deck's table of legal cards by the suits held
(``Deck.legal_table``) is filled by ``spades_env.rules``, from ``legal_cards_mask``.
"""

from __future__ import annotations

import numpy as np

from .cards import FULL_DECK, JOKER_TRUMPS

__all__ = ["Deck", "STANDARD_DECK", "JOKERS_DECK", "DECKS", "deck_named"]


class Deck:
    """The cards of a deck and their order (docs/rules.md, Table and Jokers), as tables built once
    per deck: ``STANDARD_DECK`` and ``JOKERS_DECK`` (``Rules.deck``). Every rule that asks a card's
    suit or which card ranks higher reads them, in Python here and in C and torch through the same
    tables (``native.c_rules``, the torch backend's constants).

    The deck always holds the 52 card ids. ``promoted`` are the cards ranked above the ace of
    spades, from the lowest up, all spades: none in the standard deck, ``cards.JOKER_TRUMPS`` (2S,
    2D, little joker, big joker) under ``Rules.jokers`` ("Joker Joker Deuce Deuce", pagat.com).

    Attributes:
        name: ``"standard"`` or ``"jokers"``.
        jokers: whether the deck holds the jokers (``card_str(..., jokers=...)``).
        promoted: the promoted trumps, lowest first; ``top``: the same, strongest first.
        suit_of: 52 ints: the suit each card belongs to for every purpose (following suit, voids,
            breaking and leading spades, counting spades); ``card // 13`` in the standard deck.
        suit_masks: 4 masks: the cards of each suit; ``spades``, ``non_spades``.
        strength: 52 ints: a card beats a card of its suit of lower strength (the card id, then
            52.. for the promoted trumps).
        rank: 52 ints: a card's rank for comparing cards of different suits: ``card % 13`` (2 = 0
            .. A = 12), then 13.. for the promoted trumps.
        plain: the cards that are not promoted: ordered by id within a suit, below the promoted.
        above, below: 52 masks: the cards of the card's suit that it loses to / beats.
        beats: ``beats[card][winning]``: ``card_beats`` as a table. ``beaters``: 52 masks, every
            card that takes the trick from a card (``cards_that_beat``).
        failed_to_follow: ``[led_suit][card]`` (``failed_to_follow``); ``voids_shown``:
            ``[spades_broken][led_suit + 1][card]`` (``voids_revealed``).
        ranked: 4 tuples: the cards of each suit, strongest first.
        suit_matrix: numpy ``(52, 4)``: each card's suit, one-hot.
        legal_table: numpy bool ``(2, 5, 16, 52)``: ``rules.LEGAL_CARDS_BY_SUITS`` for this deck;
            ``legal_rows`` the same as ``(160, 52)`` rows (filled by ``spades_env.rules``).
    """

    __slots__ = ("name", "jokers", "promoted", "top", "suit_of", "suit_masks", "spades",
                 "non_spades", "strength", "rank", "plain", "above", "below", "beats", "beaters",
                 "failed_to_follow", "voids_shown", "ranked", "lowest", "highest", "legal_table",
                 "legal_rows", "suit_matrix")

    def __init__(self, name: str, promoted: tuple = ()):
        self.name = name
        self.jokers = bool(promoted)
        self.promoted = tuple(promoted)
        self.top = tuple(reversed(self.promoted))
        up = {c: i for i, c in enumerate(self.promoted)}
        self.suit_of = tuple(3 if c in up else c // 13 for c in range(52))
        self.strength = tuple(52 + up[c] if c in up else c for c in range(52))
        self.rank = tuple(13 + up[c] if c in up else c % 13 for c in range(52))
        self.suit_masks = tuple(sum(1 << c for c in range(52) if self.suit_of[c] == s)
                                for s in range(4))
        self.spades = self.suit_masks[3]
        self.non_spades = FULL_DECK & ~self.spades
        self.plain = FULL_DECK & ~sum(1 << c for c in self.promoted)
        same = [[d for d in range(52) if self.suit_of[d] == self.suit_of[c]] for c in range(52)]
        st = self.strength
        self.above = tuple(sum(1 << d for d in same[c] if st[d] > st[c]) for c in range(52))
        self.below = tuple(sum(1 << d for d in same[c] if st[d] < st[c]) for c in range(52))
        self.ranked = tuple(tuple(sorted((c for c in range(52) if self.suit_of[c] == s),
                                         key=st.__getitem__, reverse=True)) for s in range(4))
        so = self.suit_of
        self.beats = tuple(tuple(st[c] > st[w] if so[c] == so[w] else so[c] == 3
                                 for w in range(52)) for c in range(52))
        self.beaters = tuple(self.above[w] | (self.spades if so[w] != 3 else 0)
                             for w in range(52))
        self.failed_to_follow = tuple(tuple(1 << led if so[c] != led else 0 for c in range(52))
                                      for led in range(4))
        self.voids_shown = tuple(tuple(tuple(
            (0b0111 if so[c] == 3 and not broken else 0) if led < 0
            else self.failed_to_follow[led][c] for c in range(52))
            for led in range(-1, 4)) for broken in (False, True))
        if self.promoted:
            plain, promoted, top = self.plain, self.promoted, self.top

            def lowest(mask: int) -> int:
                p = mask & plain
                if p:
                    return (p & -p).bit_length() - 1
                return next(c for c in promoted if (mask >> c) & 1)

            def highest(mask: int) -> int:
                for c in top:
                    if (mask >> c) & 1:
                        return c
                return mask.bit_length() - 1

            self.lowest, self.highest = lowest, highest
        else:
            self.lowest, self.highest = _lowbit, _highbit
        self.suit_matrix = np.array([[so[c] == s for s in range(4)] for c in range(52)],
                                     dtype=np.intp)  # (52, 4): card -> its suit, one-hot
        self.legal_table = self.legal_rows = None  # filled by rules, from legal_cards_mask

    def __repr__(self) -> str:
        return f"Deck({self.name!r})"

    def __reduce__(self):
        return deck_named, (self.name,)

    def top_bits(self, hand: int, suit: int) -> int:
        """The cards of ``suit`` that ``hand`` holds as 13 bits from the top: bit 12 the suit's
        strongest card, bit 11 the next, ... (the standard deck's 13-bit rank mask, bit ``r``
        rank ``r``); the cards below the 13th from the top (3 of the 16 spades under jokers) are
        left out. For the bots' hand estimates: an ace in the standard deck, a big joker under
        jokers, is the top of its suit."""
        if not self.promoted:
            return (hand >> (13 * suit)) & 0x1FFF
        out = 0
        for k, c in enumerate(self.ranked[suit][:13]):
            if (hand >> c) & 1:
                out |= 1 << (12 - k)
        return out

    def low_rank(self, mask: int) -> int:
        """The card of lowest ``rank`` in a non-empty ``mask`` (equal ranks: the lowest suit)."""
        best, br = -1, 99
        for s in (0, 1, 2, 3):
            m = mask & self.suit_masks[s]
            if m:
                c = self.lowest(m)
                if self.rank[c] < br:
                    best, br = c, self.rank[c]
        return best

    def high_rank(self, mask: int, spades_first: bool = True) -> int:
        """The card of highest ``rank`` in a non-empty ``mask``; at equal ranks a spade first
        (``spades_first``), else the lowest suit."""
        best, br = -1, -1
        for s in ((3, 2, 1, 0) if spades_first else (0, 1, 2, 3)):
            m = mask & self.suit_masks[s]
            if m:
                c = self.highest(m)
                if self.rank[c] > br:
                    best, br = c, self.rank[c]
        return best


def _lowbit(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _highbit(mask: int) -> int:
    return mask.bit_length() - 1


STANDARD_DECK = Deck("standard")
"""The 52-card deck of ``standard`` (docs/rules.md, Table): a card's suit is ``card // 13``, a
higher id ranks higher in its suit."""
JOKERS_DECK = Deck("jokers", JOKER_TRUMPS)
"""The deck of ``Rules.jokers`` (docs/rules.md, Jokers): the big joker (id 26, the 2 of hearts'),
the little joker (id 0, the 2 of clubs') and the 2 of diamonds are spades, and the trumps rank big
joker, little joker, 2 of diamonds, 2 of spades, ace of spades ... 3 of spades."""
DECKS = {d.name: d for d in (STANDARD_DECK, JOKERS_DECK)}


def deck_named(name: str) -> Deck:
    """The deck of that name (``DECKS``): what a pickled deck unpickles as, the one instance."""
    return DECKS[name]
