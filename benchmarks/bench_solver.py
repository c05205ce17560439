"""The exact endgame solver in C against the Python reference, side by side in one run.

The PIMC bots solve the last ``endgame_tricks`` (3) tricks of every sampled deal exactly
(``solver.solve_many``: ``sp_solve`` in ``spades_env/_native/playout.c``, or the Python
``solver.solve`` row by row). Each measure runs with the C solver and with the Python one (the
play-outs in C in both), interleaved ``--repeats`` times so that machine load hits both alike;
medians and the speed-up of C are printed (a rate's ratio C / Python, a time's ratio Python / C):

1. **rows per second**: ``solve_many`` of 40 deals x the legal cards, ``--positions`` positions
   from real games with 3 tricks left (the seat to move at every trick length);
2. **``hard``'s decision time**: four ``hard`` bots play ``--hands`` hands of a seeded game; the
   mean milliseconds of a real card choice (more than one candidate) in the exact endgame (3
   tricks left or fewer) and of any real card choice, and the milliseconds of all four seats'
   decisions per hand. The two runs must play the same moves, else it stops;
3. **labelling speed** of ``training.labelling.label_chunk`` (``hard``'s search, 40 deals per card,
   the policy on one torch thread): hands per second of wall-clock and of CPU time (the work
   alone, on a busy machine), ``--label-hands`` hands of chunk 1 of ``--seed`` per run. The two
   runs must give the same labels, else it stops.

Usage: ``python benchmarks/bench_solver.py [--checkpoint checkpoints/shipped/agent.pt]
[--positions 40] [--hands 2] [--label-hands 40] [--repeats 5] [--out FILE]``
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from spades_env import Rules, SpadesGame  # noqa: E402
from spades_env.bots import pimc, solver  # noqa: E402
from spades_env.bots.pimc import HardBot  # noqa: E402
from spades_env.engine import Phase  # noqa: E402

from bench_playout import emit_c_python  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


@contextlib.contextmanager
def python_solver():
    """The bots solve with the Python ``solve`` inside it (the play-outs stay in C)."""
    saved = pimc.solve_many
    pimc.solve_many = functools.partial(solver.solve_many, native=False)
    try:
        yield
    finally:
        pimc.solve_many = saved


def endgame_rows(positions: int, seed: int) -> list:
    """``solve_many``'s arguments at ``positions`` positions with 3 tricks left: 40 deals of the
    mover's view x its legal cards."""
    rnd = random.Random(seed)
    out = []
    while len(out) < positions:
        g = SpadesGame(Rules(), seed=rnd.randrange(2**31))
        k = len(out) % 4
        while not g.hand_results and not (g.phase == Phase.PLAY and g.trick_number == 10
                                          and len(g.trick) == k):
            g.apply(rnd.choice(g.legal_actions()))
        if g.hand_results or len(g.legal_actions()) < 2:
            continue
        v = g.view(g.current_player)
        deals = [d for d, _w in HardBot(seed=len(out), samples=40)._deals(v, 40)]
        cands = list(v.legal_actions)
        util = solver.HandUtility(v.bids, v.blind, v.bags, v.scores, v.rules, 0)
        trick = [c for _s, c in v.current_trick]
        out.append(([d for d in deals for _c in cands], cands * len(deals), trick,
                     v.trick_leader if trick else v.seat, v.tricks_won, v.spades_broken, v.seat,
                     util))
    return out


def rows_per_s(cases: list, native: bool) -> float:
    rows = sum(len(c[0]) for c in cases)
    t = time.perf_counter()
    for c in cases:
        solver.solve_many(*c, native=native)
    return rows / (time.perf_counter() - t)


