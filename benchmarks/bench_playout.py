"""The PIMC play-outs in C against the Python reference, side by side in one run.

Three measures, each run with the C play-outs (``spades_env/_native/playout.c``) and with the
Python ones (``spades_env.bots.solver.playout``), interleaved ``--repeats`` times so that machine
load hits both alike; medians and the speed-up of C are printed (a rate's ratio C / Python, a
time's ratio Python / C):

1. **play-outs per second**: ``solver.playouts`` over ``--deals`` random deals from the start of a
   hand (random bids, Nil included);
2. **``hard``'s decision time**: four ``hard`` bots play ``--hands`` hands of a seeded game; the
   median milliseconds of a real card choice (more than one legal card) and of a bid. The two
   runs must play the same moves (the C play-outs give the same trick counts), else it stops;
3. **labelling speed** of ``training.labelling.label_chunk`` (the search distillation's labels):
   hands per second with the shipped agent, ``--label-hands`` hands per run, 40 deals per card.

Usage: ``python benchmarks/bench_playout.py [--deals 2000] [--hands 1] [--label-hands 4]
[--repeats 5] [--out benchmarks/results/playout.md]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from spades_env import Rules, SpadesGame  # noqa: E402
from spades_env.bots import solver  # noqa: E402
from spades_env.bots.pimc import HardBot  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class python_playouts:
    """Context: the bots use the Python play-outs inside it."""

    def __enter__(self):
        self.saved = solver._kernel
        solver._kernel = False

    def __exit__(self, *exc):
        solver._kernel = self.saved


def playouts_per_s(deals: int, seed: int) -> float:
    rnd = random.Random(seed)
    rows, bids = [], []
    cards = list(range(52))
    for _ in range(deals):
        rnd.shuffle(cards)
        h = [0, 0, 0, 0]
        for i, c in enumerate(cards):
            h[i & 3] |= 1 << c
        rows.append(tuple(h))
        bids.append(tuple(rnd.choice((0, 1, 2, 3, 4, 5)) for _ in range(4)))
    t = time.perf_counter()
    solver.playouts(rows, bids, [-1] * deals, [], 0, (0, 0, 0, 0), False, 0)
    return deals / (time.perf_counter() - t)


def hard_game(hands: int, seed: int) -> tuple[list[int], list[float], list[float]]:
    g = SpadesGame(Rules(), seed=seed)
    bots = [HardBot(seed=seed * 10 + s) for s in range(4)]
    moves, card_ms, bid_ms = [], [], []
    while len(g.hand_results) < hands:
        p = g.current_player
        v = g.view(p)
        t = time.perf_counter()
        a = bots[p].act(v)
        ms = 1e3 * (time.perf_counter() - t)
        if a >= 52:
            bid_ms.append(ms)
        elif len(v.legal_actions) > 1:
            card_ms.append(ms)
        g.apply(a)
        moves.append(a)
    return moves, card_ms, bid_ms


def label_hands_per_s(hands: int, seed: int) -> float:
    from spades_env.training.labelling import label_chunk
    t = time.perf_counter()
    label_chunk(os.path.join(ROOT, "checkpoints", "shipped", "agent.pt"), hands, seed, 0)
    return hands / (time.perf_counter() - t)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--deals", type=int, default=2000)
    p.add_argument("--hands", type=int, default=1)
    p.add_argument("--label-hands", type=int, default=4)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="also write the table (markdown) here")
    a = p.parse_args(argv)
    if not solver.native_playouts():
        print("no C play-outs here (no C compiler found): nothing to compare", file=sys.stderr)
        return 1
    import torch
    torch.set_num_threads(1)
    res: dict[str, dict[str, list[float]]] = {}

    def add(what, impl, v):
        res.setdefault(what, {"C": [], "Python": []})[impl].append(v)

    for r in range(a.repeats):
        for impl in ("C", "Python"):
            with python_playouts() if impl == "Python" else contextlib.nullcontext():
                add("play-outs per second", impl, playouts_per_s(a.deals, a.seed + r))
                moves, card_ms, bid_ms = hard_game(a.hands, a.seed + r)
                add("`hard`: ms per real card choice (median)", impl, statistics.median(card_ms))
                add("`hard`: ms per bid (median)", impl, statistics.median(bid_ms))
                add("labelling: hands per second", impl, label_hands_per_s(a.label_hands,
                                                                            a.seed + r))
            if impl == "C":
                c_moves = moves
            elif moves != c_moves:
                print(f"repeat {r}: the C and Python play-outs played different moves",
                      file=sys.stderr)
                return 1
        print(f"repeat {r + 1}/{a.repeats} done", file=sys.stderr, flush=True)
    head = [f"Median of {a.repeats} interleaved runs ({a.deals} play-outs, {a.hands} hand(s) of "
            f"four `hard` bots, {a.label_hands} labelled hands per run); the same moves with "
            f"both."]
    emit_c_python(head, res, a.out, 1)
    return 0


def emit_c_python(head: list[str], res: dict, out: str | None, digits: int) -> None:
    """Print (and with ``out``, write atomically) ``head`` and the table of medians of ``res``
    (``{measure: {"C": [...], "Python": [...]}}``; a measure named "ms per ..." is a time, the
    others rates) with the speed-up of C, to ``digits`` decimals."""
    lines = head + ["", "| measure | C | Python | speed-up of C |", "|---|---|---|---|"]
    for what, d in res.items():
        c, py = statistics.median(d["C"]), statistics.median(d["Python"])
        up = py / c if "ms per" in what else c / py  # times: Python / C; rates: C / Python
        lines.append(f"| {what} | {c:,.{digits}f} | {py:,.{digits}f} | {up:.{digits}f}x |")
    text = "\n".join(lines)
    print(text)
    if out:
        from spades_env.fileio import write_atomic
        write_atomic(out, (text + "\n").encode())


if __name__ == "__main__":
    sys.exit(main())
