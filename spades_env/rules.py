"""The rules of Spades, each written once for Python (``docs/rules.md``): the bidding rules (legal
bids, why a bid is illegal, Blind Nil), the exchanges after the bidding, and the card-play rules
(the first lead, legal cards, why a card is illegal, what a play reveals and whether it breaks
spades, the trick winner). With the rules object and its presets (``Rules``, ``PRESETS``:
``spades_env.variants``), the decks (``Deck``: ``spades_env.deck``) and hand scoring
(``score_hand``, ``game_outcome``...: ``spades_env.scoring``), all importable from here.

Everything here is a pure function of its arguments. The engine, the search bots' play-outs and
deal sampler, and the observation encoders call these; nothing else in Python decides a legal
card, a trick, a void or a score. Hands are 52-bit ints (bit ``suit * 13 + rank``); ``led_suit``
is the suit led to the current trick, or -1 when the player is to lead.

Which suit a card follows and how the cards of a suit rank are the deck's (``Deck``, the tables
of ``Rules.deck``): in the standard deck a card's suit is ``card // 13`` and a higher id ranks
higher; under ``Rules.jokers`` the jokers and the 2 of diamonds are spades and four trumps rank
above the ace. The card-play functions take the deck as their last argument (default
``STANDARD_DECK``).
"""

from __future__ import annotations

import numpy as np

from .cards import MAX_BID, NEXT_SEAT, PARTNER, SEATS_FROM, SPADES_MASK, SUIT_NAMES, is_int
from .deck import DECKS, JOKERS_DECK, STANDARD_DECK, Deck
from .deck import deck_named as _deck_named  # noqa: F401 - decks pickled by earlier versions
from .scoring import (  # noqa: F401 - HandTally: re-exported
    HandResult, HandScorer, HandTally, TeamScore, game_outcome, moon_team, per_trick,
    pooled_tricks, score_hand,
)
from .variants import PRESETS, RULES_INT_MAX, Rules  # noqa: F401 - RULES_INT_MAX: re-exported


# ----------------------------------------------------------------------------- bidding
BID_NUMBERS = (1 << (MAX_BID + 1)) - 1
"""``legal_bids`` bits of the bids 0..13 (bit ``b``: bid ``b``; 0 is Nil)."""
BLIND_NIL_BIT = MAX_BID + 1
"""``legal_bids`` bit of Blind Nil (action id ``BID_OFFSET + BLIND_NIL_BIT``, 66)."""
LOOK_BIT = MAX_BID + 2
"""``legal_bids`` bit of looking at the cards (action id ``BID_OFFSET + LOOK_BIT``, 67)."""


def _own_bids(rules: Rules, hand: int) -> int:
    """The bids (bits 0..13) the seat's own cards allow: ``mirror`` the spades held, ``whiz`` the
    spades held or Nil, else any."""
    if rules.mirror or rules.whiz:
        n = (hand & rules.deck.spades).bit_count()  # the jokers and the 2D count under jokers
        return 1 << n | (1 if rules.whiz else 0)
    return BID_NUMBERS


def _team_ok(rules: Rules, a: int, b: int) -> bool:
    """Whether the two bids of a partnership may stand together (``min_team_bid``,
    ``suicide``)."""
    return a + b >= rules.min_team_bid and (not rules.suicide or (a == 0) != (b == 0))


def _first_partner_bids(rules: Rules) -> int:
    """The bids (bits 0..13) a partnership's first bidder may make: those its partner can still
    complete under the team rules (the partner's cards unknown)."""
    return sum(1 << b for b in range(MAX_BID + 1)
               if any(_team_ok(rules, b, c) for c in range(MAX_BID + 1)))


