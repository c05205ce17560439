"""Strength of ``expert`` and its ablations: duplicate matches against a bot, on the same deals.

Each variant (``--variant NAME:KEY=VALUE,...``, options of ``make_bot("expert", ...)``; the name
``expert`` alone is the default bot, ``insane``/``hard``/``checkpoint:PATH`` a plain ``make_bot``
name) plays side A against ``--opponent`` over ``--pairs`` duplicate pairs (``--mode games``: full
games to 500; ``--mode hands``: single hands from 0-0, each dealt twice with the sides swapped).
Every variant plays the same deals (the match seed ``--seed``, shard ``k`` of ``--shards`` using
seed ``seed * 1000 + k``), so the paired difference of two variants, pair by pair, removes most of
the deals' luck. The pairs are split into shards run as separate processes (``--workers`` at a
time); each shard's result is cached in ``--out`` (JSON, keyed by variant, opponent, mode, seed
and shard), so an interrupted run continues where it stopped and a finished shard is never
played again.

The table (Markdown, written beside ``--out`` as ``.md``) gives per variant: pairs, the point
difference per hand (A minus B) with its Student-t 95% interval, games (or hands) won, and the
paired difference against the first variant with its interval; and the median decision times.

Usage::

    python benchmarks/bench_expert.py --opponent insane --mode games --pairs 100 --shards 20 \\
        --variant expert --workers 2 --out benchmarks/results/expert.json
    python benchmarks/bench_expert.py --opponent insane --mode hands --pairs 200 --shards 10 \\
        --variant expert --variant bids:inference=bids --variant t05:temper=0.5 \\
        --out benchmarks/results/expert_ablations.json
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from concurrent.futures import as_completed

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_agent import t_interval  # noqa: E402

from spades_env.arena import play_match, write_json_atomic  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.fileio import write_atomic  # noqa: E402
from spades_env.workers import worker_pool  # noqa: E402


def parse_variant(text: str) -> tuple[str, str, dict]:
    """``"t05:temper=0.5,floor=0.1"`` -> ``("t05", "expert", {"temper": 0.5, "floor": 0.1})``;
    ``"expert"`` -> the default expert; ``"insane"`` (any name without ``=``) -> that bot.

    Raises:
        ValueError: an option that is not ``KEY=VALUE``.
    """
    if "=" not in text:
        return text, text, {}
    label, _, opts = text.partition(":")
    out = {}
    for item in opts.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"--variant {text!r}: options are KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return label, "expert", out


# options of ``expert`` whose default changed, with the default each cache key assumes when the
# variant does not give them: a shard cached under an older default is never read as the new one
KEY_DEFAULTS = {"bid_prior": 1.0}  # 0 before 0.8.0


def cache_options(name: str, opts: dict) -> dict:
    """The options a shard's cache key holds: for ``expert``, ``opts`` with every option of
    ``KEY_DEFAULTS`` written out (as a float); other bots' options as given."""
    if name != "expert":
        return opts
    out = dict(opts)
    for key, default in KEY_DEFAULTS.items():
        out[key] = float(out.get(key, default))
    return out


class Timed:
    """A player that records the wall time of each decision with more than one legal action."""

    def __init__(self, bot):
        self.bot, self.times = bot, []

    def act(self, view):
        t = time.perf_counter()
        a = self.bot.act(view)
        if len(view.legal_actions) > 1:
            self.times.append(time.perf_counter() - t)
        return a


