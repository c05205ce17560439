"""Producing labels: hands of a policy valued card by card (and bid by bid) by a search.

``label_chunk`` plays the hands of one chunk, the policy (greedy) against a search team
(``make_teacher``: ``hard``'s PIMC search, or ``expert``'s built on the policy's own network),
and records the search's values at every decision. ``produce_labels`` labels chunks 0, 1, ...
into a label folder (locked by ``lock_labels``) in local worker processes or as Ray tasks,
keeping the chunks an earlier run left there, with one progress line per chunk. The chunk files
are label files (``training.labels``).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from spades_env import Rules, SpadesGame
from spades_env.bots.pimc import MAX_SAMPLES, PIMCBot, best_candidate
from spades_env.cards import BID_OFFSET, TEAM, is_int
from spades_env.engine import Phase
from spades_env.locks import check_locked, locked_identity

from .envs import randomize_start
from .labels import (BIDS_PER_HAND, NUM_BIDS, TEACHERS, check_chunk, chunk_stats,
                     equivalence_classes, file_sha256, save_labels)
from .teacher_records import MOVES_PER_HAND


def make_teacher(teacher: str, checkpoint: str, samples: int, bid_samples: int, seed: int,
                 native: bool = True):
    """The search that labels (``TEACHERS``), drawing ``samples`` deals per card decision and
    ``bid_samples`` per bid (at least 1).

    ``"hard"`` is ``PIMCBot`` with uniform deals (drawn in C where it can: ``native_deals``,
    unless ``native`` is False); ``"expert"`` is ``ExpertBot`` on the network
    ``checkpoint`` (``insane``'s bid inference and bid search, deals weighted by that network's
    likelihood of the other seats' plays; its bid values include that network's bid prior,
    ``bid_prior * log p(bid)``, so a bid row's soft target ``softmax(values / temperature)`` is the
    search's Boltzmann policy times the network's own, ``p ** (bid_prior / temperature)``).

    Raises:
        ValueError: an unknown teacher, or a bad checkpoint (``ExpertBot``).
    """
    if teacher == "hard":
        return PIMCBot(seed=seed, samples=samples, bid_samples=max(1, bid_samples),
                       native_deals=native)
    if teacher == "expert":
        from spades_env.bots.expert import ExpertBot
        return ExpertBot(seed=seed, checkpoint=checkpoint, samples=samples,
                         bid_samples=max(1, bid_samples))
    raise ValueError(f"teacher must be one of {list(TEACHERS)}, got {teacher!r}")


def check_label_work(checkpoint: str, teacher: str, samples: int, bid_samples: int,
                     chunk_hands: int, workers: int):
    """The teacher's ``work.WorkEstimate`` once one label chunk (``chunk_hands`` hands, the
    search valuing every seat's decisions) and ``workers`` processes labelling at once fit
    ``spades_env.bots.work.LIMITS``; called before any worker starts.

    Raises:
        ValueError: the estimate over a limit (naming the options, the estimate and the limit),
            or what ``make_teacher`` raises.
    """
    from spades_env.bots.work import check_task
    bot = make_teacher(teacher, checkpoint, int(samples), int(bid_samples), 0)
    check_task(f"labelling with {teacher}", bot.work, int(chunk_hands), 4, int(workers))
    return bot.work


def label_chunk(checkpoint: str, hands: int, seed: int, chunk: int, samples: int = 40,
                random_start: float = 0.5, teacher: str = "hard", bid_samples: int = 0,
                native: bool = True) -> dict:
    """Play ``hands`` single hands, the checkpoint's policy (greedy) against a search team, and
    label every card decision (and, with ``bid_samples``, every bid) with the search's values.

    Args:
        checkpoint: a training or shipped checkpoint (``CheckpointBot``).
        hands: hands to play (>= 1).
        seed, chunk: the chunk's random numbers come from ``np.random.default_rng([seed, chunk])``.
        samples: deals the search draws per card decision (1..``MAX_SAMPLES``; ``hard`` uses 100).
        random_start: share of hands started from random scores and bags (``envs.randomize_start``)
            instead of 0-0.
        teacher: the search (``TEACHERS``, ``make_teacher``): ``"hard"``, or ``"expert"`` built on
            ``checkpoint`` itself.
        bid_samples: deals the bid search draws per bid (0..``MAX_SAMPLES``); 0 labels no bid and
            every seat bids the policy's bid, else every bid is valued (``PIMCBot.bid_values``)
            and the search team bids its best.
        native: the fast path (default): the policy's decisions in numpy
            (``CheckpointBot(numpy_forward=True)``) and ``hard``'s deals drawn in C
            (``PIMCBot(native_deals=True)``), about 2x the hands a second
            (``benchmarks/bench_label_path.py``); False: torch and the Python sampler (the same
            search and policy; other deals, as the C draw uses other random numbers).
    Returns:
        the label arrays of the module docstring (``seed``, ``scores``, ``bags``, ``moves``,
        ``agent_team``, ``values``, ``bid_values``, ``regret``).
    Raises:
        ValueError: a bad count, seed or teacher, or a bad checkpoint file.
        FileNotFoundError: no checkpoint file at that path.
    """
    from spades_env.bots.checkpoint_bot import CheckpointBot
    _check_chunk_args(hands, seed, chunk, samples, random_start, teacher, bid_samples)
    rng = np.random.default_rng([seed, chunk])
    policy = CheckpointBot(checkpoint, seed=int(rng.integers(2**31)),
                           numpy_forward=bool(native))
    search = make_teacher(teacher, checkpoint, int(samples), int(bid_samples),
                          int(rng.integers(2**31)), bool(native))
    rules = Rules()
    out = _empty_labels(hands)
    for h in range(hands):
        s = int(rng.integers(2**63))
        g = SpadesGame(rules, seed=s)
        if random_start > 0 and rng.random() < random_start:
            randomize_start(g, rng)
        team = int(rng.integers(2))
        out["seed"][h], out["scores"][h], out["bags"][h] = s, g.scores, g.bags
        out["agent_team"][h] = team
        _label_hand(out, h, g, team, policy, search, bid_samples)
    return out


def _check_chunk_args(hands, seed, chunk, samples, random_start, teacher, bid_samples) -> None:
    """``label_chunk``'s arguments, each checked in turn (``ValueError`` naming the first bad
    one)."""
    if teacher not in TEACHERS:
        raise ValueError(f"teacher must be one of {list(TEACHERS)}, got {teacher!r}")
    for name, v, lo, hi in (("hands", hands, 1, 10**7), ("samples", samples, 1, MAX_SAMPLES),
                            ("bid_samples", bid_samples, 0, MAX_SAMPLES)):
        if not is_int(v) or not lo <= v <= hi:
            raise ValueError(f"{name} must be an int in [{lo}, {hi}], got {v!r}")
    if isinstance(random_start, bool) or not isinstance(random_start, (int, float, np.floating)) \
            or not 0.0 <= random_start <= 1.0:
        raise ValueError(f"random_start must be a number in [0, 1], got {random_start!r}")
    for name, v in (("seed", seed), ("chunk", chunk)):
        if not is_int(v) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {v!r}")


def _empty_labels(hands: int) -> dict:
    """The label arrays of ``hands`` hands before any is played: zeros, and NaN for the values
    and regrets of decisions not (yet) valued."""
    return {"seed": np.zeros(hands, np.int64), "scores": np.zeros((hands, 2), np.int16),
            "bags": np.zeros((hands, 2), np.int8),
            "moves": np.zeros((hands, MOVES_PER_HAND), np.uint8),
            "agent_team": np.zeros(hands, np.int8),
            "values": np.full((hands, MOVES_PER_HAND, 52), np.nan, np.float16),
            "bid_values": np.full((hands, BIDS_PER_HAND, NUM_BIDS), np.nan, np.float16),
            "regret": np.full((hands, MOVES_PER_HAND), np.nan, np.float16)}


def _label_hand(out: dict, h: int, g: SpadesGame, team: int, policy, search,
                bid_samples: int) -> None:
    """Play hand ``h`` of a chunk on ``g`` to its end, ``policy`` (greedy) for team ``team`` and
    the ``search`` for the other, and write its moves, values, bid values and regrets into
    ``out``."""
    for k in range(MOVES_PER_HAND):
        p = g.current_player
        view = g.view(p)
        if view.phase != Phase.PLAY:
            a = policy.act(view)
            if bid_samples and view.phase == Phase.BIDDING and k < BIDS_PER_HAND:
                bids, values = search.bid_values(view)
                out["bid_values"][h, k, bids] = values
                if TEAM[p] != team:
                    a = BID_OFFSET + bids[best_candidate(list(range(len(bids))), values)]
        else:
            cards, values = search.card_values(view)
            if len(cards) > 1:
                out["values"][h, k, cards] = values
            if TEAM[p] == team:
                a = policy.act(view)
                if len(cards) > 1:  # the played card's class (equivalence_classes), from the
                    # stored (float16) values, so the fields agree exactly
                    played = np.zeros((1, 52), bool)
                    played[0, a] = True
                    valued = ~np.isnan(out["values"][h, k])[None]
                    c = int(equivalence_classes(played, valued)[0, a])
                    v16 = out["values"][h, k, cards].astype(np.float32)
                    out["regret"][h, k] = v16.max() - v16[cards.index(c)]
            else:
                a = best_candidate(cards, values)
        g.apply(int(a))
        out["moves"][h, k] = a
    if not g.hand_results:
        raise RuntimeError("a hand did not end after 56 moves")


def _chunk_path(folder: str, chunk: int) -> str:
    return os.path.join(folder, f"chunk_{chunk:05d}.npz")


def lock_labels(folder: str):
    """Lock the label folder ``folder`` for one labelling run (``spades_env.locks.lock_folder``:
    created if missing, never through a symlink, owned by this user; a second run on the same
    folder is refused while the first holds it) and check that chunks can be written there.

    Returns:
        the held ``FolderLock`` (``release()`` it when the chunks have been read).
    Raises:
        ValueError: the folder is in use by another run, unsafe, or cannot be written (the
            message names it).
    """
    from spades_env.fileio import check_output_file
    from spades_env.locks import FolderInUse, lock_folder
    try:
        lock = lock_folder(folder, ".lock")
    except FolderInUse as e:
        raise ValueError(f"label folder {folder} is in use by another labelling run "
                         f"({e.holder}); wait for it to end or use another --labels folder") \
            from None
    except ValueError as e:
        raise ValueError(f"label folder: {e}") from None
    except OSError as e:
        raise ValueError(f"label folder {folder}: cannot create or open it: "
                         f"{e.strerror or e}") from None
    try:
        check_output_file(_chunk_path(folder, 0), "label folder")
    except ValueError:
        lock.release()
        raise
    return lock


def _make_chunk(checkpoint, hands, seed, chunk, samples, random_start, teacher, bid_samples):
    """One chunk's labels and the seconds they took (one torch thread: the same numbers in any
    process)."""
    import torch
    torch.set_num_threads(1)
    t0 = time.time()
    rec = label_chunk(checkpoint, hands, seed, chunk, samples, random_start, teacher, bid_samples)
    return rec, time.time() - t0


def _worker(job):
    spec, folder, identity, chunk = job
    path = _chunk_path(folder, chunk)
    if os.path.exists(path):
        return path, check_chunk(path, spec["sha"], spec["hands"], spec["seed"], chunk,
                                 spec["samples"], spec["teacher"], spec["bid_samples"]), None
    rec, sec = _make_chunk(spec["checkpoint"], spec["hands"], spec["seed"], chunk,
                           spec["samples"], spec["random_start"], spec["teacher"],
                           spec["bid_samples"])
    check_locked(path, identity)  # still the folder the parent locked (a worker has no lock)
    _save_chunk(path, rec, spec, chunk)
    return path, rec, sec


def _save_chunk(path, rec, spec, chunk) -> None:
    save_labels(path, rec, spec["checkpoint"], spec["samples"], spec["seed"], chunk, spec["sha"],
                spec["teacher"], spec["bid_samples"])


_NODE_CHECKPOINTS: dict = {}  # on a Ray node: SHA-256 -> the checkpoint file written there


def _ray_chunk(data: bytes, sha: str, hands, seed, chunk, samples, random_start, teacher,
               bid_samples):
    """A Ray task: write the checkpoint's bytes to a file on this node once (checked against
    ``sha``), then label chunk ``chunk`` there; returns ``(labels, seconds)``."""
    import hashlib
    import tempfile
    path = _NODE_CHECKPOINTS.get(sha)
    if path is None or not os.path.isfile(path):
        if hashlib.sha256(data).hexdigest() != sha:
            raise ValueError("the checkpoint's bytes changed on the way to the node")
        fd, path = tempfile.mkstemp(prefix="spades_labels_", suffix=".pt")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        _NODE_CHECKPOINTS[sha] = path
    return _make_chunk(path, hands, seed, chunk, samples, random_start, teacher, bid_samples)


def _progress_line(path, st, sec, totals, t_start, deadline, chunks,
                   kept: str = "kept from an earlier run") -> str:
    """``chunk_00003.npz: 50 hands, 1811 card + 200 bid labels in 61 s (33/s); policy regret
    0.82 points per card; round: 200 hands, 31 labels/s, 4.2 min of labels left``: the minutes
    until the deadline or, when sooner at this call's pace, until the ``chunks`` are done."""
    name = os.path.basename(path)
    if sec is None:
        head = f"{name}: {kept} ({st['hands']} hands)"
    else:
        n = st["card_labels"] + st["bid_labels"]
        head = (f"{name}: {st['hands']} hands, {st['card_labels']} card + {st['bid_labels']} bid "
                f"labels in {sec:.0f} s ({n / max(sec, 1e-9):.1f}/s)")
    rate = totals["made_labels"] / max(time.time() - t_start, 1e-9)
    regret = ("not recorded (a version-1 chunk)" if np.isnan(st["regret"])
              else f"{st['regret']:.2f} points per card")
    now = time.time()
    left = max(0.0, deadline - now)
    if totals["made_chunks"]:
        left = min(left, (chunks - totals["chunks"]) * (now - t_start) / totals["made_chunks"])
    left /= 60
    return (f"{head}; policy regret {regret}; round: {totals['hands']} hands, {rate:.1f} labels/s, "
            f"{left:.1f} min of labels left")


