"""Arena: measure two players against each other with duplicate deals.

Usage::

    spades arena --team0 hard --team1 medium --games 200 --seed 1 [--out result.json]
    spades arena --team0 medium --team1 easy --hands 2000 --seed 1

**Duplicate deals.** Games come in pairs that share one deal sequence (the same game seed, so the
k-th hand of both games is dealt the same cards by the same dealer). In the first game of a pair
side A sits in seats 0 and 2 and side B in seats 1 and 3; in the second the seats are rotated by one,
so each side receives the cards the other side held. Luck of the deal cancels within a pair.

**Full games** (default) are played to the rules' target (``Rules``, default 500). A game still
running after ``hand_cap`` hands (default 100) stops as a *truncation* and counts as a draw (docs/rules.md
allows a hand cap as a truncation). **Single hands** (``--hands N``): N deals, each played twice (the
sides swapped), one hand each from 0-0; only point differences and contract statistics are reported.

Statistics (``scipy.stats``): games won with a Clopper-Pearson 95% interval
(``binomtest(...).proportion_ci``; a truncated game counts as half a win in the point estimate, as
not a win in the interval); the average point difference per hand (side A minus side B, hand points
including bag penalties) with a Student-t 95% interval over the per-pair differences (each pair's
total difference divided by its number of hands), so the interval respects the pairing; and per side:
contracts made/set, Nil and Blind Nil bids and successes, bags per hand, average team contract, and
seconds per decision (mean and median of the time spent in ``act``).

**Game records** (``--records PATH.jsonl``; ``play_match(..., keep_records=True)``): every game
of the match as a game record of the play app's replay view (``spades_env.play.replay``: one JSON
object per line, ``{"format": "spades_env.game_record", "version": 1, "players": [4 names by
seat], "game": SpadesGame.to_dict()}``), line ``2k`` and ``2k + 1`` the two games of duplicate pair
``k``; names say the side and player, e.g. ``North (A: hard)``. In ``--hands`` mode each record is
a game stopped after its single hand. The file is written atomically after the match (complete or
absent) and its path is checked before the match starts. Open it with
``spades play --records PATH.jsonl`` (Watch).

As a library: ``result = play_match("medium", "easy", games=100, seed=1)`` returns an ``ArenaResult``.
A player is a ``make_bot`` name, an object with ``act(view)`` (used for both seats of its side), or a
callable ``factory(seed) -> player`` (called once per seat, per game, with a derived seed).
"""

from __future__ import annotations

if __name__ == "__main__":  # the 0.7 form of ``spades arena``, removed in 0.9.0
    import sys
    print("error: `python -m spades_env.arena` was removed in 0.9.0: use `spades arena`",
          file=sys.stderr)
    sys.exit(2)

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from .arena_result import ArenaResult, SideStats
from .engine import IllegalActionError, Phase, SpadesGame
from .rules import HandTally, Rules

__all__ = ["SideStats", "ArenaResult", "play_match", "write_json_atomic", "write_records_atomic",
           "jsonable", "build_parser", "main"]


# --------------------------------------------------------------------------- players
def _player_label(p) -> str:
    if isinstance(p, str):
        return p
    return getattr(p, "name", None) or type(p).__name__


def _make_players(spec, seeds) -> list:
    """Two players (one per seat of a side) from a spec: name, object with act, or factory."""
    if isinstance(spec, str):
        from .bots import make_bot
        return [make_bot(spec, seed=s) for s in seeds]
    if hasattr(spec, "act"):
        return [spec, spec]
    if callable(spec):
        out = [spec(s) for s in seeds]
        for o in out:
            if not hasattr(o, "act"):
                raise ValueError(f"player factory returned {o!r}, which has no act(view) method")
        return out
    raise ValueError(f"a player must be a bot name, an object with act(view) or a factory, "
                     f"got {spec!r}")


