"""Checkpoint writing and run folders for training: atomic writes, resume checks, locks.

The file format and the checked load are the library's (``spades_env.agents.checkpoint``: its
module docstring has the key table and the six checks every load makes; the names are re-exported
here). This module adds what only training needs:

- ``save_checkpoint``: the whole file made in memory, then written atomically;
- ``check_resume_state``: the training sections of a full checkpoint (config by the table,
  optimizer, progress, eval, env, pool) checked before a resumed run writes anything;
- ``open_run``: a run's folders, locked for the run's life, never silently shared with an earlier
  run.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import shutil
import threading

import torch

from spades_env.agents.checkpoint import (  # noqa: F401 - the loading half, re-exported
    FORMAT_TAG, FORMAT_VERSION, agent_kwargs, build_agent, check_model, check_state_dict,
    check_tensors, checkpoint_error, expected_state, load_checkpoint)
from spades_env.fileio import (WriteError, check_output_file, check_outputs_apart,
                               clean_stale_temps, files_in, write_atomic)
from spades_env.locks import FolderInUse, FolderLock, folder_problem, lock_folder

LOCK_NAME = ".lock"
"""lock file in a run's checkpoint folder: held (``fcntl.flock``) by the process running it."""


# ============================================================================= write
def save_checkpoint(path: str, payload: dict) -> None:
    """Write ``payload`` (tag and version added) to ``path`` atomically: the bytes are made in
    memory, then ``spades_env.fileio.write_atomic`` (complete file or none; a killed writer leaves
    no temp file on Linux, and stale temp files of dead writers are removed elsewhere).

    Raises:
        OSError (``spades_env.fileio.WriteError``): ``could not write PATH: REASON`` (no space
            left, file too large, is a directory, permission denied...); ``path`` is unchanged.
    """
    data = {"format": FORMAT_TAG, "version": FORMAT_VERSION, **payload}
    buf = io.BytesIO()
    torch.save(data, buf)
    write_atomic(path, buf.getbuffer(), prefix=".tmp_", suffix=".pt", create_folder=True)


# ============================================================================= resume state
def _int_in_range(x, lo=0, hi=2**62) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and lo <= x <= hi


def _is_num(x, lo=-math.inf, hi=math.inf) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) \
        and lo <= x <= hi


def _check_progress(p, path) -> None:
    def bad(why):
        return checkpoint_error(path, f"corrupt resume state: progress: {why}")
    if not isinstance(p, dict):
        raise bad("not a mapping")
    for k in ("iteration", "decisions"):
        if not _int_in_range(p.get(k)):
            raise bad(f"{k} must be an integer >= 0, got {p.get(k)!r}")
    if p.get("stage") not in ("start", "ppo"):
        raise bad(f"stage must be 'start' or 'ppo', got {p.get('stage')!r}")
    for k in ("seconds", "ppo_seconds"):
        if not _is_num(p.get(k, 0.0), 0.0):
            raise bad(f"{k} must be a finite number >= 0, got {p.get(k)!r}")
    if "best_score" in p and not _is_num(p["best_score"]):
        raise bad(f"best_score must be a finite number, got {p['best_score']!r}")
    if "best_iteration" in p and not _int_in_range(p["best_iteration"]):
        raise bad(f"best_iteration must be an integer >= 0, got {p['best_iteration']!r}")