def _label_spec(checkpoint, chunk_hands, seed, samples, random_start, teacher,
                bid_samples) -> dict:
    """What every chunk of one labelling run shares (``_worker``'s ``spec``)."""
    return {"checkpoint": checkpoint, "sha": file_sha256(checkpoint), "hands": chunk_hands,
            "seed": seed, "samples": samples, "random_start": random_start, "teacher": teacher,
            "bid_samples": bid_samples}


def produce_labels(checkpoint: str, folder: str, minutes: float, chunks: int, chunk_hands: int,
                   seed: int, samples: int, workers: int, random_start: float = 0.5,
                   log=print, teacher: str = "hard", bid_samples: int = 0,
                   ray_address: str | None = None, stats: dict | None = None,
                   on_chunk=None, log_every: float = 0.0) -> list[str]:
    """Label chunks 0, 1, ... until ``chunks`` are done or ``minutes`` have passed, in
    ``workers`` local processes, or as Ray tasks on the cluster at ``ray_address``. Chunks already
    in ``folder`` are checked (``check_chunk``) and kept: a stopped run resumes. ``minutes`` 0
    labels nothing new: the chunks already there (``LabelsBeside``'s) are checked and kept.
    Returns the
    paths of chunks ``0..chunks-1`` that exist, in order. Logs one line per chunk
    (``_progress_line``: hands, labels, labels per second, the policy's regret, the minutes of
    labels left), or with ``log_every`` > 0 at most one per ``log_every`` seconds (the first
    chunk's always).

    On Ray (``spades_env.ray_cluster``: the package shipped to the nodes), the checkpoint's bytes
    go to the nodes and each chunk is a task of one CPU; the driver writes the chunks, so the
    nodes need no shared folder. A chunk's labels depend only on its seeds and the checkpoint:
    the same bits as a local run. A task whose worker or node dies is run again (``max_retries``),
    costing only that chunk.

    The caller holds the folder's lock (``lock_labels``). ``on_chunk`` (if given) is called
    after each chunk with ``{"chunk", "round_hands", "labels_per_second", "regret"}`` (the
    chunk's regret; the rate: labels made so far per second of this call). ``stats`` (a dict,
    if given) receives the totals: ``hands``, ``card_labels``, ``bid_labels``, ``made_labels`` (labelled by this
    call), ``kept_hands`` (of chunks kept from an earlier run), ``chunks`` and ``made_chunks``
    (all, and labelled by this call), ``label_seconds`` and ``regret`` (mean over the chunks'
    hands).

    Raises:
        ValueError: a teacher or chunk over ``bots.work.LIMITS`` (``check_label_work``, before
            any worker starts); a chunk in ``folder`` that is corrupt or from another run; Ray
            missing or the cluster unreachable;
            ``spades_env.locks.FolderReplaced`` when the locked folder was moved or replaced
            while the chunks were made.
    """
    # the teacher's options together and one chunk's work, before any folder, worker or task
    check_label_work(checkpoint, teacher, samples, bid_samples, chunk_hands,
                     1 if ray_address is not None else min(workers, chunks))
    os.makedirs(folder, exist_ok=True)
    spec = _label_spec(checkpoint, chunk_hands, seed, samples, random_start, teacher, bid_samples)
    identity = locked_identity(folder)
    deadline = time.time() + minutes * 60
    totals = {"hands": 0, "card_labels": 0, "bid_labels": 0, "made_labels": 0,
              "label_seconds": 0.0, "regret_sum": 0.0, "regret_hands": 0, "chunks": 0,
              "made_chunks": 0, "kept_hands": 0}
    t_start = time.time()
    last_line = [-math.inf]

    def done(path, rec, sec) -> bool:
        st = chunk_stats(rec)
        for k in ("hands", "card_labels", "bid_labels"):
            totals[k] += st[k]
        totals["chunks"] += 1
        if sec is not None:
            totals["made_labels"] += st["card_labels"] + st["bid_labels"]
            totals["label_seconds"] += sec
            totals["made_chunks"] += 1
        else:
            totals["kept_hands"] += st["hands"]
        if not np.isnan(st["regret"]):
            totals["regret_sum"] += st["regret"] * st["hands"]
            totals["regret_hands"] += st["hands"]
        if time.time() - last_line[0] >= log_every:
            log(_progress_line(path, st, sec, totals, t_start, deadline, chunks,
                               "kept from an earlier run" if minutes > 0 else
                               "made before this round"))
            last_line[0] = time.time()
        if on_chunk is not None:
            on_chunk({"chunk": os.path.basename(path), "round_hands": totals["hands"],
                      "labels_per_second": totals["made_labels"] / max(time.time() - t_start,
                                                                        1e-9),
                      "regret": st["regret"]})
        if minutes > 0 and time.time() >= deadline:
            log(f"label budget of {minutes} min reached")
            return True
        return False

    if minutes <= 0:  # no new work: the chunks already there (e.g. made beside PPO)
        for c in range(chunks):
            path = _chunk_path(folder, c)
            if os.path.exists(path):
                _path, rec, _sec = _worker((spec, folder, identity, c))
                done(path, rec, None)
    elif ray_address is None:
        from spades_env.workers import worker_pool
        jobs = ((spec, folder, identity, c) for c in range(chunks))
        with worker_pool(min(workers, chunks)) as pool:  # ends its workers on SIGTERM/Ctrl-C too
            for path, rec, sec in pool.imap_unordered(_worker, jobs):
                if done(path, rec, sec):
                    break
    else:
        _labels_on_ray(ray_address, spec, folder, identity, chunks, done)
    if stats is not None:
        stats.update({k: v for k, v in totals.items() if not k.startswith("regret_")})
        stats["wall_seconds"] = time.time() - t_start
        stats["regret"] = (totals["regret_sum"] / totals["regret_hands"]
                           if totals["regret_hands"] else float("nan"))
    return [q for q in (_chunk_path(folder, c) for c in range(chunks)) if os.path.exists(q)]


