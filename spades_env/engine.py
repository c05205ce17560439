"""The Spades game engine: one full partnership game to the target (``../shared/RULES.md``).

``SpadesGame`` holds the state of one game (the current hand plus the game totals) in plain ints
and lists: hands are 52-bit masks, so legality checks are a few bit operations. Rules decisions
(trick winner, hand score, game end) are the pure functions of :mod:`spades_env.rules`.

Phases: ``BIDDING`` (one round of bids, left of the dealer first; with Blind Nil on, each seat first
chooses Blind Nil or to look), ``EXCHANGE`` (Blind Nil card passing), ``PLAY`` (13 tricks),
``GAME_OVER``. A finished hand is scored, recorded in ``hand_results``, and the next hand is dealt
by the next dealer inside the same ``apply`` call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from .cards import (
    BID_OFFSET, BLIND_NIL_ACTION, FULL_DECK, LOOK_ACTION, MAX_BID, NON_SPADES_MASK, NUM_ACTIONS,
    NUM_CARDS, SPADES_MASK, SUIT_MASKS, SUIT_NAMES, action_str, card_str, mask_to_cards,
)
from .rules import HandResult, Rules, game_outcome, score_hand, trick_winner

FORMAT_TAG = "spades_env.game"
FORMAT_VERSION = 1


class Phase(IntEnum):
    BIDDING = 0
    EXCHANGE = 1
    PLAY = 2
    GAME_OVER = 3


class IllegalActionError(ValueError):
    """An action that the rules do not allow now; the message says why. State is unchanged."""


def _make_rng(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def _rng_state(rng: np.random.Generator) -> dict:
    return rng.bit_generator.state


def _rng_from_state(state: dict) -> np.random.Generator:
    name = state["bit_generator"]
    bg_cls = getattr(np.random, name, None)
    if bg_cls is None or not isinstance(bg_cls, type) or not issubclass(bg_cls, np.random.BitGenerator):
        raise ValueError(f"unknown bit generator {name!r}")
    bg = bg_cls()
    bg.state = state
    return np.random.Generator(bg)


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

    @property
    def unseen(self) -> int:
        """Mask of cards this seat has not seen: not in its hand and not played."""
        played = self.played[0] | self.played[1] | self.played[2] | self.played[3]
        return FULL_DECK & ~played & ~self.hand

    @property
    def led_suit(self) -> int | None:
        return self.current_trick[0][1] // 13 if self.current_trick else None

    def info_key(self) -> tuple:
        """Hashable key of the information set (equal views give equal keys)."""
        return (self.seat, self.phase, self.current_player, self.dealer, self.hand, self.looked,
                self.bids, self.blind, self.tricks_won, self.trick_leader, self.current_trick,
                self.play_history, self.voids, self.known_cards, self.hand_sizes,
                self.spades_broken, self.scores, self.bags, self.hand_number)


class SpadesGame:
    """One full game of partnership Spades (RULES.md), seeded and replayable.

    Args:
        rules: a ``Rules`` (default ``standard``).
        seed: int, ``None`` or a ``np.random.Generator``; the only source of randomness (dealer
            draw and every shuffle).

    Use ``legal_actions()``, ``apply(action)``, ``view(seat)``. ``apply`` raises
    ``IllegalActionError`` (a ``ValueError``) with the reason for an illegal action and leaves the
    state unchanged.
    """

    __slots__ = (
        "rules", "rng", "phase", "dealer", "current_player", "hands", "bids", "blind", "looked",
        "tricks_won", "trick", "trick_leader", "spades_broken", "played", "voids", "trick_number",
        "scores", "bags", "hand_results", "winner", "moves", "plays", "exchange_queue",
        "exchanges", "hand_number", "initial",
    )

    def __init__(self, rules: Rules | None = None, seed=None, *, _deal: bool = True):
        self.rules = rules if rules is not None else Rules()
        if not isinstance(self.rules, Rules):
            raise ValueError(f"rules must be a spades_env.Rules, got {type(self.rules).__name__}")
        self.rng = _make_rng(seed)
        self.scores = [0, 0]
        self.bags = [0, 0]
        self.hand_results: list[HandResult] = []
        self.winner: int | None = None
        self.moves: list[int] = []
        self.hand_number = 0
        self.initial: dict = {}
        if _deal:
            self.initial = {"rng": _rng_state(self.rng)}
            self.dealer = int(self.rng.integers(4))
            self._deal()

    # ------------------------------------------------------------------ set-up
    @classmethod
    def from_deal(cls, hands, dealer: int, scores=(0, 0), bags=(0, 0), rules: Rules | None = None,
                  seed=None) -> "SpadesGame":
        """Start a hand from a given deal.

        Args:
            hands: 4 hands by seat, each 13 card ids or card strings (or a 52-bit mask).
            dealer: seat 0..3.
            scores, bags: team totals and bag counts before this hand.
            seed: RNG for later deals.
        Raises:
            ValueError: not 4 hands of 13 distinct cards covering the deck, or a bad dealer.
        """
        from .cards import parse_card
        masks = []
        for h in hands:
            if isinstance(h, int):
                m = h
            else:
                m = 0
                for c in h:
                    cid = parse_card(c) if isinstance(c, str) else int(c)
                    if not 0 <= cid < 52:
                        raise ValueError(f"card id {cid} out of range 0..51")
                    if (m >> cid) & 1:
                        raise ValueError(f"card {card_str(cid)} appears twice in one hand")
                    m |= 1 << cid
            masks.append(m)
        if len(masks) != 4:
            raise ValueError(f"need 4 hands, got {len(masks)}")
        if any(m.bit_count() != 13 for m in masks):
            raise ValueError(f"each hand needs 13 cards, got {[m.bit_count() for m in masks]}")
        if masks[0] | masks[1] | masks[2] | masks[3] != FULL_DECK:
            raise ValueError("the 4 hands must hold each of the 52 cards exactly once")
        if dealer not in (0, 1, 2, 3):
            raise ValueError(f"dealer must be a seat 0..3, got {dealer!r}")
        g = cls(rules, seed, _deal=False)
        g.scores = [int(scores[0]), int(scores[1])]
        g.bags = [int(bags[0]), int(bags[1])]
        g.dealer = dealer
        g.initial = {"hands": list(masks), "dealer": dealer, "scores": list(g.scores),
                     "bags": list(g.bags), "rng": _rng_state(g.rng)}
        g._start_hand(masks)
        return g

    def _deal(self) -> None:
        perm = self.rng.permutation(NUM_CARDS)
        hands = [0, 0, 0, 0]
        first = (self.dealer + 1) & 3
        for i, c in enumerate(perm.tolist()):
            hands[(first + i) & 3] |= 1 << c
        self._start_hand(hands)

    def _start_hand(self, hands) -> None:
        self.hands = list(hands)
        self.phase = Phase.BIDDING
        self.current_player = (self.dealer + 1) & 3
        self.bids = [None, None, None, None]
        self.blind = [False, False, False, False]
        self.looked = [not self.rules.blind_nil] * 4
        self.tricks_won = [0, 0, 0, 0]
        self.trick: list[int] = []
        self.trick_leader = self.current_player
        self.spades_broken = False
        self.played = [0, 0, 0, 0]
        self.voids = [0, 0, 0, 0]
        self.trick_number = 0
        self.plays: list[tuple[int, int]] = []  # (seat, card) played this hand, in order
        self.exchange_queue: list[int] = []  # seats to pass, one entry per card
        self.exchanges: list[tuple[int, int, int]] = []  # (from, to, card)

    # ------------------------------------------------------------------ queries
    @property
    def is_over(self) -> bool:
        return self.phase == Phase.GAME_OVER

    @property
    def current_trick(self) -> list[tuple[int, int]]:
        """Cards of the current trick in play order as ``(seat, card)``."""
        lead = self.trick_leader
        return [((lead + i) & 3, c) for i, c in enumerate(self.trick)]

    @property
    def led_suit(self) -> int | None:
        return self.trick[0] // 13 if self.trick else None

    def hand(self, seat: int) -> list[int]:
        """Card ids held by ``seat`` (ascending). Full information: not for bots."""
        return mask_to_cards(self.hands[seat])

    def _play_mask(self, seat: int) -> int:
        hand = self.hands[seat]
        if self.trick:
            follow = hand & SUIT_MASKS[self.trick[0] // 13]
            return follow if follow else hand
        if not self.spades_broken:
            ns = hand & NON_SPADES_MASK
            if ns:
                return ns
        return hand

    def legal_mask(self) -> int:
        """Legal actions as a 68-bit int mask (bit = action id)."""
        ph = self.phase
        p = self.current_player
        if ph == Phase.PLAY:
            return self._play_mask(p)
        if ph == Phase.BIDDING:
            if not self.looked[p]:
                return (1 << BLIND_NIL_ACTION) | (1 << LOOK_ACTION)
            return ((1 << (MAX_BID + 1)) - 1) << BID_OFFSET
        if ph == Phase.EXCHANGE:
            return self.hands[p]
        return 0

    def legal_actions(self) -> list[int]:
        """Legal action ids (ascending) for ``current_player``; [] when the game is over."""
        ph = self.phase
        if ph == Phase.PLAY:
            return mask_to_cards(self._play_mask(self.current_player))
        m = self.legal_mask()
        return [a for a in range(NUM_ACTIONS) if (m >> a) & 1]

    def legal_actions_mask(self) -> np.ndarray:
        """Legal actions as an ``int8`` array of shape ``(NUM_ACTIONS,)``."""
        m = self.legal_mask()
        out = np.zeros(NUM_ACTIONS, dtype=np.int8)
        out[[a for a in range(NUM_ACTIONS) if (m >> a) & 1]] = 1
        return out

    def explain_illegal(self, action, seat: int | None = None) -> str | None:
        """Why ``action`` (by ``seat``, default the player to act) is illegal, or None if legal."""
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
            if action == BLIND_NIL_ACTION:
                if not self.rules.blind_nil:
                    return "Blind Nil is not allowed under these rules"
                if self.looked[p]:
                    return "you have already looked at your cards: Blind Nil is bid before looking"
                return None
            if action == LOOK_ACTION:
                if self.looked[p]:
                    return "you have already looked at your cards"
                return None
            if not self.looked[p]:
                return "decide first: bid Blind Nil or look at your cards"
            if action < NUM_CARDS:
                return f"it is the bidding phase: bid 0..13, not play {card_str(action)}"
            return None
        if action >= NUM_CARDS:
            what = "the Blind Nil exchange" if ph == Phase.EXCHANGE else "the play"
            return f"bidding is over: it is {what}, play a card, not {action_str(action)}"
        hand = self.hands[p]
        if not (hand >> action) & 1:
            return f"{card_str(action)}: that card is not in your hand"
        if ph == Phase.EXCHANGE:
            return None
        suit = action // 13
        if self.trick:
            led = self.trick[0] // 13
            if suit != led and hand & SUIT_MASKS[led]:
                return f"must follow suit: you hold a {SUIT_NAMES[led]}"
            return None
        if suit == 3 and not self.spades_broken and hand & NON_SPADES_MASK:
            return "spades are not broken yet: lead another suit"
        return None

    # ------------------------------------------------------------------ moves
    def apply(self, action, seat: int | None = None) -> None:
        """Take ``action`` for the player to act (``seat``, if given, must be that player).

        Raises:
            IllegalActionError: with the reason; the state is unchanged.
        """
        p = self.current_player
        if self.phase == Phase.PLAY and (seat is None or seat == p) and type(action) is int \
                and 0 <= action < 52 and (self._play_mask(p) >> action) & 1:
            self._play_card(p, action)
            return
        why = self.explain_illegal(action, seat)
        if why is not None:
            raise IllegalActionError(why)
        action = int(action)
        self.moves.append(action)
        ph = self.phase
        if ph == Phase.PLAY:
            self.moves.pop()
            self._play_card(p, action)
        elif ph == Phase.BIDDING:
            self._bid(p, action)
        else:
            self._pass_card(p, action)

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
        nxt = (p + 1) & 3
        if nxt != (self.dealer + 1) & 3:
            self.current_player = nxt
            return
        # Bidding is over: queue the Blind Nil exchanges, in bidding order.
        q: list[int] = []
        for i in range(4):
            s = (self.dealer + 1 + i) & 3
            if self.blind[s] and not self.blind[(s + 2) & 3]:
                q += [(s + 2) & 3] * 3 + [s] * 3
        if q:
            self.exchange_queue = q
            self.phase = Phase.EXCHANGE
            self.current_player = q[0]
        else:
            self._start_play()

    def _pass_card(self, p: int, card: int) -> None:
        to = (p + 2) & 3
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
        self.current_player = self.trick_leader = (self.dealer + 1) & 3

    def _play_card(self, p: int, card: int) -> None:
        self.moves.append(card)
        self.plays.append((p, card))
        bit = 1 << card
        self.hands[p] &= ~bit
        self.played[p] |= bit
        trick = self.trick
        suit = card // 13
        if trick:
            led = trick[0] // 13
            if suit != led:
                self.voids[p] |= 1 << led
                if suit == 3:
                    self.spades_broken = True
        else:
            self.trick_leader = p
            if suit == 3 and not self.spades_broken and self.rules.forced_spade_lead_breaks:
                self.spades_broken = True
        trick.append(card)
        if len(trick) < 4:
            self.current_player = (p + 1) & 3
            return
        w = trick_winner(trick, self.trick_leader)
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
        self.winner = game_outcome(self.scores, self.rules)
        if self.winner is not None:
            self.phase = Phase.GAME_OVER
            self.current_player = -1
            return
        self.dealer = (self.dealer + 1) & 3
        self._deal()

    # ------------------------------------------------------------------ views
    def view(self, seat: int) -> PlayerView:
        """What ``seat`` may know (its information set) as a ``PlayerView``."""
        if seat not in (0, 1, 2, 3):
            raise ValueError(f"seat must be 0..3, got {seat!r}")
        lead = self.trick_leader
        known = [0, 0, 0, 0]
        for frm, to, c in self.exchanges:
            if seat in (frm, to):
                # both partners see both directions of their own exchange
                known[to] |= 1 << c
                known[frm] &= ~(1 << c)
        for s in range(4):
            known[s] &= self.hands[s] if s != seat else 0
        hand = self.hands[seat] if self.looked[seat] else 0
        legal = tuple(self.legal_actions()) if self.current_player == seat else ()
        return PlayerView(
            seat=seat, rules=self.rules, phase=int(self.phase), current_player=self.current_player,
            dealer=self.dealer, hand=hand, looked=self.looked[seat], bids=tuple(self.bids),
            blind=tuple(self.blind), tricks_won=tuple(self.tricks_won), trick_leader=lead,
            current_trick=tuple(((lead + i) & 3, c) for i, c in enumerate(self.trick)),
            play_history=tuple(self.plays), played=tuple(self.played), voids=tuple(self.voids),
            known_cards=tuple(known), hand_sizes=tuple(h.bit_count() for h in self.hands),
            spades_broken=self.spades_broken, trick_number=self.trick_number,
            scores=tuple(self.scores), bags=tuple(self.bags), hand_number=self.hand_number,
            legal_actions=legal, hand_results=tuple(self.hand_results),
        )

    # ------------------------------------------------------------------ copy / save
    def clone(self) -> "SpadesGame":
        """Independent deep copy (RNG included)."""
        g = SpadesGame.__new__(SpadesGame)
        g.rules = self.rules
        g.rng = _rng_from_state(_rng_state(self.rng))
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
        g.hand_results = list(self.hand_results)
        g.winner = self.winner
        g.moves = list(self.moves)
        g.plays = list(self.plays)
        g.exchange_queue = list(self.exchange_queue)
        g.exchanges = list(self.exchanges)
        g.hand_number = self.hand_number
        g.initial = self.initial
        return g

    def to_dict(self) -> dict:
        return {
            "format": FORMAT_TAG, "version": FORMAT_VERSION,
            "rules": self.rules.to_dict(), "rng": _rng_state(self.rng),
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
            "initial": self.initial,
        }

    def to_json(self) -> str:
        """The whole state (RNG included) as a JSON string; ``from_json`` restores it exactly."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict) -> "SpadesGame":
        """Restore from ``to_dict`` output.

        Raises:
            ValueError: not a spades_env saved game, an unknown version, or inconsistent fields.
        """
        if not isinstance(d, dict) or d.get("format") != FORMAT_TAG:
            raise ValueError("not a spades_env saved game (missing format tag 'spades_env.game')")
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(f"unsupported saved-game version {d.get('version')!r}; "
                             f"this spades_env reads version {FORMAT_VERSION}")
        try:
            g = cls.__new__(cls)
            g.rules = Rules.from_dict(d["rules"])
            g.rng = _rng_from_state(d["rng"])
            g.phase = Phase(int(d["phase"]))
            g.dealer = int(d["dealer"])
            g.current_player = int(d["current_player"])
            g.hands = [int(x) for x in d["hands"]]
            g.bids = [None if b is None else int(b) for b in d["bids"]]
            g.blind = [bool(x) for x in d["blind"]]
            g.looked = [bool(x) for x in d["looked"]]
            g.tricks_won = [int(x) for x in d["tricks_won"]]
            g.trick = [int(x) for x in d["trick"]]
            g.trick_leader = int(d["trick_leader"])
            g.spades_broken = bool(d["spades_broken"])
            g.played = [int(x) for x in d["played"]]
            g.voids = [int(x) for x in d["voids"]]
            g.trick_number = int(d["trick_number"])
            g.scores = [int(x) for x in d["scores"]]
            g.bags = [int(x) for x in d["bags"]]
            g.hand_results = [HandResult.from_dict(h) for h in d["hand_results"]]
            g.winner = None if d["winner"] is None else int(d["winner"])
            g.moves = [int(x) for x in d["moves"]]
            g.plays = [(int(s), int(a)) for s, a in d["plays"]]
            g.exchange_queue = [int(x) for x in d["exchange_queue"]]
            g.exchanges = [(int(a), int(b), int(c)) for a, b, c in d["exchanges"]]
            g.hand_number = int(d["hand_number"])
            g.initial = dict(d["initial"])
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"corrupt spades_env saved game: {type(e).__name__}: {e}") from None
        g._check_consistent()
        return g

    @classmethod
    def from_json(cls, text: str | bytes) -> "SpadesGame":
        """Restore a game from ``to_json`` text. Raises ``ValueError`` on corrupt or foreign input."""
        try:
            d = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as e:
            raise ValueError(f"not a spades_env saved game: invalid JSON ({e})") from None
        return cls.from_dict(d)

    def _check_consistent(self) -> None:
        def bad(msg):
            raise ValueError(f"corrupt spades_env saved game: {msg}")
        if len(self.hands) != 4 or len(self.played) != 4 or len(self.bids) != 4:
            bad("need 4 hands, 4 played sets and 4 bids")
        all_cards = 0
        count = 0
        for m in self.hands + self.played + [cards_mask(self.trick)]:
            if m < 0 or m > FULL_DECK:
                bad("card mask out of range")
            count += m.bit_count()
            all_cards |= m
        # cards in the current trick are also in `played`
        if count - len(self.trick) != 52 or all_cards != FULL_DECK:
            bad("the hands and played cards do not make one deck")
        if not 0 <= self.dealer < 4 or not -1 <= self.current_player < 4:
            bad("dealer or current player out of range")
        if self.phase != Phase.GAME_OVER and self.current_player < 0:
            bad("no player to act in a running game")
        if sum(self.tricks_won) != self.trick_number or not 0 <= self.trick_number <= 13:
            bad("tricks won do not add up to the trick number")

    @classmethod
    def replay(cls, moves, rules: Rules | None = None, seed=None, initial: dict | None = None
               ) -> "SpadesGame":
        """Replay a move log from the start (``initial`` as in ``game.initial``, or a seed)."""
        if initial and "hands" in initial:
            g = cls.from_deal(initial["hands"], initial["dealer"], initial["scores"],
                              initial["bags"], rules, _rng_from_state(initial["rng"]))
        elif initial:
            g = cls(rules, _rng_from_state(initial["rng"]))
        else:
            g = cls(rules, seed)
        for a in moves:
            g.apply(a)
        return g

    def __repr__(self) -> str:
        return (f"SpadesGame(phase={Phase(self.phase).name}, hand={self.hand_number}, "
                f"dealer={self.dealer}, to_act={self.current_player}, scores={self.scores}, "
                f"bags={self.bags})")

    def __str__(self) -> str:
        from .render import render_game
        return render_game(self)


def cards_mask(cards) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m
