"""The search-distillation stage after PPO (``distill_minutes`` > 0): rounds of expert iteration.

Each round is one ``training.distill.distill_checkpoint``: the round's starting network plays
hands, a search (``distill_teacher``) values every decision, and the network learns those values.
Round 1 starts from the PPO network (widened per ``distill_hidden``), round k from round k-1's.
This module decides the rounds' files and label folders and which rounds a resumed run keeps;
``training.distill`` does the labelling (``training.labelling``) and the fitting.
"""

from __future__ import annotations

import math
import os
import shutil
import time

from spades_env.agents.model import Agent
from spades_env.fileio import files_in, write_atomic

from .checkpoint import build_agent, load_checkpoint
from .config import Args


def distill_round_paths(out: str, rounds: int) -> list[str]:
    """The checkpoint each round of a ``rounds``-round distillation stage writes: ``out`` itself
    for one round; ``<out without .pt>_round1.pt`` ... ``_roundK.pt`` for more (``out`` then
    receives a copy of the last), so that a stage resumed with more rounds keeps the earlier ones.
    """
    if rounds == 1:
        return [out]
    stem = os.path.splitext(out)[0]
    return [f"{stem}_round{k}.pt" for k in range(1, rounds + 1)]


def label_folder_suffix(args: Args) -> str:
    """What a round's label folder name adds for its teacher: ``""`` for ``hard`` without bid
    labels (the name of earlier versions), else ``_expert``, ``_bids48``..., so that chunks of
    another teacher are never resumed into a round."""
    return ("" if args.distill_teacher == "hard" else f"_{args.distill_teacher}") + \
        (f"_bids{args.distill_bid_samples}" if args.distill_bid_samples else "")


def distill_stage(args: Args, source: str, out: str, progress: dict, log=print,
                  save=None, writer=None, deadline: float | None = None) -> Agent:
    """The search-distillation stage after PPO (``args.distill_minutes`` > 0): ``args.
    distill_rounds`` rounds of ``training.distill.distill_checkpoint`` (expert iteration). Round 1
    starts from the PPO network ``source`` (``train`` writes it as ``ppo_final.pt``), widened per
    ``distill_hidden``; round k from round k-1's network, on its own fresh hands (seed
    ``args.seed + k - 1``), ``distill_minutes`` of labels each, by ``args.distill_teacher``
    (``expert``: the search on round k's own starting network, a teacher that grows), locally or
    on the Ray cluster ``args.ray_address``. Each round writes the checkpoint
    ``distill_round_paths`` names, its label chunks kept in ``<that path without .pt>_labels_itN``
    (N: the PPO iteration; plus ``label_folder_suffix``; a stopped round resumes with them);
    ``out`` ends as the last round's network. ``writer`` (a TensorBoard ``SummaryWriter``, if
    given) receives per chunk ``distill/hands``, ``distill/labels_per_second`` and
    ``distill/chunk_regret``, and per round ``distill/round_regret`` and
    ``distill/round_labels_per_second`` (step: the round). A round that already finished from
    the same PPO iteration (its record in ``progress["distill_rounds"]``, its file present) is not
    redone, unless a round before it was. ``deadline`` (a ``time.time()``, the end of the run's
    ``run_minutes``; None: no limit): the time left when a round starts is shared evenly by it
    and the rounds after it (even when round 1, with the labels beside PPO, is the largest), and
    the round's fit makes fewer than ``distill_epochs`` passes when they would end after its
    share (``distill.distill``'s ``deadline``; its labels are not cut).

    Records each round's figures in ``progress["distill_rounds"]`` (a list, round 1 first) and the
    last round's in ``progress["distill"]``; calls ``save()`` (if given) after each round, so that
    a stopped run's ``latest.pt`` knows the finished rounds. Returns the final network (eval mode,
    on ``args.device``).

    Raises:
        ValueError, OSError: as ``distill_checkpoint``.
    """
    from .distill import distill_checkpoint  # loaded only when a stage runs
    it = progress["iteration"]
    rounds = args.distill_rounds
    paths = distill_round_paths(out, rounds)
    done = _done_rounds(progress)
    stem = os.path.splitext(out)[0]
    done = _adopt_other_layout(done, out, paths, it, log)
    records, redo, src = [], False, source
    for k, path in enumerate(paths, start=1):
        rec = done[k - 1] if k - 1 < len(done) else None
        if not redo and _finished(rec, path, it):
            log(f"search distillation already done: round {k}/{rounds} ({path}, from the PPO "
                f"network of iteration {it}); the distill_* settings apply to a new round only")
        else:
            # one label folder per round and PPO network: chunks of another network never mix in
            suffix = label_folder_suffix(args)
            labels = os.path.splitext(path)[0] + f"_labels_it{it}{suffix}"
            player, label_seed, also = None, None, []
            if k == 1:  # round 1 learns the labels made beside PPO, if any
                labels, player, label_seed, also = _round1_labels(args, progress, out, labels)
            _remove_stale_labels(stem, labels, suffix, it, k, redo, log)
            redo = True  # every later round starts from this round's new network
            rec = _distill_round(distill_checkpoint, args, src, path, labels, k, it, log, writer,
                                 player, label_seed, also,
                                 round_deadline(deadline, time.time(), rounds - k + 1))
        records.append(rec)
        progress["distill_rounds"] = list(records)  # fewer rounds than before drop the others
        progress["distill"] = rec
        if save is not None and redo:  # a kept round changes nothing worth a rewrite
            save()
        src = path
    if paths[-1] != out:
        with open(paths[-1], "rb") as f:  # the final network under the stage's one name
            write_atomic(out, f.read())
    net = build_agent(load_checkpoint(out), args.device)
    return net.eval()