def legal_bids(rules: Rules, seat: int, hand: int, looked: bool, bids) -> int:
    """The bids ``seat`` may make now (docs/rules.md, Bidding and House rules), as a 16-bit mask:
    bit ``b`` (0..13) the bid ``b`` (0 = Nil), bit 14 Blind Nil, bit 15 looking at the cards;
    the action id of bit ``k`` is ``BID_OFFSET + k`` (52 + k).

    A seat that has seen its cards bids what its cards allow (``mirror``, ``whiz``) and what keeps
    its partnership legal: the second partner to bid completes the team's bids
    (``min_team_bid``, ``suicide``), the first bids only what the partner can still complete;
    with ``bid_total_not_13`` the last bidder may not make the four bids total 13. A seat offered
    Blind Nil that has not looked (``blind_nil_offered``) decides first: Blind Nil (when a Nil
    would be legal now) or look.

    Args:
        rules: the switches.
        seat: the bidder, 0..3.
        hand: its 52-bit hand mask (read only under ``mirror`` and ``whiz``).
        looked: whether the bidder has seen its cards.
        bids: 4 entries by seat, ``None`` (not bid yet) or 0..13.
    Returns:
        The mask; never 0 (``Rules`` refuses the switches that could leave no legal bid).
    """
    if rules._free_bids:
        return BID_NUMBERS if looked else 1 << BLIND_NIL_BIT | 1 << LOOK_BIT
    allowed = BID_NUMBERS if not looked else _own_bids(rules, hand)
    if rules.min_team_bid or rules.suicide:
        partner = bids[PARTNER[seat]]
        if partner is None:
            allowed &= _first_partner_bids(rules)
        else:
            allowed &= sum(1 << b for b in range(MAX_BID + 1) if _team_ok(rules, partner, b))
    if rules.bid_total_not_13:
        others = [bids[s] for s in range(4) if s != seat]
        if None not in others and 0 <= 13 - sum(others) <= MAX_BID:
            allowed &= ~(1 << (13 - sum(others)))
    if not looked:
        return (1 << BLIND_NIL_BIT if allowed & 1 else 0) | 1 << LOOK_BIT
    return allowed


def blind_nil_offered(rules: Rules, seat: int, scores) -> bool:
    """Whether ``seat`` decides Blind Nil before seeing its cards this hand: ``blind_nil`` on and
    its team trailing by at least ``blind_nil_deficit`` points when that is set (``scores``: the
    2 team totals; 0 offers it always)."""
    if not rules.blind_nil:
        return False
    if not rules.blind_nil_deficit:
        return True
    team = seat & 1
    return scores[1 - team] - scores[team] >= rules.blind_nil_deficit


def illegal_bid_reason(rules: Rules, bit: int, seat: int, hand: int, looked: bool,
                       bids) -> str | None:
    """Why the bid action of ``legal_bids`` bit ``bit`` (the action id less 52: 0..13 a bid, 14
    Blind Nil, 15 look) is illegal for ``seat`` now, as the engine says it to a player, or None
    when it is legal. The arguments are ``legal_bids``'s."""
    if (legal_bids(rules, seat, hand, looked, bids) >> bit) & 1:
        return None
    blind = bit == BLIND_NIL_BIT
    if blind:
        if not rules.blind_nil:
            return "Blind Nil is not allowed under these rules"
        if looked:
            return "you have already looked at your cards: Blind Nil is bid before looking"
        bit = 0  # a Nil would break a bidding rule: say which below
    elif bit == LOOK_BIT:
        if not rules.blind_nil:
            return "there is no Blind Nil decision under these rules: just bid 0..13"
        return "you have already looked at your cards"
    elif not looked:
        return "decide first: bid Blind Nil or look at your cards"
    what = "Blind Nil" if blind else "Nil" if bit == 0 else f"a bid of {bit}"
    if looked and not (_own_bids(rules, hand) >> bit) & 1:
        n = (hand & rules.deck.spades).bit_count()
        return (f"{what} is not allowed: under mirror you bid your spades ({n})" if rules.mirror
                else f"{what} is not allowed: under whiz you bid your spades ({n}) or Nil")
    partner = bids[PARTNER[seat]]
    if rules.suicide and partner is not None:
        return (f"{what} is not allowed: under suicide exactly one partner bids Nil, and your "
                f"partner bid {'Nil' if partner == 0 else partner}")
    if rules.min_team_bid and partner is not None:
        return (f"{what} is not allowed: your partnership must bid at least "
                f"{rules.min_team_bid} (your partner bid {'Nil' if partner == 0 else partner})")
    if rules.min_team_bid or rules.suicide:
        if not (_first_partner_bids(rules) >> bit) & 1:
            return (f"{what} is not allowed: your partner could not complete a legal partnership "
                    f"bid" + (f" (suicide: one Nil, and at least {rules.min_team_bid} together)"
                              if rules.suicide else
                              f" (at least {rules.min_team_bid} together)"))
    return f"{what} is not allowed: the four bids may not add up to 13"


