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

Usage: ``python benchmarks/bench_env.py [--hands 200] [--repeats 7] [--seed 0]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from spades_env import spades_v1


def bench_ours(wrapped: bool, hands: int, seed: int) -> float:
    """Agent steps/s of spades_v1 over ``hands`` single-hand episodes."""
    env = spades_v1.env(hands_per_episode=1) if wrapped else spades_v1.raw_env(hands_per_episode=1)
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
    args = ap.parse_args(argv)
    if args.hands < 1 or args.repeats < 1:
        ap.error("--hands and --repeats must be >= 1")

    runs: dict[str, list[float]] = {"env()": [], "raw_env()": [], "openspiel": []}
    # warm-up (imports, table building, caches)
    bench_ours(True, 5, args.seed)
    bench_ours(False, 5, args.seed)
    if not args.no_openspiel:
        bench_openspiel(5, args.seed)
    for r in range(args.repeats):
        seed = args.seed + 1000 * r
        runs["env()"].append(bench_ours(True, args.hands, seed))
        runs["raw_env()"].append(bench_ours(False, args.hands, seed))
        if not args.no_openspiel:
            runs["openspiel"].append(bench_openspiel(args.hands, seed))

    med = {k: statistics.median(v) for k, v in runs.items() if v}
    print(f"agent steps/s, median of {args.repeats} runs of {args.hands} hands "
          f"(56 decisions per hand)")
    for k, v in med.items():
        spread = f"min {min(runs[k]):,.0f} max {max(runs[k]):,.0f}"
        print(f"  {k:<10} {v:>10,.0f}   ({spread})")
    if "openspiel" in med:
        ratios = [a / b for a, b in zip(runs["env()"], runs["openspiel"])]
        raw_ratios = [a / b for a, b in zip(runs["raw_env()"], runs["openspiel"])]
        print(f"ratio env()/openspiel:     {statistics.median(ratios):.2f} "
              f"(median of paired runs; target >= 1.0)")
        print(f"ratio raw_env()/openspiel: {statistics.median(raw_ratios):.2f}")


if __name__ == "__main__":
    main()
