"""Scoring, written once for Python (docs/rules.md, Scoring a hand and End of the game): a hand's
score table (``score_hand``: a ``TeamScore`` per team, in a ``HandResult`` with the seats' bids
and tricks), the points per trick of a made contract (``per_trick``), shooting the moon
(``moon_team``) and the game's winner after a hand (``game_outcome``). Pure functions of their
arguments and the ``Rules``; the engine, saved games and the search bots' endgame solver call
them (the C kernel and the torch backend write the same rules for their own data).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, fields

import numpy as np

from .cards import is_int
from .variants import Rules

__all__ = ["TeamScore", "HandResult", "HandTally", "score_hand", "HandScorer", "pooled_tricks",
           "per_trick",
           "moon_team", "game_outcome"]


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


@dataclass
class HandTally:
    """One team's counts over hands, the one definition of a made or set contract, a Nil made
    and a bag that the arena, the trainer's evaluations and the play page's statistics share.

    Attributes (ints): ``hands``; ``points`` (hand points, bag penalties included); ``bags``;
    ``bag_penalty`` (<= 0); ``bid_total`` (sum of the contracts); ``contracts`` (hands with a
    contract) of which ``contracts_made`` / ``contracts_set``; ``nil_bids`` / ``nil_made`` (a
    Nil is made when its bidder takes no trick) and ``blind_nil_bids`` / ``blind_nil_made``.
    """

    hands: int = 0
    points: int = 0
    bags: int = 0
    bag_penalty: int = 0
    bid_total: int = 0
    contracts: int = 0
    contracts_made: int = 0
    contracts_set: int = 0
    nil_bids: int = 0
    nil_made: int = 0
    blind_nil_bids: int = 0
    blind_nil_made: int = 0

    def add(self, ts: TeamScore, partners=(0, 1)) -> None:
        """Count the team's line ``ts`` of one hand; the Nil bids of the ``partners`` only (0 the
        team's lower seat, 1 the higher, as in ``TeamScore.bids``)."""
        self.hands += 1
        self.points += ts.hand_points
        self.bags += ts.bags
        self.bag_penalty += ts.bag_penalty
        self.bid_total += ts.contract
        if ts.made is not None:
            self.contracts += 1
            self.contracts_made += ts.made
            self.contracts_set += not ts.made
        for i in partners:
            if ts.bids[i] == 0:
                made = ts.tricks[i] == 0
                if ts.blind[i]:
                    self.blind_nil_bids += 1
                    self.blind_nil_made += made
                else:
                    self.nil_bids += 1
                    self.nil_made += made


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
    bids, tricks, bags_before, blind, scores_before = _check_hand_args(
        bids, tricks, bags_before, rules, blind, scores_before)
    return (_team_score(0, bids, tricks, blind, bags_before[0], scores_before[0], rules),
            _team_score(1, bids, tricks, blind, bags_before[1], scores_before[1], rules))


class HandScorer:
    """``score_hand`` with everything but the trick counts fixed and checked once: for a search
    that scores many ways the same hand can end (``bots.solver.HandUtility``).

    ``HandScorer(bids, bags_before, rules, blind, scores_before)(tricks)`` is
    ``score_hand(bids, tricks, bags_before, rules, blind, scores_before)``, the same two
    ``TeamScore``; each call checks only ``tricks`` (4 non-negative ints summing to 13).

    Raises:
        ValueError: as ``score_hand``, the fixed arguments when constructed, the trick counts
            when called.
    """

    __slots__ = ("_args",)

    def __init__(self, bids, bags_before, rules: Rules = Rules(), blind=None,
                 scores_before=(0, 0)):
        bids, _t, bags_before, blind, scores_before = _check_hand_args(
            bids, (13, 0, 0, 0), bags_before, rules, blind, scores_before)
        self._args = (bids, blind, bags_before, scores_before, rules)

    def __call__(self, tricks) -> tuple[TeamScore, TeamScore]:
        """The hand's two ``TeamScore`` for 4 trick counts by seat."""
        tricks = _check_tricks(tricks)
        bids, blind, bags, scores, rules = self._args
        return (_team_score(0, bids, tricks, blind, bags[0], scores[0], rules),
                _team_score(1, bids, tricks, blind, bags[1], scores[1], rules))


def _check_hand_args(bids, tricks, bags_before, rules, blind, scores_before):
    """``score_hand``'s arguments checked (its ``Raises``) as plain lists of ints (of flags for
    ``blind``): ``(bids, tricks, bags_before, blind, scores_before)``."""
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be a spades_env.Rules, got {type(rules).__name__}")
    if blind is None:
        blind = (False, False, False, False)
    bids = _int_list(bids, 4, "bids")
    tricks = _int_list(tricks, 4, "trick counts")
    bags_before = _int_list(bags_before, 2, "bag counts")
    scores_before = _int_list(scores_before, 2, "scores")
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
        if blind[s] and bids[s] != 0:
            raise ValueError(f"seat {s} is marked Blind Nil but bid {bids[s]}")
    _check_tricks(tricks)
    return bids, tricks, bags_before, blind, scores_before


def _check_tricks(tricks) -> list[int]:
    """4 trick counts by seat as a list of ints (``score_hand``'s checks and messages: none
    negative, summing to 13)."""
    tricks = _int_list(tricks, 4, "trick counts")
    for s in range(4):
        if tricks[s] < 0:
            raise ValueError(f"tricks of seat {s} negative: {tricks[s]}")
    if sum(tricks) != 13:
        raise ValueError(f"trick counts must sum to 13 (a hand has 13 tricks), got {tricks} "
                         f"(sum {sum(tricks)})")
    return tricks


def _int_list(x, n: int, what: str) -> list[int]:
    """``x`` as a list of ``n`` ints (``what`` names them in the messages); bools refused."""
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


def _team_score(team: int, bids: list, tricks: list, blind: list, bags_before: int,
                score_before: int, rules: Rules) -> TeamScore:
    """The ``TeamScore`` of ``team`` (seats ``team`` and ``team + 2``), from checked arguments;
    ``bags_before`` and ``score_before`` are the team's."""
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
    total_bags = bags_before + bags
    penalties = total_bags // rules.bag_limit
    bag_penalty = -rules.bag_penalty * penalties
    bags_after = total_bags - penalties * rules.bag_limit
    hand_points = contract_points + nil_points + bag_penalty
    return TeamScore(
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
        total=score_before + hand_points,
        bags_after=bags_after,
    )

def pooled_tricks(bids, tricks) -> np.ndarray:
    """Final trick counts as a hand's points read them (``_team_score``): a seat that bid Nil
    counts on its own, while a team with no Nil bid is scored by its total only (its contract
    against the tricks its seats took together), so that total moves to the team's first seat
    and its partner's count becomes 0. Rows that pool alike score alike under any rules, so a
    search can value each pooled outcome once (``bots.solver.HandUtility.values``).

    Args:
        bids: 4 ints by seat (0 = Nil).
        tricks: ints ``[R, 4]`` by seat.
    Returns:
        int32 ``[R, 4]``, a new array.
    """
    out = np.array(tricks, np.int32)
    for t in (0, 1):
        if bids[t] and bids[t + 2]:
            out[:, t] += out[:, t + 2]
            out[:, t + 2] = 0
    return out


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
