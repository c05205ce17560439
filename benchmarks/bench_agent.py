"""Strength of a trained agent: duplicate full-game matches against bots or other checkpoints.

Each ``--match OPPONENT:SEED:GAMES`` plays the agent (side A) against ``OPPONENT`` (a ``make_bot``
name: ``random``, ``easy``, ``medium``, ``hard``, ``insane``, or ``checkpoint:PATH``) with
``spades_env.arena.play_match``: ``GAMES`` full games to 500 (``GAMES / 2`` duplicate pairs: each
deal is played twice, the sides swapped), from match seed ``SEED``. With ``--baseline PATH`` the
baseline checkpoint plays the same matches on the same deals, and each row also gives the paired
difference (agent minus baseline, pair by pair), which removes most of the deals' luck.

The table gives, per match and pooled per opponent: the point difference per hand (the mean over
pairs of (A points - B points) / hands in the pair) with its Student-t 95% interval, games won,
contracts set, Nil bids made, bags per hand (the agent's side). Results are cached in ``--out``
(JSON, keyed by the checkpoints' SHA-256, the opponent, seed and games), so a row already played
is not played again, and the Markdown table is written beside it (``.md``).

Usage::

    python benchmarks/bench_agent.py --agent checkpoints/shipped/agent.pt \\
        --baseline checkpoints/shipped/agent_long.pt \\
        --match hard:5:100 --match hard:6:100 --match medium:1:200 --workers 2 \\
        --out benchmarks/results/agent.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spades_env.arena import jsonable, play_match, write_json_atomic  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.fileio import write_atomic  # noqa: E402
from spades_env.training.labels import file_sha256 as sha256  # noqa: E402


def parse_match(text: str) -> tuple[str, int, int]:
    """``"hard:5:100"`` -> ``("hard", 5, 100)``; the opponent may itself hold colons
    (``checkpoint:PATH:SEED:GAMES``).

    Raises:
        ValueError: not OPPONENT:SEED:GAMES with integer SEED and an even GAMES >= 2.
    """
    parts = text.rsplit(":", 2)
    try:
        opp, seed, games = parts[0], int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        raise ValueError(f"--match {text!r}: expected OPPONENT:SEED:GAMES, e.g. hard:5:100") \
            from None
    if seed < 0:
        raise ValueError(f"--match {text!r}: SEED must be 0 or more, got {seed}")
    if games < 2 or games % 2:
        raise ValueError(f"--match {text!r}: GAMES must be even and at least 2, got {games}")
    return opp, seed, games


def t_interval(x) -> tuple[float, float, float]:
    """Mean and Student-t 95% interval of the values ``x`` (1-D); nan bounds below 2 values."""
    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    h = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - h, m + h


def normal_interval(x) -> tuple[float, float, float]:
    """Mean and normal 95% interval (mean +- 1.96 standard errors) of the values ``x`` (1-D, at
    least 2), for the decision-level benchmarks' many per-decision differences."""
    x = np.asarray(x, dtype=np.float64)
    m = float(x.mean())
    h = float(1.96 * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - h, m + h


def emit_table(lines: list[str], out: str | None) -> None:
    """Print the Markdown ``lines`` and, when ``out`` is given, write them there atomically."""
    table = "\n".join(lines) + "\n"
    print(table)
    if out:
        write_atomic(out, table.encode())


def run(agent: str, opp: str, seed: int, games: int, workers: int, cache: dict, key_of) -> dict:
    """The cached result of ``agent`` (side A) against ``opp``, or a new match (``play_match``)."""
    key = key_of(agent, opp, seed, games)
    if key not in cache:
        r = play_match(f"checkpoint:{agent}", opp, games=games, seed=seed, workers=workers)
        a, b = r.sides
        cache[key] = jsonable({
            "agent": agent, "opponent": opp, "seed": seed, "games": games, "pairs": r.pairs,
            "diff": r.point_diff_per_hand, "ci": list(r.point_diff_ci),
            "pair_diffs": r.pair_diffs, "won": a.games_won, "hands": a.hands,
            "contracts": a.contracts, "set": a.contracts_set, "nil_bids": a.nil_bids,
            "nil_made": a.nil_made, "bags_per_hand": a.bags_per_hand,
            "opp_set": b.contracts_set, "opp_contracts": b.contracts, "seconds": r.seconds})
        print(f"{os.path.basename(agent)} vs {opp} seed {seed}: {r.point_diff_per_hand:+.2f} "
              f"[{r.point_diff_ci[0]:+.2f}, {r.point_diff_ci[1]:+.2f}] ({r.seconds:.0f} s)",
              flush=True)
    return cache[key]


def row(label: str, rs: list[dict], base: list[dict] | None) -> str:
    """One Markdown table row over the results ``rs`` (pooled), with the paired difference to
    ``base`` (the baseline's results on the same matches) if given."""
    d = np.concatenate([r["pair_diffs"] for r in rs])
    m, lo, hi = t_interval(d)
    games = sum(r["games"] for r in rs)
    tot = {k: sum(r[k] for r in rs) for k in ("won", "hands", "contracts", "set", "nil_bids",
                                               "nil_made")}
    bags = sum(r["bags_per_hand"] * r["hands"] for r in rs) / tot["hands"]
    cells = [label, str(len(d)), f"**{m:+.1f}**", f"[{lo:+.1f}, {hi:+.1f}]",
             f"{tot['won']}/{games}", f"{tot['set']}/{tot['contracts']}",
             f"{tot['nil_made']}/{tot['nil_bids']}", f"{bags:.2f}"]
    if base is not None:
        bd = np.concatenate([r["pair_diffs"] for r in base])
        bm = t_interval(bd)[0]
        pm, plo, phi = t_interval(d - bd)
        cells += [f"{bm:+.1f}", f"{pm:+.1f} [{plo:+.1f}, {phi:+.1f}]"]
    return "| " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agent", required=True, help="checkpoint of the agent (side A)")
    p.add_argument("--baseline", default=None, help="checkpoint played on the same deals")
    p.add_argument("--match", action="append", required=True, metavar="OPPONENT:SEED:GAMES")
    p.add_argument("--workers", type=int, default=2, help="processes per match")
    p.add_argument("--out", default=os.path.join("benchmarks", "results", "agent.json"))
    a = p.parse_args(argv)
    try:
        matches = [parse_match(m) for m in a.match]
        seen = [(o, s) for o, s, _ in matches]
        for o, s in seen:
            if seen.count((o, s)) > 1:  # the same deals twice would count as more evidence
                raise ValueError(f"--match {o}:{s}:...: given more than once (opponent and seed "
                                 f"fix the deals)")
        if a.workers < 1:
            raise ValueError(f"--workers must be at least 1, got {a.workers}")
        for f in (a.agent, a.baseline):
            if f is not None:
                make_bot(f"checkpoint:{f}", seed=0)  # a missing or foreign file fails here
        for o in dict.fromkeys(o for o, _, _ in matches):
            make_bot(o, seed=0)
        cache = {}
        if os.path.exists(a.out):
            try:
                with open(a.out, encoding="utf-8") as f:
                    cache = json.load(f)
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                raise ValueError(f"--out {a.out!r} is not a results file of this script: {e}") \
                    from None
            if not isinstance(cache, dict):
                raise ValueError(f"--out {a.out!r} is not a results file of this script (not a "
                                 f"JSON object)")
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    shas = {f: sha256(f) for f in (a.agent, a.baseline) if f is not None}

    def key_of(agent, opp, seed, games):
        o = sha256(opp[11:])[:16] if opp.startswith("checkpoint:") else opp
        return f"{shas[agent][:16]}|{o}|{seed}|{games}"

    results = {}
    for opp, seed, games in matches:
        for who in (a.agent, a.baseline):
            if who is not None:
                results[who, opp, seed] = run(who, opp, seed, games, a.workers, cache, key_of)
                write_json_atomic(a.out, cache)  # after each match: a stopped run keeps them
    head = ["opponent", "pairs", "points/hand", "95% CI", "games won", "set/contracts",
            "Nil made/bid", "bags/hand"]
    if a.baseline:
        head += ["baseline", "paired: agent - baseline"]
    lines = [f"Agent `{a.agent}` (side A)" + (f", baseline `{a.baseline}`" if a.baseline else "")
             + "; full games to 500, duplicate pairs.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    opps = list(dict.fromkeys(o for o, _, _ in matches))
    for opp in opps:
        seeds = [s for o, s, _ in matches if o == opp]
        for s in seeds:
            lines.append(row(f"`{opp}` seed {s}", [results[a.agent, opp, s]],
                             [results[a.baseline, opp, s]] if a.baseline else None))
        if len(seeds) > 1:
            lines.append(row(f"`{opp}`, seeds {'+'.join(map(str, seeds))}",
                             [results[a.agent, opp, s] for s in seeds],
                             [results[a.baseline, opp, s] for s in seeds] if a.baseline
                             else None))
    text = "\n".join(lines) + "\n"
    print(text)
    write_atomic(os.path.splitext(a.out)[0] + ".md", text.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
