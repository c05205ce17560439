"""The result of an arena match (``spades_env.arena.play_match``): ``SideStats``, one side's
totals and statistics, and ``ArenaResult``, the whole match with its intervals, as plain data
(``to_dict``, the ``--out`` file) and as a text table (``summary``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace


@dataclass
class SideStats:
    """Totals and statistics of one side over a match.

    Attributes:
        name: the player's label.
        games_won: games won (int); ``win_rate``: (won + 0.5 * truncated) / games (float, nan in
            ``--hands`` mode); ``win_ci``: Clopper-Pearson 95% interval of won / games.
        hands: hands played (the same for both sides).
        points: total hand points (int, bag penalties included).
        contracts: hands with a contract; ``contracts_made`` / ``contracts_set``: made or set.
        nil_bids / nil_made: Nil bids (not blind) and those that succeeded; ``blind_nil_bids`` /
            ``blind_nil_made`` the same for Blind Nil.
        bags: bags taken (overtricks plus failed Nil tricks); ``bags_per_hand`` = bags / hands.
        avg_team_bid: mean contract (sum of the non-Nil bids) per hand.
        decisions: calls to ``act``; ``sec_per_decision_mean`` / ``_median``: seconds per call.
    """

    name: str
    games_won: int = 0
    win_rate: float = float("nan")
    win_ci: tuple = (float("nan"), float("nan"))
    hands: int = 0
    points: int = 0
    contracts: int = 0
    contracts_made: int = 0
    contracts_set: int = 0
    nil_bids: int = 0
    nil_made: int = 0
    blind_nil_bids: int = 0
    blind_nil_made: int = 0
    bags: int = 0
    bags_per_hand: float = float("nan")
    avg_team_bid: float = float("nan")
    decisions: int = 0
    sec_per_decision_mean: float = float("nan")
    sec_per_decision_median: float = float("nan")
    _bid_total: int = field(default=0, repr=False)
    _bag_penalty_points: int = field(default=0, repr=False)  # <= 0, included in points
    _times: list = field(default_factory=list, repr=False)


@dataclass
class ArenaResult:
    """Outcome of ``play_match``.

    Attributes:
        mode: ``"games"`` or ``"hands"``.
        seed: the match seed; ``rules``: the ``Rules`` as a dict; ``hand_cap``: hands per game cap.
        games: games played (2 per duplicate pair; in hands mode, single-hand deals played).
        pairs: duplicate pairs.
        truncated: games stopped by the hand cap (draws).
        sides: ``(SideStats, SideStats)`` for side A (``team0``) and side B (``team1``).
        point_diff_per_hand: mean over pairs of (A points - B points) / hands in the pair.
        point_diff_ci: Student-t 95% interval of that mean (nan with fewer than 2 pairs).
        pair_diffs: the per-pair differences per hand (list of floats, in pair order).
        bag_adjusted_diff / bag_adjusted_ci: in ``hands`` mode, the same difference with every bag
            charged its long-run cost ``bag_penalty / bag_limit`` (10 points) in place of any bag
            penalty it tripped: single hands from 0-0 reach the penalty only with a very low
            ``bag_limit``, so the plain difference counts a bag as +1 point. nan in ``games``
            mode, where the penalty is played out.
        pair_seeds: the game seed of each pair (both games of a pair use the same deals).
        seconds: wall time of the match.
        records: with ``keep_records``, a game record (dict, the play app's replay format; see
            the module docstring) of every game in order (pair ``k``: ``2k`` and ``2k + 1``), else
            empty. Not part of ``to_dict``.
    """

    mode: str
    seed: int | None
    rules: dict
    hand_cap: int
    games: int
    pairs: int
    truncated: int
    sides: tuple
    point_diff_per_hand: float
    point_diff_ci: tuple
    pair_diffs: list
    pair_seeds: list
    seconds: float
    bag_adjusted_diff: float = float("nan")
    bag_adjusted_ci: tuple = (float("nan"), float("nan"))
    records: list = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        """The result as plain data (``--out``), without the private fields and ``records``."""
        d = asdict(replace(self, records=[]))
        d.pop("records")
        for s in d["sides"]:
            s.pop("_bid_total", None)
            s.pop("_bag_penalty_points", None)
            s.pop("_times", None)
        return d

    def summary(self) -> str:
        """A text table of the result, one column per side."""
        a, b = self.sides
        lines = [f"arena: {a.name} (A) vs {b.name} (B), {self.mode} mode, {self.pairs} duplicate "
                 f"pairs = {self.games} {'games' if self.mode == 'games' else 'hands'}, seed "
                 f"{self.seed}, {self.seconds:.1f} s"]
        lines.append(f"point difference per hand (A - B): {self.point_diff_per_hand:+.2f}  "
                     f"{_ci_text(self.point_diff_ci)}")
        if self.mode == "hands":
            lines.append(f"  with each bag at its long-run cost: {self.bag_adjusted_diff:+.2f}  "
                         f"{_ci_text(self.bag_adjusted_ci)}")
        if self.mode == "games":
            lines.append(f"truncated games (hand cap {self.hand_cap}, draws): {self.truncated}")

        def pct(x, n):
            return f"{x}/{n} ({100.0 * x / n:.1f}%)" if n else f"{x}/0"

        rows = []
        if self.mode == "games":
            # the percentage next to won/games is won/games (what the interval below is about);
            # the win rate with draws (truncations) as half a win gets its own row
            rows.append(("games won", *(f"{s.games_won}/{self.games} "
                                        f"({100 * s.games_won / self.games:.1f}%)"
                                        for s in (a, b))))
            if self.truncated:
                rows.append(("win rate, draws as 1/2", *(f"{100 * s.win_rate:.1f}%"
                                                         for s in (a, b))))
            rows.append(("win rate 95% CI", *(f"[{100 * s.win_ci[0]:.1f}%, {100 * s.win_ci[1]:.1f}%]"
                                              for s in (a, b))))
        rows += [
            ("hands", str(a.hands), str(b.hands)),
            ("points per hand", *(f"{s.points / s.hands:+.1f}" if s.hands else "nan"
                                  for s in (a, b))),
            ("contracts set", *(pct(s.contracts_set, s.contracts) for s in (a, b))),
            ("Nil bids (made)", *(f"{s.nil_bids} ({s.nil_made})" for s in (a, b))),
            ("Blind Nil bids (made)", *(f"{s.blind_nil_bids} ({s.blind_nil_made})"
                                        for s in (a, b))),
            ("bags per hand", *(f"{s.bags_per_hand:.2f}" for s in (a, b))),
            ("average team bid", *(f"{s.avg_team_bid:.2f}" for s in (a, b))),
            ("decisions", *(str(s.decisions) for s in (a, b))),
            ("ms per decision (mean)", *(f"{1e3 * s.sec_per_decision_mean:.3f}" for s in (a, b))),
            ("ms per decision (median)", *(f"{1e3 * s.sec_per_decision_median:.3f}"
                                           for s in (a, b))),
        ]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(max(len(r[1]) for r in rows), len(a.name) + 4)
        lines.append(f"{'':<{w0}}  {a.name + ' (A)':>{w1}}  {b.name + ' (B)'}")
        for r in rows:
            lines.append(f"{r[0]:<{w0}}  {r[1]:>{w1}}  {r[2]}")
        return "\n".join(lines)


def _ci_text(ci: tuple) -> str:
    """``95% CI [lo, hi]``, or why there is none (a single pair has no spread to measure)."""
    lo, hi = ci
    if math.isnan(lo) or math.isnan(hi):
        return "(no 95% CI: it needs at least 2 duplicate pairs)"
    return f"95% CI [{lo:+.2f}, {hi:+.2f}]"
