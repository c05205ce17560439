"""Compact game records of a slow teacher bot, produced once and replayed for behaviour cloning.

``hard`` and ``insane`` (PIMC, ``spades_env.bots.pimc``) play much better than ``medium`` but take
10-40 ms per decision, too slow to produce imitation data inside a 30-minute training run. So the
records are produced once (``spades teacher-records``), shipped, and the training run
only replays them through the engine to rebuild each seat's observation (about 10 us a decision).

A record of one hand holds the deal's seed, the scores and bags before the hand and the 56 moves
(four copies of the teacher at the table, standard rules); the format and its reader are the
library's (``spades_env.records``: the field table is there).

Reproducible from the seeds: chunk ``k`` of a run with ``--seed S`` draws its game seeds, start
positions and bot seeds from ``np.random.default_rng([S, k])``, so any chunk can be regenerated
and checked (``verify``). A file is an ``.npz`` written atomically, with the teacher name, the
rules preset and the format version.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time

import numpy as np

from spades_env import Rules, SpadesGame
from spades_env import options as opt
from spades_env.bots import make_bot, quoted_name
from spades_env.cards import NUM_ACTIONS, action_str, is_int
from spades_env.compact import COMPACT_SIZE, pack, rules_table
from spades_env.fileio import write_atomic
from spades_env.observation import OBS_SIZE, IncrementalEncoder

from .envs import randomize_start, seat_priv

from spades_env.records import HAND_FORMAT as FORMAT  # noqa: F401 - the format is the library's
from spades_env.records import HAND_VERSION as VERSION
from spades_env.records import MOVES_PER_HAND
from spades_env.records import load_hand_records as load_records


def generate_chunk(teacher: str, hands: int, seed: int, chunk: int,
                   random_start: float = 0.5, rules_preset: str = "standard") -> dict:
    """Play ``hands`` single hands with four ``teacher`` bots and record them.

    Returns a dict of arrays (see the module table): ``seed`` [H] int64, ``scores`` [H, 2] int16,
    ``bags`` [H, 2] int8, ``moves`` [H, 56] uint8.
    Raises ValueError for a rules preset with Blind Nil (hands would not be 56 moves).
    """
    rules = Rules.preset(rules_preset)
    if rules.has_exchanges:
        raise ValueError("teacher records need rules without card exchanges (Blind Nil, Nil "
                         "passing): a hand record holds 56 moves")
    rng = np.random.default_rng([seed, chunk])
    bots = [make_bot(teacher, seed=int(rng.integers(2**31))) for _ in range(4)]
    out = {"seed": np.zeros(hands, np.int64), "scores": np.zeros((hands, 2), np.int16),
           "bags": np.zeros((hands, 2), np.int8),
           "moves": np.zeros((hands, MOVES_PER_HAND), np.uint8)}
    for h in range(hands):
        s = int(rng.integers(2**63))
        g = SpadesGame(rules, seed=s)
        if random_start > 0 and rng.random() < random_start:
            randomize_start(g, rng)
        out["seed"][h] = s
        out["scores"][h] = g.scores
        out["bags"][h] = g.bags
        for k in range(MOVES_PER_HAND):
            p = g.current_player
            a = int(bots[p].act(g.view(p)))
            g.apply(a)
            out["moves"][h, k] = a
        if not g.hand_results:
            raise RuntimeError("a hand did not end after 56 moves")
    return out


def save_records(path: str, rec: dict, teacher: str, rules_preset: str = "standard") -> None:
    """Write ``rec`` to ``path`` (``.npz``) atomically (``spades_env.fileio.write_atomic``: the
    complete file or none, no temp file left behind).

    Raises:
        OSError: ``could not write PATH: REASON`` (a folder, no space, no permission...);
            ``path`` unchanged.
    """
    buf = io.BytesIO()
    np.savez_compressed(buf, format=np.array(FORMAT), version=np.array(VERSION),
                        teacher=np.array(teacher), rules=np.array(rules_preset), **rec)
    write_atomic(path, buf.getbuffer(), prefix=".tmp_", suffix=".npz", create_folder=True)


def team_points(ts, bag_cost: float = 0.0) -> float:
    """A team's points for one hand (``rules.TeamScore``), optionally with bags at their long-run
    cost: with ``bag_cost > 0`` each bag taken costs ``bag_cost`` points and the bag penalty
    actually reached in the hand is left out (it is what those costs pay for), as in the arena's
    bag-adjusted difference. ``bag_cost = 0`` gives ``ts.hand_points``."""
    if bag_cost <= 0:
        return float(ts.hand_points)
    return float(ts.hand_points - ts.bag_penalty - bag_cost * ts.bags)


def replay(rec: dict, reward_scale: float = 0.01, bag_cost: float = 0.0,
           limit: int | None = None, where: str = "records", compact: bool = False,
           priv: bool = True, workers: int = 1, first_hand: int = 0) -> dict:
    """Rebuild the imitation data set by replaying records through the engine.

    Every decision becomes a row: the acting seat's observation (``encode(game.view(seat))``,
    kept move by move by ``observation.IncrementalEncoder``),
    its legal mask, the teacher's action, and the hand's return for that seat's team: (team hand
    points - other team's) * ``reward_scale``, with bags at ``bag_cost`` each (``team_points``).

    Returns ``obs`` [D, OBS_SIZE] float16, ``mask`` [D, 68] bool, ``action`` [D] int64,
    ``ret`` [D] float32, ``priv`` [D, 156] bool (the other three hands from the acting seat's side,
    for the privileged critic only), with D = 56 * hands.
    ``compact=True``: ``obs`` is ``[D, COMPACT_SIZE]`` uint8 instead (``spades_env.compact``, 120
    bytes a row against 1422; exact, not rounded to float16) and ``table`` the rules table that
    ``compact.expand`` needs. ``priv=False`` leaves ``priv`` out (``None``).
    ``workers`` > 1 replays runs of consecutive hands in up to that many processes (``spawn``; at
    least ``REPLAY_PART`` hands each, else fewer processes or none) and joins them in order: the
    same arrays, in about 1 / ``workers`` of the time for large records (a process costs about
    a second to start); a script that calls it so must guard its entry point with
    ``if __name__ == "__main__":``. ``first_hand`` numbers the hands in the messages from that
    index (a part's offset in the whole record).
    A record carries no values but its moves: each is checked against the replayed game's legal
    actions before its row is used.

    Raises:
        ValueError: a recorded move that the engine refuses (a corrupt or foreign record):
            ``WHERE: hand H, decision K (seat S): field 'moves': CARD (action A) is not legal
            there (legal: ...)``, with ``where`` the file's path when the caller gives it.
    """
    rules = Rules.preset(rec.get("rules", "standard"))
    if limit is not None and (not is_int(limit) or limit < 0):
        raise ValueError(f"limit must be None or an int >= 0, got {limit!r}")
    n = len(rec["seed"]) if limit is None else min(int(limit), len(rec["seed"]))
    if not is_int(workers) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    parts = min(int(workers), n // REPLAY_PART)
    if parts > 1:
        return _replay_parallel(rec, n, parts, first_hand, reward_scale=reward_scale,
                                bag_cost=bag_cost, where=where, compact=compact, priv=priv)
    D = n * MOVES_PER_HAND
    obs = np.zeros((D, COMPACT_SIZE) if compact else (D, OBS_SIZE),
                   np.uint8 if compact else np.float16)
    block = np.zeros((MOVES_PER_HAND, OBS_SIZE), np.float32)  # one hand's rows, exact
    legal = np.zeros(D, object)  # each decision's legal actions as a 68-bit int (legal_mask)
    act = rec["moves"][:n].reshape(-1).astype(np.int64)
    ret = np.zeros(D, np.float32)
    privs = np.zeros((D, 3 * 52), bool) if priv else None
    seats = np.zeros(MOVES_PER_HAND, np.int64)
    enc = IncrementalEncoder()  # every seat's row, updated move by move (= encode(game.view))
    rows = enc.buf
    for h in range(n):
        g = SpadesGame(rules, seed=int(rec["seed"][h]))
        g.scores = [int(x) for x in rec["scores"][h]]
        g.bags = [int(x) for x in rec["bags"][h]]
        enc.new_hand(g)
        for k in range(MOVES_PER_HAND):
            r = h * MOVES_PER_HAND + k
            p = g.current_player
            block[k] = rows[p]
            m = legal[r] = g.legal_mask()
            if priv:
                privs[r] = seat_priv(g.hands, p)
            a = int(act[r])
            if not m >> a & 1:
                names = ", ".join(map(action_str, np.flatnonzero(mask_bits([m])[0])))
                raise ValueError(f"{where}: hand {first_hand + h}, decision {k} (seat {p}): "
                                 f"field 'moves': {action_str(a)} (action {a}) is illegal there "
                                 f"(legal: {names})")
            seats[k] = p
            enc.apply(g, a)
        hr = g.hand_results[0]
        d = (team_points(hr.teams[0], bag_cost) - team_points(hr.teams[1], bag_cost)) * reward_scale
        hand = slice(h * MOVES_PER_HAND, (h + 1) * MOVES_PER_HAND)
        ret[hand] = np.where(seats % 2 == 0, d, -d)
        obs[hand] = pack(block) if compact else block
    mask = mask_bits(legal)
    out = {"obs": obs, "mask": mask, "action": act, "ret": ret, "priv": privs}
    if compact:
        out["table"] = rules_table(rules)
    return out


def mask_bits(legal) -> np.ndarray:
    """Bool ``[D, NUM_ACTIONS]`` action masks of ``D`` 68-bit int masks (``SpadesGame.legal_mask``:
    bit ``a`` is action ``a``); one byte a bit of work memory."""
    m = np.asarray(legal, object).reshape(-1)
    lo = (m & 0xFFFFFFFFFFFFFFFF).astype("<u8")  # actions 0..63, little-endian bytes
    hi = (m >> 64).astype(np.uint8)  # actions 64..67
    out = np.empty((len(m), NUM_ACTIONS), bool)
    out[:, :64] = np.unpackbits(lo.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    out[:, 64:] = np.unpackbits(hi[:, None], axis=1, bitorder="little")[:, :NUM_ACTIONS - 64]
    return out


REPLAY_PART = 500  # hands: fewer per process and ``replay`` runs in one (a start costs more)
_RECORD_FIELDS = ("seed", "scores", "bags", "moves")


def _replay_part(job) -> dict:
    part, first, kw = job
    return replay(part, first_hand=first, **kw)


def _replay_parallel(rec: dict, n: int, workers: int, first_hand: int, **kw) -> dict:
    """``replay`` of the first ``n`` hands of ``rec`` in ``workers`` processes, each a run of
    consecutive hands (only the fields a replay reads are sent), joined in order."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    bounds = np.linspace(0, n, workers + 1).astype(int)
    jobs = [({"rules": rec.get("rules", "standard"),
              **{k: rec[k][a:b] for k in _RECORD_FIELDS}}, first_hand + int(a), kw)
            for a, b in zip(bounds[:-1], bounds[1:])]
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        parts = list(pool.map(_replay_part, jobs))
    out = {k: None if parts[0][k] is None else np.concatenate([p[k] for p in parts])
           for k in ("obs", "mask", "action", "ret", "priv")}
    if kw.get("compact"):
        out["table"] = parts[0]["table"]
    return out


def merge_chunks(paths: list[str]) -> dict:
    """Concatenate chunk files (in the given order) into one record dict."""
    parts = [load_records(p) for p in paths]
    if len({(p["teacher"], p["rules"]) for p in parts}) > 1:
        raise ValueError("chunks of different teachers or rules cannot be merged")
    out = {k: np.concatenate([p[k] for p in parts]) for k in ("seed", "scores", "bags", "moves")}
    out["teacher"], out["rules"] = parts[0]["teacher"], parts[0]["rules"]
    return out


def _chunk_path(folder: str, chunk: int) -> str:
    return os.path.join(folder, f"chunk_{chunk:05d}.npz")


def check_chunk(path: str, teacher: str, hands: int) -> None:
    """Refuse a chunk kept from an earlier run that is not one of this run (another teacher or
    size): a resumed run must not mix teachers. Raises ValueError naming the file."""
    d = load_records(path)
    if d["teacher"] != teacher or len(d["seed"]) != hands:
        raise ValueError(f"{path} belongs to another run (teacher {d['teacher']!r}, "
                         f"{len(d['seed'])} hands; this run: {teacher!r}, {hands}); use another "
                         f"--out folder, or remove that file")


def _worker(job):
    teacher, hands, seed, chunk, random_start, folder = job
    path = _chunk_path(folder, chunk)
    if os.path.exists(path):
        check_chunk(path, teacher, hands)
        return path, 0.0
    t0 = time.time()
    rec = generate_chunk(teacher, hands, seed, chunk, random_start)
    save_records(path, rec, teacher)
    return path, time.time() - t0


_LIMITS = (  # option, kind, low, high
    ("chunks", int, 1, 100_000), ("chunk_hands", int, 1, 100_000), ("seed", int, 0, 2**62),
    ("random_start", float, 0.0, 1.0), ("workers", int, 1, 64))


def check_args(a) -> None:
    """Every option of the command line, before any work: numbers in range (finite), the
    teacher a bot that loads, one chunk of a search teacher and the workers together within
    ``bots.work.LIMITS`` (``check_task``), the folder a folder (or absent).

    Raises:
        ValueError: naming the option and the value.
    """
    for name, kind, lo, hi in _LIMITS:
        v = getattr(a, name)
        if not (np.isfinite(v) and lo <= v <= hi):
            raise ValueError(f"--{name.replace('_', '-')} must be "
                             f"{'an integer' if kind is int else 'a number'} in [{lo}, {hi}], "
                             f"got {v!r}")
    if os.path.lexists(a.out) and not os.path.isdir(a.out):
        raise ValueError(f"--out {a.out}: exists and is not a folder")
    try:
        bot = make_bot(a.teacher, seed=0)
        work = getattr(bot, "work", None)
        if work is not None:  # a search teacher: one chunk (4 seats) and the workers together
            from spades_env.bots.work import check_task
            check_task(f"--chunk-hands {a.chunk_hands} --workers {a.workers}", work,
                       int(a.chunk_hands), 4, int(min(a.workers, a.chunks)))
    except (ValueError, KeyError, OSError) as e:
        raise ValueError(f"--teacher {quoted_name(a.teacher)}: {e}") from None


def merge_folder(folder: str, out: str) -> dict:
    """Merge the chunks of ``folder`` (``chunk_*.npz``, found by listing it) into ``out``.

    Raises:
        ValueError: no chunks, a bad chunk, chunks of different teachers, or an ``out`` that is
            a folder, one of the chunks, inside ``folder`` or cannot be written (checked before
            reading).
        OSError: ``out`` could not be written (nothing is left behind).
    """
    from spades_env.fileio import check_output_file, check_outputs_apart, files_in
    paths = files_in(folder, "chunk_", ".npz")
    if not paths:
        raise ValueError(f"no chunks (chunk_*.npz) in {folder}")
    check_outputs_apart([("--merge", out)], [("", q) for q in paths] + [("--out", folder)])
    check_output_file(out, "--merge", create_folder=True)
    rec = merge_chunks(paths)
    save_records(out, {k: rec[k] for k in ("seed", "scores", "bags", "moves")}, rec["teacher"],
                 rec["rules"])
    return {"hands": len(rec["seed"]), "chunks": len(paths)}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``spades teacher-records`` (its shared options: ``spades_env.options``)."""
    p = argparse.ArgumentParser(
        prog="spades teacher-records",
        description="Produce (resumably, in chunks) or merge compact teacher game records.")
    p.add_argument("--teacher", default="hard")
    p.add_argument("--chunks", type=int, default=60, help="number of chunks to produce")
    p.add_argument("--chunk-hands", type=int, default=100)
    opt.add_seed(p, "seed of the deals and the teacher's bots (chunk k draws from [seed, k])")
    p.add_argument("--random-start", type=float, default=0.5)
    p.add_argument("--workers", type=int, default=2)
    opt.add_out(p, "the chunk folder the run writes (existing chunks are kept: the run resumes; "
                   "default records_work/hard)", default="records_work/hard", metavar="DIR",
                old=("--folder",))
    p.add_argument("--merge", metavar="FILE",
                   help="merge the chunks of the --out folder into FILE and exit")
    return p


def main(argv=None) -> int:
    a = build_parser().parse_args(argv)
    lock = None
    try:
        if a.merge:
            r = merge_folder(a.out, a.merge)
            print(f"{a.merge}: {r['hands']} hands from {r['chunks']} chunks "
                  f"({os.path.getsize(a.merge) / 1e6:.2f} MB)")
            return 0
        check_args(a)
        from spades_env.bots import bot_inputs
        from spades_env.fileio import check_output_file, check_outputs_apart
        from spades_env.locks import FolderInUse, lock_folder
        # the chunk folder must not be (or hold) the teacher's checkpoint: before the lock file
        check_outputs_apart([("--out", a.out)], bot_inputs("--teacher", a.teacher))
        try:
            lock = lock_folder(a.out)
        except FolderInUse as e:
            raise ValueError(f"--out {a.out} is in use by another run ({e.holder})") \
                from None
        check_output_file(_chunk_path(a.out, 0), "--out")
        jobs = [(a.teacher, a.chunk_hands, a.seed, c, a.random_start, a.out)
                for c in range(a.chunks)]
        from spades_env.workers import worker_pool
        with worker_pool(min(a.workers, a.chunks)) as pool:  # ends its workers on SIGTERM/Ctrl-C
            for path, sec in pool.imap(_worker, jobs):
                print(f"{path} {sec:.0f}s", flush=True)
    except (ValueError, OSError) as e:  # bad input, a bad chunk, a full disk
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: the finished chunks are kept in {a.out}; run the same command "
              f"again to resume", file=sys.stderr)
        return 130
    finally:
        if lock is not None:
            lock.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