# ----------------------------------------------------------------------------- the exchange
def exchanges(rules: Rules, bids, blind, dealer: int) -> tuple:
    """The card exchanges after the bidding (docs/rules.md, Blind Nil and House rules):
    ``((nil_seat, count), ...)`` in bidding order. In each, the partner of ``nil_seat`` first
    passes it ``count`` cards, then ``nil_seat`` passes ``count`` cards back. A Blind Nil bidder
    whose partner did not also bid Blind Nil exchanges 3 cards; with ``nil_pass``, a Nil bidder
    whose partner did not also bid Nil (blind or not) exchanges ``nil_pass`` cards.

    Args:
        rules: the switches.
        bids: the 4 finished bids by seat (0..13).
        blind: 4 bools by seat, Blind Nil.
        dealer: the dealer (the seat left of it bid first).
    """
    out = []
    for s in SEATS_FROM[NEXT_SEAT[dealer]]:
        if blind[s] and not blind[PARTNER[s]]:
            out.append((s, 3))
        elif rules.nil_pass and bids[s] == 0 and not blind[s] and bids[PARTNER[s]] != 0:
            out.append((s, rules.nil_pass))
    return tuple(out)


def exchange_queue(rules: Rules, bids, blind, dealer: int) -> list:
    """The seats that pass, one entry per card in passing order (``exchanges``: the partner's
    cards, then the Nil bidder's), or [] when nobody exchanges."""
    q: list = []
    for s, n in exchanges(rules, bids, blind, dealer):
        q += [PARTNER[s]] * n + [s] * n
    return q


def passes_for_nil(rules: Rules, seat: int, bids, blind, dealer: int) -> bool:
    """Whether ``seat`` passes in an exchange as the Nil bidder (it sends back its dangerous high
    cards) rather than as the partner (it sends low cards). Raises ``ValueError`` when ``seat``
    takes part in no exchange."""
    for s, _ in exchanges(rules, bids, blind, dealer):
        if seat == s:
            return True
        if seat == PARTNER[s]:
            return False
    raise ValueError(f"seat {seat} takes part in no exchange this hand")


# ----------------------------------------------------------------------------- card play
def legal_cards_mask(hand: int, led_suit: int, spades_broken: bool,
                     deck: Deck = STANDARD_DECK) -> int:
    """The cards ``hand`` may play (docs/rules.md, Play): the led suit when it holds one, else any
    card; when leading, no spade before spades are broken unless the hand holds only spades.

    Args:
        hand: 52-bit mask of the player's cards.
        led_suit: 0..3 (the suit of the card led, ``deck.suit_of``), or -1 when the player leads.
        spades_broken: spades have been broken in this hand.
        deck: the ``Deck`` (``Rules.deck``): under jokers the jokers and the 2D are spades.
    Returns:
        The 52-bit mask of the legal cards (0 for an empty hand).
    """
    if led_suit >= 0:
        return (hand & deck.suit_masks[led_suit]) or hand
    if not spades_broken:
        return (hand & deck.non_spades) or hand
    return hand