# --------------------------------------------------------------------------- one game
def _play_one(game: SpadesGame, seat_players: list, seat_side: list, sides, hand_cap: int,
              single_hand: bool) -> tuple[bool, int | None]:
    """Play ``game`` until over (or the cap); record decision times. Returns (truncated, winner
    side or None)."""
    perf = time.perf_counter
    times = (sides[0]._times, sides[1]._times)
    while game.phase != Phase.GAME_OVER:
        if single_hand and game.hand_number >= 1:
            break
        if game.hand_number >= hand_cap:
            return True, None
        p = game.current_player
        view = game.view(p)
        t0 = perf()
        action = seat_players[p].act(view)
        times[seat_side[p]].append(perf() - t0)
        try:
            game.apply(action)
        except IllegalActionError as e:
            side = "A (team0)" if seat_side[p] == 0 else "B (team1)"
            raise ValueError(f"side {side} in seat {p} returned an illegal action {action!r}: "
                             f"{e}") from None
    if game.phase == Phase.GAME_OVER:
        return False, seat_side[game.winner]  # winner team t = the side on seat t
    return False, None


def _record_hands(game: SpadesGame, seat_side: list, sides) -> list[int]:
    """Add the game's hand statistics to the sides (``HandTally``); return total points per
    side."""
    pts = [0, 0]
    tallies = (HandTally(), HandTally())
    for hr in game.hand_results:
        for team, ts in enumerate(hr.teams):
            pts[seat_side[team]] += ts.hand_points
            tallies[seat_side[team]].add(ts)
    for st, t in zip(sides, tallies):
        for f in _TALLIED:
            setattr(st, f, getattr(st, f) + getattr(t, f))
        st._bid_total += t.bid_total
        st._bag_penalty_points += t.bag_penalty
    return pts


_TALLIED = ("hands", "points", "contracts", "contracts_made", "contracts_set", "nil_bids",
            "nil_made", "blind_nil_bids", "blind_nil_made", "bags")


# --------------------------------------------------------------------------- match
_SUMMED = _TALLIED + ("_bid_total", "_bag_penalty_points")


def _merge_side(into: SideStats, part: SideStats) -> None:
    """Add the per-pair totals of ``part`` to ``into``."""
    for f in _SUMMED:
        setattr(into, f, getattr(into, f) + getattr(part, f))
    into._times.extend(part._times)


def play_pair(team0, team1, rules: Rules, mode: str, hand_cap: int, seq,
               keep_games: bool = False) -> tuple:
    """Play one duplicate pair (two games or two single hands on one deal sequence).

    ``seq`` is the pair's ``np.random.SeedSequence``: the game seed and the four bot seeds derive
    from it alone, so a pair's result does not depend on which process plays it. Returns
    ``(side totals (SideStats, SideStats), point difference per hand, game seed, truncated games,
    games won per side, wins per side with a truncation as 1/2, games)``; ``games`` is the two
    games' ``SpadesGame.to_dict()`` (rotation 0, then 1) with ``keep_games``, else None.
    """
    sides = (SideStats(name="A"), SideStats(name="B"))
    game_seed, bot_seq = seq.generate_state(2, dtype=np.uint64).tolist()
    bot_seeds = np.random.SeedSequence(int(bot_seq)).generate_state(4).tolist()
    pts = [0, 0]
    n_hands = 0
    truncated = 0
    wins = [0, 0]
    halves = [0.0, 0.0]
    games = [] if keep_games else None
    for rot in (0, 1):
        # rot 0: side A on seats 0 and 2; rot 1: seats rotated by one, A on 1 and 3
        seat_side = [(s + rot) & 1 for s in range(4)]
        pa = _make_players(team0, bot_seeds[0:2])
        pb = _make_players(team1, bot_seeds[2:4])
        seat_players = [None] * 4
        for k, s in enumerate((rot, rot + 2)):
            seat_players[s] = pa[k]
        for k, s in enumerate((1 - rot, 3 - rot)):
            seat_players[s] = pb[k]
        game = SpadesGame(rules, seed=int(game_seed))
        trunc, win_side = _play_one(game, seat_players, seat_side, sides, hand_cap,
                                    mode == "hands")
        p = _record_hands(game, seat_side, sides)
        if games is not None:
            games.append(game.to_dict())
        pts[0] += p[0]
        pts[1] += p[1]
        n_hands += len(game.hand_results)
        if mode == "games":
            if trunc:
                truncated += 1
                halves[0] += 0.5
                halves[1] += 0.5
            else:
                wins[win_side] += 1
                halves[win_side] += 1.0
    return (sides, (pts[0] - pts[1]) / max(1, n_hands), int(game_seed), truncated, wins, halves,
            games)


