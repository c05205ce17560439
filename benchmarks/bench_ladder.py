"""Ladder benchmark: each bot level against the level below, with duplicate deals.

Pairs (upper level is side A): ``easy`` vs ``random``, ``medium`` vs ``easy``, ``hard`` vs
``medium``, ``insane`` vs ``hard``. Each pair is measured by ``spades_env.arena.play_match``; the
level beats the one below when the 95% interval of the average point difference per hand lies above
zero. Results are kept per pair in ``benchmarks/results/ladder.json`` and the whole table is
rewritten to ``benchmarks/results/ladder.md`` after every pair, so slow pairs can be run on their own
later without losing the others.

Usage::

    python benchmarks/bench_ladder.py                          # all pairs, 200 games each
    python benchmarks/bench_ladder.py --pairs easy medium --games 400
    python benchmarks/bench_ladder.py --pairs hard --games-for hard=60
    python benchmarks/bench_ladder.py --pairs insane --hands-for insane=100   # single hands
    python benchmarks/bench_ladder.py --pairs insane --games-for insane=200 --workers 2
    python benchmarks/bench_ladder.py --pairs --ablations 300   # medium vs medium minus one habit
    python benchmarks/bench_ladder.py --rules suicide --pairs easy medium hard \
        --hands-for easy=400 --hands-for medium=400 --hands-for hard=200   # a house-rules ladder

Options ``--games-for LEVEL=N`` and ``--hands-for LEVEL=N`` size each pair (slow PIMC levels).
A level whose bot module is missing is reported as not available.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spades_env.arena import jsonable, play_match  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.rules import Rules  # noqa: E402

LADDER = (("easy", "random"), ("medium", "easy"), ("hard", "medium"), ("insane", "hard"))
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
TIME_LIMITS_MS = {"medium": 1.0, "hard": 50.0, "insane": 500.0}  # the speed targets: median decision time


def _atomic_write(path: str, text: str) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".ladder-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _save(json_path: str, md_path: str, stored: dict, ablations: dict) -> None:
    _atomic_write(json_path, json.dumps(jsonable({"format": "spades_env.ladder", "pairs": stored,
                                                  "ablations": ablations}), indent=1,
                                        allow_nan=False))
    _atomic_write(md_path, render(stored, ablations))


def _load(path: str) -> tuple[dict, dict]:
    if not os.path.exists(path):
        return {}, {}
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a ladder results file ({e})") from None
    if not isinstance(d, dict) or d.get("format") != "spades_env.ladder":
        raise ValueError(f"{path}: not a ladder results file (missing format tag)")
    return d.get("pairs", {}), d.get("ablations", {})


def _row(upper: str, lower: str, res, workers: int = 1) -> dict:
    a, b = res.sides
    lo, hi = res.point_diff_ci
    return {
        "upper": upper, "lower": lower, "mode": res.mode, "pairs": res.pairs, "games": res.games,
        "seed": res.seed, "workers": workers, "truncated": res.truncated, "hands": a.hands,
        "games_won": [a.games_won, b.games_won], "win_rate": a.win_rate,
        "win_ci": list(a.win_ci), "diff": res.point_diff_per_hand, "diff_ci": [lo, hi],
        "beats": bool(lo > 0),
        "points_per_hand": [a.points / a.hands, b.points / b.hands],
        "set_rate": [a.contracts_set / max(1, a.contracts), b.contracts_set / max(1, b.contracts)],
        "nil": [[a.nil_bids, a.nil_made], [b.nil_bids, b.nil_made]],
        "bags_per_hand": [a.bags_per_hand, b.bags_per_hand],
        "avg_team_bid": [a.avg_team_bid, b.avg_team_bid],
        "ms_median": [1e3 * a.sec_per_decision_median, 1e3 * b.sec_per_decision_median],
        "ms_mean": [1e3 * a.sec_per_decision_mean, 1e3 * b.sec_per_decision_mean],
        "seconds": res.seconds,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _fmt_pct(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.1f}%"


ABLATIONS = ("cover_nil", "attack_nil", "set_opponents", "duck")


def run_ablations(games: int, seed: int) -> dict:
    """Full ``medium`` against ``medium`` with one play habit switched off, per habit."""
    from spades_env.bots.heuristic import MediumBot
    out = {}
    for habit in ABLATIONS:
        res = play_match("medium", lambda s, h=habit: MediumBot(s, **{h: False}), games=games,
                         seed=seed, names=("medium", f"medium without {habit}"))
        out[habit] = _row("medium", f"medium without {habit}", res)
        print(f"ablation {habit}: {res.point_diff_per_hand:+.2f} "
              f"[{res.point_diff_ci[0]:+.2f}, {res.point_diff_ci[1]:+.2f}]", flush=True)
    return out


def render(pairs: dict, ablations: dict | None = None) -> str:
    """The ladder table (markdown) from stored pair rows (and medium ablation rows)."""
    lines = [
        "# Bot ladder: each level against the level below",
        "",
        f"Rules: {', '.join(sorted({r.get('rules', 'standard') for r in pairs.values()})) or 'standard'}"
        " (docs/rules.md).",
        "",
        "Generated by `python benchmarks/bench_ladder.py` (duplicate deals: every deal sequence is",
        "played twice with the sides' seats rotated; full games to 500 with a 100-hand cap counted",
        "as a draw, or single hands in `hands` mode). Point difference = upper minus lower level,",
        "hand points including bag penalties, averaged per hand; its 95% interval is a Student-t",
        "interval over the duplicate pairs. Win-rate interval: Clopper-Pearson.",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores (shared), Python "
        f"{platform.python_version()}.",
        "",
        "| upper vs lower | mode | games (pairs) | upper wins | win rate 95% CI | "
        "point diff / hand [95% CI] | beats lower | sets upper / lower | bags/hand upper / lower "
        "| Nil bids (made) upper / lower | median ms/decision upper / lower | run |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = [f"{u}-{l}" for u, l in LADDER]
    for key in order + sorted(set(pairs) - set(order)):
        r = pairs.get(key)
        if r is None:
            u, l = key.split("-", 1)
            lines.append(f"| {u} vs {l} | - | not run | | | | | | | | | |")
            continue
        if r.get("unavailable"):
            lines.append(f"| {r['upper']} vs {r['lower']} | - | not available: "
                         f"{r['unavailable']} | | | | | | | | | |")
            continue
        games = (f"{r['games']} ({r['pairs']})" if r["mode"] == "games"
                 else f"{r['games']} hands ({r['pairs']})")
        if r["mode"] == "games":
            wins = f"{r['games_won'][0]}-{r['games_won'][1]}" + (
                f" ({r['truncated']} capped)" if r["truncated"] else "")
            ci = f"{_fmt_pct(r['win_rate'])} [{_fmt_pct(r['win_ci'][0])}, {_fmt_pct(r['win_ci'][1])}]"
        else:
            wins, ci = "-", "-"
        lines.append(
            f"| {r['upper']} vs {r['lower']} | {r['mode']} | {games} | {wins} | {ci} | "
            f"{r['diff']:+.1f} [{r['diff_ci'][0]:+.1f}, {r['diff_ci'][1]:+.1f}] | "
            f"{'yes' if r['beats'] else 'NO'} | "
            f"{_fmt_pct(r['set_rate'][0])} / {_fmt_pct(r['set_rate'][1])} | "
            f"{r['bags_per_hand'][0]:.2f} / {r['bags_per_hand'][1]:.2f} | "
            f"{r['nil'][0][0]} ({r['nil'][0][1]}) / {r['nil'][1][0]} ({r['nil'][1][1]}) | "
            f"{r['ms_median'][0]:.3f} / {r['ms_median'][1]:.3f} | "
            f"seed {r['seed']}, "
            f"{'%d processes, ' % r['workers'] if r.get('workers', 1) > 1 else ''}"
            f"{r['seconds']:.0f} s, {r['date']} |")
    lines += ["", "## Decision time (median over the matches, time spent in `act`)", "",
              "| level | median ms / decision | mean ms / decision | target | within |",
              "|---|---|---|---|---|"]
    seen = {}
    for key in order:
        r = pairs.get(key)
        if not r or r.get("unavailable"):
            continue
        for side, level in ((0, r["upper"]), (1, r["lower"])):
            if level not in seen or side == 0:  # prefer the match where the level is the upper
                seen[level] = (r["ms_median"][side], r["ms_mean"][side])
    for level in ("random", "easy", "medium", "hard", "insane"):
        if level in seen:
            med, mean = seen[level]
            lim = TIME_LIMITS_MS.get(level)
            ok = "-" if lim is None else ("yes" if med < lim else "NO")
            lines.append(f"| {level} | {med:.3f} | {mean:.3f} | "
                         f"{'-' if lim is None else f'< {lim:g} ms'} | {ok} |")
    if ablations:
        lines += ["", "## Medium ablations: full `medium` vs `medium` with one play habit off", "",
                  "Each habit of docs/bots.md earns its place when the interval lies above zero.", "",
                  "| habit switched off | games | full medium wins | "
                  "point diff / hand [95% CI] | Nil made/bids full / ablated | run |",
                  "|---|---|---|---|---|---|"]
        for habit in ABLATIONS:
            r = ablations.get(habit)
            if not r:
                continue
            lines.append(
                f"| {habit} | {r['games']} | {r['games_won'][0]}-{r['games_won'][1]} | "
                f"{r['diff']:+.2f} [{r['diff_ci'][0]:+.2f}, {r['diff_ci'][1]:+.2f}] | "
                f"{r['nil'][0][1]}/{r['nil'][0][0]} / {r['nil'][1][1]}/{r['nil'][1][0]} | "
                f"seed {r['seed']}, {r['seconds']:.0f} s |")
    return "\n".join(lines) + "\n"


def _size(spec: list[str], what: str) -> dict:
    out = {}
    for item in spec:
        level, _, n = item.partition("=")
        if not n.isdigit() or int(n) < 2:
            raise SystemExit(f"--{what}-for expects LEVEL=N with N >= 2, got {item!r}")
        out[level] = int(n)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", nargs="*", default=[u for u, _ in LADDER],
                   help="upper levels to run (easy medium hard insane)")
    p.add_argument("--games", type=int, default=200, help="full games per pair (even)")
    p.add_argument("--games-for", action="append", default=[], metavar="LEVEL=N",
                   help="games for one pair, by its upper level")
    p.add_argument("--hands-for", action="append", default=[], metavar="LEVEL=N",
                   help="play N single-hand deals (each twice) for this pair instead of games")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=os.path.join(RESULTS, "ladder.md"))
    p.add_argument("--ablations", type=int, default=0, metavar="GAMES",
                   help="also run medium vs medium-without-one-habit for each habit (GAMES each)")
    p.add_argument("--workers", type=int, default=1,
                   help="processes per match (arena play_match workers; same result as 1)")
    p.add_argument("--rules", default="standard",
                   help="the rules (Rules.parse: a preset, or a preset and fields); other than "
                        "standard, the default --out is ladder_<rules>.md")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    rules = Rules.parse(args.rules)
    if rules != Rules() and args.out == os.path.join(RESULTS, "ladder.md"):
        slug = "".join(c if c.isalnum() else "_" for c in rules.spec())
        args.out = os.path.join(RESULTS, f"ladder_{slug}.md")
    games_for = _size(args.games_for, "games")
    hands_for = _size(args.hands_for, "hands")
    json_path = os.path.splitext(args.out)[0] + ".json"
    stored, ablations = _load(json_path)
    lower_of = dict(LADDER)
    for upper in args.pairs:
        if upper not in lower_of:
            raise SystemExit(f"unknown level {upper!r}; choose from {list(lower_of)}")
        lower = lower_of[upper]
        key = f"{upper}-{lower}"
        try:
            make_bot(upper, seed=0)
            make_bot(lower, seed=0)
        except (ImportError, AttributeError, NotImplementedError) as e:
            stored[key] = {"upper": upper, "lower": lower, "unavailable": f"{type(e).__name__}"}
            print(f"{key}: not available ({e})")
            continue
        kw = ({"hands": hands_for[upper]} if upper in hands_for
              else {"games": games_for.get(upper, args.games)})
        print(f"{key}: {kw}", flush=True)
        res = play_match(upper, lower, seed=args.seed, progress=not args.no_progress,
                         workers=args.workers, rules=rules, **kw)
        print(res.summary(), flush=True)
        stored[key] = _row(upper, lower, res, args.workers)
        stored[key]["rules"] = rules.spec()
        _save(json_path, args.out, stored, ablations)
    if args.ablations:
        ablations = run_ablations(args.ablations, args.seed)
    _save(json_path, args.out, stored, ablations)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