def first_leader(rules: Rules, hands, dealer: int) -> int:
    """The seat that leads a hand's first trick (docs/rules.md, Play and House rules): the player
    left of the dealer, or under ``two_of_clubs_leads`` the holder of the 2 of clubs (``hands``:
    the 4 hand masks by seat when play starts)."""
    if rules.two_of_clubs_leads:
        for s in range(4):
            if hands[s] & 1:
                return s
    return NEXT_SEAT[dealer]


def first_lead_mask(rules: Rules, hand: int) -> int | None:
    """The cards the first leader of a hand may lead when a rule decides it: the 2 of clubs
    under ``two_of_clubs_leads`` (``hand`` holds it, ``first_leader``), else None (the usual
    ``legal_cards_mask``)."""
    return hand & 1 if rules.two_of_clubs_leads else None


def illegal_card_reason(hand: int, card: int, led_suit: int, spades_broken: bool,
                        deck: Deck = STANDARD_DECK) -> str | None:
    """Why playing ``card`` (held in ``hand``) breaks the rules of ``legal_cards_mask``, as the
    engine says it to a player, or None when it is legal."""
    if (legal_cards_mask(hand, led_suit, spades_broken, deck) >> card) & 1:
        return None
    trumps = " (the jokers and the 2D are spades)" if deck.jokers else ""
    if led_suit >= 0:
        return f"must follow suit: you hold a {SUIT_NAMES[led_suit]}{trumps}"
    return f"spades are not broken yet: lead another suit{trumps}"


def failed_to_follow(card: int, led_suit: int, deck: Deck = STANDARD_DECK) -> int:
    """Suit mask (bit ``s``) of the suit a play shows its player void in by not following: the
    led suit when ``card`` is of another suit (``deck.suit_of``), else 0 (also 0 for a lead)."""
    return 1 << led_suit if led_suit >= 0 and deck.suit_of[card] != led_suit else 0


FAILED_TO_FOLLOW = STANDARD_DECK.failed_to_follow
"""``FAILED_TO_FOLLOW[led_suit][card]`` is ``failed_to_follow(card, led_suit)`` (a led suit 0..3)
in the standard deck: the same rule as a table (``Deck.failed_to_follow``), for inner loops."""


def voids_revealed(card: int, led_suit: int, spades_broken: bool,
                   deck: Deck = STANDARD_DECK) -> int:
    """Suit mask of every suit a play shows its player void in: ``failed_to_follow``, and for a
    spade led before spades are broken, clubs, diamonds and hearts (that lead is legal only from
    a hand of nothing but spades; docs/rules.md, Play)."""
    if led_suit < 0:
        return 0b0111 if deck.suit_of[card] == 3 and not spades_broken else 0
    return failed_to_follow(card, led_suit, deck)


VOIDS_REVEALED = STANDARD_DECK.voids_shown
"""``VOIDS_REVEALED[spades_broken][led_suit + 1][card]`` is ``voids_revealed(card, led_suit,
spades_broken)`` in the standard deck: the same rule as a table (``Deck.voids_shown``)."""


def spades_broken_after(card: int, led_suit: int, spades_broken: bool,
                        forced_spade_lead_breaks: bool, deck: Deck = STANDARD_DECK) -> bool:
    """Whether spades are broken after ``card`` is played (docs/rules.md, Play): a spade played on
    another suit's lead breaks them; a spade led from a hand of only spades breaks them when the
    switch ``forced_spade_lead_breaks`` is on. Under jokers a joker or the 2D is a spade."""
    if spades_broken or deck.suit_of[card] != 3:
        return spades_broken
    return forced_spade_lead_breaks if led_suit < 0 else led_suit != 3