_SEAT_NAMES = ("North", "East", "South", "West")


def _seat_names(labels, rot: int) -> list[str]:
    """Record names by seat for rotation ``rot``: ``North (A: hard)``, ``East (B: medium)``...
    (side A holds the seats ``rot`` and ``rot + 2``)."""
    out = []
    for s in range(4):
        side = (s + rot) & 1
        out.append(f"{_SEAT_NAMES[s]} ({'AB'[side]}: {labels[side]})"[:40])
    return out


GAME_HANDS = 25
"""hands a full game is counted as when the arena estimates one duplicate pair's work (most
games to 500 end within 20 hands; ``hand_cap`` when lower)."""


def play_match(team0, team1, games: int | None = 100, seed: int | None = 0,
               rules: Rules | None = None, hands: int | None = None, hand_cap: int = 100,
               progress: bool = False, names: tuple | None = None,
               workers: int = 1, ray_address: str | None = None,
               keep_records: bool = False) -> ArenaResult:
    """Play a duplicate match between two players and return an ``ArenaResult``.

    Args:
        team0, team1: side A and side B: a ``make_bot`` name (``"medium"``, ``"checkpoint:PATH"``),
            an object with ``act(view) -> action id`` (used as is for both seats of its side in
            every game, so its own RNG state carries over), or a factory ``f(seed) -> player``
            (called per seat and game with a seed derived from ``seed``).
        games: full games to play (even, >= 2: ``games / 2`` duplicate pairs). Ignored when
            ``hands`` is given.
        seed: match seed (int); every game seed and bot seed derives from it, so the same seed
            gives the same games.
        rules: the ``Rules`` (default ``standard``).
        hands: play this many single-hand deals instead (each twice, sides swapped); >= 2.
        hand_cap: a game reaching this many hands stops as a truncation (draw).
        progress: show a tqdm progress bar.
        names: labels for the two sides (default: the bot names).
        workers: processes playing pairs in parallel (``spawn`` start method; both players must
            then be ``make_bot`` names, and a script calling this must guard its entry point with
            ``if __name__ == "__main__":``). The result is the same for any worker count (each
            pair's seeds derive from ``seed`` and its index alone), except the decision times.
        ray_address: play the pairs as Ray tasks on the cluster at this address (``"auto"``,
            ``"HOST:PORT"``; ``spades_env.ray_cluster``), the package shipped to the nodes through
            Ray's ``runtime_env``; same result as one process. Players must be ``make_bot`` names.
        keep_records: keep every game as a game record of the play app's replay view in
            ``result.records`` (see the module docstring; ``write_records_atomic`` writes them).
    Raises:
        ValueError: a bad count, an unknown bot name, a search bot whose one duplicate pair or
            whose workers together would cost more than ``bots.work.LIMITS`` (checked before
            any worker starts), or a player returning an illegal action
            (``IllegalActionError``).
    """
    rules, hand_cap, pairs, mode, workers = _check_match_args(
        rules, games, seed, hands, hand_cap, names, workers, keep_records)
    _check_players(team0, team1, rules, mode, hand_cap, pairs, workers, ray_address)
    labels = names or (_player_label(team0), _player_label(team1))
    sides = (SideStats(name=str(labels[0])), SideStats(name=str(labels[1])))
    pair_seqs = np.random.SeedSequence(seed).spawn(pairs)
    t_start = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=2 * pairs, unit="hand" if mode == "hands" else "game", file=sys.stderr,
                   dynamic_ncols=True)
    try:
        results = _play_pairs((team0, team1, rules, mode, hand_cap), pair_seqs, keep_records,
                              workers, ray_address, bar)
    finally:
        if bar is not None:
            bar.close()
    # merge in pair order, so any worker count gives the same result
    pair_diffs, pair_seeds, truncated, records = _merge_pairs(results, labels, sides,
                                                              keep_records, mode)
    d = np.asarray(pair_diffs, dtype=float)
    mean, ci = _mean_ci(d)
    adj_mean, adj_ci = float("nan"), (float("nan"), float("nan"))
    if mode == "hands":
        adj_mean, adj_ci = _bag_adjusted(d, results, rules)
    return ArenaResult(
        mode=mode, seed=None if seed is None else int(seed), rules=rules.to_dict(),
        hand_cap=hand_cap, games=2 * pairs, pairs=pairs, truncated=truncated, sides=sides,
        point_diff_per_hand=mean, point_diff_ci=ci, pair_diffs=[float(x) for x in d],
        pair_seeds=pair_seeds, seconds=time.perf_counter() - t_start,
        bag_adjusted_diff=adj_mean, bag_adjusted_ci=adj_ci, records=records,
    )