CARD_ROWS_PER_HAND = 35.3
"""card rows a labelled hand gives (decisions with a real choice, both teams; 1,444,664 rows from
40,950 hands of the default run on 2026-12-07, 35.3 in the runs before); its 4 bid rows come on
top."""

FLAT_CARD_SHARE = 0.11
"""the share of those card rows whose candidates the search valued all alike, which
``distill_drop_flat`` leaves out (156,199 of 1,425,263 on the labels of 2026-12-07's default
run)."""

LABEL_HANDS_PER_SECOND = 64.0
"""hands one label process labels a second with ``hard``'s search at 40 deals a card (64 beside
PPO on a slow host since the deals are drawn in C, 58,300 hands in 15.1 minutes; 30 to 50 before):
``stage_minutes``' rate when none was measured."""

ROUND_SECONDS = (20.0, 1.0e-3, 0.25e-3)
"""a round's seconds besides its passes, as ``(fixed, per labelled hand, per bid deal)``: reading
and checking the chunks and replaying their hands, ``bid_rows``, the evaluations and the save
(62.5 s for 40,400 hands and 50,000 bid deals on 2026-12-07 with the replay kept move by move,
``teacher_records.replay``; 111 s before it, on a slower host; over-counted on a quick one)."""

FIT_ROW_FACTOR = 1.25
"""a real pass's seconds per trained row over ``distill.fit_row_seconds``' (the probe's 4,096 rows
stay in the cache, a round's millions do not, and each pass also evaluates the held-out rows):
on 2026-12-07 the probe read 19.8-20.2 microseconds a row on an idle 2-core host, and real
passes took 24.1 (1.17 M trained rows, 28.3 s a pass) to 26 (2.54 M rows, 66 s a pass)."""