def voids_of_plays(plays, forced_spade_lead_breaks: bool, broken_at_start: bool = False,
                   deck: Deck = STANDARD_DECK) -> tuple:
    """The voids every seat has shown in a hand's plays so far: 4 suit masks by seat
    (``voids_revealed`` of each play, spades breaking by ``spades_broken_after``).

    Args:
        plays: ``(seat, card)`` pairs in play order from the hand's first lead (the tricks of
            4, then the current trick's cards).
        broken_at_start: spades count as broken from the first lead (``spades_lead_any_time``):
            a spade lead then shows nothing.
        deck: the ``Deck`` (suits by ``deck.suit_of``).
    """
    voids = [0, 0, 0, 0]
    broken = broken_at_start
    shown_by, suit_of = deck.voids_shown, deck.suit_of
    for i in range(0, len(plays), 4):
        led = -1
        for seat, card in plays[i:i + 4]:
            shown = shown_by[broken][led + 1][card]
            if shown:
                voids[seat] |= shown
            if not broken and suit_of[card] == 3:  # otherwise nothing can change
                broken = spades_broken_after(card, led, broken, forced_spade_lead_breaks, deck)
            if led < 0:
                led = suit_of[card]
    return tuple(voids)


def _check_trick(cards, leader) -> None:
    """``trick_winner``'s arguments: ``ValueError`` unless 4 distinct card ids and a seat."""
    if not is_int(leader) or not 0 <= leader <= 3:
        raise ValueError(f"leader must be a seat 0..3 (int), got {leader!r}")
    try:
        vals = list(cards)
    except TypeError:
        raise ValueError(f"a trick is 4 card ids, got {cards!r}") from None
    if len(vals) != 4 or not all(is_int(c) and 0 <= c < 52 for c in vals) \
            or len(set(int(c) for c in vals)) != 4:
        raise ValueError(f"a trick is 4 distinct card ids 0..51, got {cards!r}")


def trick_winner(cards, leader: int, deck: Deck = STANDARD_DECK) -> int:
    """Seat that wins a complete trick (docs/rules.md, Play).

    Args:
        cards: 4 card ids in play order; ``cards[0]`` was led by ``leader``.
        leader: seat (0..3) that led.
        deck: the ``Deck`` (``Rules.deck``): under jokers the big joker wins every trick.
    Returns:
        The winning seat: highest spade, else highest card of the led suit.
    Raises:
        ValueError: not 4 distinct card ids 0..51, or ``leader`` not a seat 0..3.
    """
    _check_trick(cards, leader)
    if not isinstance(deck, Deck):
        raise ValueError(f"deck must be a rules.Deck (Rules.deck), got {type(deck).__name__}")
    return trick_winner_unchecked([int(c) for c in cards], int(leader), deck)


def card_beats(card: int, winning: int, deck: Deck = STANDARD_DECK) -> bool:
    """Whether ``card`` takes the trick from ``winning``, the card winning it so far
    (docs/rules.md, Play): a stronger card of the same suit (``deck.strength``), or a spade on
    another suit (``deck.suit_of``)."""
    so, st = deck.suit_of, deck.strength
    return st[card] > st[winning] if so[card] == so[winning] else so[card] == 3


BEATS = STANDARD_DECK.beats
"""``BEATS[card][winning]`` is ``card_beats(card, winning)`` in the standard deck: the same rule as
a table (``Deck.beats``), for the play-outs' inner loop (a lookup costs less than a call)."""


def cards_that_beat(cards: int, winning: int, deck: Deck = STANDARD_DECK) -> int:
    """The cards of the 52-bit mask ``cards`` that would take the trick from ``winning``
    (``card_beats`` for a whole mask at once)."""
    return cards & deck.beaters[winning]


def trick_winner_unchecked(cards, leader: int, deck: Deck = STANDARD_DECK) -> int:
    """``trick_winner`` without the argument checks (the engine's and the bots' inner loops):
    ``cards`` 4 distinct ints 0..51 in play order, ``leader`` an int seat."""
    beats = deck.beats
    best = cards[0]
    bi = 0
    for i in (1, 2, 3):
        if beats[cards[i]][best]:
            best, bi = cards[i], i
    return (leader + bi) & 3