def check_eval(ev, path, section: str = "eval") -> None:
    """Check a checkpoint's ``eval`` list (what ``training.plot`` draws and a resumed run
    continues): a list of mappings, each with ``decisions`` (an integer >= 0), ``rows`` (a list
    of mappings with an ``opponent`` name and finite ``diff``, ``diff_lo``, ``diff_hi``) and, if
    present, a finite ``seconds`` >= 0.

    Raises:
        ValueError: ``PATH: SECTION: entry N ...`` naming what is wrong.
    """
    def bad(why):
        return checkpoint_error(path, f"{section}: {why}")
    if not isinstance(ev, list):
        raise bad("not a list")
    for i, e in enumerate(ev):
        if not isinstance(e, dict) or not isinstance(e.get("rows"), list):
            raise bad(f"entry {i} must be a mapping with a list of rows")
        if not _int_in_range(e.get("decisions")):
            raise bad(f"entry {i}: decisions must be an integer >= 0, got "
                      f"{str(e.get('decisions'))[:40]!r}")
        if "seconds" in e and not _is_num(e["seconds"], 0.0):
            raise bad(f"entry {i}: seconds must be a finite number >= 0")
        for r in e["rows"]:
            if not isinstance(r, dict) or not isinstance(r.get("opponent"), str) \
                    or not all(_is_num(r.get(k, r.get("diff"))) for k in ("diff", "diff_lo",
                                                                           "diff_hi")):
                raise bad(f"entry {i}: each row needs an opponent name and a finite diff "
                          f"(diff_lo, diff_hi finite if given)")
            v = r.get("vs_best")
            if v is not None and (not isinstance(v, dict) or not all(
                    _is_num(v.get(k)) for k in ("diff", "lo", "hi"))):
                raise bad(f"entry {i}: vs_best must be a mapping of finite diff, lo, hi")
            pd = r.get("per_deal_adj")
            if pd is not None and (not isinstance(pd, list) or not all(_is_num(x) for x in pd)):
                raise bad(f"entry {i}: per_deal_adj must be a list of finite numbers")


def _check_optimizer(opt, expected: dict, path) -> None:
    def bad(why):
        return checkpoint_error(path, f"corrupt resume state: optimizer: {why}")
    if not isinstance(opt, dict) or not isinstance(opt.get("state"), dict) \
            or not isinstance(opt.get("param_groups"), list) or not opt["param_groups"]:
        raise bad("must be an optimizer state dict (state, param_groups)")
    shapes = [shape for k, (shape, _) in expected.items()]  # parameters, in registration order
    if len(opt["param_groups"]) != 1:  # training.ppo_selfplay makes one Adam group
        raise bad(f"{len(opt['param_groups'])} param groups; the run's optimizer has 1")
    ids = []
    for g in opt["param_groups"]:
        if not isinstance(g, dict) or not isinstance(g.get("params"), list):
            raise bad("each param group needs a list of params")
        for key in ("lr", "eps", "weight_decay"):
            if key in g and not _is_num(g[key], 0.0):
                raise bad(f"{key} must be a finite number >= 0, got {g[key]!r}")
        if "betas" in g and not (isinstance(g["betas"], (list, tuple)) and len(g["betas"]) == 2
                                 and all(_is_num(b, 0.0, 1.0) for b in g["betas"])):
            raise bad(f"betas must be two numbers in [0, 1], got {g['betas']!r}")
        ids += g["params"]
    if len(ids) != len(shapes) or len(set(ids)) != len(ids) or not all(_int_in_range(i) for i in ids):
        raise bad(f"param groups list {len(ids)} parameter ids; the network has {len(shapes)}")
    shape_of = dict(zip(ids, shapes))
    for pid, st in opt["state"].items():
        if pid not in shape_of or not isinstance(st, dict):
            raise bad(f"state for unknown parameter {pid!r}")
        for k, v in st.items():
            if k == "step":
                if not ((isinstance(v, torch.Tensor) and v.numel() == 1
                         and bool(torch.isfinite(v).all()) and float(v) >= 0) or _is_num(v, 0)):
                    raise bad(f"parameter {pid}: step must be a finite number >= 0")
            elif isinstance(v, torch.Tensor):
                if tuple(v.shape) != shape_of[pid]:
                    raise bad(f"parameter {pid}: {k} has shape {tuple(v.shape)}, the parameter "
                              f"{shape_of[pid]}")
                if v.is_floating_point() and not bool(torch.isfinite(v).all()):
                    raise bad(f"parameter {pid}: {k} holds NaN or infinite values")


