"""Cards, suits, ranks, seats and the fixed action id space.

Card ids follow OpenSpiel's layout: ``card = suit * 13 + rank`` with suits clubs=0, diamonds=1,
hearts=2, spades=3 and ranks 2..A = 0..12, so ids compare directly with OpenSpiel's ``spades``.
A hand is a 52-bit ``int`` bit mask (bit ``card`` set when the card is held).

Action ids (one space for every rules object, ``NUM_ACTIONS`` = 68):

| ids     | meaning                                          |
|---------|--------------------------------------------------|
| 0..51   | play that card (also: pass it, in the Blind Nil exchange) |
| 52..65  | bid ``action - 52``; 52 is Nil                    |
| 66      | bid Blind Nil (only before looking at the hand)  |
| 67      | look at the hand (decline Blind Nil)             |
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

NUM_CARDS = 52
NUM_SEATS = 4
NUM_TRICKS = 13
BID_OFFSET = 52
MAX_BID = 13
BLIND_NIL_ACTION = BID_OFFSET + MAX_BID + 1  # 66
LOOK_ACTION = BLIND_NIL_ACTION + 1  # 67
NUM_ACTIONS = LOOK_ACTION + 1  # 68


class Suit(IntEnum):
    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3


class Rank(IntEnum):
    TWO = 0
    THREE = 1
    FOUR = 2
    FIVE = 3
    SIX = 4
    SEVEN = 5
    EIGHT = 6
    NINE = 7
    TEN = 8
    JACK = 9
    QUEEN = 10
    KING = 11
    ACE = 12


# Seat arithmetic, written once: seats 0..3 sit clockwise, partners opposite, team = seat % 2
# (docs/rules.md, Table). Tuples indexed by seat: as fast as the arithmetic in inner loops.
NEXT_SEAT = (1, 2, 3, 0)
"""The seat to the left of each seat, who acts next (clockwise): ``NEXT_SEAT[s] == (s + 1) % 4``;
``NEXT_SEAT[dealer]`` bids and leads first."""
PREV_SEAT = (3, 0, 1, 2)
"""The seat to the right of each seat, who acted before it: ``PREV_SEAT[s] == (s + 3) % 4``."""
PARTNER = (2, 3, 0, 1)
"""Each seat's partner, opposite: ``PARTNER[s] == (s + 2) % 4``."""
TEAM = (0, 1, 0, 1)
"""Each seat's team: seats 0 and 2 are team 0, seats 1 and 3 team 1."""
OPPONENTS = ((1, 3), (2, 0), (3, 1), (0, 2))
"""Each seat's opponents, the one to its left first: ``(NEXT_SEAT[s], PREV_SEAT[s])``."""
SEATS_FROM = ((0, 1, 2, 3), (1, 2, 3, 0), (2, 3, 0, 1), (3, 0, 1, 2))
"""The four seats in turn order (clockwise) from each seat: ``SEATS_FROM[s][i] == (s + i) % 4``;
``SEATS_FROM[leader]`` pairs with a trick's cards in play order, ``SEATS_FROM[s][1:]`` are the
other three seats from the one to the left of ``s``."""


class Seat(IntEnum):
    """Seats 0..3 clockwise; partners sit opposite (docs/rules.md, Table)."""

    NORTH = 0
    EAST = 1
    SOUTH = 2
    WEST = 3

    @property
    def next(self) -> "Seat":
        """The seat to the left (next clockwise)."""
        return Seat(NEXT_SEAT[self])

    @property
    def partner(self) -> "Seat":
        """The seat opposite (same team)."""
        return Seat(PARTNER[self])

    @property
    def team(self) -> int:
        """Team of this seat (0 or 1)."""
        return team_of(self)


AGENTS = ("player_0", "player_1", "player_2", "player_3")
"""The multi-agent envs' agent names, by seat (``player_s`` is seat ``s``)."""


