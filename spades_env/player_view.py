"""What one seat may know: ``PlayerView`` (the seat's information set) and ``view_of``, which
builds it from a game (``SpadesGame.view``).

Bots and observations are built only from a view. ``view_of`` reads the game's public attributes
(hands, bids, tricks, the Blind Nil exchanges...) and does not import the engine, which imports
this module.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cards import FULL_DECK, SEATS_FROM
from .rules import Rules, voids_of_plays


@dataclass(frozen=True)
class PlayerView:
    """Everything one seat may know, and nothing else (the information set of that seat).

    Bots and observations are built only from this. Masks are 52-bit ints (bit = card id).

    Attributes:
        seat: the observer (0..3).
        rules: the ``Rules``.
        phase: ``Phase`` value.
        current_player: seat to act (-1 when the game is over).
        dealer: dealer of this hand.
        hand: own hand mask; 0 while the seat has not looked at its cards (Blind Nil decision).
        looked: whether the seat has seen its hand.
        bids: 4 entries by seat: None (not bid yet) or 0..13 (0 = Nil).
        blind: 4 bools by seat: bid Blind Nil.
        tricks_won: 4 ints by seat, this hand.
        trick_leader: seat that led the current trick.
        current_trick: cards of the current trick in play order, ``((seat, card), ...)``.
        play_history: every card played this hand in order, ``((seat, card), ...)``.
        played: 4 masks by seat, cards played this hand.
        voids: 4 suit masks by seat (bit s: known void in suit s, shown by failing to follow suit).
        known_cards: 4 masks by seat: other seats' cards this seat knows from the Blind Nil exchange
            (still held).
        hand_sizes: 4 ints, cards held by each seat.
        spades_broken: whether spades are broken.
        trick_number: completed tricks this hand (0..13).
        scores: 2 team totals; bags: 2 team bag counts.
        hand_number: hands completed so far.
        legal_actions: the seat's legal action ids when it is to act, else ().
        hand_results: score tables of finished hands (public).
        exchange: this hand's Blind Nil exchange as this seat saw it: the ``(from, to, card)``
            passes it made or received (both partners of an exchange see it; others see ``()``).
    """

    seat: int
    rules: Rules
    phase: int
    current_player: int
    dealer: int
    hand: int
    looked: bool
    bids: tuple
    blind: tuple
    tricks_won: tuple
    trick_leader: int
    current_trick: tuple
    play_history: tuple
    played: tuple
    voids: tuple
    known_cards: tuple
    hand_sizes: tuple
    spades_broken: bool
    trick_number: int
    scores: tuple
    bags: tuple
    hand_number: int
    legal_actions: tuple
    hand_results: tuple
    exchange: tuple = ()

    @property
    def known_voids(self) -> tuple:
        """Suits each seat is known to hold none of: 4 suit masks by seat (bit ``s``: void in
        suit ``s``). ``voids`` (failed to follow suit), plus the inference from a spade led
        before spades were broken: that lead is legal only from a hand of nothing but spades
        (docs/rules.md, Play), so the leader held no club, diamond or heart (and cannot get one
        later in the hand). Computed once per view (``rules.voids_of_plays``)."""
        cache = self.__dict__
        known = cache.get("_known_voids")
        if known is None:
            rules = self.rules
            shown = voids_of_plays(self.play_history, rules.forced_spade_lead_breaks,
                                   rules.spades_lead_any_time, rules.deck)
            known = cache["_known_voids"] = tuple(v | w for v, w in zip(self.voids, shown))
        return known

    @property
    def unseen(self) -> int:
        """Mask of cards this seat has not seen: not in its hand and not played."""
        played = self.played[0] | self.played[1] | self.played[2] | self.played[3]
        return FULL_DECK & ~played & ~self.hand

    @property
    def led_suit(self) -> int | None:
        """Suit (0..3) led to the current trick (``Rules.deck``'s suit of the card led: a joker
        leads spades), or None before the lead."""
        return self.rules.deck.suit_of[self.current_trick[0][1]] if self.current_trick else None

    def info_key(self) -> tuple:
        """Hashable key of the information set (equal views give equal keys)."""
        return (self.seat, self.phase, self.current_player, self.dealer, self.hand, self.looked,
                self.bids, self.blind, self.tricks_won, self.trick_leader, self.current_trick,
                self.play_history, self.voids, self.known_cards, self.hand_sizes,
                self.spades_broken, self.scores, self.bags, self.hand_number, self.exchange)


def view_of(game, seat: int) -> PlayerView:
    """What ``seat`` (an int 0..3, already checked) of ``game`` (a ``SpadesGame``) may know, as a
    ``PlayerView`` (immutable: tuples, ints and frozen score tables)."""
    lead = game.trick_leader
    known = [0, 0, 0, 0]
    for frm, to, c in game.exchanges:
        if seat in (frm, to):
            # both partners see both directions of their own exchange
            known[to] |= 1 << c
            known[frm] &= ~(1 << c)
    for s in range(4):
        known[s] &= game.hands[s] if s != seat else 0
    hand = game.hands[seat] if game.looked[seat] else 0
    legal = tuple(game.legal_actions()) if game.current_player == seat else ()
    return PlayerView(
        seat=seat, rules=game.rules, phase=int(game.phase), current_player=game.current_player,
        dealer=game.dealer, hand=hand, looked=game.looked[seat], bids=tuple(game.bids),
        blind=tuple(game.blind), tricks_won=tuple(game.tricks_won), trick_leader=lead,
        current_trick=tuple(zip(SEATS_FROM[lead], game.trick)),
        play_history=tuple(game.plays), played=tuple(game.played), voids=tuple(game.voids),
        known_cards=tuple(known), hand_sizes=tuple(h.bit_count() for h in game.hands),
        spades_broken=game.spades_broken, trick_number=game.trick_number,
        scores=tuple(game.scores), bags=tuple(game.bags), hand_number=game.hand_number,
        legal_actions=legal, hand_results=tuple(game.hand_results),
        exchange=tuple(x for x in game.exchanges if seat in (x[0], x[1])),
    )