def stage_minutes(args: Args, hands: int, row_seconds: float,
                  label_rate: float = LABEL_HANDS_PER_SECOND) -> float:
    """The search-distillation stage's minutes, planned before it starts: each of its
    ``distill_rounds`` rounds labels for ``distill_minutes`` (``label_rate`` hands a second in
    each of ``distill_workers`` processes) and learns its hands (round 1's: also the ``hands``
    labelled beside PPO so far) in ``distill_epochs`` passes over their rows
    (``CARD_ROWS_PER_HAND``, less ``FLAT_CARD_SHARE`` of them with ``distill_drop_flat``, + 4
    bids a hand, and 4 per ``distill_bid_deals``, 95% of them trained on) at ``row_seconds`` a
    row (``distill.fit_row_seconds``) times ``FIT_ROW_FACTOR``, plus
    ``ROUND_SECONDS``. What ``run_minutes`` ends PPO with: PPO stops when the run's minutes plus
    this reach ``run_minutes``; the fits' deadline catches an estimate that was short."""
    fixed, per_hand, per_deal = ROUND_SECONDS
    own = args.distill_minutes * 60 * label_rate * args.distill_workers
    total = 0.0
    for k in range(args.distill_rounds):
        n = own + (hands if k == 0 else 0)
        card_rows = CARD_ROWS_PER_HAND * (1 - FLAT_CARD_SHARE * args.distill_drop_flat)
        rows = n * (card_rows + 4) + 4 * args.distill_bid_deals
        fit = args.distill_epochs * 0.95 * rows * row_seconds * FIT_ROW_FACTOR
        total += args.distill_minutes + (fit + fixed + per_hand * n
                                         + per_deal * args.distill_bid_deals) / 60
    return total


def fit_probe(args: Args, agent: Agent, log=print) -> float:
    """Seconds per row of the stage's fit on this host, now (``distill.fit_row_seconds``): a copy
    of ``agent`` (the PPO network) widened as round 1 widens it, ``distill_threads`` threads,
    ``distill_precision``, ``distill_batch``; logged. The torch random numbers are left as they
    were."""
    import copy

    import torch

    from spades_env.agents.model import fit_precision, widen

    from .distill import fit_row_seconds
    net = copy.deepcopy(agent).cpu()
    hidden = list(args.distill_hidden or args.hidden)
    head = args.distill_head_hidden or args.head_hidden
    precision = fit_precision(args.distill_precision)
    with torch.random.fork_rng(devices=[]):  # the run's random numbers stay as without it
        if hidden != list(args.hidden) or head != args.head_hidden:
            net = widen(net, hidden, head)
        row_s = fit_row_seconds(net, args.distill_threads, precision, batch=args.distill_batch)
    log(f"run_minutes {args.run_minutes:g}: a row of the distillation fit takes "
        f"{row_s * 1e6:.1f} microseconds here ({args.distill_threads} thread(s), {precision}); "
        f"PPO stops when the stage's estimate fills the minutes left")
    return row_s


def beside_hands(args: Args, progress: dict, ckpt_dir: str) -> int:
    """Hands labelled beside PPO so far: the finished chunks in every network's folder
    (``beside_phases``) times ``distill_chunk_hands``."""
    return args.distill_chunk_hands * sum(
        len(files_in(rec["labels"], "chunk_", ".npz")) for rec in beside_phases(progress, ckpt_dir)
        if os.path.isdir(rec["labels"]))


def round_deadline(deadline: float | None, now: float, rounds_left: int) -> float | None:
    """The end of a round's share of the run's time: ``now`` plus the time left to ``deadline``
    split evenly over the ``rounds_left`` rounds still to run (this one included); None with no
    ``deadline``, and ``deadline`` itself once it has passed."""
    if deadline is None:
        return None
    return now + max(0.0, deadline - now) / max(1, rounds_left)


def _done_rounds(progress: dict) -> list[dict]:
    """Copies of the records of the rounds a run already finished (``progress["distill_rounds"]``;
    runs from before it recorded one round in ``progress["distill"]``)."""
    done = progress.get("distill_rounds")
    if not isinstance(done, list):  # runs from before distill_rounds recorded one round here
        done = [progress["distill"]] if isinstance(progress.get("distill"), dict) else []
    return [dict(d) for d in done if isinstance(d, dict)]


def _finished(rec, path: str, it: int) -> bool:
    """Whether the round recorded in ``rec`` was done from the PPO network of iteration ``it``
    and wrote ``path``, and that file is present."""
    return (isinstance(rec, dict) and rec.get("ppo_iteration") == it and os.path.exists(path)
            and os.path.basename(str(rec.get("checkpoint", ""))) == os.path.basename(path))