def _check_pool(pool, args, num_envs: int, expected: dict, path) -> None:
    def bad(why):
        return checkpoint_error(path, f"corrupt resume state: pool: {why}")
    if not isinstance(pool, dict) or not all(k in pool for k in ("ctrl", "pool", "next_id",
                                                                  "agents")):
        raise bad("must hold ctrl, pool, next_id and agents")
    agents = pool["agents"]
    if not isinstance(agents, dict) or len(agents) > args.pool_size + 1 + 4 * num_envs:
        raise bad("agents must be a mapping of at most pool_size + 4 * num_envs snapshots")
    ids = set()
    for k, sd in agents.items():
        if not (isinstance(k, str) and k.isdigit() and _int_in_range(int(k), 1)):
            raise bad(f"snapshot id {k!r} is not a positive integer")
        ids.add(int(k))
        check_state_dict(sd, expected, path, f"pool.agents[{k}]")
    ring = pool["pool"]
    if not isinstance(ring, list) or len(ring) > args.pool_size or \
            not all(_int_in_range(i, 1) and i in ids for i in ring) or len(set(ring)) != len(ring):
        raise bad(f"pool must list at most pool_size ({args.pool_size}) distinct snapshot ids "
                  f"that are in agents, got {ring!r}"[:300])
    if not _int_in_range(pool["next_id"], 1) or pool["next_id"] <= max(ids, default=0):
        raise bad(f"next_id must be an integer above every snapshot id, got {pool['next_id']!r}")
    anchor = pool.get("anchor", 0)
    if not (anchor == 0 or (_int_in_range(anchor, 1) and anchor in ids and anchor not in ring)):
        raise bad(f"anchor must be 0 or a snapshot id in agents outside the ring, got {anchor!r}")
    ctrl = pool["ctrl"]
    if not isinstance(ctrl, torch.Tensor) or ctrl.dtype != torch.int64 \
            or tuple(ctrl.shape) != (num_envs, 4):
        raise bad(f"ctrl must be an int64 tensor of shape ({num_envs}, 4)")
    values = set(torch.unique(ctrl).tolist())
    nbots = len(args.pool_bots)
    wrong = sorted(v for v in values
                   if not (v == 0 or (v < 0 and -v <= nbots) or (v > 0 and v in ids)))
    if wrong:
        raise bad(f"ctrl names players that do not exist: {wrong[:5]} (0 = learner, -1..-{nbots} "
                  f"= pool_bots, > 0 = snapshot ids {sorted(ids)[:5]})")


def check_resume_state(data: dict, args, path="checkpoint") -> None:
    """Check every training section of a full checkpoint against the resumed run's config ``args``
    (``spades_env.training.config.Args``), before the run writes anything: model and
    ``model_shape`` against ``args``' network, optimizer (parameter ids, moment shapes, finite),
    progress, eval, env (loaded into a throwaway env of ``args``) and pool (snapshot weights, ids,
    ``ctrl`` values).

    Raises:
        ValueError: ``PATH: corrupt resume state: SECTION: ...`` (or a stripped checkpoint).
    """
    if "optimizer" not in data or "env" not in data:
        raise checkpoint_error(path, "a stripped (shipped) checkpoint cannot be resumed")
    for key in ("optimizer", "env", "pool", "progress", "eval"):
        if key not in data:
            raise checkpoint_error(path, f"corrupt resume state: missing {key!r}")
    kwargs = check_model(data, path)
    from spades_env.observation import OBS_SIZE
    if kwargs["obs_size"] != OBS_SIZE:
        raise checkpoint_error(path, f"this checkpoint's network reads {kwargs['obs_size']} observation floats "
                         f"(observation version 1): it still plays as a bot, but training can "
                         f"only resume on the current observation ({OBS_SIZE} floats)")
    if list(kwargs["hidden"]) != list(args.hidden) or kwargs["head_hidden"] != args.head_hidden \
            or list(kwargs.get("critic_hidden", [])) != list(args.critic_hidden):
        raise checkpoint_error(path, f"corrupt resume state: model_shape {kwargs} does not match the config "
                         f"(hidden {args.hidden}, head_hidden {args.head_hidden}, critic_hidden "
                         f"{args.critic_hidden})")
    expected = expected_state(kwargs)
    _check_progress(data["progress"], path)
    check_eval(data["eval"], path, "corrupt resume state: eval")
    params = {k: v for k, v in expected.items()}
    from spades_env.agents.model import Agent
    with torch.device("meta"):
        names = [n for n, _ in Agent(**kwargs).named_parameters()]
    _check_optimizer(data["optimizer"], {n: params[n] for n in names}, path)
    from .envs import make_env
    try:
        env = make_env(args, seed=0)
    except ValueError as e:
        raise checkpoint_error(path, f"cannot make the environment of the stored config: {e}") from None
    if data["env"] is not None:
        try:
            env.load_state_dict(data["env"])
        except Exception as e:  # noqa: BLE001 - any failure of a foreign state is a bad file
            raise checkpoint_error(path, f"corrupt resume state: env: {type(e).__name__}: "
                             f"{str(e)[:300]}") from None
    _check_pool(data["pool"], args, env.num_envs, expected, path)


