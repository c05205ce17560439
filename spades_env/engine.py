"""The Spades game engine: one full partnership game to the target (``docs/rules.md``).

``SpadesGame`` holds the state of one game (the current hand plus the game totals) in plain ints
and lists: hands are 52-bit masks, so legality checks are a few bit operations. Rules decisions
(trick winner, hand score, game end) are the pure functions of :mod:`spades_env.rules`.

Phases: ``BIDDING`` (one round of bids, left of the dealer first; with Blind Nil on, each seat first
chooses Blind Nil or to look), ``EXCHANGE`` (Blind Nil card passing), ``PLAY`` (13 tricks),
``GAME_OVER``. A finished hand is scored, recorded in ``hand_results``, and the next hand is dealt
by the next dealer inside the same ``apply`` call. ``to_dict`` / ``to_json`` save a game;
loading one (``from_dict`` / ``from_json``, ``replay``) is :mod:`spades_env.saved_game`'s.
"""

from __future__ import annotations

import json
from enum import IntEnum

import numpy as np

from .cards import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, NUM_CARDS,
    NEXT_SEAT, PARTNER, SEATS_FROM, action_str, card_str, cards_of_mask, mask_to_cards,
)
from .rules import (
    HandResult, Rules, blind_nil_offered, exchange_queue, first_lead_mask,
    first_leader, game_outcome,
    illegal_bid_reason, illegal_card_reason, legal_bids, legal_cards_mask, moon_team, score_hand,
    spades_broken_after, trick_winner_unchecked,
)
from . import saved_game
from .deal_check import check_deal
from .player_view import PlayerView, view_of
from .saved_game import (
    FORMAT_TAG, FORMAT_VERSION, plain_data, rng_from_state, rng_state,
)


class Phase(IntEnum):
    """Phase of the current hand: bidding, Blind Nil exchange, play, or the game is over."""

    BIDDING = 0
    EXCHANGE = 1
    PLAY = 2
    GAME_OVER = 3


_PLAY = Phase.PLAY
_BIDDING = Phase.BIDDING
_BID_IDS: dict = {}  # legal_bids mask -> its action ids (legal_actions' table)
_STANDARD = Rules()


class IllegalActionError(ValueError):
    """An action that the rules do not allow now; the message says why. State is unchanged."""


class ResetNeededError(RuntimeError, AssertionError):
    """An env's ``step`` (or ``last``: ``call``) before the first ``reset()``, or
    (``ended=True``) after the episode ended and every agent was removed:
    ``spades_v1.raw_env()``, ``BotSeatsEnv``, ``integrations.TurnCreditWrapper``
    (``spades_v1.env()`` warns and ignores a step after the end, as PettingZoo's order-enforcing
    wrapper does, and refuses ``last()`` then). Also ``spades_v1.ResetNeededError``. A
    ``RuntimeError``, and an ``AssertionError`` as PettingZoo's order-enforcing wrapper raises;
    nothing is changed."""

    def __init__(self, what: str = "the env", ended: bool = False, call: str = "step()"):
        super().__init__(f"{what}: {call} after the episode ended (every agent is done and "
                         f"removed); call reset() to start a new episode" if ended else
                         f"{what}: reset() needs to be called before {call}")