def _adopt_other_layout(done: list[dict], out: str, paths: list[str], it: int, log) -> list[dict]:
    """A stage resumed from one round to several or back: its finished round 1 lies under the
    other layout's name (``distill_round_paths``); copy it to this layout's ``paths[0]`` and
    return the records with round 1 there (``done`` itself otherwise)."""
    stem = os.path.splitext(out)[0]
    other = os.path.join(os.path.dirname(out), os.path.basename(
        str(done[0].get("checkpoint", "")))) if done else ""
    if other in (out, f"{stem}_round1.pt") and other != paths[0] and _finished(done[0], other, it):
        with open(other, "rb") as f:
            write_atomic(paths[0], f.read())
        done = [dict(done[0], checkpoint=paths[0])]
        log(f"round 1 of the stage is the earlier stage's {other} (copied to {paths[0]})")
    return done


def _remove_stale_labels(stem: str, labels: str, suffix: str, it: int, k: int, redo: bool,
                         log) -> None:
    """Before round ``k`` runs: remove the label folders of the rounds after it (and its own
    ``labels`` when the round before was just redone)."""
    # they were played by networks that this round replaces: check_chunk would refuse their
    # chunks, so they go
    stale = [f"{stem}_round{j}_labels_it{it}{suffix}" for j in range(k + 1, 101)]
    stale += [labels] if redo else []
    for folder in stale:
        if os.path.isdir(folder):
            shutil.rmtree(folder)
            log(f"removed {folder}: label chunks of an earlier network")


CHUNK_LINE_SECONDS = 60.0
"""seconds between two label-progress lines of a training run's rounds (the command: every chunk)."""


def _distill_round(distill_checkpoint, args: Args, src: str, path: str, labels: str, k: int,
                   it: int, log, writer, player: str | None = None,
                   label_seed: int | None = None, also=(), deadline: float | None = None) -> dict:
    """Run round ``k`` of the stage (``distill_checkpoint`` from ``src`` into ``path``, its
    chunks in ``labels``, the hands played by ``player``: ``src`` when None, with the seed
    ``label_seed``: the round's when None, and the chunks of the folders ``also``; the fit's
    ``fit_deadline``: ``deadline``), log it and report it to ``writer``; returns its record."""
    where = (f"on the Ray cluster {args.ray_address}" if args.ray_address else
             f"{args.distill_workers} workers")
    played = "" if player is None else (
        f", the hands played by {player} (labelled beside PPO" +
        (f"; and the hands of {len(also)} other network(s) in {', '.join(also)})" if also
         else ")"))
    more = "no more labels" if args.distill_minutes == 0 else \
        f"{args.distill_minutes:g} min of labels"
    log(f"search distillation: round {k}/{args.distill_rounds} from {src}{played}: "
        f"{more} by {args.distill_teacher} ({args.distill_samples} deals per card"
        + (f", {args.distill_bid_samples} per bid" if args.distill_bid_samples else "")
        + ("" if args.distill_minutes == 0 else f", {where}")
        + f"), then {args.distill_epochs} passes")
    first = k == 1
    on_chunk = None
    if writer is not None:
        def on_chunk(st, _n=[0]):  # noqa: B006 (the chunk counter of this round)
            _n[0] += 1
            step = 1000 * k + _n[0]
            writer.add_scalar("distill/hands", st["round_hands"], step)
            writer.add_scalar("distill/labels_per_second", st["labels_per_second"], step)
            if not math.isnan(st["regret"]):
                writer.add_scalar("distill/chunk_regret", st["regret"], step)
    r = distill_checkpoint(src, path, labels=labels, minutes=args.distill_minutes,
                           seed=args.seed + k - 1, chunks=args.distill_chunks,
                           chunk_hands=args.distill_chunk_hands,
                           samples=args.distill_samples, workers=args.distill_workers,
                           epochs=args.distill_epochs, bid_deals=args.distill_bid_deals,
                           lr=args.distill_lr, batch=args.distill_batch,
                           drop_flat=args.distill_drop_flat,
                           regret_weight=args.distill_regret_weight,
                           hidden=(args.distill_hidden or None) if first else None,
                           head_hidden=(args.distill_head_hidden or None) if first
                           else None, log=log, teacher=args.distill_teacher,
                           bid_samples=args.distill_bid_samples,
                           ray_address=args.ray_address or None, on_chunk=on_chunk,
                           log_every=CHUNK_LINE_SECONDS, label_source=player,
                           threads=args.distill_threads, label_seed=label_seed,
                           precision=args.distill_precision,
                           also_labels=list(also), fit_deadline=deadline)
    if player is not None:  # every hand of the other networks' folders was labelled beside PPO
        r = dict(r, kept_hands=r["kept_hands"] + r["also_hands"])
    kept = "" if not r.get("kept_hands") else (
        f", {r['kept_hands']} of them beside PPO" if player is not None else
        f", {r['kept_hands']} of them kept from a stopped run")
    rate = "" if math.isnan(r["labels_per_second"]) else \
        f"{r['labels_per_second']:.1f} labels/s; "
    whose = "the starting" if player is None else "the labelled"
    log(f"distilled {path}: {r['hands']} hands labelled in {r['label_minutes']:.1f} min{kept} "
        f"({rate}{whose} policy's regret {r['regret']:.2f} points per card), "
        f"{r['passes']} pass{'' if r['passes'] == 1 else 'es'}, {r['minutes']:.1f} min in all")
    if writer is not None:
        for tag, v in (("distill/round_regret", r["regret"]),
                       ("distill/round_labels_per_second", r["labels_per_second"]),
                       ("distill/round_hands", r["hands"])):
            if not math.isnan(v):
                writer.add_scalar(tag, v, k)
    return dict(r, ppo_iteration=it, round=k, **({} if player is None else
                                                 {"label_source": player}))


