"""The variants of Spades: ``Rules``, the switches of the ``standard`` profile (docs/rules.md,
Variant switches), with the checks that refuse a value out of range or switches that cannot hold
together, their text (``Rules.parse``, ``Rules.spec``), and the named rule sets ``PRESETS``
(docs/rules.md, Presets). A ``Rules`` plays with its deck (``Rules.deck``, ``spades_env.deck``).
The rules the switches decide are the pure functions of ``spades_env.rules`` (bidding, the
exchange, card play) and ``spades_env.scoring`` (a hand's score, the game's end).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .deck import JOKERS_DECK, STANDARD_DECK

__all__ = ["Rules", "PRESETS", "RULES_INT_MAX"]


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