RAY_RETRIES = 3
"""times a labelling task is run again when its worker process or node dies."""


def _labels_on_ray(address, spec, folder, identity, chunks, done) -> None:
    """``produce_labels`` on a Ray cluster: kept chunks checked here, the others as tasks."""
    from spades_env.ray_cluster import check_cluster, connect
    started = connect(address)  # a clear ValueError when Ray is missing or the address is bad
    import ray
    try:
        try:
            check_cluster(("spades_env", "spades_env.training.labelling", "torch"))
        except RuntimeError as e:  # a node without the package or a dependency: bad setup
            raise ValueError(str(e)) from None
        todo = []
        for c in range(chunks):
            path = _chunk_path(folder, c)
            if os.path.exists(path):
                rec = check_chunk(path, spec["sha"], spec["hands"], spec["seed"], c,
                                  spec["samples"], spec["teacher"], spec["bid_samples"])
                if done(path, rec, None):
                    return
            else:
                todo.append(c)
        if not todo:
            return
        with open(spec["checkpoint"], "rb") as f:
            data = ray.put(f.read())
        task = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(_ray_chunk)
        refs = {task.remote(data, spec["sha"], spec["hands"], spec["seed"], c, spec["samples"],
                            spec["random_start"], spec["teacher"], spec["bid_samples"]): c
                for c in todo}
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for r in ready:
                    c = refs[r]
                    rec, sec = ray.get(r)
                    path = _chunk_path(folder, c)
                    check_locked(path, identity)
                    _save_chunk(path, rec, spec, c)
                    if done(path, rec, sec):
                        return
        finally:
            for r in pending:
                ray.cancel(r, force=True)
    finally:
        if started:
            ray.shutdown()