BESIDE_SETTINGS = ("distill_samples", "distill_chunk_hands", "distill_teacher",
                   "distill_bid_samples", "seed")
"""the fields a chunk made beside PPO is checked against (``labels.check_chunk``): recorded with
the labels, and a resumed run must keep them."""


def beside_phases(progress: dict, ckpt_dir: str) -> list[dict]:
    """Every network's labels beside PPO, oldest first: those of the networks already replaced
    (``progress["beside_done"]``, with ``distill_beside_every``) and the current one
    (``progress["beside"]``), as records with the paths joined to ``ckpt_dir`` (whether or not
    the network's file is still there)."""
    recs = [r for r in list(progress.get("beside_done") or []) + [progress.get("beside")]
            if isinstance(r, dict)]
    return [dict(r, checkpoint=os.path.join(ckpt_dir, os.path.basename(str(r.get("checkpoint")))),
                 labels=os.path.join(ckpt_dir, os.path.basename(str(r.get("labels")))))
            for r in recs]


BESIDE_SEED_STEP = 1000
"""the seed of the hands of the k-th network labelled beside PPO is ``seed + 1000 k`` (k from 0):
no two networks play the same deals, nor a later round's (``seed + round - 1``)."""


def phase_seed(args: Args, rec: dict) -> int:
    """The seed of the hands labelled beside PPO that ``rec`` records (``label_seed``; records
    without one are the first network's: ``args.seed``)."""
    return int(rec.get("label_seed", args.seed))


def check_beside_settings(args: Args, rec: dict) -> None:
    """Refuse settings that differ from those the labels beside PPO were made with (their chunks
    would be refused as another run's, after PPO).

    Raises:
        ValueError: naming each field, the recorded value and the given one.
    """
    made = rec.get("settings") or {}
    bad = [f"{k} {made[k]!r} (given: {getattr(args, k)!r})" for k in BESIDE_SETTINGS
           if k in made and made[k] != getattr(args, k)]
    if bad:
        raise ValueError(f"the labels beside PPO in {rec['labels']} were made with "
                         f"{', '.join(bad)}; resume with those values (--set NAME=VALUE), or "
                         f"their chunks would not be this run's")