def _legal_cards_table(deck: Deck) -> np.ndarray:
    """``deck.legal_table``, built by ``legal_cards_mask`` on the full suits of each pattern."""
    table = np.zeros((2, 5, 16, 52), dtype=bool)
    cards = np.arange(52)
    for broken in (False, True):
        for led in range(-1, 4):
            for held in range(16):
                hand = 0
                for suit in range(4):
                    if (held >> suit) & 1:
                        hand |= deck.suit_masks[suit]
                legal = legal_cards_mask(hand, led, broken, deck)
                table[int(broken), led + 1, held] = (legal >> cards) & 1
    table.setflags(write=False)
    return table


for _deck in DECKS.values():
    _deck.legal_table = _legal_cards_table(_deck)
    _deck.legal_rows = _deck.legal_table.reshape(2 * 5 * 16, 52)
del _deck

LEGAL_CARDS_BY_SUITS = STANDARD_DECK.legal_table
"""``LEGAL_CARDS_BY_SUITS[spades_broken, led_suit + 1, held]`` (numpy bool ``(2, 5, 16, 52)``,
read-only): the cards ``legal_cards_mask`` allows a hand that holds the suits of the 4-bit mask
``held`` (bit ``s``: suit ``s``) in the standard deck (``Deck.legal_table`` for any deck). A
hand's legal cards are the cards it holds among them: the rule looks at a hand only through which
suits it holds. The same rule as a table, for ``legal_cards_batch``."""


def legal_cards_batch(hands: np.ndarray, led_suit: np.ndarray, spades_broken: np.ndarray,
                      deck: Deck = STANDARD_DECK) -> np.ndarray:
    """The cards each hand may play, for many hands at once: ``legal_cards_mask`` through its
    table ``deck.legal_table`` (docs/rules.md, Play: follow suit when you can; no spade lead
    before spades are broken unless the hand holds only spades).

    Args:
        hands: bool ``[..., 52]``: the cards each hand holds (by card id).
        led_suit: int ``[...]`` (broadcast against ``hands[..., 0]``): the suit led to the
            current trick (0..3, ``deck.suit_of``), or -1 when the hand is to lead.
        spades_broken: bool ``[...]`` (broadcast the same way): spades are broken.
        deck: the ``Deck`` (``Rules.deck``).
    Returns:
        bool ``[..., 52]``: the legal cards (all False for an empty hand).
    """
    hands = np.asarray(hands, dtype=bool)
    if deck.promoted:  # suits held, 0..15, by the deck's suits
        held = ((hands.astype(np.intp) @ deck.suit_matrix) > 0) @ _SUIT_BITS
    else:
        held = hands.reshape(*hands.shape[:-1], 4, 13).any(-1) @ _SUIT_BITS
    row = (np.asarray(spades_broken, dtype=np.intp) * 5 + np.asarray(led_suit) + 1) * 16 + held
    return hands & deck.legal_rows[row]


_SUIT_BITS = np.array([1, 2, 4, 8])


__all__ = ["Rules", "PRESETS", "legal_bids", "illegal_bid_reason", "blind_nil_offered",
           "BID_NUMBERS", "BLIND_NIL_BIT", "LOOK_BIT", "exchanges", "exchange_queue",
           "passes_for_nil", "first_leader", "first_lead_mask", "trick_winner",
           "trick_winner_unchecked", "card_beats", "BEATS", "Deck", "STANDARD_DECK", "JOKERS_DECK",
           "DECKS",
           "cards_that_beat", "legal_cards_mask", "illegal_card_reason", "failed_to_follow",
           "FAILED_TO_FOLLOW", "voids_revealed", "VOIDS_REVEALED", "spades_broken_after",
           "voids_of_plays", "legal_cards_batch", "LEGAL_CARDS_BY_SUITS", "TeamScore",
           "HandResult", "score_hand", "HandScorer", "game_outcome", "per_trick", "moon_team",
           "pooled_tricks", "SPADES_MASK"]
