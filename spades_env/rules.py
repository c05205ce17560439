"""The rules of Spades, each written once for Python (``docs/rules.md``): the rules object, the
card-play rules (legal cards, why a card is illegal, what a play reveals and whether it breaks
spades, the trick winner) and hand scoring.

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

import operator
from dataclasses import dataclass, fields

import numpy as np

from .cards import (
    FULL_DECK, JOKER_TRUMPS, MAX_BID, PARTNER, SEATS_FROM, NEXT_SEAT, SPADES_MASK,
    SUIT_NAMES, Suit, is_int,
)


# Bound on the size of every integer switch, so that game totals stay far inside the int64 score
# records and arithmetic of the batched engine (its C kernel too) over any number of hands.
RULES_INT_MAX = 10 ** 6


@dataclass(frozen=True)
class Rules:
    """Variant switches of the ``standard`` profile (docs/rules.md); every default is the spec's.

    Attributes:
        target_score: points (int) at which a game ends (docs/rules.md, End of the game). 500; 250 is the
            common short game.
        loss_threshold: a team at or below this total after a hand loses; ``None`` = off.
        blind_nil: allow Blind Nil (bid before looking, then a 3-card exchange with the partner).
        forced_spade_lead_breaks: a forced spade lead (hand of only spades) breaks spades.
        bag_limit: bags that trigger the bag penalty (10).
        bag_penalty: points lost each time the bag count reaches ``bag_limit`` (100).
        nil_bonus: points won (or lost) by a Nil (100).
        blind_nil_bonus: points won (or lost) by a Blind Nil (200).
        failed_nil_tricks_count: the tricks of a failed Nil (or Blind Nil) count toward the
            partner's contract (made or set, overtricks and bags) instead of being bags only.
        blind_nil_deficit: with ``blind_nil``, Blind Nil is offered only to a team that trails
            by at least this many points (0: always).
        min_team_bid: the bids of a partnership must add up to at least this ("board", 4; Nil
            counts 0); 0 = off, at most 10.
        suicide: in each partnership exactly one partner bids Nil (a Blind Nil is a Nil).
        mirror: each player bids the number of spades it holds (Nil with none).
        whiz: each player bids the number of spades it holds, or Nil.
        bid_total_not_13: the last bidder may not bring the four bids to a total of exactly 13.
        spades_lead_any_time: spades may be led from the first trick on (they count as broken
            from the start of every hand).
        nil_pass: after the bidding, a Nil bidder (not Blind) whose partner did not also bid Nil
            exchanges this many cards with the partner (1..3; 0 = off): the partner passes
            first, then the Nil bidder passes back.
        big_bid_double: a made team contract of at least this many tricks scores double, 20 per
            trick bid ("10 for 200" at 10); a set one loses the usual 10 per trick; 0 = off,
            else 7..13.
        moon_wins: a team that bids 13 tricks together and takes them all wins the game at once
            ("shooting the moon").
        two_of_clubs_leads: the holder of the 2 of clubs (after any exchange) leads it to the
            first trick of every hand, instead of the player left of the dealer leading.
        bags_score_points: overtricks (bags) score a point each (``True``); ``False``: a made
            contract scores exactly 10 per trick bid, its bags still counted toward the bag
            penalty ("bags don't count as points").
        jokers: "Joker Joker Deuce Deuce" (John McLeod's Spades page at pagat.com, Variations):
            a big and a little joker replace the 2 of hearts and the 2 of clubs (and take their
            card ids, ``cards.BIG_JOKER`` and ``cards.LITTLE_JOKER``); the jokers and the 2 of
            diamonds are spades, and the trumps rank, from the top, big joker, little joker,
            2 of diamonds, 2 of spades, ace of spades ... 3 of spades (``deck``).

    ``deck`` (not a field) is the ``Deck`` these rules play with: ``JOKERS_DECK`` under
    ``jokers``, else ``STANDARD_DECK``.

    Raises:
        ValueError: on construction, for a value out of range (the message names the field).
    """

    target_score: int = 500
    loss_threshold: int | None = None
    blind_nil: bool = False
    forced_spade_lead_breaks: bool = False
    bag_limit: int = 10
    bag_penalty: int = 100
    nil_bonus: int = 100
    blind_nil_bonus: int = 200
    failed_nil_tricks_count: bool = False
    blind_nil_deficit: int = 0
    min_team_bid: int = 0
    suicide: bool = False
    mirror: bool = False
    whiz: bool = False
    bid_total_not_13: bool = False
    nil_pass: int = 0
    spades_lead_any_time: bool = False
    bags_score_points: bool = True
    big_bid_double: int = 0
    moon_wins: bool = False
    two_of_clubs_leads: bool = False
    jokers: bool = False

    def __post_init__(self):
        for name in ("target_score", "bag_limit", "bag_penalty", "nil_bonus", "blind_nil_bonus"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(f"Rules.{name} must be an int, got {v!r}")
        for name in _BOOL_FIELDS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Rules.{name} must be a bool, got {getattr(self, name)!r}")
        object.__setattr__(self, "deck", JOKERS_DECK if self.jokers else STANDARD_DECK)
        for name, hi in (("blind_nil_deficit", RULES_INT_MAX), ("min_team_bid", 10),
                         ("nil_pass", 3), ("big_bid_double", 13)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= hi:
                raise ValueError(f"Rules.{name} must be an int 0..{hi}, got {v!r}")
        # no bidding switch: every bid 0..13 legal once the cards are seen (legal_bids' fast path)
        object.__setattr__(self, "_free_bids", not (self.min_team_bid or self.suicide or self.mirror
                                                    or self.whiz or self.bid_total_not_13))
        if 0 < self.big_bid_double < 7:
            raise ValueError(f"Rules.big_bid_double must be 0 (off) or 7..13, got "
                             f"{self.big_bid_double}")
        self._check_combinations()
        if self.target_score <= 0:
            raise ValueError(f"Rules.target_score must be positive, got {self.target_score}")
        if self.bag_limit <= 0:
            raise ValueError(f"Rules.bag_limit must be positive, got {self.bag_limit}")
        if self.bag_penalty < 0 or self.nil_bonus < 0 or self.blind_nil_bonus < 0:
            raise ValueError("Rules.bag_penalty, nil_bonus and blind_nil_bonus must be >= 0")
        for name in ("target_score", "bag_limit", "bag_penalty", "nil_bonus", "blind_nil_bonus"):
            if getattr(self, name) > RULES_INT_MAX:
                raise ValueError(f"Rules.{name} must be at most {RULES_INT_MAX}, got "
                                 f"{getattr(self, name)}")
        lt = self.loss_threshold
        if lt is not None:
            if not isinstance(lt, int) or isinstance(lt, bool):
                raise ValueError(f"Rules.loss_threshold must be an int or None, got {lt!r}")
            if lt < -RULES_INT_MAX:
                raise ValueError(f"Rules.loss_threshold must be at least {-RULES_INT_MAX}, "
                                 f"got {lt}")
            if lt >= self.target_score:
                raise ValueError(
                    f"Rules.loss_threshold ({lt}) must be below target_score ({self.target_score})"
                )

    def __setstate__(self, state: dict) -> None:
        """Unpickling (also a copy sent to a worker): a ``Rules`` pickled by an earlier version
        lacks the fields added since; they take their defaults (off), as in saved games, and the
        values are checked again."""
        for f in fields(self):
            object.__setattr__(self, f.name, state.get(f.name, f.default))
        self.__post_init__()

    def __getstate__(self) -> dict:
        """Pickling: the fields alone (``deck`` and the other derived values are rebuilt)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def has_exchanges(self) -> bool:
        """Whether cards may change hands after the bidding (``blind_nil`` or ``nil_pass``): a
        hand may then hold more than 56 moves."""
        return self.blind_nil or self.nil_pass > 0

    def _check_combinations(self) -> None:
        """Refuse switches that cannot hold together (each message names both fields)."""
        forced = [n for n in ("mirror", "whiz") if getattr(self, n)]
        pairs = [("mirror", "whiz"), ("mirror", "suicide"), ("whiz", "suicide"),
                 ("suicide", "bid_total_not_13"), ("mirror", "bid_total_not_13"),
                 ("whiz", "bid_total_not_13"), ("blind_nil", "mirror"), ("blind_nil", "whiz"),
                 ("blind_nil", "suicide")]
        for a, b in pairs:
            if getattr(self, a) and getattr(self, b):
                raise ValueError(f"Rules.{a} and Rules.{b} cannot both be on: "
                                 f"{_WHY_NOT[a, b]}")
        if forced and self.min_team_bid:
            raise ValueError(f"Rules.{forced[0]} and Rules.min_team_bid cannot both be on: the "
                             f"cards decide a {forced[0]} bid, so a team minimum could leave no "
                             f"legal bid")
        if self.nil_pass and self.suicide:
            raise ValueError("Rules.nil_pass and Rules.suicide cannot both be on: suicide's Nil is "
                             "forced on one partner of every team, so every hand would exchange")
        if self.spades_lead_any_time and self.forced_spade_lead_breaks:
            raise ValueError("Rules.spades_lead_any_time and Rules.forced_spade_lead_breaks cannot "
                             "both be on: spades are broken from the start, so no lead breaks "
                             "them")
        if self.jokers and self.two_of_clubs_leads:
            raise ValueError("Rules.jokers and Rules.two_of_clubs_leads cannot both be on: the "
                             "deck with jokers has no 2 of clubs (its id is the little joker's)")
        if self.blind_nil_deficit and not self.blind_nil:
            raise ValueError("Rules.blind_nil_deficit needs Rules.blind_nil on (it limits when "
                             "Blind Nil is offered)")

    def to_dict(self) -> dict:
        """The switches as a plain dict (field name -> value); ``from_dict`` inverts it."""
        return {name: getattr(self, name) for name in _RULES_FIELDS}

    @classmethod
    def from_dict(cls, d: dict) -> "Rules":
        """Build from a dict; unknown keys raise ``ValueError``."""
        if not isinstance(d, dict):
            raise ValueError(f"rules must be a dict, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown rules field(s): {sorted(unknown)}; known: {sorted(known)}")
        return cls(**d)

    @classmethod
    def parse(cls, spec) -> "Rules":
        """A rules mapping as a ``Rules`` (docs/rules.md, Variant switches): a ``Rules`` (as is);
        a preset name (``"house"``); a preset and fields as text (``"house,min_team_bid=4"``, or
        fields alone on ``standard``: ``"mirror=True"``), or as a mapping
        (``{"preset": "house", "min_team_bid": 4}``, also its text ``"{preset: house,
        min_team_bid: 4}"``); ``preset`` defaults to ``standard``.

        Raises:
            ValueError: an unknown preset (the presets listed) or field, a value out of range,
                or switches that cannot hold together (the message names the field).
        """
        if isinstance(spec, Rules):
            return spec
        if isinstance(spec, str):
            text = spec.strip()
            if text.startswith("{") and text.endswith("}"):
                text = text[1:-1]
            fields_given: dict = {}
            preset = None
            for tok in (t.strip() for t in text.split(",")):
                if not tok:
                    continue
                sep = "=" if "=" in tok else (":" if ":" in tok else None)
                if sep is None:
                    tok = tok.strip("'\"")
                    if preset is not None:
                        raise ValueError(f"rules {spec!r}: two presets ({preset!r}, {tok!r})")
                    preset = tok
                    continue
                k, v = (x.strip().strip("'\"") for x in tok.split(sep, 1))
                if k in fields_given:
                    raise ValueError(f"rules {spec!r}: field {k} given twice")
                fields_given[k] = _rule_value(k, v)
            if "preset" in fields_given:
                if preset is not None:
                    raise ValueError(f"rules {spec!r}: two presets")
                preset = fields_given.pop("preset")
            spec = {"preset": preset or "standard", **fields_given}
        if not isinstance(spec, dict):
            raise ValueError(f"rules must be a Rules, a preset name ({', '.join(PRESETS)}) or a "
                             f"mapping {{preset: ..., field: value}}, got {type(spec).__name__}")
        spec = dict(spec)
        base = cls.preset(spec.pop("preset", "standard"))
        if not spec:
            return base
        return cls.from_dict({**base.to_dict(), **spec})

    def spec(self) -> str:
        """These rules as the shortest text ``parse`` reads back: a preset name when they are
        one, else ``standard`` and the fields that differ (``"standard,min_team_bid=4"``)."""
        for name, r in PRESETS.items():
            if r == self:
                return name
        base = PRESETS["standard"].to_dict()
        return ",".join(["standard"] + [f"{k}={v}" for k, v in self.to_dict().items()
                                        if base[k] != v])

    @classmethod
    def preset(cls, name: str) -> "Rules":
        """Named presets: ``standard`` (docs/rules.md defaults), ``short`` (target 250), ``house``
        (target 500, loss at -200, Blind Nil on)."""
        if not isinstance(name, str) or name not in PRESETS:
            raise ValueError(f"unknown rules preset {name!r}; known: {sorted(PRESETS)}")
        return PRESETS[name]


def _rule_value(name: str, text: str):
    """A field's value written in a rules text: an int, ``True``/``False``/``None`` (any case),
    or, for ``preset``, the name."""
    if name == "preset":
        return text
    low = text.lower()
    if low in ("true", "false", "none", "null"):
        return {"true": True, "false": False}.get(low)
    digits = text.lstrip("+-")
    if text[:1] in "+-" and len(text) - len(digits) == 1 or digits == text:
        if digits.isascii() and digits.isdigit():  # plain decimal digits: no "4_0", no "٤"
            if len(digits) > 12:
                raise ValueError(f"rules field {name}: {text[:20]}... ({len(digits)} digits) is "
                                 f"out of range")
            return int(text)
    shown = text if len(text) <= 40 else text[:40] + "..."
    raise ValueError(f"rules field {name}: {shown!r} is not an int, true, false or none")


_RULES_FIELDS = tuple(f.name for f in fields(Rules))
_BOOL_FIELDS = ("blind_nil", "forced_spade_lead_breaks", "failed_nil_tricks_count", "suicide",
                "mirror", "whiz", "bid_total_not_13", "spades_lead_any_time",
                "bags_score_points", "moon_wins", "two_of_clubs_leads", "jokers")
_WHY_NOT = {
    ("mirror", "whiz"): "both decide the bid from the spades held, differently",
    ("mirror", "suicide"): "a mirror bid is the spades held, so a partnership could not bid "
                           "exactly one Nil",
    ("whiz", "suicide"): "a whiz bid is Nil or the spades held, so a partnership could be left "
                         "without a legal bid",
    ("suicide", "bid_total_not_13"): "the last bidder could be forced to a Nil that makes 13",
    ("mirror", "bid_total_not_13"): "a mirror bid is forced and could make 13",
    ("whiz", "bid_total_not_13"): "a whiz bidder without spades has only Nil, which could make 13",
    ("blind_nil", "mirror"): "a mirror bid is made from the cards (no Blind Nil in mirror)",
    ("blind_nil", "whiz"): "a whiz bid is made from the cards (no Blind Nil in whiz)",
    ("blind_nil", "suicide"): "suicide has no Blind Nil (its Nil is part of the bidding rule)",
}

# ----------------------------------------------------------------------------- the deck
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
    """

    __slots__ = ("name", "jokers", "promoted", "top", "suit_of", "suit_masks", "spades",
                 "non_spades", "strength", "rank", "plain", "above", "below", "beats", "beaters",
                 "failed_to_follow", "voids_shown", "ranked", "lowest", "highest", "legal_table",
                 "_legal_rows", "_suit_matrix")

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
        self._suit_matrix = np.array([[so[c] == s for s in range(4)] for c in range(52)],
                                     dtype=np.intp)  # (52, 4): card -> its suit, one-hot
        self.legal_table = self._legal_rows = None  # filled below, by legal_cards_mask

    def __repr__(self) -> str:
        return f"Deck({self.name!r})"

    def __reduce__(self):
        return _deck_named, (self.name,)

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


def _deck_named(name: str) -> Deck:
    return DECKS[name]


PRESETS = {
    "standard": Rules(),
    "short": Rules(target_score=250),
    "house": Rules(target_score=500, loss_threshold=-200, blind_nil=True),
    "suicide": Rules(target_score=500, loss_threshold=-200, suicide=True, min_team_bid=4),
    "mirror": Rules(target_score=500, loss_threshold=-200, mirror=True),
    "whiz": Rules(target_score=500, loss_threshold=-200, whiz=True),
    "joker_joker_deuce_deuce": Rules(jokers=True),
}
"""The named rule sets (docs/rules.md, Presets, which cites the source of each)."""


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
    _deck._legal_rows = _deck.legal_table.reshape(2 * 5 * 16, 52)
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
        held = ((hands.astype(np.intp) @ deck._suit_matrix) > 0) @ _SUIT_BITS
    else:
        held = hands.reshape(*hands.shape[:-1], 4, 13).any(-1) @ _SUIT_BITS
    row = (np.asarray(spades_broken, dtype=np.intp) * 5 + np.asarray(led_suit) + 1) * 16 + held
    return hands & deck._legal_rows[row]


_SUIT_BITS = np.array([1, 2, 4, 8])


@dataclass(frozen=True)
class TeamScore:
    """One team's line of the per-hand score table (docs/rules.md, Scoring a hand).

    Attributes:
        team: 0 (seats 0, 2) or 1 (seats 1, 3).
        bids: the two partners' bids, (lower seat, higher seat); 0 = Nil.
        blind: whether each of those bids was Blind Nil.
        tricks: tricks taken by each partner, same order.
        contract: sum of the non-Nil bids (0 when both bid Nil).
        contract_points: +10*C + overtricks when made (+10*C alone without
            ``bags_score_points``), -10*C when set, 0 without contract.
        made: True made, False set, None without contract.
        bags: bags taken this hand (overtricks plus a failed Nil's tricks, unless
            ``failed_nil_tricks_count`` counted them toward the contract).
        nil_points: sum of Nil / Blind Nil bonuses and penalties.
        bag_penalty: points lost to the bag penalty this hand (<= 0).
        hand_points: contract_points + nil_points + bag_penalty.
        total: game total after the hand.
        bags_after: bag count carried after the hand (0..bag_limit-1).
    """

    team: int
    bids: tuple
    blind: tuple
    tricks: tuple
    contract: int
    contract_points: int
    made: bool | None
    bags: int
    nil_points: int
    bag_penalty: int
    hand_points: int
    total: int
    bags_after: int

    def to_dict(self) -> dict:
        """The fields as a plain dict, the tuples as lists (JSON data; ``HandResult.from_dict``
        reads it). Field by field: ``dataclasses.asdict`` deep-copies, 15-25x slower."""
        d = {name: getattr(self, name) for name in _TEAM_SCORE_FIELDS}
        for k in ("bids", "blind", "tricks"):
            d[k] = list(d[k])
        return d


_TEAM_SCORE_FIELDS = tuple(f.name for f in fields(TeamScore))


@dataclass(frozen=True)
class HandResult:
    """Score table of one finished hand: per-seat bids and tricks, and a ``TeamScore`` per team."""

    hand_number: int
    dealer: int
    bids: tuple
    blind: tuple
    tricks: tuple
    teams: tuple  # (TeamScore, TeamScore)

    def to_dict(self) -> dict:
        return {
            "hand_number": self.hand_number,
            "dealer": self.dealer,
            "bids": list(self.bids),
            "blind": list(self.blind),
            "tricks": list(self.tricks),
            "teams": [t.to_dict() for t in self.teams],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "HandResult":
        """Build from ``to_dict`` output, checking every field's type and shape (plain ints and
        bools; 4 bids, flags and trick counts; two team lines). Whether the numbers follow from
        the rules is the engine's check (``SpadesGame.from_dict``).

        Raises:
            ValueError: a missing, extra or ill-typed field (the message names it).
        """
        def fail(what):
            raise ValueError(f"score table: {what}")

        def is_int(x):
            return isinstance(x, int) and not isinstance(x, bool)

        def ints(x, n, what):
            if not isinstance(x, (list, tuple)) or len(x) != n or not all(map(is_int, x)):
                fail(f"{what} must be {n} ints, got {x!r}")
            return tuple(x)

        def bools(x, n, what):
            if not isinstance(x, (list, tuple)) or len(x) != n \
                    or not all(isinstance(v, bool) for v in x):
                fail(f"{what} must be {n} bools, got {x!r}")
            return tuple(x)

        if not isinstance(d, dict) or set(d) != _HAND_RESULT_KEYS:
            fail(f"needs exactly the keys {sorted(_HAND_RESULT_KEYS)}, got "
                 f"{sorted(d) if isinstance(d, dict) else type(d).__name__}")
        for k in ("hand_number", "dealer"):
            if not is_int(d[k]):
                fail(f"{k} must be an int, got {d[k]!r}")
        if not isinstance(d["teams"], (list, tuple)) or len(d["teams"]) != 2:
            fail(f"teams must be 2 team lines, got {d['teams']!r}")
        teams = []
        for t in d["teams"]:
            if not isinstance(t, dict) or set(t) != _TEAM_SCORE_KEYS:
                fail(f"a team line needs exactly the keys {sorted(_TEAM_SCORE_KEYS)}")
            for k in _TEAM_SCORE_KEYS - {"bids", "blind", "tricks", "made"}:
                if not is_int(t[k]):
                    fail(f"team line field {k} must be an int, got {t[k]!r}")
            if t["made"] is not None and not isinstance(t["made"], bool):
                fail(f"team line field made must be True, False or None, got {t['made']!r}")
            teams.append(TeamScore(**{**t, "bids": ints(t["bids"], 2, "team bids"),
                                      "blind": bools(t["blind"], 2, "team blind"),
                                      "tricks": ints(t["tricks"], 2, "team tricks")}))
        return cls(d["hand_number"], d["dealer"], ints(d["bids"], 4, "bids"),
                   bools(d["blind"], 4, "blind"), ints(d["tricks"], 4, "tricks"), tuple(teams))


_HAND_RESULT_KEYS = frozenset(("hand_number", "dealer", "bids", "blind", "tricks", "teams"))
_TEAM_SCORE_KEYS = frozenset(f.name for f in fields(TeamScore))


def score_hand(bids, tricks, bags_before, rules: Rules = Rules(), blind=None,
               scores_before=(0, 0)) -> tuple[TeamScore, TeamScore]:
    """Score one hand for both teams (docs/rules.md, Scoring a hand).

    Args:
        bids: 4 ints by seat, 0..13; 0 is Nil.
        tricks: 4 ints by seat, tricks taken (sum 13).
        bags_before: 2 ints by team, bag count carried into the hand (0..bag_limit-1).
        rules: the switches (``nil_bonus``, ``blind_nil_bonus``, ``bag_limit``, ``bag_penalty``,
            ``failed_nil_tricks_count``, ``bags_score_points``).
        blind: 4 bools by seat, True for a Blind Nil (its bid must be 0); default none.
        scores_before: 2 ints by team, totals before the hand (only fills ``TeamScore.total``).
    Returns:
        ``(TeamScore, TeamScore)`` for team 0 and team 1.
    Raises:
        ValueError: not 4 bids, 4 trick counts, 2 bag counts and 2 scores (ints; bools refused),
            a bid outside 0..13, a negative trick count, trick counts that do not sum to 13 (a
            hand has 13 tricks), a carried bag count outside 0..bag_limit-1, a blind flag that is
            not a bool, or a blind bid that is not 0.
    """
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be a spades_env.Rules, got {type(rules).__name__}")
    if blind is None:
        blind = (False, False, False, False)

    def int_list(x, n, what):
        try:
            vals = list(x)
        except TypeError:
            raise ValueError(f"score_hand needs {n} {what} (ints), got {x!r}") from None
        if len(vals) != n:
            raise ValueError(f"score_hand needs 4 bids, 4 trick counts, 2 bag counts and 2 "
                             f"scores; got {len(vals)} {what}")
        if any(isinstance(v, (bool, np.bool_)) for v in vals):
            raise ValueError(f"{what} must be ints, got {x!r}")
        try:
            return [operator.index(v) for v in vals]
        except TypeError:
            raise ValueError(f"bids, tricks and bags must be ints, got {what}={x!r}") from None

    bids = int_list(bids, 4, "bids")
    tricks = int_list(tricks, 4, "trick counts")
    bags_before = int_list(bags_before, 2, "bag counts")
    scores_before = int_list(scores_before, 2, "scores")
    try:
        blind = list(blind)
    except TypeError:
        raise ValueError(f"blind needs 4 flags (one per seat), got {blind!r}") from None
    if len(blind) != 4 or not all(isinstance(b, (bool, np.bool_)) for b in blind):
        raise ValueError(f"blind needs 4 flags (one per seat, bools), got {blind!r}")
    for t in (0, 1):
        if bags_before[t] < 0:
            raise ValueError(f"bags_before of team {t} negative: {bags_before[t]}")
        if bags_before[t] >= rules.bag_limit:
            raise ValueError(f"bags_before of team {t} must be below bag_limit "
                             f"({rules.bag_limit}): {bags_before[t]}")
    for s in range(4):
        if not 0 <= bids[s] <= 13:
            raise ValueError(f"bid of seat {s} out of range 0..13: {bids[s]}")
        if tricks[s] < 0:
            raise ValueError(f"tricks of seat {s} negative: {tricks[s]}")
        if blind[s] and bids[s] != 0:
            raise ValueError(f"seat {s} is marked Blind Nil but bid {bids[s]}")
    if sum(tricks) != 13:
        raise ValueError(f"trick counts must sum to 13 (a hand has 13 tricks), got {tricks} "
                         f"(sum {sum(tricks)})")
    out = []
    for team in (0, 1):
        seats = (team, team + 2)
        contract = 0
        taken = 0
        nil_points = 0
        bags = 0
        nil_tricks = 0
        for s in seats:
            if bids[s] == 0:
                bonus = rules.blind_nil_bonus if blind[s] else rules.nil_bonus
                if tricks[s] == 0:
                    nil_points += bonus
                else:
                    nil_points -= bonus
                    nil_tricks += tricks[s]
            else:
                contract += bids[s]
                taken += tricks[s]
        if rules.failed_nil_tricks_count and contract > 0:
            taken += nil_tricks  # they help the partner's contract (overtricks are bags)
        else:
            bags += nil_tricks  # a failed Nil's tricks are bags only
        made = None
        contract_points = 0
        if contract > 0:
            if taken >= contract:
                made = True
                contract_points = per_trick(rules, contract) * contract
                if rules.bags_score_points:
                    contract_points += taken - contract
                bags += taken - contract
            else:
                made = False
                contract_points = -10 * contract
        total_bags = bags_before[team] + bags
        penalties = total_bags // rules.bag_limit
        bag_penalty = -rules.bag_penalty * penalties
        bags_after = total_bags - penalties * rules.bag_limit
        hand_points = contract_points + nil_points + bag_penalty
        out.append(TeamScore(
            team=team,
            bids=(bids[seats[0]], bids[seats[1]]),
            blind=(bool(blind[seats[0]]), bool(blind[seats[1]])),
            tricks=(tricks[seats[0]], tricks[seats[1]]),
            contract=contract,
            contract_points=contract_points,
            made=made,
            bags=bags,
            nil_points=nil_points,
            bag_penalty=bag_penalty,
            hand_points=hand_points,
            total=scores_before[team] + hand_points,
            bags_after=bags_after,
        ))
    return out[0], out[1]


def per_trick(rules: Rules, contract: int) -> int:
    """Points per trick bid of a made team contract: 10, or 20 for a contract of at least
    ``big_bid_double`` tricks (docs/rules.md, House rules)."""
    return 20 if rules.big_bid_double and contract >= rules.big_bid_double else 10


def moon_team(rules: Rules, teams) -> int | None:
    """The team that shot the moon this hand under ``moon_wins`` (a team contract of 13 made), or
    None. ``teams``: the hand's two ``TeamScore``."""
    if rules.moon_wins:
        for t in teams:
            if t.contract == 13 and t.made:
                return t.team
    return None