# ============================================================================= run folders
_held: dict[str, "RunFolder"] = {}
_held_lock = threading.Lock()


class RunFolder:
    """A run's folders, held for its life (``open_run``).

    Attributes:
        args: the run's config (``name`` may differ from the one asked for, see ``open_run``).
        ckpt_dir: ``<checkpoint_dir>/<name>`` (``latest.pt``, ``best.pt``, the lock file).
        run_dir: ``<runs_dir>/<name>`` (TensorBoard event files).
    """

    def __init__(self, args, ckpt_dir: str, run_dir: str, lock: FolderLock | None, key: str):
        self.args, self.ckpt_dir, self.run_dir = args, ckpt_dir, run_dir
        self._lock, self._key = lock, key
        self._thread = threading.get_ident()

    def close(self) -> None:
        """Release the lock and remove the lock file (also done when the object is collected; a
        killed process leaves the file, whose lock the kernel has released: the next run takes
        it)."""
        with _held_lock:
            if _held.get(self._key) is self:
                del _held[self._key]
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the module globals may be gone;
            pass           # the process's end releases the lock then anyway

    def __repr__(self) -> str:
        return f"RunFolder({self.ckpt_dir!r}, {self.run_dir!r})"


def held_runs() -> list[RunFolder]:
    """The run folders this process holds (opened by ``open_run``, not closed yet), oldest first:
    after an interrupted ``train``, the run it was writing."""
    with _held_lock:
        return list(_held.values())


def _lock(ckpt_dir: str):
    """Lock ``ckpt_dir`` (``spades_env.locks.lock_folder``: no symlink followed, owned by this
    user, not writable by all): ``(lock, key)``, or ``(None, why)`` when another run holds it or
    the folder is not safe to use.

    Raises:
        OSError: the folder cannot be created or opened.
    """
    key = os.path.realpath(ckpt_dir)
    with _held_lock:
        mine = _held.get(key)
    if mine is not None:
        if mine._thread != threading.get_ident():
            return None, f"in use by pid {os.getpid()} (this process, another thread)"
        mine.close()  # left by an earlier run of this thread that ended with an exception
    try:
        return lock_folder(ckpt_dir, LOCK_NAME), key
    except FolderInUse as e:
        return None, f"in use by a running run ({e.holder})"
    except ValueError as e:
        return None, f"refused: {e}"


def _event_files(run_dir: str) -> list[str]:
    return files_in(run_dir, "events.out.tfevents.", "")  # the folder name is never a pattern


def _earlier_labels(ckpt_dir: str) -> list[str]:
    """The label folders and label networks an earlier run left in ``ckpt_dir`` (the labels
    beside PPO, ``labels_beside_itN/`` and ``label_policy*.pt``; the rounds' ``*_labels_itN*/``):
    a new run in the folder cannot use them (``labels.check_chunk`` refuses another network's
    chunks), and would meet them under the same names."""
    found = []
    for n in sorted(os.listdir(ckpt_dir)) if os.path.isdir(ckpt_dir) else []:
        p = os.path.join(ckpt_dir, n)
        if os.path.isdir(p) and (n.startswith("labels_beside_it") or "_labels_it" in n):
            found.append(p)
        elif os.path.isfile(p) and n.startswith("label_policy") and n.endswith(".pt"):
            found.append(p)
    return found