def _check_match_args(rules, games, seed, hands, hand_cap, names, workers, keep_records):
    """``play_match``'s rules, counts and options checked (``ValueError`` otherwise), as
    ``(rules, hand_cap, pairs, mode, workers)``."""
    rules = rules if rules is not None else Rules()
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be a spades_env.Rules, got {type(rules).__name__}")
    if isinstance(hand_cap, bool) or not isinstance(hand_cap, (int, np.integer)) or hand_cap < 1:
        raise ValueError(f"hand_cap must be a positive int, got {hand_cap!r}")
    if names is not None and (not isinstance(names, (tuple, list)) or len(names) != 2):
        raise ValueError(f"names must be two labels (side A, side B), got {names!r}")
    if hands is not None:
        if isinstance(hands, bool) or not isinstance(hands, (int, np.integer)) or hands < 2:
            raise ValueError(f"hands must be an int >= 2, got {hands!r}")
        pairs, mode = int(hands), "hands"
    else:
        if isinstance(games, bool) or not isinstance(games, (int, np.integer)) or games < 2 \
                or games % 2:
            raise ValueError(f"games must be an even int >= 2 (duplicate pairs), got {games!r}")
        pairs, mode = int(games) // 2, "games"
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                             or seed < 0):
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    if not isinstance(workers, (int, np.integer)) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    if not isinstance(keep_records, bool):
        raise ValueError(f"keep_records must be a bool, got {keep_records!r}")
    return rules, int(hand_cap), pairs, mode, int(workers)


def _check_players(team0, team1, rules: Rules, mode: str, hand_cap: int, pairs: int,
                   workers: int, ray_address) -> None:
    """Both players checked before any game is played: ``make_bot`` names for workers or Ray, a
    known name or checkpoint, a network that can play ``rules``, a search bot's work within
    ``bots.work.LIMITS``."""
    if workers > 1 or ray_address is not None:
        for spec in (team0, team1):
            if not isinstance(spec, str):
                raise ValueError("workers > 1 or ray_address needs both players given by make_bot "
                                 "name (an "
                                 "object or factory player cannot be shared between processes); "
                                 f"got {spec!r}")
    from .bots import make_bot
    from .bots.work import check_task
    for spec in (team0, team1):  # a bad name or checkpoint fails now, before any game is played
        if isinstance(spec, str):
            bot = make_bot(spec, seed=0)
            if hasattr(bot, "check_rules"):  # a network that cannot play these rules
                bot.check_rules(rules)
            work = getattr(bot, "work", None)
            if work is not None:  # a search bot: one pair's work and the workers' memory
                check_task(f"arena player {spec}", work,
                           2 * (1 if mode == "hands" else min(hand_cap, GAME_HANDS)), 2,
                           1 if ray_address is not None else min(workers, pairs))


def _play_pairs(match: tuple, pair_seqs, keep_records: bool, workers: int, ray_address,
                bar) -> list:
    """``play_pair(*match, seq, keep_records)`` for each pair's seed sequence, as a list in pair
    order: as Ray tasks, in this process, or in ``workers`` processes; ``bar`` (or None) counts
    the games."""
    results: list = [None] * len(pair_seqs)
    if ray_address is not None:
        from .ray_cluster import map_on_ray
        return map_on_ray(ray_address, play_pair,
                          [(*match, seq, keep_records) for seq in pair_seqs],
                          on_result=None if bar is None else lambda _: bar.update(2))
    if workers == 1:
        for i, seq in enumerate(pair_seqs):
            results[i] = play_pair(*match, seq, keep_records)
            if bar is not None:
                bar.update(2)
        return results
    from concurrent.futures import as_completed

    from .workers import worker_pool
    # the workers end with the match: a failed pair, Ctrl-C or SIGTERM stops them all
    with worker_pool(workers, executor=True) as pool:
        futs = {pool.submit(play_pair, *match, seq, keep_records): i
                for i, seq in enumerate(pair_seqs)}
        for f in as_completed(futs):
            results[futs[f]] = f.result()
            if bar is not None:
                bar.update(2)
    return results