def game_outcome(scores, rules: Rules, moon: int | None = None) -> int | None:
    """Winner after a complete hand, or ``None`` to play on (docs/rules.md, End of the game).

    Args:
        scores: 2 ints, team totals after the hand.
        moon: the team that shot the moon in that hand (``moon_team``): it wins at once.
    Returns:
        0 or 1 for the winning team; ``None`` when nobody has won yet (including equal totals when
        both teams reached an ending condition).
    Raises:
        ValueError: ``scores`` is not 2 ints, or ``rules`` is not a ``Rules``.
    """
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be a spades_env.Rules, got {type(rules).__name__}")
    if not (isinstance(scores, (list, tuple)) and len(scores) == 2
            and is_int(scores[0]) and is_int(scores[1])):
        try:
            vals = None if isinstance(scores, (str, bytes, dict)) else list(scores)
        except TypeError:
            vals = None
        if vals is None or len(vals) != 2 or not all(map(is_int, vals)):
            raise ValueError(f"scores must be 2 ints (one per team), got {scores!r}")
        scores = vals
    if moon is not None:
        if moon not in (0, 1):
            raise ValueError(f"moon must be None or a team 0 or 1, got {moon!r}")
        return moon
    ended = []
    for t in (0, 1):
        if scores[t] >= rules.target_score:
            ended.append((t, "target"))
        elif rules.loss_threshold is not None and scores[t] <= rules.loss_threshold:
            ended.append((t, "loss"))
    if not ended:
        return None
    if len(ended) == 1:
        t, why = ended[0]
        return t if why == "target" else 1 - t
    if scores[0] == scores[1]:
        return None
    return 0 if scores[0] > scores[1] else 1


__all__ = ["Rules", "PRESETS", "legal_bids", "illegal_bid_reason", "blind_nil_offered",
           "BID_NUMBERS", "BLIND_NIL_BIT", "LOOK_BIT", "exchanges", "exchange_queue",
           "passes_for_nil", "first_leader", "first_lead_mask", "trick_winner",
           "trick_winner_unchecked", "card_beats", "BEATS", "Deck", "STANDARD_DECK", "JOKERS_DECK",
           "DECKS",
           "cards_that_beat", "legal_cards_mask", "illegal_card_reason", "failed_to_follow",
           "FAILED_TO_FOLLOW", "voids_revealed", "VOIDS_REVEALED", "spades_broken_after",
           "voids_of_plays", "legal_cards_batch", "LEGAL_CARDS_BY_SUITS", "TeamScore",
           "HandResult", "score_hand", "game_outcome", "per_trick", "moon_team", "SPADES_MASK"]