def _same_file(a: str, b: str | None) -> bool:
    try:
        return b is not None and os.path.samefile(a, b)
    except OSError:
        return False


def _occupied(ckpt_dir: str, run_dir: str, resume: str | None) -> str | None:
    """Why the folders belong to another run, or None."""
    latest = os.path.join(ckpt_dir, "latest.pt")
    if resume is not None:  # continuing: only a latest.pt other than the one resumed is foreign
        if os.path.exists(latest) and not _same_file(latest, resume):
            return f"{latest} is another checkpoint than the one resumed"
        return None
    have = [n for n in ("latest.pt", "best.pt") if os.path.exists(os.path.join(ckpt_dir, n))]
    if have:
        return f"{ckpt_dir} holds {' and '.join(have)} of an earlier run"
    if _event_files(run_dir):
        return f"{run_dir} holds TensorBoard logs of an earlier run"
    return None


def _run_inputs(args, resume: bool = False) -> list[tuple[str, str]]:
    """``(how, path)`` of the files a run reads: ``init_from`` and ``bc_records`` (not again on a
    resume: the warm start is done) and the files of its bots (``bots.bot_inputs``)."""
    from spades_env.bots import bot_inputs
    files = [] if resume else [(f"--{f.replace('_', '-')}", getattr(args, f))
                               for f in ("init_from", "bc_records") if getattr(args, f)]
    return files + bot_inputs("--bc-teacher", args.bc_teacher or []) + \
        bot_inputs("--pool-bots", args.pool_bots) + \
        bot_inputs("--eval-opponents", args.eval_opponents)


def _prepare_folders(run: RunFolder, args, ckpt_dir: str, run_dir: str, resuming: bool, why,
                     resume: str | None, inputs, log) -> None:
    """Steps 4 and 5 of ``open_run`` for the folders ``run`` holds: with ``why`` (the folders
    hold an earlier run, ``overwrite``) remove its files, never one the run reads; check the
    folders apart from the run's inputs; remove stale temp files; check the TensorBoard folder
    writable. On failure ``run`` is closed and the error raised (``OSError`` as ``WriteError``)."""
    try:
        read = _run_inputs(args, resuming) + list(inputs)
        doomed = []
        if why:  # overwrite
            doomed = [p for p in ([os.path.join(ckpt_dir, n) for n in ("latest.pt", "best.pt")]
                                  + ([] if resuming else _event_files(run_dir)
                                     + _earlier_labels(ckpt_dir)))
                      if os.path.exists(p) and not _same_file(p, resume)]
            for p in doomed:  # no command removes or writes over its own input
                check_outputs_apart([("--overwrite would remove", p)], read)
        check_outputs_apart([("the checkpoint folder", ckpt_dir),
                             ("the TensorBoard folder", run_dir)], read)
        if why:
            gone = []
            for p in doomed:
                if os.path.isdir(p):  # an earlier run's label folder
                    shutil.rmtree(p)
                else:
                    os.unlink(p)
                gone.append(os.path.basename(p))
            log(f"--overwrite: removed {', '.join(gone) or 'nothing'} of the earlier run in "
                f"{ckpt_dir} / {run_dir}")
        clean_stale_temps(ckpt_dir, ".tmp_", ".pt")
        os.makedirs(run_dir, exist_ok=True)
        check_output_file(os.path.join(run_dir, "events.probe"), "TensorBoard folder")
    except OSError as e:
        run.close()
        raise WriteError(e.errno, f"cannot use the run folder {ckpt_dir} / {run_dir}: "
                                  f"{e.strerror or e}") from None
    except ValueError:
        run.close()
        raise