def _round1_labels(args: Args, progress: dict, out: str, labels: str):
    """Round 1's labels: ``(label folder, the network that played its hands, the seed of those
    hands, the other folders to learn too)``. With labels beside PPO (``beside_phases``): the
    folder of the last network with chunks whose file is still there is the round's own (that
    network plays any ``distill_minutes`` more), every other folder with chunks is added as
    ``also_labels``, each chunk of those checked now against its network when that network's
    file is there (``labels.check_chunk``; a gone network's chunks are only read); the settings
    of every folder used are checked against ``args``. With no such network (or no labels beside
    PPO at all): ``labels``, None (the round's own network), ``args.seed`` and the folders with
    chunks.

    Raises:
        ValueError: ``check_beside_settings``; a bad chunk of an earlier network (named); no
            labels to learn with ``distill_minutes`` 0 (none made beside PPO, or their network
            is gone), saying how to label after PPO.
    """
    from .labels import check_chunk, chunk_number, file_sha256
    ckpt_dir = os.path.dirname(out)
    phases = beside_phases(progress, ckpt_dir)
    made = [rec for rec in phases if os.path.isdir(rec["labels"])
            and files_in(rec["labels"], "chunk_", ".npz")]
    alive = [rec for rec in made if os.path.isfile(rec["checkpoint"])]
    own = alive[-1] if alive else (
        phases[-1] if phases and not made and os.path.isfile(phases[-1]["checkpoint"]) else None)
    also = [rec for rec in made if rec is not own]
    for rec in ([own] if own is not None else []) + also:
        check_beside_settings(args, rec)
    for rec in also:  # the own folder's chunks are checked by the round itself
        if os.path.isfile(rec["checkpoint"]):
            sha = file_sha256(rec["checkpoint"])
            for q in files_in(rec["labels"], "chunk_", ".npz"):
                check_chunk(q, sha, args.distill_chunk_hands, phase_seed(args, rec),
                            chunk_number(q),
                            args.distill_samples, args.distill_teacher, args.distill_bid_samples)
    if args.distill_minutes == 0 and (own is None or not made):
        raise _no_beside_labels(
            ckpt_dir, f"PPO stopped before iteration distill_beside_from "
                      f"({args.distill_beside_from})" if not phases else
            "the network that played the labels beside PPO is gone" if own is None else
            f"no chunk was finished beside PPO in {own['labels']}")
    if own is None:
        return labels, None, args.seed, [rec["labels"] for rec in also]
    return own["labels"], own["checkpoint"], phase_seed(args, own), [r["labels"] for r in also]


def _no_beside_labels(ckpt_dir: str, why: str) -> ValueError:
    """The error of a round 1 with no labels: none made beside PPO and ``distill_minutes`` 0."""
    latest = os.path.join(ckpt_dir, "latest.pt")
    return ValueError(f"search distillation: round 1 has no labels to learn: {why}, and "
                      f"distill_minutes is 0; label after PPO with spades train --resume "
                      f"{latest} --distill-minutes N (PPO is not run again)")


BESIDE_SNAPSHOT = "label_policy.pt"
"""the network whose hands are labelled beside PPO, in the run's checkpoint folder."""


