"""Agent steps per second: spades_v1 (PettingZoo AEC) against OpenSpiel's ``spades``.

Per decision both loops do the same work: read the acting player's observation vector and legal
action mask as numpy arrays, pick a uniformly random legal action, apply it.

- spades_v1 (``env()``, the wrapped env users get; and ``raw_env()``): ``last()``,
  ``np.flatnonzero(obs["action_mask"])``, a random pick, ``step()``; single-hand episodes
  (``hands_per_episode=1``), so every episode is one full hand of 56 decisions (4 bids + 52 cards).
- OpenSpiel ``spades`` (one hand per game): ``observation_tensor()`` and ``legal_actions_mask()``
  converted to numpy, the same random pick, ``apply_action``; chance nodes (the deal) are resolved
  by sampling from ``chance_outcomes()`` and are not counted as decisions.

Reset / new-game time is included in both. Prints the median agent steps/s of ``--repeats`` runs per
engine (runs interleaved so that machine load hits both alike) and the ratio ours / OpenSpiel.
``--env spades_v2`` times the version-3 env (711 floats) instead, ``--obs-format compact`` its
120-byte observation (``spades_v2`` only).

Usage: ``python benchmarks/bench_env.py [--hands 200] [--repeats 7] [--seed 0]
[--env spades_v1|spades_v2] [--obs-format float32|compact]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from spades_env import spades_v1, spades_v2

ENVS = {"spades_v1": spades_v1, "spades_v2": spades_v2}


def bench_ours(wrapped: bool, hands: int, seed: int, module=spades_v1, **options) -> float:
    """Agent steps/s of the AEC env of ``module`` (``spades_v1`` or ``spades_v2``, with
    ``options``) over ``hands`` single-hand episodes."""
    make = module.env if wrapped else module.raw_env
    env = make(hands_per_episode=1, **options)
    rng = np.random.default_rng(seed)
    steps = 0
    t0 = time.perf_counter()
    for h in range(hands):
        env.reset(seed=seed + h)
        while True:
            obs, reward, term, trunc, info = env.last()
            if term or trunc:
                break
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.integers(len(legal))]))
            steps += 1
    return steps / (time.perf_counter() - t0)


def bench_openspiel(hands: int, seed: int) -> float:
    """Agent steps/s of OpenSpiel ``spades`` over ``hands`` games (one hand each)."""
    import pyspiel
    game = pyspiel.load_game("spades")
    rng = np.random.default_rng(seed)
    steps = 0
    t0 = time.perf_counter()
    for _ in range(hands):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[int(rng.integers(len(outcomes)))][0])
                continue
            obs = np.asarray(state.observation_tensor(), dtype=np.float32)  # noqa: F841
            mask = np.asarray(state.legal_actions_mask(), dtype=np.int8)
            legal = np.flatnonzero(mask)
            state.apply_action(int(legal[rng.integers(len(legal))]))
            steps += 1
    return steps / (time.perf_counter() - t0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hands", type=int, default=200, help="hands per timed run")
    ap.add_argument("--repeats", type=int, default=7, help="timed runs per engine (median taken)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-openspiel", action="store_true", help="skip the OpenSpiel runs")
    ap.add_argument("--env", choices=sorted(ENVS), default="spades_v1", help="the AEC env")
    ap.add_argument("--obs-format", choices=("float32", "compact"), default="float32",
                    help="the env's obs_format (compact: spades_v2 only)")
    args = ap.parse_args(argv)
    if args.hands < 1 or args.repeats < 1:
        ap.error("--hands and --repeats must be >= 1")
    if args.obs_format == "compact" and args.env != "spades_v2":
        ap.error("--obs-format compact needs --env spades_v2 (spades_v1 has no compact form)")
    ours = {"module": ENVS[args.env]}
    if args.obs_format != "float32":
        ours["obs_format"] = args.obs_format

    runs: dict[str, list[float]] = {"env()": [], "raw_env()": [], "openspiel": []}
    # warm-up (imports, table building, caches)
    bench_ours(True, 5, args.seed, **ours)
    bench_ours(False, 5, args.seed, **ours)
    if not args.no_openspiel:
        bench_openspiel(5, args.seed)
    for r in range(args.repeats):
        seed = args.seed + 1000 * r
        runs["env()"].append(bench_ours(True, args.hands, seed, **ours))
        runs["raw_env()"].append(bench_ours(False, args.hands, seed, **ours))
        if not args.no_openspiel:
            runs["openspiel"].append(bench_openspiel(args.hands, seed))

    med = {k: statistics.median(v) for k, v in runs.items() if v}
    print(f"agent steps/s, median of {args.repeats} runs of {args.hands} hands "
          f"(56 decisions per hand); ours: {args.env}, obs_format={args.obs_format}")
    for k, v in med.items():
        spread = f"min {min(runs[k]):,.0f} max {max(runs[k]):,.0f}"
        print(f"  {k:<10} {v:>10,.0f}   ({spread})")
    if "openspiel" in med:
        ratios = [a / b for a, b in zip(runs["env()"], runs["openspiel"])]
        raw_ratios = [a / b for a, b in zip(runs["raw_env()"], runs["openspiel"])]
        print(f"ratio env()/openspiel:     {statistics.median(ratios):.2f} "
              f"(median of paired runs; target >= 1.5)")
        print(f"ratio raw_env()/openspiel: {statistics.median(raw_ratios):.2f}")


if __name__ == "__main__":
    main()