def hard_game(hands: int, seed: int) -> tuple[list[int], list[float], list[float], float]:
    """Four ``hard`` bots play ``hands`` hands: the moves, the milliseconds of each real card
    choice (more than one candidate after equivalent cards are merged) in the exact endgame and
    of every one, and the milliseconds of all decisions per hand."""
    g = SpadesGame(Rules(), seed=seed)
    bots = [HardBot(seed=seed * 10 + s) for s in range(4)]
    moves, end_ms, card_ms, total = [], [], [], 0.0
    while len(g.hand_results) < hands:
        p = g.current_player
        v = g.view(p)
        real = v.phase == Phase.PLAY and len(bots[p]._candidates(v, v.legal_actions)) > 1
        t = time.perf_counter()
        a = bots[p].act(v)
        ms = 1e3 * (time.perf_counter() - t)
        total += ms
        if real:
            card_ms.append(ms)
            if 13 - v.trick_number <= bots[p].endgame_tricks:
                end_ms.append(ms)
        g.apply(a)
        moves.append(a)
    return moves, end_ms, card_ms, total / hands


def label_hands_per_s(checkpoint: str, hands: int, seed: int) -> tuple[float, float, dict]:
    """Hands per second of wall-clock time and of this process's CPU time (one thread: the
    CPU time is the work, whatever else runs on the machine), and the labels."""
    from spades_env.training.labelling import label_chunk
    t, c = time.perf_counter(), time.process_time()
    out = label_chunk(checkpoint, hands, seed, 1, 40)
    return hands / (time.perf_counter() - t), hands / (time.process_time() - c), out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default=os.path.join(ROOT, "checkpoints", "shipped",
                                                        "agent.pt"))
    p.add_argument("--positions", type=int, default=40)
    p.add_argument("--hands", type=int, default=2)
    p.add_argument("--label-hands", type=int, default=40)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="also write the table (markdown) here")
    a = p.parse_args(argv)
    if not solver.native_playouts():
        print("no C kernel here (no C compiler found): nothing to compare", file=sys.stderr)
        return 1
    import torch
    torch.set_num_threads(1)
    cases = endgame_rows(a.positions, a.seed)
    label_hands_per_s(a.checkpoint, 1, a.seed)  # warm: the checkpoint read, the first decisions
    res: dict[str, dict[str, list[float]]] = {}

    def add(what, impl, v):
        res.setdefault(what, {"C": [], "Python": []})[impl].append(v)

    for r in range(a.repeats):
        for impl in ("C", "Python"):
            with python_solver() if impl == "Python" else contextlib.nullcontext():
                add("`solve_many` rows per second (3 tricks left)", impl,
                    rows_per_s(cases, impl == "C"))
                moves, end_ms, card_ms, hand_ms = hard_game(a.hands, a.seed + r)
                add("`hard`: ms per real card choice in the endgame (mean)", impl,
                    statistics.mean(end_ms))
                add("`hard`: ms per real card choice (mean)", impl, statistics.mean(card_ms))
                add("`hard`: ms per hand, four seats", impl, hand_ms)
                rate, cpu_rate, labels = label_hands_per_s(a.checkpoint, a.label_hands, a.seed)
                add("labelling: hands per second", impl, rate)
                add("labelling: hands per CPU second", impl, cpu_rate)
            if impl == "C":
                c_moves, c_labels = moves, labels
            elif moves != c_moves or any(not np.array_equal(labels[k], c_labels[k],
                                                            equal_nan=labels[k].dtype.kind == "f")
                                         for k in labels):
                print(f"repeat {r}: the C and Python solvers played or labelled differently",
                      file=sys.stderr)
                return 1
        print(f"repeat {r + 1}/{a.repeats} done", file=sys.stderr, flush=True)
    rows = sum(len(c[0]) for c in cases)
    import platform
    cmd = "python benchmarks/bench_solver.py " + " ".join(argv if argv is not None
                                                          else sys.argv[1:])
    head = [f"`{cmd.strip()}`: {os.cpu_count()} CPUs ({platform.machine()}), Python "
            f"{platform.python_version()}, torch on 1 thread, {time.strftime('%Y-%m-%d')}.", "",
            f"Median of {a.repeats} interleaved runs ({a.positions} positions, {rows} rows; "
            f"{a.hands} hand(s) of four `hard` bots; {a.label_hands} labelled hands per run, "
            f"{a.checkpoint}); the same moves and labels with both."]
    emit_c_python(head, res, a.out, 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