def make_rng(seed) -> np.random.Generator:
    """The game's generator from ``seed``: ``None`` (fresh entropy), an int >= 0, a
    ``np.random.SeedSequence`` or a ``np.random.Generator`` (used as is).

    Raises:
        ValueError: any other seed (a negative int, a float, a string, a bool...).
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be None, an int >= 0 or a np.random.Generator, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed}")
    return np.random.default_rng(int(seed))


def _check_seat(seat) -> int:
    """``seat`` as an int 0..3; ``ValueError`` for anything else (bools, floats, strings)."""
    if isinstance(seat, (bool, np.bool_)) or not isinstance(seat, (int, np.integer)) \
            or not 0 <= seat <= 3:
        raise ValueError(f"seat must be an int 0..3, got {seat!r}")
    return int(seat)


class SpadesGame:
    """One full game of partnership Spades (docs/rules.md), seeded and replayable.

    Args:
        rules: a ``Rules`` (default ``standard``).
        seed: int, ``None`` or a ``np.random.Generator``; the only source of randomness (dealer
            draw and every shuffle).

    Use ``legal_actions()``, ``apply(action)``, ``view(seat)``. ``apply`` raises
    ``IllegalActionError`` (a ``ValueError``) with the reason for an illegal action and leaves the
    state unchanged.

    ``moves`` is the log of every action id applied; ``initial`` is its starting point (before the
    first move: the RNG state before the first deal; from the first move on: that deal, dealer,
    totals, bags and RNG state). ``replay(moves, initial=initial)`` rebuilds the game;
    ``to_json`` saves it and ``from_json`` loads it by replaying the log and comparing the result
    with the saved fields (``spades_env.saved_game``).
    """

    __slots__ = (
        "rules", "_rng", "_rng_saved", "phase", "dealer", "current_player", "hands", "bids",
        "blind", "looked", "tricks_won", "trick", "trick_leader", "spades_broken", "played",
        "voids", "trick_number",
        "scores", "bags", "hand_results", "winner", "moves", "plays", "exchange_queue",
        "exchanges", "hand_number", "_initial", "_deck",
    )

    def __init__(self, rules: Rules | None = None, seed=None, *, _deal: bool = True):
        self.rules = rules if rules is not None else _STANDARD
        if not isinstance(self.rules, Rules):
            raise ValueError(f"rules must be a spades_env.Rules, got {type(self.rules).__name__}")
        self._deck = self.rules.deck  # the rules' deck (suits, card order), read every card
        self.rng = make_rng(seed)
        self.scores = [0, 0]
        self.bags = [0, 0]
        self.hand_results: list[HandResult] = []
        self.winner: int | None = None
        self.moves: list[int] = []
        self.hand_number = 0
        self._initial: dict = {}
        if _deal:
            self._initial = {"rng": rng_state(self.rng), "rules": self.rules.to_dict()}
            self.dealer = int(self.rng.integers(4))
            self._deal()

    @property
    def rng(self) -> np.random.Generator:
        """The game's only random source (dealer draw, shuffles). A clone holds a snapshot of the
        state and builds its own generator on first use, so cloning stays cheap."""
        rng = self._rng
        if rng is None:
            rng = self._rng = rng_from_state(self._rng_saved)
            self._rng_saved = None
        return rng

    @rng.setter
    def rng(self, value: np.random.Generator) -> None:
        self._rng = value
        self._rng_saved = None

    @property
    def initial(self) -> dict:
        """The starting point of the move log (see the class docstring), as a new plain-data copy
        each time: editing it never changes the game. Setting it stores a copy."""
        return plain_data(self._initial)

    @initial.setter
    def initial(self, value: dict) -> None:
        if not isinstance(value, dict):
            raise ValueError(f"initial must be a dict, got {type(value).__name__}")
        self._initial = plain_data(value)

    def _rng_snapshot(self) -> dict:
        """The RNG state as plain data (never an object the game keeps: callers may edit it)."""
        return plain_data(self._rng_saved) if self._rng is None else rng_state(self._rng)

    # ------------------------------------------------------------------ set-up
    @classmethod
    def from_deal(cls, hands, dealer: int, scores=(0, 0), bags=(0, 0), rules: Rules | None = None,
                  seed=None) -> "SpadesGame":
        """Start a hand from a given deal.

        Args:
            hands: 4 hands by seat, each 13 card ids or card strings (or a 52-bit mask).
            dealer: seat 0..3.
            scores, bags: team totals and bag counts before this hand (ints; bags
                0..bag_limit-1; totals that would already end the game are refused).
            seed: RNG for later deals (as ``SpadesGame``'s ``seed``).
        Raises:
            ValueError: not 4 hands of 13 distinct cards covering the deck, a bad dealer, bags
                out of range, starting totals that already end the game (``game_outcome``), or
                a bad seed. The arguments are not kept (the game holds its own copies).
        """
        masks, dealer, scores, bags, rules = check_deal(hands, dealer, scores, bags, rules)
        g = cls(rules, seed, _deal=False)
        g.scores = scores
        g.bags = bags
        g.dealer = dealer
        g._initial = {"hands": list(masks), "dealer": dealer, "scores": list(g.scores),
                     "bags": list(g.bags), "rng": rng_state(g.rng),
                     "rules": g.rules.to_dict()}
        g._start_hand(masks)
        return g

    def _deal(self) -> None:
        perm = self.rng.permutation(NUM_CARDS).tolist()
        first = NEXT_SEAT[self.dealer]
        hands = [0, 0, 0, 0]
        for i in range(4):
            m = 0
            for c in perm[i::4]:  # card i, i+4, ... goes to seat first + i (one at a time)
                m |= 1 << c
            hands[SEATS_FROM[first][i]] = m
        self._start_hand(hands)

    def _start_hand(self, hands) -> None:
        self.hands = list(hands)
        self.phase = Phase.BIDDING
        self.current_player = NEXT_SEAT[self.dealer]
        self.bids = [None, None, None, None]
        self.blind = [False, False, False, False]
        self.looked = self._looked_at_start()
        self.tricks_won = [0, 0, 0, 0]
        self.trick: list[int] = []
        self.trick_leader = self.current_player
        self.spades_broken = self.rules.spades_lead_any_time  # docs/rules.md, House rules
        self.played = [0, 0, 0, 0]
        self.voids = [0, 0, 0, 0]
        self.trick_number = 0
        self.plays: list[tuple[int, int]] = []  # (seat, card) played this hand, in order
        self.exchange_queue: list[int] = []  # seats to pass, one entry per card
        self.exchanges: list[tuple[int, int, int]] = []  # (from, to, card)

    # ------------------------------------------------------------------ queries
    @property
    def is_over(self) -> bool:
        """True once the game has a winner (``phase == Phase.GAME_OVER``)."""
        return self.phase == Phase.GAME_OVER

    @property
    def current_trick(self) -> list[tuple[int, int]]:
        """Cards of the current trick in play order as ``(seat, card)``."""
        lead = self.trick_leader
        return list(zip(SEATS_FROM[lead], self.trick))

    @property
    def led_suit(self) -> int | None:
        """Suit (0..3) of the first card of the current trick (``Rules.deck``'s: a joker or the
        2D under jokers leads spades), or None before the lead."""
        return self.rules.deck.suit_of[self.trick[0]] if self.trick else None

    def hand(self, seat: int) -> list[int]:
        """Card ids held by ``seat`` (ascending, a new list). Full information: not for bots.

        Raises:
            ValueError: ``seat`` is not an int 0..3 (as ``view``).
        """
        return mask_to_cards(self.hands[_check_seat(seat)])

    def _play_mask(self, seat: int) -> int:
        rules = self.rules
        if not self.trick and self.trick_number == 0 and rules.two_of_clubs_leads:
            return first_lead_mask(rules, self.hands[seat])
        deck = self._deck
        return legal_cards_mask(self.hands[seat], deck.suit_of[self.trick[0]] if self.trick
                                else -1, self.spades_broken, deck)

    def legal_mask(self) -> int:
        """Legal actions as a 68-bit int mask (bit = action id)."""
        ph = self.phase
        p = self.current_player
        if ph == Phase.PLAY:
            return self._play_mask(p)
        if ph == Phase.BIDDING:
            m = legal_bids(self.rules, p, self.hands[p], self.looked[p], self.bids)
            return m << BID_OFFSET
        if ph == Phase.EXCHANGE:
            return self.hands[p]
        return 0

    def legal_actions(self) -> list[int]:
        """Legal action ids (ascending) for ``current_player``; [] when the game is over."""
        if self.phase == _PLAY:
            trick = self.trick
            rules = self.rules
            if not trick and self.trick_number == 0 and rules.two_of_clubs_leads:
                return cards_of_mask(first_lead_mask(rules, self.hands[self.current_player]))
            deck = self._deck
            return cards_of_mask(legal_cards_mask(self.hands[self.current_player],
                                                  deck.suit_of[trick[0]] if trick else -1,
                                                  self.spades_broken, deck))
        ph = self.phase
        if ph == Phase.BIDDING:
            p = self.current_player
            m = legal_bids(self.rules, p, self.hands[p], self.looked[p], self.bids)
            ids = _BID_IDS.get(m)
            if ids is None:
                ids = _BID_IDS[m] = tuple(BID_OFFSET + k for k in range(16) if m >> k & 1)
            return list(ids)
        if ph == Phase.EXCHANGE:
            return mask_to_cards(self.hands[self.current_player])
        return []

    def legal_actions_mask(self) -> np.ndarray:
        """Legal actions as an ``int8`` array of shape ``(NUM_ACTIONS,)``."""
        out = np.zeros(NUM_ACTIONS, dtype=np.int8)
        out[self.legal_actions()] = 1
        return out

    def explain_illegal(self, action, seat: int | None = None) -> str | None:
        """Why ``action`` (by ``seat``, default the player to act) is illegal, or None if legal."""
        if seat is not None and (isinstance(seat, (bool, np.bool_))
                                 or not isinstance(seat, (int, np.integer))
                                 or not 0 <= seat <= 3):
            return f"seat must be an int 0..3, got {seat!r}"
        if self.phase == Phase.GAME_OVER:
            return "the game is over"
        p = self.current_player
        if seat is not None and seat != p:
            return f"not your turn: seat {p} is to act, not seat {seat}"
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            return f"action must be an int action id, got {action!r}"
        action = int(action)
        if not 0 <= action < NUM_ACTIONS:
            return f"action {action} is out of range 0..{NUM_ACTIONS - 1}"
        ph = self.phase
        if ph == Phase.BIDDING:
            if action < NUM_CARDS:
                if not self.looked[p]:
                    return "decide first: bid Blind Nil or look at your cards"
                return (f"it is the bidding phase: bid 0..13, not play "
                        f"{card_str(action, jokers=self.rules.jokers)}")
            return illegal_bid_reason(self.rules, action - BID_OFFSET, p, self.hands[p],
                                      self.looked[p], self.bids)
        if action >= NUM_CARDS:
            what = "the Blind Nil exchange" if ph == Phase.EXCHANGE else "the play"
            return f"bidding is over: it is {what}, play a card, not {action_str(action)}"
        hand = self.hands[p]
        if not (hand >> action) & 1:
            return f"{card_str(action, jokers=self.rules.jokers)}: that card is not in your hand"
        if ph == Phase.EXCHANGE:
            return None
        if not self.trick and self.trick_number == 0 and self.rules.two_of_clubs_leads \
                and action != 0:
            return "the holder of the 2 of clubs leads it to the first trick"
        deck = self._deck
        return illegal_card_reason(hand, action, deck.suit_of[self.trick[0]] if self.trick else -1,
                                   self.spades_broken, deck)

    # ------------------------------------------------------------------ moves
    def apply(self, action, seat: int | None = None) -> None:
        """Take ``action`` for the player to act (``seat``, if given, must be that player).

        Raises:
            IllegalActionError: with the reason; the state is unchanged.
        """
        p = self.current_player
        # fast path: a legal card in the play phase
        if type(action) is int and self.phase == _PLAY \
                and (seat is None or (type(seat) is int and seat == p)) and 0 <= action < 52:
            trick = self.trick
            deck = self._deck
            if (trick or self.trick_number or not self.rules.two_of_clubs_leads) \
                    and (legal_cards_mask(self.hands[p], deck.suit_of[trick[0]] if trick else -1,
                                          self.spades_broken, deck) >> action) & 1:
                if not self.moves:
                    self._record_start()
                self._play_card(p, action)
                return
        # fast path: a legal bid (rules.legal_bids)
        elif type(action) is int and self.phase == _BIDDING \
                and (seat is None or (type(seat) is int and seat == p)) \
                and BID_OFFSET <= action < NUM_ACTIONS \
                and (legal_bids(self.rules, p, self.hands[p], self.looked[p], self.bids)
                     >> (action - BID_OFFSET)) & 1:
            if not self.moves:
                self._record_start()
            self.moves.append(action)
            self._bid(p, action)
            return
        why = self.explain_illegal(action, seat)
        if why is not None:
            raise IllegalActionError(why)
        action = int(action)
        if not self.moves:
            self._record_start()
        self.moves.append(action)
        ph = self.phase
        if ph == Phase.PLAY:
            self.moves.pop()
            self._play_card(p, action)
        elif ph == Phase.BIDDING:
            self._bid(p, action)
        else:
            self._pass_card(p, action)

    def _at_hand_start(self) -> bool:
        """Nobody has acted in this hand yet (the point ``from_deal`` starts from)."""
        return self.phase == Phase.BIDDING and self.bids == [None] * 4 \
            and self.looked == self._looked_at_start()

    def _looked_at_start(self) -> list:
        """Who has seen its cards when a hand is dealt: all but the seats offered Blind Nil
        (``rules.blind_nil_offered``)."""
        if not self.rules.blind_nil:
            return [True, True, True, True]
        return [not blind_nil_offered(self.rules, s, self.scores) for s in range(4)]

    def _record_start(self) -> None:
        """At the first move, record the starting point of the move log in ``initial``: the deal,
        dealer, totals, bags, RNG state and rules. A caller that set up the start by hand (e.g.
        random totals for training) still replays exactly. A game loaded in the middle of a hand
        (a saved state without a move log) records its whole state instead (``{"state": ...}``,
        ``to_dict`` output with an empty log)."""
        if not self._at_hand_start():
            snap = self.to_dict()
            snap["moves"], snap["initial"] = [], {}
            self._initial = {"state": snap}
            return
        init = {"hands": list(self.hands), "dealer": self.dealer,
                "scores": list(self.scores), "bags": list(self.bags),
                "rng": self._rng_snapshot(), "rules": self.rules.to_dict()}
        if self.hand_results:
            # a game set up mid-way (e.g. ``SpadesVectorEnv.get_game``) carries earlier score
            # tables; record them so that the log still replays to the same state
            init["hand_results"] = [h.to_dict() for h in self.hand_results]
        self._initial = init

    def _bid(self, p: int, action: int) -> None:
        if action == LOOK_ACTION:
            self.looked[p] = True
            return
        if action == BLIND_NIL_ACTION:
            self.looked[p] = True
            self.blind[p] = True
            self.bids[p] = 0
        else:
            self.bids[p] = action - BID_OFFSET
        nxt = NEXT_SEAT[p]
        if nxt != NEXT_SEAT[self.dealer]:
            self.current_player = nxt
            return
        # Bidding is over: queue the exchanges (rules.exchanges), in bidding order.
        q = exchange_queue(self.rules, self.bids, self.blind, self.dealer)
        if q:
            self.exchange_queue = q
            self.phase = Phase.EXCHANGE
            self.current_player = q[0]
        else:
            self._start_play()

    def _pass_card(self, p: int, card: int) -> None:
        to = PARTNER[p]
        self.hands[p] &= ~(1 << card)
        self.hands[to] |= 1 << card
        self.exchanges.append((p, to, card))
        self.exchange_queue.pop(0)
        if self.exchange_queue:
            self.current_player = self.exchange_queue[0]
        else:
            self._start_play()

    def _start_play(self) -> None:
        self.phase = Phase.PLAY
        self.current_player = self.trick_leader = first_leader(self.rules, self.hands, self.dealer)

    def _play_card(self, p: int, card: int) -> None:
        self.moves.append(card)
        self.plays.append((p, card))
        bit = 1 << card
        self.hands[p] ^= bit
        self.played[p] |= bit
        trick = self.trick
        deck = self._deck
        if trick:
            led = deck.suit_of[trick[0]]
            self.voids[p] |= deck.failed_to_follow[led][card]
        else:
            led = -1
            self.trick_leader = p
        if deck.suit_of[card] == 3 and not self.spades_broken:  # else nothing can change
            self.spades_broken = spades_broken_after(card, led, False,
                                                     self.rules.forced_spade_lead_breaks, deck)
        trick.append(card)
        if len(trick) < 4:
            self.current_player = NEXT_SEAT[p]
            return
        w = trick_winner_unchecked(trick, self.trick_leader, deck)
        self.tricks_won[w] += 1
        self.trick = []
        self.trick_number += 1
        self.current_player = self.trick_leader = w
        if self.trick_number == 13:
            self._end_hand()

    def _end_hand(self) -> None:
        t0, t1 = score_hand(self.bids, self.tricks_won, self.bags, self.rules, self.blind,
                            self.scores)
        self.hand_results.append(HandResult(self.hand_number, self.dealer, tuple(self.bids),
                                            tuple(self.blind), tuple(self.tricks_won), (t0, t1)))
        self.scores = [t0.total, t1.total]
        self.bags = [t0.bags_after, t1.bags_after]
        self.hand_number += 1
        self.winner = game_outcome(self.scores, self.rules, moon_team(self.rules, (t0, t1)))
        if self.winner is not None:
            self.phase = Phase.GAME_OVER
            self.current_player = -1
            return
        self.dealer = NEXT_SEAT[self.dealer]
        self._deal()

    # ------------------------------------------------------------------ views
    def view(self, seat: int) -> PlayerView:
        """What ``seat`` may know (its information set) as a ``PlayerView`` (immutable: tuples,
        ints and frozen score tables).

        Raises:
            ValueError: ``seat`` is not an int 0..3.
        """
        return view_of(self, _check_seat(seat))

    # ------------------------------------------------------------------ copy / save
    def clone(self) -> "SpadesGame":
        """Independent deep copy (RNG included): nothing done to the copy, or to anything read
        from it, changes this game, and the other way round."""
        g = SpadesGame.__new__(SpadesGame)
        g.rules = self.rules  # frozen
        g._deck = self._deck
        g._rng = None
        # the saved state is never handed out (``_rng_snapshot`` copies), so clones may share it
        g._rng_saved = self._rng_saved if self._rng is None else self._rng.bit_generator.state
        g.phase = self.phase
        g.dealer = self.dealer
        g.current_player = self.current_player
        g.hands = list(self.hands)
        g.bids = list(self.bids)
        g.blind = list(self.blind)
        g.looked = list(self.looked)
        g.tricks_won = list(self.tricks_won)
        g.trick = list(self.trick)
        g.trick_leader = self.trick_leader
        g.spades_broken = self.spades_broken
        g.played = list(self.played)
        g.voids = list(self.voids)
        g.trick_number = self.trick_number
        g.scores = list(self.scores)
        g.bags = list(self.bags)
        g.hand_results = list(self.hand_results)  # of frozen HandResults
        g.winner = self.winner
        g.moves = list(self.moves)
        g.plays = list(self.plays)  # of tuples
        g.exchange_queue = list(self.exchange_queue)
        g.exchanges = list(self.exchanges)
        g.hand_number = self.hand_number
        g._initial = self._initial  # never changed in place (only replaced), never handed out
        return g

    def to_dict(self) -> dict:
        """The whole state as JSON-ready plain data (``from_dict`` restores it exactly). A new
        snapshot: editing it never changes the game."""
        return {
            "format": FORMAT_TAG, "version": FORMAT_VERSION,
            "rules": self.rules.to_dict(), "rng": self._rng_snapshot(),
            "phase": int(self.phase), "dealer": self.dealer, "current_player": self.current_player,
            "hands": list(self.hands), "bids": list(self.bids), "blind": list(self.blind),
            "looked": list(self.looked), "tricks_won": list(self.tricks_won),
            "trick": list(self.trick), "trick_leader": self.trick_leader,
            "spades_broken": self.spades_broken, "played": list(self.played),
            "voids": list(self.voids), "trick_number": self.trick_number,
            "scores": list(self.scores), "bags": list(self.bags),
            "hand_results": [h.to_dict() for h in self.hand_results], "winner": self.winner,
            "moves": list(self.moves), "plays": [list(x) for x in self.plays],
            "exchange_queue": list(self.exchange_queue),
            "exchanges": [list(x) for x in self.exchanges], "hand_number": self.hand_number,
            "initial": plain_data(self._initial),
        }

    def to_json(self) -> str:
        """The whole state (RNG included) as a JSON string; ``from_json`` restores it exactly."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict) -> "SpadesGame":
        """Restore from ``to_dict`` output: the engine rebuilds the game from its starting point
        and moves, and every saved field must be what they give (``saved_game.load``).

        Raises:
            ValueError: not a spades_env saved game, an unknown version, a field of the wrong type,
                an illegal move, or fields that are not what the moves give (the message names
                them).
        """
        return saved_game.load(cls, d)

    @classmethod
    def from_json(cls, text: str | bytes) -> "SpadesGame":
        """Restore a game from ``to_json`` text.

        Raises:
            ValueError: invalid JSON, or a save ``from_dict`` refuses.
        """
        return saved_game.loads(cls, text)

    @classmethod
    def replay(cls, moves, rules: Rules | None = None, seed=None, initial: dict | None = None
               ) -> "SpadesGame":
        """Replay a move log from the start.

        Args:
            moves: action ids in order (``game.moves``).
            rules: the rules; default: ``initial["rules"]`` when present, else ``standard``.
            seed: the game's seed, used when ``initial`` is not given.
            initial: ``game.initial`` (the first deal or RNG state, and the rules; or a whole
                state without a move log, ``{"state": to_dict()}``, for a game loaded mid-hand).
        Returns:
            The game after the moves; a finished game's log replays to the same result.
        Raises:
            ValueError: a corrupt ``initial``; ``IllegalActionError`` for an illegal move.
        """
        return saved_game.play_moves(saved_game.start_game(cls, initial, rules, seed), moves)

    def __repr__(self) -> str:
        return (f"SpadesGame(phase={Phase(self.phase).name}, hand={self.hand_number}, "
                f"dealer={self.dealer}, to_act={self.current_player}, scores={self.scores}, "
                f"bags={self.bags})")

    def __str__(self) -> str:
        from .render import render_game
        return render_game(self)


def cards_mask(cards) -> int:
    """52-bit mask of the given card ids (``cards.cards_to_mask``: ``ValueError`` for anything
    that is not a list of card ids 0..51)."""
    from .cards import cards_to_mask
    return cards_to_mask(cards)