def open_run(args, resume: str | None = None, data: dict | None = None,
             overwrite: bool = False, log=print, inputs=()) -> RunFolder:
    """Check everything a run needs, then give it its folders, before any work.

    1. ``training.config.check_ready(args)``: every field, the device, every bot name (a
       ``checkpoint:PATH`` bot must load);
    2. for a resume, ``check_resume_state(data, args, resume)``;
    3. the folders ``<checkpoint_dir>/<name>`` and ``<runs_dir>/<name>``: the checkpoint folder is
       locked (``<ckpt>/.lock``, ``fcntl.flock``, held until ``close`` or the process ends) and
       both must be free: no ``latest.pt``/``best.pt``/TensorBoard files of an earlier run (for a
       resume: no ``latest.pt`` other than the file resumed). A folder that is not free is never
       written: the run takes the next free name ``<name>-2``, ``<name>-3``... and says so, unless
       ``overwrite`` (the old checkpoints and event files are deleted first). A folder locked by a
       live run is never taken, even with ``overwrite``; a resume or ``overwrite`` refuses it.
       Neither folder may be a symbolic link, another user's or writable by every user
       (``spades_env.locks.lock_folder`` / ``folder_problem``): such a folder is never written
       (skipped like a busy one; refused for a resume or ``overwrite``).
    4. neither folder taken is, holds or lies inside a file the run reads (``init_from``,
       ``bc_records``, a bot's checkpoint, ``inputs``: ``(how, path)`` pairs such as the
       ``--config`` file; ``fileio.check_outputs_apart``); the checkpoint resumed may lie in it.
    5. stale temp files of killed saves in the checkpoint folder are removed; the TensorBoard
       folder is checked writable.

    Returns:
        the held ``RunFolder`` (its ``args`` carry the name actually used).
    Raises:
        ValueError: a bad config, bot, device or resume state, or a folder in use.
        OSError: a folder that cannot be created or written (the message names it).
    """
    from .config import check_ready
    check_ready(args)
    if data is not None:
        check_resume_state(data, args, resume)
    base, skipped = args.name, []
    for k in range(1, 1000):
        name = base if k == 1 else f"{base[:120]}-{k}"
        ckpt_dir = os.path.join(args.checkpoint_dir, name)
        run_dir = os.path.join(args.runs_dir, name)
        try:
            fd, key = _lock(ckpt_dir)
        except OSError as e:
            raise WriteError(e.errno, f"cannot use the checkpoint folder {ckpt_dir}: "
                                      f"{e.strerror or e}") from None
        if fd is None:
            if data is not None or overwrite:
                raise ValueError(f"{ckpt_dir} is {key}; wait for it to end or choose another "
                                 f"--name")
            skipped.append(f"{ckpt_dir} is {key}")
            continue
        run = RunFolder(dataclasses.replace(args, name=name), ckpt_dir, run_dir, fd, key)
        unsafe = folder_problem(run_dir)  # the TensorBoard folder: never through a link either
        if unsafe:
            run.close()
            if data is not None or overwrite:
                raise ValueError(f"refused: {unsafe}; choose another --name or runs_dir")
            skipped.append(f"{run_dir} is refused: {unsafe}")
            continue
        why = _occupied(ckpt_dir, run_dir, resume if data is not None else None)
        if why and not overwrite:
            run.close()
            skipped.append(why)
            continue
        with _held_lock:
            _held[key] = run
        _prepare_folders(run, args, ckpt_dir, run_dir, data is not None, why, resume, inputs, log)
        if skipped:
            log(f"note: {'; '.join(skipped)}: this run is named {name!r} (checkpoints in "
                f"{ckpt_dir}, TensorBoard logs in {run_dir}); --overwrite replaces an earlier "
                f"run, --resume PATH continues one")
        elif data is not None and not _same_file(os.path.join(ckpt_dir, "latest.pt"), resume):
            log(f"resume: the run continues in {ckpt_dir} (TensorBoard logs in {run_dir})")
        return run
    raise ValueError(f"no free run name {base!r}, {base}-2 ... {base}-999 in {args.checkpoint_dir}")


__all__ = ["save_checkpoint", "load_checkpoint", "build_agent", "check_model", "agent_kwargs",
           "expected_state", "check_state_dict", "check_tensors", "check_resume_state",
           "check_eval", "open_run", "held_runs", "RunFolder", "FORMAT_TAG", "FORMAT_VERSION",
           "LOCK_NAME"]