def _merge_pairs(results: list, labels, sides: tuple, keep_records: bool, mode: str):
    """The pairs' results merged into ``sides`` in pair order, their per-side figures finished;
    returns ``(pair_diffs, pair_seeds, truncated, records)``."""
    pair_diffs: list[float] = []
    pair_seeds: list[int] = []
    truncated = 0
    wins_half = [0.0, 0.0]
    records: list[dict] = []
    if keep_records:
        from .records import RECORD_FORMAT, RECORD_VERSION
    for r in results:
        part, diff, game_seed, trunc, wins, halves, games = r
        if keep_records:
            records += [{"format": RECORD_FORMAT, "version": RECORD_VERSION,
                         "players": _seat_names(labels, rot), "game": g}
                        for rot, g in enumerate(games)]
        pair_seeds.append(game_seed)
        pair_diffs.append(diff)
        truncated += trunc
        for k in (0, 1):
            _merge_side(sides[k], part[k])
            sides[k].games_won += wins[k]
            wins_half[k] += halves[k]
    n_games = 2 * len(results)
    for k, st in enumerate(sides):
        if mode == "games":
            st.win_rate = wins_half[k] / n_games
            from scipy import stats
            ci = stats.binomtest(st.games_won, n_games).proportion_ci(0.95, method="exact")
            st.win_ci = (float(ci.low), float(ci.high))
        if st.hands:
            st.bags_per_hand = st.bags / st.hands
            st.avg_team_bid = st._bid_total / st.hands
        st.decisions = len(st._times)
        if st._times:
            arr = np.asarray(st._times)
            st.sec_per_decision_mean = float(arr.mean())
            st.sec_per_decision_median = float(np.median(arr))
    return pair_diffs, pair_seeds, truncated, records


def _bag_adjusted(d: np.ndarray, results: list, rules: Rules) -> tuple[float, tuple]:
    """Single hands: the per-pair differences ``d`` with each bag at ``bag_penalty /
    bag_limit`` instead of any penalty it tripped this hand; mean and 95% interval."""
    bag_cost = rules.bag_penalty / rules.bag_limit

    def charge(st: SideStats) -> float:
        return bag_cost * st.bags + st._bag_penalty_points

    adj = np.asarray([(charge(r[0][0]) - charge(r[0][1])) / max(1, r[0][0].hands)
                      for r in results], dtype=float)
    return _mean_ci(d - adj)

def _mean_ci(d: np.ndarray) -> tuple[float, tuple]:
    """Mean of the per-pair values ``d`` and its Student-t 95% interval (``scipy.stats``)."""
    mean = float(d.mean())
    if len(d) >= 2 and d.std(ddof=1) > 0:
        from scipy import stats
        lo, hi = stats.t.interval(0.95, len(d) - 1, loc=mean, scale=stats.sem(d))
        return mean, (float(lo), float(hi))
    if len(d) >= 2:
        return mean, (mean, mean)
    return mean, (float("nan"), float("nan"))


def jsonable(obj):
    """``obj`` with NaN floats replaced by ``None`` and tuples by lists (strict JSON)."""
    if isinstance(obj, float):
        return None if math.isnan(obj) else obj
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def write_json_atomic(path: str, obj) -> None:
    """Write ``obj`` as strict JSON (NaN -> null) to ``path`` atomically
    (``spades_env.fileio.write_atomic``: complete or absent, mode 0o666 less the umask).

    Raises:
        OSError: the file cannot be written (the message names the path and the reason).
        ValueError: ``obj`` is not JSON-serialisable.
    """
    from .fileio import write_atomic
    text = json.dumps(jsonable(obj), indent=1, allow_nan=False)
    write_atomic(path, text.encode("utf-8"), prefix=".arena-", suffix=".json")


