"""Card-counting helpers computed from one seat's ``PlayerView`` (its information set).

Pure functions of the view, fast (a few bit operations on 52-bit int masks), shared by the scripted
bots (``heuristic.py``) and free for the Monte-Carlo bots to reuse. Nothing here reads hidden cards:
the only inputs are the public history and the seat's own hand.

Terms (``docs/rules.md``): a seat is **void** in a suit once it failed to follow that suit; a card
is the **boss** of its suit when no unseen card of that suit ranks higher; **unseen** cards are those
neither in the observer's hand nor played yet (they lie in the other three hands).

Suits and the order of the cards are the rules' deck's (``view.rules.deck``, ``rules.Deck``): under
``Rules.jokers`` the jokers and the 2 of diamonds are spades, above the ace.
"""

from __future__ import annotations

from ..cards import FULL_DECK
from ..rules import STANDARD_DECK, card_beats

__all__ = [
    "unseen_mask", "suit_remaining", "highest_outstanding", "is_boss", "void_seats",
    "possible_holdings", "current_winner", "can_beat", "higher_in_suit",
]


def unseen_mask(view) -> int:
    """52-bit mask of the cards ``view.seat`` has not seen: not in its hand, not played.

    Cards of the current trick count as played. Before the seat looks at its hand (Blind Nil
    decision) the hand mask is 0, so every unplayed card is unseen.
    """
    p = view.played
    return FULL_DECK & ~(p[0] | p[1] | p[2] | p[3] | view.hand)


def suit_remaining(view, suit: int) -> int:
    """How many cards of ``suit`` (0..3) are still unseen, i.e. held by the other three seats."""
    if not 0 <= suit <= 3:
        raise ValueError(f"suit must be 0..3, got {suit!r}")
    return (unseen_mask(view) & view.rules.deck.suit_masks[suit]).bit_count()


def highest_outstanding(view, suit: int) -> int:
    """Card id of the highest unseen card of ``suit``, or -1 when none is outstanding."""
    if not 0 <= suit <= 3:
        raise ValueError(f"suit must be 0..3, got {suit!r}")
    deck = view.rules.deck
    m = unseen_mask(view) & deck.suit_masks[suit]
    return deck.highest(m) if m else -1


def higher_in_suit(card: int, deck=STANDARD_DECK) -> int:
    """Mask of the cards of ``card``'s suit that rank above it (in ``deck``'s order)."""
    return deck.above[card]


def is_boss(view, card: int) -> bool:
    """True when no unseen card of ``card``'s suit ranks above ``card`` (it is the boss).

    A boss can still lose to a trump (a spade) from a seat void in its suit.

    Raises:
        ValueError: ``card`` outside 0..51.
    """
    if not 0 <= card < 52:
        raise ValueError(f"card id {card} out of range 0..51")
    return not (unseen_mask(view) & higher_in_suit(card, view.rules.deck))


def void_seats(view, suit: int) -> list[int]:
    """Seats known to be void in ``suit``: they failed to follow it, or (the observer) hold none.

    For the other seats a void is also known when no card of the suit is unseen any more.
    """
    if not 0 <= suit <= 3:
        raise ValueError(f"suit must be 0..3, got {suit!r}")
    poss = possible_holdings(view)
    return [s for s in range(4) if not poss[s] & view.rules.deck.suit_masks[suit]]


def possible_holdings(view) -> tuple[int, int, int, int]:
    """For each seat, the 52-bit mask of cards it may hold now, given what ``view.seat`` knows.

    The observer's own entry is its hand. For another seat: the unseen cards outside its known
    voids, minus cards known (from the Blind Nil exchange) to sit in a different hand, plus the
    cards known to be in its hand. The true hand of every seat is always a subset of its entry.
    """
    me = view.seat
    unseen = unseen_mask(view)
    known = view.known_cards
    known_all = known[0] | known[1] | known[2] | known[3]
    voids = view.voids
    suits = view.rules.deck.suit_masks
    out = [0, 0, 0, 0]
    for s in range(4):
        if s == me:
            out[s] = view.hand
            continue
        v = voids[s]
        m = unseen & ~(known_all & ~known[s])
        if v:
            for suit in range(4):
                if (v >> suit) & 1:
                    m &= ~suits[suit]
            m |= known[s]  # a known card is held whatever the void record says
        out[s] = m
    return out[0], out[1], out[2], out[3]


def current_winner(trick, deck=STANDARD_DECK) -> tuple[int, int]:
    """``(seat, card)`` winning the (possibly incomplete) trick so far; ``trick`` is
    ``((seat, card), ...)`` in play order and must not be empty (docs/rules.md: highest spade, else the
    highest card of the led suit; ``deck``: the rules' ``Deck``)."""
    if not trick:
        raise ValueError("current_winner needs at least one card in the trick")
    ws, wc = trick[0]
    for s, c in trick[1:]:
        if card_beats(c, wc, deck):
            ws, wc = s, c
    return ws, wc


def can_beat(holding: int, card: int, led_suit: int, deck=STANDARD_DECK) -> bool:
    """Whether a seat that may hold ``holding`` (a mask) could beat ``card`` in a trick led in
    ``led_suit``, assuming it follows suit whenever it may hold the led suit (``deck``: the
    rules' ``Deck``).

    Used to test whether a card is safe against the players still to play.
    """
    cs = deck.suit_of[card]
    higher = holding & deck.above[card]
    suits = deck.suit_masks
    if cs == led_suit:
        if higher:
            return True
        # a seat out of the led suit may trump a non-spade card
        return cs != 3 and not holding & suits[led_suit] and bool(holding & suits[3])
    if cs == 3:  # our card is a trump on a non-spade trick
        return bool(higher) and not holding & suits[led_suit]
    return False