def is_int(x) -> bool:
    """Whether ``x`` is an integer (``int`` or a numpy integer), not a ``bool``: the one test of
    an integer argument across the package."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _int_in(x, lo: int, hi: int, what: str) -> int:
    """``x`` as an int in ``lo..hi``; ``ValueError`` naming ``what`` for anything else (bools,
    floats, strings, arrays, out-of-range ints)."""
    if type(x) is not int:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise ValueError(f"{what} must be an int {lo}..{hi}, got {x!r}")
        x = int(x)
    if not lo <= x <= hi:
        raise ValueError(f"{what} must be an int {lo}..{hi}, got {x}")
    return x


def team_of(seat: int) -> int:
    """Team of a seat: team 0 = seats 0 and 2, team 1 = seats 1 and 3 (docs/rules.md, Table).

    Raises:
        ValueError: ``seat`` is not an int 0..3.
    """
    return TEAM[_int_in(seat, 0, 3, "seat")]


def partner_of(seat: int) -> int:
    """Seat opposite ``seat`` (its partner): ``(seat + 2) % 4``.

    Raises:
        ValueError: ``seat`` is not an int 0..3.
    """
    return PARTNER[_int_in(seat, 0, 3, "seat")]


SUIT_LETTERS = "CDHS"
SUIT_SYMBOLS = "♣♦♥♠"
RANK_LETTERS = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")
SUIT_NAMES = ("club", "diamond", "heart", "spade")

FULL_SUIT = (1 << 13) - 1
SUIT_MASKS = tuple(FULL_SUIT << (13 * s) for s in range(4))
SPADES_MASK = SUIT_MASKS[Suit.SPADES]
NON_SPADES_MASK = SUIT_MASKS[0] | SUIT_MASKS[1] | SUIT_MASKS[2]
FULL_DECK = (1 << NUM_CARDS) - 1

# Jokers (``Rules.jokers``, "Joker Joker Deuce Deuce": docs/rules.md, Jokers). The deck keeps 52
# cards and their ids: the two jokers take the ids of the two deuces that leave it.
BIG_JOKER = 26
"""Card id of the big joker under ``Rules.jokers``: the id of the 2 of hearts, out of that deck."""
LITTLE_JOKER = 0
"""Card id of the little joker under ``Rules.jokers``: the id of the 2 of clubs, out of that deck."""
JOKER_TRUMPS = (39, 13, LITTLE_JOKER, BIG_JOKER)
"""The cards ``Rules.jokers`` ranks above the ace of spades, from the lowest up: the 2 of spades,
the 2 of diamonds, the little joker, the big joker (all four are spades for every purpose)."""
JOKER_NAMES = {BIG_JOKER: "BJ", LITTLE_JOKER: "LJ"}
"""How the jokers are written (``card_str(..., jokers=True)``); ``parse_card`` also reads
``BIG JOKER`` and ``LITTLE JOKER``."""
_JOKER_PARSE = {"BJ": BIG_JOKER, "LJ": LITTLE_JOKER, "BIG JOKER": BIG_JOKER,
                "LITTLE JOKER": LITTLE_JOKER}


def card_id(suit: int, rank: int) -> int:
    """Card id ``suit * 13 + rank`` (int in 0..51).

    Raises:
        ValueError: ``suit`` not an int 0..3 or ``rank`` not an int 0..12.
    """
    return _int_in(suit, 0, 3, "suit") * 13 + _int_in(rank, 0, 12, "rank")


def suit_of(card: int) -> int:
    """Suit (0 clubs .. 3 spades) of a card id as the id names it: the suit it follows in the
    standard deck (under ``Rules.jokers`` the suit a card follows is ``rules.deck.suit_of``:
    the jokers and the 2D are spades).

    Raises:
        ValueError: ``card`` is not an int 0..51.
    """
    return _int_in(card, 0, NUM_CARDS - 1, "card id") // 13


def rank_of(card: int) -> int:
    """Rank (0 = two .. 12 = ace) of a card id as the id names it (its order within a suit is
    ``rules.deck.strength``'s).

    Raises:
        ValueError: ``card`` is not an int 0..51.
    """
    return _int_in(card, 0, NUM_CARDS - 1, "card id") % 13


_RANK_PARSE = {r: i for i, r in enumerate(RANK_LETTERS)}
_RANK_PARSE["T"] = 8
_RANK_PARSE["1"] = None  # guard: "1" alone is not a rank
_SUIT_PARSE = {ch: i for i, ch in enumerate(SUIT_LETTERS)}
_SUIT_PARSE.update({ch: i for i, ch in enumerate(SUIT_SYMBOLS)})
_SUIT_PARSE.update({"♤": 3, "♡": 2, "♢": 1, "♧": 0})


def parse_card(text: str, jokers: bool = False) -> int:
    """Parse ``AS``, ``10H``, ``TH``, ``2c``, ``A♠`` into a card id; with ``jokers`` (the deck of
    ``Rules.jokers``) also ``BJ`` / ``LJ`` (or ``Big Joker`` / ``Little Joker``), the ids of the
    2 of hearts and the 2 of clubs, which that deck does not hold.

    Raises:
        ValueError: naming the string when it is not a card of the deck (a joker without
            ``jokers``; the 2C or 2H with it).
    """
    if not isinstance(text, str):
        raise ValueError(f"not a card: {text!r} (expected a string such as 'AS' or '10H')")
    s = text.strip().upper()
    joker = _JOKER_PARSE.get(" ".join(s.split()))
    if joker is not None:
        if not jokers:
            raise ValueError(f"not a card: {text!r} is a joker, and only the deck of "
                             f"Rules.jokers holds jokers")
        return joker
    if len(s) < 2:
        raise ValueError(f"not a card: {text!r}")
    suit = _SUIT_PARSE.get(s[-1])
    rank = _RANK_PARSE.get(s[:-1])
    if suit is None or rank is None:
        raise ValueError(f"not a card: {text!r} (rank 2-10/T/J/Q/K/A then suit S/H/D/C)")
    card = suit * 13 + rank
    if jokers and card in JOKER_NAMES:
        raise ValueError(f"not a card of the deck with jokers: {text!r} (Rules.jokers removes "
                         f"the 2C and the 2H; their ids are the jokers', "
                         f"{JOKER_NAMES[card]})")
    return card


def parse_cards(text: str | list[str], jokers: bool = False) -> list[int]:
    """Parse a space- or comma-separated list of cards (or a list of strings); ``jokers`` as for
    ``parse_card``.

    Raises:
        ValueError: not a string or a list of card strings, or a string that is not a card.
    """
    if isinstance(text, str):
        parts = text.replace(",", " ").split()
    elif isinstance(text, (bytes, dict, set)):
        raise ValueError(f"not a list of cards: {text!r}")
    else:
        try:
            parts = list(text)
        except TypeError:
            raise ValueError(f"not a list of cards: {text!r}") from None
    return [parse_card(p, jokers) for p in parts]


def card_str(card: int, symbols: bool = False, jokers: bool = False) -> str:
    """Format a card id as ``AS`` / ``10H`` (or ``A♠`` with ``symbols=True``); with ``jokers``
    (the deck of ``Rules.jokers``) the ids ``BIG_JOKER`` and ``LITTLE_JOKER`` as ``BJ`` and
    ``LJ``."""
    if isinstance(card, bool) or not isinstance(card, (int, np.integer)):
        raise ValueError(f"card id must be an int 0..51, got {card!r}")
    if not 0 <= card < NUM_CARDS:
        raise ValueError(f"card id {card} out of range 0..51")
    if jokers and card in JOKER_NAMES:
        return JOKER_NAMES[card]
    suits = SUIT_SYMBOLS if symbols else SUIT_LETTERS
    return RANK_LETTERS[card % 13] + suits[card // 13]


# 13-bit chunk -> tuple of ranks set, for fast mask -> list conversion.
_CHUNK_RANKS = tuple(tuple(r for r in range(13) if (chunk >> r) & 1) for chunk in range(1 << 13))
_CHUNK_CARDS = tuple(
    tuple(tuple(s * 13 + r for r in ranks) for ranks in _CHUNK_RANKS) for s in range(4)
)


def _check_mask(mask) -> int:
    if type(mask) is not int or not 0 <= mask <= FULL_DECK:
        return _int_in(mask, 0, FULL_DECK, "card mask (52 bits)")
    return mask


def mask_to_cards(mask: int) -> list[int]:
    """Card ids (ascending) of the bits set in a 52-bit mask (a new list).

    Raises:
        ValueError: ``mask`` is not an int in 0..2**52-1.
    """
    if type(mask) is not int or not 0 <= mask <= FULL_DECK:
        mask = _check_mask(mask)
    return cards_of_mask(mask)


def cards_of_mask(mask: int, _chunks=_CHUNK_CARDS) -> list[int]:
    """``mask_to_cards`` without the argument check, for inner loops: ``mask`` must be an int in
    0..2**52-1."""
    lo = mask & 0x1FFF
    if mask == lo:  # one suit, clubs (or nothing)
        return list(_chunks[0][lo])
    out: list[int] = []
    if lo:
        out.extend(_chunks[0][lo])
    if (mask >> 13) & 0x1FFF:
        out.extend(_chunks[1][(mask >> 13) & 0x1FFF])
    if (mask >> 26) & 0x1FFF:
        out.extend(_chunks[2][(mask >> 26) & 0x1FFF])
    if mask >> 39:
        out.extend(_chunks[3][(mask >> 39) & 0x1FFF])
    return out


def cards_to_mask(cards) -> int:
    """52-bit mask with the bits of the given card ids set.

    Raises:
        ValueError: ``cards`` is not an iterable of card ids 0..51.
    """
    if isinstance(cards, (str, bytes, dict, set)) or not hasattr(cards, "__iter__"):
        raise ValueError(f"cards must be a list of card ids 0..51, got {cards!r}")
    m = 0
    for c in cards:
        m |= 1 << _int_in(c, 0, NUM_CARDS - 1, "card id")
    return m


def popcount(mask: int) -> int:
    """Number of cards in a mask.

    Raises:
        ValueError: ``mask`` is not an int in 0..2**52-1.
    """
    return _check_mask(mask).bit_count()


def bid_action(bid: int) -> int:
    """Action id (int) for bidding ``bid`` tricks (0 = Nil).

    Raises:
        ValueError: ``bid`` is not an int in 0..13.
    """
    if isinstance(bid, bool) or not isinstance(bid, (int, np.integer)):
        raise ValueError(f"bid must be an int 0..13, got {bid!r}")
    if not 0 <= bid <= MAX_BID:
        raise ValueError(f"bid {bid} out of range 0..13")
    return BID_OFFSET + int(bid)


def action_parts(action: int, symbols: bool = True, jokers: bool = False) -> tuple[str, str]:
    """What an action id (0..67) is and its words, for every text that names a move:
    ``("card", "6♣")`` (``symbols`` and ``jokers`` as for ``card_str``), ``("bid", "3")``,
    ``("bid", "Nil")``, ``("bid", "Blind Nil")``, ``("look", "")`` (look at the cards), or
    ``("invalid", "")`` for an int outside 0..67.

    Raises:
        ValueError: ``action`` is not an int (a bool, a string, None...).
    """
    if type(action) is not int:
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"action must be an int action id, got {action!r}")
        action = int(action)
    if 0 <= action < NUM_CARDS:
        return "card", card_str(action, symbols, jokers)
    if BID_OFFSET <= action <= BID_OFFSET + MAX_BID:
        b = action - BID_OFFSET
        return "bid", "Nil" if b == 0 else str(b)
    if action == BLIND_NIL_ACTION:
        return "bid", "Blind Nil"
    if action == LOOK_ACTION:
        return "look", ""
    return "invalid", ""


def action_str(action: int, symbols: bool = False, jokers: bool = False) -> str:
    """Readable name of an action id (0..67); ``symbols`` and ``jokers`` as for ``card_str``.

    Raises:
        ValueError: ``action`` is not an int.
    """
    kind, words = action_parts(action, symbols, jokers)
    return {"card": words, "bid": f"bid {words}", "look": "look at cards"}.get(
        kind, f"<invalid action {int(action)}>")


def format_hand(mask: int, symbols: bool = True, jokers: bool = False) -> str:
    """Hand text grouped by suit, spades first, high to low: ``♠ A K 4  ♥ Q 10 ...``. With
    ``jokers`` (the deck of ``Rules.jokers``) the spades start with the trumps above the ace,
    ``BJ LJ 2♦ 2``, and no other suit shows a 2.

    Raises:
        ValueError: ``mask`` is not an int in 0..2**52-1.
    """
    mask = _check_mask(mask)
    parts = []
    suits = SUIT_SYMBOLS if symbols else SUIT_LETTERS
    for s in (3, 2, 1, 0):
        names = []
        if jokers and s == 3:
            names = [JOKER_NAMES.get(c) or (RANK_LETTERS[c % 13]
                                            + ("" if c // 13 == 3 else suits[c // 13]))
                     for c in reversed(JOKER_TRUMPS) if (mask >> c) & 1]
        low = 1 if jokers else 0  # the deuces of the jokers deck are trumps (or gone)
        names += [RANK_LETTERS[r] for r in range(12, low - 1, -1) if (mask >> (s * 13 + r)) & 1]
        parts.append(suits[s] + " " + (" ".join(names) if names else "-"))
    return "  ".join(parts)