def write_records_atomic(path: str, records) -> None:
    """Write game records (``ArenaResult.records``) to ``path`` as JSON lines, one game a line,
    atomically (``spades_env.fileio.write_atomic``: complete or absent, mode 0o666 less the umask).
    The play app's replay view opens the file (``spades play --records PATH``).

    Raises:
        OSError: the file cannot be written (the message names the path and the reason).
        ValueError: a record is not JSON-serialisable.
    """
    from .fileio import write_atomic
    text = "".join(json.dumps(r, separators=(",", ":"), allow_nan=False) + "\n" for r in records)
    write_atomic(path, text.encode("utf-8"), prefix=".arena-", suffix=".jsonl")


# --------------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    """The parser of ``spades arena`` (its shared options: ``spades_env.options``)."""
    from . import options as opt
    p = argparse.ArgumentParser(
        prog="spades arena",
        description="Play two players against each other with duplicate deals and report "
                    "win rates and point differences with 95% confidence intervals.")
    p.add_argument("--team0", required=True, metavar="PLAYER",
                   help="side A: random, easy, medium, hard, insane, expert or checkpoint:PATH")
    p.add_argument("--team1", required=True, metavar="PLAYER", help="side B (same choices)")
    opt.add_games(p, "full games, an even number",
                  hands="play this many single-hand deals (each twice) instead of full games")
    opt.add_seed(p)
    opt.add_rules(p, "standard", "standard")
    p.add_argument("--target", type=int, default=None, help="override the target score")
    p.add_argument("--hand-cap", type=int, default=100, help="hands before a game is truncated")
    opt.add_out(p, "also write the full result to this JSON file", metavar="PATH.json",
                old=("--json",))
    p.add_argument("--records", default=None, metavar="PATH.jsonl",
                   help="also write every game as a game record (one JSON line each) that the "
                        "play app's replay view opens: spades play --records PATH")
    p.add_argument("--workers", type=int, default=1,
                   help="processes playing duplicate pairs in parallel (same result as 1)")
    opt.add_ray(p, "play the duplicate pairs as Ray tasks on the cluster at ADDRESS ('auto' or "
                   "HOST:PORT; needs pip install -e '.[ray]'); same result as 1 process")
    opt.add_quiet(p, "print only the result (no progress bar)", old=("--no-progress",))
    return p


def main(argv=None) -> int:
    """Command-line entry point (see the module docstring)."""
    from .options import match_problem
    args = build_parser().parse_args(argv)
    from .bots import bot_inputs
    from .fileio import check_output_file, check_outputs_apart
    try:  # fail now, not after the whole match
        # no output may be (or sit in) a file the match reads: a checkpoint:PATH of either side
        check_outputs_apart({"--out": args.out, "--records": args.records},
                            bot_inputs("--team0", args.team0) + bot_inputs("--team1", args.team1))
        if args.out is not None:
            check_output_file(args.out, "--out")
        if args.records is not None:
            if not args.records.endswith(".jsonl"):
                raise ValueError(f"--records {args.records}: the file name must end in .jsonl "
                                 f"(one game record per line, what the replay view reads)")
            check_output_file(args.records, "--records")
            if args.out is not None and \
                    os.path.realpath(args.out) == os.path.realpath(args.records):
                raise ValueError(f"--out and --records name the same file {args.out}")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    problem = match_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        rules = Rules.parse(args.rules)
        if args.target is not None:
            rules = Rules.from_dict({**rules.to_dict(), "target_score": args.target})
        result = play_match(args.team0, args.team1, games=args.games, seed=args.seed,
                            rules=rules, hands=args.hands, hand_cap=args.hand_cap,
                            progress=not args.quiet, workers=args.workers,
                            ray_address=args.ray, keep_records=args.records is not None)
    except (ValueError, OSError, RuntimeError, ImportError) as e:
        # OSError: e.g. checkpoint:PATH with no file there; RuntimeError: a Ray node that cannot
        # import the package (spades_env.ray_cluster.check_cluster)
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(result.summary())
    if args.out is not None:
        try:
            write_json_atomic(args.out, result.to_dict())
        except OSError as e:  # the message names the file and the reason
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"wrote {args.out}")
    if args.records is not None:
        try:
            write_records_atomic(args.records, result.records)
        except OSError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"wrote {args.records} ({len(result.records)} game records)")
    return 0

