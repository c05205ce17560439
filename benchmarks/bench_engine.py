"""Engine speed: random single hands with ``spades_env.SpadesGame`` and OpenSpiel's ``spades``.

Both engines do the same work per hand, timed in the same run and interleaved repeat by repeat:
shuffle and deal 52 cards, 4 bids and 52 card plays, each decision chosen uniformly from the
engine's own ``legal_actions()`` with one shared ``random.Random`` stream. OpenSpiel's ``spades``
plays exactly one hand per episode (its deal is 52 chance actions, applied here from a numpy
permutation), so single hands are the common unit. Decisions = bids + card plays (56 per hand).

Prints decisions/s for both engines, the median over ``--repeats`` repeats, and the ratio
ours / OpenSpiel (> 1: ours is faster). Also times ``clone()`` (what determinizing bots lean on).

Usage: ``.venv/bin/python benchmarks/bench_engine.py [--hands 200] [--repeats 5] [--seed 0]``
OpenSpiel comes from the optional ``bench`` extra (PyPI ``open_spiel``); without it only our
engine is timed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from spades_env import SpadesGame


def load_openspiel():
    """OpenSpiel's ``spades`` game, or ``None`` with a message when pyspiel is not installed."""
    try:
        import pyspiel
    except ImportError:
        print("OpenSpiel is not installed (pip install 'spades_env[bench]' or open_spiel): "
              "timing spades_env only")
        return None
    return pyspiel.load_game("spades")


def run_ours(hands: int, seed: int) -> tuple[int, float]:
    """Play ``hands`` random hands; returns (decisions, seconds)."""
    pick = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    decisions = 0
    t0 = time.perf_counter()
    for _ in range(hands):
        g = SpadesGame(seed=np_rng)  # dealer draw + shuffle + deal from the shared generator
        legal_actions, apply = g.legal_actions, g.apply
        while g.hand_number == 0:
            la = legal_actions()
            apply(la[pick.randrange(len(la))])
            decisions += 1
    return decisions, time.perf_counter() - t0


def run_openspiel(game, hands: int, seed: int) -> tuple[int, float]:
    """Play ``hands`` random OpenSpiel ``spades`` episodes (one hand each)."""
    pick = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    decisions = 0
    t0 = time.perf_counter()
    for _ in range(hands):
        s = game.new_initial_state()
        for card in np_rng.permutation(52).tolist():
            s.apply_action(card)
        while not s.is_terminal():
            la = s.legal_actions()
            s.apply_action(la[pick.randrange(len(la))])
            decisions += 1
    return decisions, time.perf_counter() - t0


def time_clones(make_state, n: int) -> float:
    """Clones per second of a mid-hand state."""
    st = make_state()
    t0 = time.perf_counter()
    for _ in range(n):
        st.clone()
    return n / (time.perf_counter() - t0)


def mid_hand_ours():
    g = SpadesGame(seed=1)
    for _ in range(4 + 20):
        g.apply(g.legal_actions()[0])
    return g


def mid_hand_openspiel(game):
    s = game.new_initial_state()
    for c in np.random.default_rng(1).permutation(52).tolist():
        s.apply_action(c)
    for _ in range(4 + 20):
        s.apply_action(s.legal_actions()[0])
    return s


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hands", type=int, default=200, help="random hands per repeat and engine")
    ap.add_argument("--repeats", type=int, default=5, help="repeats (median reported), >= 1")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.hands < 1 or args.repeats < 1:
        ap.error("--hands and --repeats must be >= 1")

    game = load_openspiel()
    run_ours(5, args.seed)  # warm-up
    if game is not None:
        run_openspiel(game, 5, args.seed)
    ours, theirs, ratios = [], [], []
    for r in range(args.repeats):
        d, t = run_ours(args.hands, args.seed + r)
        ours.append(d / t)
        line = f"repeat {r}: spades_env {d / t:10.0f} decisions/s"
        if game is not None:
            d2, t2 = run_openspiel(game, args.hands, args.seed + r)
            theirs.append(d2 / t2)
            ratios.append(ours[-1] / theirs[-1])
            line += f"   OpenSpiel {d2 / t2:10.0f} decisions/s   ratio {ratios[-1]:.2f}"
        print(line)
    print(f"median over {args.repeats} repeats of {args.hands} hands:")
    print(f"  spades_env: {statistics.median(ours):10.0f} decisions/s")
    if game is not None:
        print(f"  OpenSpiel : {statistics.median(theirs):10.0f} decisions/s")
        print(f"  ratio spades_env / OpenSpiel: {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    n = 20000
    c_ours = time_clones(mid_hand_ours, n)
    line = f"clone() of a mid-hand state: spades_env {c_ours:10.0f}/s"
    if game is not None:
        c_os = time_clones(lambda: mid_hand_openspiel(game), n)
        line += f"   OpenSpiel {c_os:10.0f}/s   ratio {c_ours / c_os:.2f}"
    print(line)


if __name__ == "__main__":
    main()