def _label_beside(spec: dict, folder: str, identity, chunks: int, first: int, step: int) -> None:
    """A ``LabelsBeside`` process: chunks ``first``, ``first + step``, ... below ``chunks``,
    each made (or, already there, checked) as ``produce_labels``' workers do, one after another
    until the last or until the process is stopped."""
    for c in range(first, chunks, step):
        _worker((spec, folder, identity, c))


class LabelsBeside:
    """Label chunks made in the background while the caller does other work (``train``: beside
    PPO, each process on a core PPO leaves idle): ``processes`` processes label chunks 0, 1, ...
    of ``folder`` (process ``i`` the chunks ``i``, ``i + processes``, ...), exactly the chunks
    ``produce_labels`` makes with the same arguments (a chunk's labels depend only on its seeds
    and the checkpoint), until ``stop``. Chunks already in the folder are checked and kept.

    The folder is locked (``lock_labels``) from the start to ``stop``. A chunk is written
    atomically when finished: a stop loses only the chunks in progress.

    Args: as ``produce_labels``' (``checkpoint``: the network that plays the hands);
        ``check_kept``: check the chunks already in the folder first (``check_chunk``).
    Raises:
        ValueError: what ``check_label_work``, ``lock_labels`` and (``check_kept``)
            ``check_chunk`` raise, before any process starts.
    """

    def __init__(self, checkpoint: str, folder: str, processes: int, chunks: int,
                 chunk_hands: int, seed: int, samples: int, teacher: str = "hard",
                 bid_samples: int = 0, random_start: float = 0.5, check_kept: bool = False):
        from spades_env.workers import BackgroundProcess
        check_label_work(checkpoint, teacher, samples, bid_samples, chunk_hands,
                         min(processes, chunks))
        self.folder, self.chunks, self.failed = folder, chunks, []
        self.lock = lock_labels(folder)
        self.procs = []
        try:
            spec = _label_spec(checkpoint, chunk_hands, seed, samples, random_start, teacher,
                               bid_samples)
            identity = locked_identity(folder)
            if check_kept:  # a bad chunk is named now, not after the caller's work
                for c in range(chunks):
                    if os.path.exists(_chunk_path(folder, c)):
                        _worker((spec, folder, identity, c))  # checks a chunk that is there
            for i in range(min(processes, chunks)):
                self.procs.append(BackgroundProcess(
                    _label_beside, (spec, folder, identity, chunks, i, processes),
                    name=f"spades-labels-{i}"))
        except BaseException:
            self.stop()
            raise

    def chunk_paths(self) -> list[str]:
        """The finished chunks now in the folder, in order."""
        return [q for q in (_chunk_path(self.folder, c) for c in range(self.chunks))
                if os.path.exists(q)]

    def stop(self) -> list[str]:
        """End the processes (a chunk in progress is dropped), release the folder; returns
        ``chunk_paths()``. Calling it again does nothing more. ``failed`` then holds the exit
        codes of processes that had ended with an error before (their traceback went to
        stderr)."""
        for p in self.procs:
            ended = not p.alive()
            code = p.stop()
            if ended and code:
                self.failed.append(code)
        self.procs = []
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        return self.chunk_paths()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