def start_labels_beside(args: Args, progress: dict, ckpt_dir: str, save_snapshot, log=print):
    """Start the labels beside PPO: ``args.distill_beside_ppo`` processes
    (``training.labelling.LabelsBeside``) label hands of the network recorded in
    ``progress["beside"]`` into its folder. A run that has recorded none yet first calls
    ``save_snapshot(name)`` (the network of this PPO iteration, written into ``ckpt_dir``:
    ``BESIDE_SNAPSHOT`` for the first network, ``label_policy_itN.pt`` for the later ones of
    ``distill_beside_every``) and records it with the folder ``labels_beside_itN`` (N: the
    iteration, plus ``label_folder_suffix``), the seed of its hands (``phase_seed``) and the
    ``BESIDE_SETTINGS``; a resumed run goes on with the recorded network and folder (names
    inside ``ckpt_dir``: a copied run labels into its own), or, when ``beside_due``, records that
    network among the replaced ones and starts this iteration's, as an unbroken run would.

    Returns:
        the running ``LabelsBeside`` (``stop`` it when PPO stops), or None (logged) when a
        resumed run's recorded network file is gone.
    Raises:
        ValueError: ``check_beside_settings``, a chunk already in the folder that is corrupt or
            not of this network (named), what ``LabelsBeside`` raises (the folder held by
            another run, a teacher over the limits).
    """
    from .labelling import LabelsBeside
    if beside_due(args, progress):  # a resumed run at (or past) its next network's iteration
        _retire_beside(progress)
    if progress.get("beside") is None:
        it, k = progress["iteration"], len(progress.get("beside_done") or [])
        name = BESIDE_SNAPSHOT if k == 0 else f"label_policy_it{it}.pt"
        save_snapshot(name)
        progress["beside"] = {
            "iteration": it, "checkpoint": name,
            "labels": f"labels_beside_it{it}{label_folder_suffix(args)}",
            "settings": {f: getattr(args, f) for f in BESIDE_SETTINGS},
            **({} if k == 0 else {"label_seed": args.seed + BESIDE_SEED_STEP * k})}
    rec = beside_phases(progress, ckpt_dir)[-1]
    if not os.path.isfile(rec["checkpoint"]):
        log(f"labels beside PPO: the network {rec['checkpoint']} is gone; no more labels beside "
            f"PPO in this run (round 1 learns the chunks of the networks still there, or labels "
            f"its own hands for distill_minutes, {args.distill_minutes:g} here)")
        return None
    check_beside_settings(args, rec)
    beside = LabelsBeside(rec["checkpoint"], rec["labels"], args.distill_beside_ppo,
                          args.distill_chunks, args.distill_chunk_hands, phase_seed(args, rec),
                          args.distill_samples, args.distill_teacher, args.distill_bid_samples,
                          check_kept=True)
    log(f"labels beside PPO: {args.distill_beside_ppo} process(es) labelling hands of the "
        f"network of iteration {rec['iteration']} ({rec['checkpoint']}) into {rec['labels']}")
    return beside


def beside_due(args: Args, progress: dict) -> bool:
    """Whether the labels beside PPO go on with the network of this iteration now
    (``distill_beside_every`` iterations after the current network's)."""
    rec = progress.get("beside")
    return args.distill_beside_every > 0 and isinstance(rec, dict) and \
        progress["iteration"] >= rec["iteration"] + args.distill_beside_every


def _retire_beside(progress: dict) -> None:
    """Move the current network's record (``progress["beside"]``) to the replaced ones."""
    progress["beside_done"] = list(progress.get("beside_done") or []) + [progress.pop("beside")]


def next_labels_beside(args: Args, progress: dict, ckpt_dir: str, beside, save_snapshot,
                       log=print):
    """Stop ``beside`` (the labels of the current network; its finished chunks are kept), record
    that network among the replaced ones (``progress["beside_done"]``) and start the labels of
    this iteration's network (``start_labels_beside``). Returns what that returns."""
    n = len(beside.stop())
    log(f"labels beside PPO: {n} chunks of {args.distill_chunk_hands} hands of the network of "
        f"iteration {progress['beside']['iteration']} in {beside.folder}"
        + (f"; {len(beside.failed)} label process(es) had failed (exit codes {beside.failed}, "
           f"see above)" if beside.failed else ""))
    _retire_beside(progress)
    return start_labels_beside(args, progress, ckpt_dir, save_snapshot, log)


__all__ = ["distill_stage", "start_labels_beside", "next_labels_beside", "beside_due",
           "beside_phases", "phase_seed", "BESIDE_SNAPSHOT", "BESIDE_SETTINGS", "BESIDE_SEED_STEP",
           "distill_round_paths", "label_folder_suffix", "check_beside_settings",
           "stage_minutes", "beside_hands", "round_deadline", "fit_probe", "CARD_ROWS_PER_HAND",
           "ROUND_SECONDS", "LABEL_HANDS_PER_SECOND", "FIT_ROW_FACTOR"]