def run_shard(name, options, opponent, mode, pairs, seed):
    """One shard: ``pairs`` duplicate pairs of ``name`` (with ``options``) against ``opponent``;
    returns a JSON-able dict with the pair differences and the decision times of both sides."""
    timers = {"a": [], "b": []}

    def factory(side, spec, opts, s):
        t = Timed(make_bot(spec, seed=s, **opts))
        timers[side].append(t)
        return t

    kw = {"hands": pairs} if mode == "hands" else {"games": 2 * pairs}
    r = play_match(functools.partial(factory, "a", name, options),
                   functools.partial(factory, "b", opponent, {}), seed=seed, **kw)
    a, b = r.sides
    return {"pair_diffs": list(r.pair_diffs), "wins": [a.games_won, b.games_won],
            "games": r.games,
            "seconds": r.seconds,
            "times_a": [x for t in timers["a"] for x in t.times],
            "times_b": [x for t in timers["b"] for x in t.times]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", action="append", required=True,
                    help="NAME:KEY=VALUE,... (expert options) or a bot name; repeatable")
    ap.add_argument("--opponent", default="insane")
    ap.add_argument("--mode", choices=("games", "hands"), default="games")
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--report", action="store_true",
                    help="play nothing: write the table of the shards in --out so far")
    args = ap.parse_args(argv)
    if args.pairs < 2 or args.shards < 1 or args.pairs % args.shards:
        ap.error("--pairs must be >= 2 and a multiple of --shards")
    variants = [parse_variant(v) for v in args.variant]
    for _label, name, opts in variants:  # a bad option fails now
        make_bot(name, seed=0, **opts)
    cache = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            cache = json.load(f)
    per = args.pairs // args.shards

    def key(name, opts, k):
        return json.dumps([name, cache_options(name, opts), args.opponent, args.mode, per,
                           args.seed * 1000 + k], sort_keys=True)

    jobs = {}
    # shard by shard, every variant in turn: a run stopped early leaves the variants on the same
    # deals (the table below reads the shards all of them have played)
    for k in range(args.shards):
        for label, name, opts in [] if args.report else variants:
            if key(name, opts, k) not in cache:
                jobs[key(name, opts, k)] = (name, opts, args.opponent, args.mode, per,
                                            args.seed * 1000 + k)
    print(f"{len(jobs)} shards to play ({len(variants) * args.shards - len(jobs)} cached)",
          flush=True)
    # spawn workers that end with this command (a killed benchmark leaves no orphan playing on)
    with worker_pool(args.workers if jobs else 1, executor=True) as pool:
        futs = {pool.submit(run_shard, *job): key for key, job in jobs.items()}
        for f in as_completed(futs):
            cache[futs[f]] = f.result()
            write_json_atomic(args.out, cache)
            print(f"done {json.loads(futs[f])}", flush=True)
    rows = []
    first = None

    # the shards every variant has played (all of them unless the run was stopped: a table of
    # the shards so far, on the same deals for every variant)
    done = [k for k in range(args.shards)
            if all(key(name, opts, k) in cache for _label, name, opts in variants)]
    if not done:
        print("no shard played by every variant yet")
        return 0
    part = "" if len(done) == args.shards else \
        f"; so far {len(done)} of the {args.shards} shards, the same ones for every variant"
    lines = [f"`{args.opponent}` as side B, {args.mode} mode, seed {args.seed}, "
             f"{args.pairs} duplicate pairs per variant ({args.shards} shards{part})", "",
             f"| variant | options | pairs | points/hand A-B [95% CI] | "
             f"{'games' if args.mode == 'games' else 'pairs'} won A-B | "
             f"paired vs first [95% CI] | median ms A / B |",
             "|---|---|---|---|---|---|---|"]
    for label, name, opts in variants:
        res = [cache[key(name, opts, k)] for k in done]
        diffs = np.concatenate([r["pair_diffs"] for r in res])
        if args.mode == "games":
            wins = np.sum([r["wins"] for r in res], axis=0)
        else:  # pairs won: the side ahead over the deal played both ways
            wins = np.array([(diffs > 0).sum(), (diffs < 0).sum()])
        m, lo, hi = t_interval(diffs)
        if first is None:
            first, paired = diffs, "-"
        else:
            pm, plo, phi = t_interval(diffs - first)
            paired = f"{pm:+.1f} [{plo:+.1f}, {phi:+.1f}]"
        ta = np.median(np.concatenate([r["times_a"] for r in res])) * 1000
        tb = np.median(np.concatenate([r["times_b"] for r in res])) * 1000
        rows.append({"variant": label, "name": name, "options": opts, "pairs": len(diffs),
                     "diff": m, "ci": [lo, hi], "wins": wins.tolist(), "median_ms": [ta, tb]})
        lines.append(f"| {label} | {json.dumps(opts) if opts else name} | {len(diffs)} | "
                     f"{m:+.1f} [{lo:+.1f}, {hi:+.1f}] | {wins[0]}-{wins[1]} | {paired} | "
                     f"{ta:.0f} / {tb:.0f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    write_atomic(os.path.splitext(args.out)[0] + ".md", table.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
