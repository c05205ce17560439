"""Search distillation: the policy trained toward a PIMC player's card (and bid) values.

One round of expert iteration (Anthony, Tian & Barber, "Thinking Fast and Slow with Deep Learning
and Tree Search", NeurIPS 2017) with Perfect-Information Monte Carlo as the expert (Long et al.,
AAAI 2010): the search of the ``hard`` bot (``spades_env.bots.pimc``), or, with
``teacher="expert"``, ``expert``'s search built on the round's own starting network
(``spades_env.bots.expert``: deals weighted by that network's likelihood of the other seats'
plays), so that the teacher grows with the student from round to round:

1. **Label** (``label_chunk``): the policy's team plays single hands against a search team. At
   every card decision of all four seats with a real choice, the search estimates the value of
   each candidate card (``PIMCBot.card_values``: the hand's team score difference in points, bags
   at their long-run cost, averaged over ``samples`` deals drawn from the seat's information
   set). The policy's seats play the policy's own card (so the states are the ones it meets:
   DAgger, Ross et al. 2011); the search seats play the best-valued card. The bids are the
   policy's, unless ``bid_samples`` > 0: then the bid search values every bid
   (``PIMCBot.bid_values``) and the search seats bid their best. ``regret`` records, at each
   policy card decision, the best value minus the value of the card the policy played.
2. **Distil** (``distill``): the policy's card head learns the soft target
   ``softmax(values / temperature)`` over the candidates (Hinton et al. 2015), by cross-entropy on
   the probability of each class of equivalent cards (``equivalence_classes``: cards the search
   treats as one), plus, with ``regret_weight``, that weight times the network's expected regret
   by the values (a mistake weighs by what it costs). Bids the search valued learn
   ``softmax(bid values / temperature)``; the others are held where they were (the starting
   network's own greedy bid).

Why: duplicate matches against ``hard`` showed the policy's bids are sound (its bids played by
``hard``'s card play beat ``hard``) and its card play is where it loses (``checkpoints/README.md``,
Where the agent loses to ``hard``). The search is too slow to play at training scale inside PPO
(10-20 ms a decision); here each of its estimates becomes a supervised target.

The round in modules, one job each: ``training.labels`` (the label file: format, writer,
reader, checks), ``training.labelling`` (step 1: playing and labelling the hands, locally or as
Ray tasks), ``training.distill_targets`` (the labels as training rows: soft targets, equivalence
classes, side-suit relabelling) and this module (step 2: the fit, and the ``spades distill``
command that runs the round).

    spades distill checkpoints/long/latest.pt --out checkpoints/long/distilled.pt
    spades distill A.pt --out B.pt --teacher expert --bid-samples 48 --ray auto
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from spades_env import options as opt
from spades_env.agents.model import PRECISIONS, fit_precision
from spades_env.bots.pimc import MAX_SAMPLES
from spades_env.compact import expand
from spades_env.fileio import files_in

from .distill_targets import (SIDE_SUIT_PERMUTATIONS, bid_rows, build_dataset, card_map,
                              concat_rows, suit_permutation)
from .labelling import check_label_work, lock_labels, produce_labels
from .labels import (TEACHERS, check_chunk, chunk_number, chunk_stats, file_sha256,
                     load_labels, merge_labels)

__all__ = ["evaluate_rows", "distill", "check_args", "distill_checkpoint", "build_parser", "main",
           "pass_plan", "fit_row_seconds", "adam"]


# ============================================================================= learning
def adam(params, lr: float):
    """``torch.optim.Adam`` over ``params`` at step size ``lr``, fused (one kernel for every
    tensor) where this torch has a fused kernel for their device (CPU: torch 2.4 and later;
    0.3 ms a step of the [512, 256] network against 1.1 on 2 threads), else the plain one."""
    import torch
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError, ValueError):  # no fused kernel for these tensors here
        return torch.optim.Adam(params, lr=lr)


def _class_probs(probs, rep):
    """Probability of each class ``[B, 52]``: the card probabilities summed by ``rep``."""
    out = probs.new_zeros(len(probs), 53)
    return out.scatter_add_(1, rep, probs[:, :52])[:, :52]


def evaluate_rows(net, data: dict, index: np.ndarray) -> dict:
    """How the network's greedy choice compares with the targets on ``index`` rows.

    Returns ``card_agree`` (share of card rows whose chosen card is in a class of the search's best
    value),
    ``card_regret`` (points: mean of best value minus the chosen class's value, by the search's
    own estimates), ``bid_agree`` (share of bid rows where the greedy bid is the reference's).
    """
    import torch
    a = np.zeros(len(index), np.int64)
    with torch.no_grad():
        for i in range(0, len(index), 8192):  # expanded 8192 rows at a time (23 MB)
            ix = index[i:i + 8192]
            obs = torch.as_tensor(expand(data["obs"][ix], data["table"]))
            lg = net.masked(net.policy_logits(obs), torch.as_tensor(data["mask"][ix]))
            a[i:i + len(ix)] = lg.argmax(-1).numpy()
    card = data["card"][index]
    tgt = data["target"][index].argmax(1)
    ci = np.nonzero(card)[0]
    chosen = data["rep"][index][ci, np.minimum(a[ci], 51)]
    v = data["values"][index][ci]
    best = np.nanmax(v, 1)
    regret = best - v[np.arange(len(ci)), chosen]
    bi = np.nonzero(~card)[0]
    return {"card_agree": float((regret <= 1e-6).mean()) if len(ci) else float("nan"),
            "card_regret": float(regret.mean()) if len(ci) else float("nan"),
            "bid_agree": float((a[bi] == tgt[bi]).mean()) if len(bi) else float("nan")}


def distill(net, data: dict, epochs: int = 3, lr: float = 3e-4, batch: int = 512,
            holdout: float = 0.05, seed: int = 0, augment: bool = True, bid_weight: float = 4.0,
            precision: str = "fp32", log=print, deadline: float | None = None,
            regret_weight: float = 0.0) -> list[dict]:
    """Train ``net`` (in place) on ``build_dataset`` rows (compact observations, expanded a
    minibatch at a time).

    Loss per row: on a card row, the cross-entropy of the soft target against the network's
    probability of each class of equivalent cards (``equivalence_classes``), plus
    ``regret_weight`` times the network's expected regret by the search's values,
    ``sum_c p(c) * (max value - value(c))`` in points; on a bid row, the cross-entropy against
    the reference's greedy bid, weighted ``bid_weight``. Adam, the step size
    falling linearly from ``lr`` to 0 (``adam``: fused where torch has the kernel), gradient norm
    clipped at 0.5.

    Args:
        net: ``Agent``; trained in place (all layers; the value heads get no gradient).
        epochs, lr, batch: passes over the rows, Adam step size, rows per step.
        holdout: share of rows kept out for ``evaluate_rows`` before and after each pass.
        seed: shuffling seed.
        augment: each step relabels its rows' side suits by one of the six orders, drawn at
            random (``suit_permutation``; the game is unchanged, so each labelled position counts
            six ways).
        regret_weight: weight of the expected-regret term of a card row (0: the cross-entropy
            alone). The cross-entropy weighs a 2-point and a 20-point mistake alike once the
            target is near one-hot; this term weighs them by what they cost, the objective the
            greedy player is judged by (a policy-gradient step with every action's value known).
        precision: ``"fp32"``, or ``"bf16"``: the network's forward pass of each step under
            ``torch.autocast`` in bfloat16 on the rows' device (weights, optimiser and loss stay
            float32; about 3x a step on a CPU with AVX512-BF16 or AMX, slower on one without:
            ``fit_precision``).
        deadline: a ``time.time()`` by which the fit should end, or None: after each pass but
            the last planned, the passes are planned again to those that fit before it at the
            mean pass time so far (``pass_plan``; at least one pass in all, at most ``epochs``:
            a plan cut after a slow pass grows back), and the step size then falls linearly
            from where it is to 0 over the steps left, so the last pass ends at 0.
    Returns:
        one dict per evaluation (``epoch``: 0 before training, then 1..the passes made; ``loss``;
        and ``evaluate_rows``' fields on the held-out rows).
    Raises:
        ValueError: a ``precision`` or ``regret_weight`` it does not take (a finite number >= 0;
            before any step), or a loss that is not finite (diverged; ``net`` is then unusable).
    """
    import torch
    if precision not in PRECISIONS[1:]:
        raise ValueError(f"precision must be one of {PRECISIONS[1:]}, got {precision!r}")
    regret_weight = _regret_weight(regret_weight, "regret_weight", float("inf"))
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(data["obs"]))
    nval = int(len(idx) * holdout)
    val, train = idx[:nval], idx[nval:]
    obs, mask = torch.as_tensor(data["obs"]), torch.as_tensor(data["mask"])
    table = torch.as_tensor(data["table"])
    target, rep = torch.as_tensor(data["target"]), torch.as_tensor(data["rep"])
    values = torch.as_tensor(data["values"]) if regret_weight > 0 else None
    card = torch.as_tensor(data["card"])
    opt = adam(net.parameters(), lr)
    per_pass = -(-len(train) // batch)
    # the step-size factor falls linearly from f0 at step s0 to 0 at step end (a cut plan moves
    # s0, f0 and end to go on from where it is)
    plan = {"s0": 0, "f0": 1.0, "end": max(1, epochs * per_pass)}

    def factor(i: int) -> float:
        return plan["f0"] * max(0.0, 1.0 - (i - plan["s0"]) / max(1, plan["end"] - plan["s0"]))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    perms = []
    for perm in SIDE_SUIT_PERMUTATIONS:
        oi, ai = suit_permutation(perm)
        cm = np.append(card_map(perm), 52)
        perms.append((torch.as_tensor(oi), torch.as_tensor(ai), torch.as_tensor(cm)))
    hist = [{"epoch": 0, "loss": float("nan"), **evaluate_rows(net, data, val)}]
    log(f"before: {hist[0]}")
    t_fit, ep, asked = time.time(), 0, epochs
    while ep < epochs:
        ep += 1
        rng.shuffle(train)
        total, t0 = 0.0, time.time()
        for k in range(0, len(train), batch):
            ix = torch.as_tensor(train[k:k + batch])
            o, m, t, r = expand(obs[ix], table), mask[ix], target[ix], rep[ix].long()
            v = None if values is None else values[ix]
            if augment:
                oi, ai, cm = perms[int(rng.integers(len(perms)))]
                o, m, t = o[:, oi], m[:, ai], t[:, ai]
                r = cm[r][:, ai[:52]]
                v = None if v is None else v[:, ai[:52]]
            with torch.autocast(o.device.type, torch.bfloat16, enabled=precision == "bf16"):
                logits = net.policy_logits(o)
            probs = torch.softmax(net.masked(logits.float(), m), -1)
            c = card[ix]
            pc = _class_probs(probs[c], r[c])
            loss_card = -(t[c, :52] * pc.clamp_min(1e-8).log()).sum()
            if v is not None:  # the class values sit on the class representatives, as pc
                vc = v[c]
                best = torch.nan_to_num(vc, nan=-torch.inf).max(1, keepdim=True).values
                loss_card = loss_card + regret_weight * (
                    pc * torch.nan_to_num(best - vc, nan=0.0)).sum()
            loss_bid = -(t[~c] * probs[~c].clamp_min(1e-8).log()).sum()
            loss = (loss_card + bid_weight * loss_bid) / len(ix)
            if not torch.isfinite(loss):
                raise ValueError(f"training diverged: the loss is not finite in pass {ep} (rows "
                                 f"{k}..{k + len(ix)}); lower the step size (lr {lr})")
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(ix)
        hist.append({"epoch": ep, "loss": total / max(1, len(train)),
                     **evaluate_rows(net, data, val)})
        log(f"pass {ep}: {hist[-1]} ({time.time() - t0:.0f} s)")
        if deadline is not None and ep < epochs:
            # up to the passes asked: a plan cut after a slow first pass grows back when the
            # later ones are quicker (the step size then falls from where it is over more steps)
            n = pass_plan(ep, asked, time.time() - t_fit, deadline - time.time())
            if n != epochs:
                done = ep * per_pass
                plan.update(s0=done, f0=factor(done), end=n * per_pass)
                log(f"the fit makes {n} of its {asked} passes: its time ends in "
                    f"{max(0.0, deadline - time.time()) / 60:.1f} min, at "
                    f"{(time.time() - t_fit) / ep:.0f} s a pass")
                epochs = n
    return hist


def _regret_weight(w, name: str, high: float) -> float:
    """``w`` as a float in ``[0, high]`` (``-0.0`` read as 0); ``ValueError`` naming ``name``
    for anything else (a bool, a string, None, nan, inf or out of range)."""
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(w) <= high or not np.isfinite(float(w)):
        rng = "a finite number >= 0" if high == float("inf") else f"a number in [0, {high:g}]"
        raise ValueError(f"{name} must be {rng}, got {w!r}")
    return float(w) + 0.0


def fit_row_seconds(net, threads: int = 1, precision: str = "fp32", rows: int = 4096,
                    repeats: int = 3, batch: int = 512) -> float:
    """Seconds a distillation fit spends per row on this host, now: the median of ``repeats``
    passes of ``distill`` over ``rows`` synthetic card rows (13 legal cards each, uniform targets;
    the step's cost does not depend on the values) with a copy of ``net`` (the round's network,
    its widths as the round's), ``threads`` torch threads, ``precision`` and ``batch`` rows a
    step, after an untimed
    pass over ``rows // 2`` rows that makes the kernels of these shapes (the first pass of a new
    shape in a process took 146 microseconds a row against 25 after it). What ``run_minutes``
    plans PPO's end with (``distill_stage.stage_minutes``); about a second on the development
    host."""
    import copy

    from spades_env import Rules
    from spades_env.agents.model import torch_threads
    from spades_env.compact import COMPACT_SIZE, rules_table

    def data(n: int) -> dict:
        mask = np.zeros((n, 68), bool)
        mask[:, :13] = True
        rep = np.full((n, 52), 52, np.uint8)
        rep[:, :13] = np.arange(13, dtype=np.uint8)
        return {"obs": np.zeros((n, COMPACT_SIZE), np.uint8), "table": rules_table([Rules()]),
                "mask": mask, "target": mask / np.float32(13), "card": np.ones(n, bool),
                "rep": rep, "values": np.where(mask[:, :52], np.float32(0), np.float32(np.nan))}

    def one_pass(n: int) -> float:
        t0 = time.time()
        distill(net, data(n), epochs=1, holdout=0.0, precision=precision, batch=batch,
                log=lambda *_: None)
        return (time.time() - t0) / n

    net = copy.deepcopy(net)
    with torch_threads(threads):
        one_pass(max(1, rows // 2))
        return float(np.median([one_pass(rows) for _ in range(max(1, repeats))]))


def pass_plan(done: int, epochs: int, seconds: float, left: float) -> int:
    """The passes of a fit with a deadline: ``done`` passes made in ``seconds``, ``left``
    seconds to the deadline (negative: past it); returns the passes in all, from ``done`` (none
    more fits) to ``epochs``, the more passes that fit at the mean pass time so far."""
    more = int(max(0.0, left) // (seconds / max(1, done))) if seconds > 0 else epochs
    return max(done, min(epochs, done + more))


# ============================================================================= command line
_LIMITS = (  # name, kind, low, high
    ("minutes", float, 0.0, 10_000.0), ("chunks", int, 1, 100_000), ("chunk_hands", int, 1, 10_000),
    ("samples", int, 1, MAX_SAMPLES), ("workers", int, 1, 64), ("seed", int, 0, 2**62),
    ("temperature", float, 1e-3, 1e4), ("prior", float, 0.0, 1.0), ("bid_deals", int, 0, 1_000_000),
    ("epochs", int, 1, 1_000), ("lr", float, 1e-7, 1.0), ("bid_samples", int, 0, MAX_SAMPLES),
    ("batch", int, 1, 65_536), ("regret_weight", float, 0.0, 1e3))


def check_args(a) -> None:
    """Every number of the command line in its range (finite); raises ValueError naming it."""
    for name, kind, lo, hi in _LIMITS:
        v = getattr(a, name)
        if not (lo <= v <= hi and (not isinstance(v, float) or np.isfinite(v))):
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} must be {'an integer' if kind is int else 'a number'} in "
                             f"[{lo:g}, {hi:g}], got {v!r}")
    if a.labels is not None and os.path.exists(a.labels) and not os.path.isdir(a.labels):
        raise ValueError(f"--labels {a.labels!r} is a file, not a folder")
    if getattr(a, "teacher", "hard") not in TEACHERS:
        raise ValueError(f"--teacher must be one of {', '.join(TEACHERS)}, got {a.teacher!r}")
    ray = getattr(a, "ray", None)
    if ray is not None and (not isinstance(ray, str) or not ray.strip()):
        raise ValueError(f"--ray must be a cluster address (auto, or HOST:PORT), got {ray!r}")


def _wider_shape(hidden, head_hidden, net) -> dict | None:
    """``hidden``/``head_hidden`` (None: the source's) as a ``model_shape`` update (None: keep
    the source's shape).

    Raises:
        ValueError: widths that ``check_widen`` refuses.
    """
    if hidden is None and head_hidden is None:
        return None
    from spades_env.agents.model import check_widen
    try:
        hidden, head = check_widen(net, list(net.hidden) if hidden is None else hidden,
                                   net.head_hidden if head_hidden is None else head_hidden)
    except ValueError as e:
        raise ValueError(f"--hidden/--head-hidden: {e}") from None
    return {"hidden": hidden, "head_hidden": head}


def distill_checkpoint(src: str, out: str, labels: str | None = None, minutes: float = 30.0,
                       chunks: int = 1000, chunk_hands: int = 50, samples: int = 40,
                       workers: int = 2, seed: int = 1, temperature: float = 3.0,
                       prior: float = 0.0, bid_deals: int = 50000, epochs: int = 12,
                       lr: float = 1e-3, hidden=None, head_hidden: int | None = None,
                       also_labels=(), log=print, teacher: str = "hard", bid_samples: int = 0,
                       ray_address: str | None = None, on_chunk=None,
                       log_every: float = 0.0, label_source: str | None = None,
                       threads: int = 1, label_seed: int | None = None,
                       precision: str = "fp32", fit_deadline: float | None = None,
                       batch: int = 512, drop_flat: bool = False,
                       regret_weight: float = 0.0) -> dict:
    """The whole round: label hands played by ``src`` (``produce_labels``, resumable: the chunks
    kept in ``labels``), distil into ``src``'s network (or one widened to ``hidden`` /
    ``head_hidden``, ``spades_env.agents.model.widen``), and write the stripped checkpoint ``out``
    (its ``distill`` entry records the settings, the label time and the loss history).

    Args: as the command line's options (``main``); ``labels`` defaults to ``out`` without
    ``.pt`` plus ``_labels``; ``hidden`` is a list of ints or None (keep the source's widths);
    ``also_labels``: label folders of earlier rounds (hands played by other networks, e.g. the
    previous round's), every ``chunk_*.npz`` in them read (``load_labels``) and added to this
    round's labels; ``teacher``: the search that labels (``TEACHERS``; ``"expert"`` is built on
    ``src`` itself, so each round's teacher grows with its student); ``bid_samples``: deals per
    bid of the bid search (0: the bids are not labelled and stay the source's); ``ray_address``:
    label on that Ray cluster; ``on_chunk``: called after each chunk and ``log_every``: seconds
    between two chunk lines, 0 for every chunk (``produce_labels``); ``label_source``: the
    checkpoint whose network plays the labelled hands (default ``src``; ``train`` labels beside
    PPO with a snapshot of the PPO network, ``training.labelling.LabelsBeside``), and with
    ``minutes`` 0 the round labels nothing new: it learns the chunks already in ``labels``;
    ``threads``: torch threads of the fit, and processes of the labels' replay (the labels are
    made in processes of one thread each;
    the caller's thread count is restored at the end); ``label_seed``: the seed of the labelled
    hands in ``labels`` (default ``seed``, which also seeds the fit; ``train``'s later phases of
    labels beside PPO have seeds of their own); ``precision``: the fit's arithmetic,
    ``PRECISIONS`` (``fit_precision``; the one used is recorded as the ``distill`` entry's
    ``precision``); ``fit_deadline``: a ``time.time()`` by which the fit should end (``distill``'s
    ``deadline``: fewer passes than ``epochs`` when they would not fit; None: ``epochs``);
    ``batch``: rows a step of the fit; ``drop_flat``: leave out the card rows whose candidates
    the search valued alike (``build_dataset``); ``regret_weight``: ``distill``'s. With
    ``threads`` > 1 the replay starts processes (``spawn``): a script that calls this must guard
    its entry point with ``if __name__ == "__main__":``.
    Returns:
        ``{"checkpoint": out, "hands": int, "chunks": int, "kept_hands": int, "also_hands": int,
        "label_minutes": float, "minutes": float, "labels_per_second": float, "regret": float,
        "precision": str, "passes": int}`` (``passes``: those the fit made)
        (``kept_hands``: of chunks an earlier, stopped run labelled, whose minutes
        ``label_minutes`` does not count; ``regret``: the labelled policy's (``label_source``'s),
        in points per card, by this round's teacher).
    Raises:
        ValueError: a bad value (naming it), a source trained on other rules, widths that
            ``check_widen`` refuses, no chunk finished within ``minutes``, or an ``also_labels``
            folder or chunk given twice (same device and inode: another name, a symbolic or
            hard link), or that is this run's own label folder; an ``out`` or label folder
            that is, holds or lies inside ``src`` or an ``also_labels`` folder
            (``fileio.check_outputs_apart``, before any work).
        FileNotFoundError, OSError: a missing source, an output that cannot be written.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 256:
        raise ValueError(f"--threads must be an integer in [1, 256], got {threads!r}")
    regret_weight = _regret_weight(regret_weight, "--regret-weight", 1e3)
    precision = fit_precision(precision)
    import copy

    import torch

    from spades_env.agents.model import torch_threads

    from .checkpoint import save_checkpoint
    with torch_threads(1):
        a = argparse.Namespace(minutes=minutes, chunks=chunks, chunk_hands=chunk_hands,
                               samples=samples, workers=workers,
                               seed=seed if label_seed is None else label_seed,
                               temperature=temperature, prior=prior, bid_deals=bid_deals,
                               epochs=epochs, lr=lr, batch=batch, drop_flat=bool(drop_flat),
                               regret_weight=regret_weight,
                               labels=labels, teacher=teacher,
                               bid_samples=bid_samples, ray=ray_address, log_every=log_every)
        folder = labels or os.path.splitext(out)[0] + "_labels"
        player = label_source or src
        t0 = time.time()
        data, net, shape = _check_round(src, out, folder, a, hidden, head_hidden, also_labels,
                                        player)
        extra_files = _also_label_files(also_labels, folder)
        # read now, not after the labelling: checked early
        extra = merge_labels([load_labels(q) for q in extra_files]) if extra_files else None
        stats: dict = {}
        paths, own = _label_round(player, folder, a, log, on_chunk, stats)
        rec = own if extra is None else merge_labels([own, extra])
        label_s = time.time() - t0
        reference = copy.deepcopy(net).eval()
        if shape is not None:
            from spades_env.agents.model import widen
            torch.manual_seed(int(seed))  # the new units' initial weights: the same every run
            net = widen(net, shape["hidden"], shape["head_hidden"])
        # the replay in as many processes as the fit has threads; the reference policy on one
        # thread (as the labels: its floats, and so the targets, vary with the thread count)
        ds = build_dataset(rec, reference, temperature, prior, workers=threads,
                           drop_flat=bool(drop_flat))
        if bid_deals > 0:
            ds = concat_rows(ds, bid_rows(reference, bid_deals, seed))
        log(f"{len(rec['seed'])} hands from {len(paths) + len(extra_files)} chunks "
            f"({len(extra_files)} from --also-labels): {int(ds['card'].sum())} card "
            f"rows, {int((~ds['card']).sum())} bid rows ({label_s / 60:.1f} min); the fit in "
            f"{precision}")
        with torch_threads(threads):
            hist = distill(net, ds, epochs=epochs, lr=lr, batch=batch, seed=seed,
                           precision=precision, log=log, deadline=fit_deadline,
                           regret_weight=regret_weight)
        res = _distilled_checkpoint(data, net, shape, src)
        own_stats = chunk_stats(own)
        rate = stats["made_labels"] / stats["wall_seconds"] if stats.get("made_labels") \
            else float("nan")  # labels made per second of wall clock (none made: all kept)
        res["distill"] = _distill_record(a, rec, own, own_stats, also_labels, rate, label_s,
                                         None if shape is None else reference, hist, seed,
                                         precision)
        save_checkpoint(out, res)
        return {"checkpoint": out, "hands": int(len(rec["seed"])), "chunks": len(paths),
                "kept_hands": int(stats.get("kept_hands", 0)),
                "also_hands": 0 if extra is None else int(len(extra["seed"])),
                "label_minutes": label_s / 60, "minutes": (time.time() - t0) / 60,
                "labels_per_second": rate, "regret": own_stats["regret"],
                "precision": precision, "passes": len(hist) - 1}


def _check_round(src: str, out: str, folder: str, a, hidden, head_hidden, also_labels,
                 player: str):
    """``distill_checkpoint``'s checks before any work: the options, the outputs apart from what
    is read, the Ray address, the source and the labelled network ``player`` (standard rules),
    the teacher's work, the widths and ``out``. Returns the source's checkpoint data, its network
    and the wider shape (or None)."""
    from spades_env.fileio import check_output_file, check_outputs_apart

    from .checkpoint import build_agent, load_checkpoint
    check_args(a)
    # before any work: --out and the label folder are not (and hold nothing) read here; the label
    # folder is read too, as the labels of this run to resume, so it is an output only
    check_outputs_apart([("--out", out), ("--labels" if a.labels else "the label folder", folder)],
                        [("the checkpoint argument", src)]
                        + ([("the labelled network", player)] if player != src else [])
                        + [("--also-labels", f) for f in also_labels])
    if a.ray is not None:  # before any work: Ray installed, the address answers
        from spades_env.ray_cluster import check_address
        check_address(a.ray)
    data = load_checkpoint(src)
    for path, d in ((src, data),) + (((player, load_checkpoint(player)),) if player != src
                                     else ()):
        rules = (d.get("config") or {}).get("rules", "standard")
        if rules != "standard":
            raise ValueError(f"{path} was trained on rules {rules!r}; the labels are "
                             f"standard-rules hands")
    net = build_agent(data, "cpu")
    # the teacher's options together and one chunk's work, before any work
    check_label_work(player, a.teacher, a.samples, a.bid_samples, a.chunk_hands,
                     1 if a.ray is not None else min(a.workers, a.chunks))
    shape = _wider_shape(hidden, head_hidden, net)
    check_output_file(out, "output checkpoint", create_folder=True)
    return data, net, shape


def _also_label_files(also_labels, folder: str) -> list:
    """The label chunks of the ``--also-labels`` folders; a folder or chunk given twice (same
    device and inode), or this run's own label folder, is refused."""
    extra_files = []
    seen = {}  # (st_dev, st_ino) of each folder and chunk read -> how it was named
    try:
        st = os.stat(folder)
        seen[(st.st_dev, st.st_ino)] = f"this run's own --labels folder {folder!r}"
    except OSError:  # not made yet: no --also-labels folder can be it
        pass
    for f in also_labels:
        found = files_in(f, "chunk_", ".npz")
        if not os.path.isdir(f) or not found:
            raise ValueError(f"--also-labels {f!r}: no label chunks (chunk_*.npz) there")
        for q in [f, *found]:  # a folder, or a chunk (hard link), given twice weighs double
            st = os.stat(q)
            if (st.st_dev, st.st_ino) in seen:
                raise ValueError(f"--also-labels {f!r}: {q!r} is {seen[(st.st_dev, st.st_ino)]} "
                                 f"(the same file or folder): its hands would be read twice")
            seen[(st.st_dev, st.st_ino)] = f"already read as {q!r}" if q != f else \
                f"the folder already given as --also-labels {f!r}"
        extra_files += found
    return extra_files


def _label_round(src: str, folder: str, a, log, on_chunk, stats: dict):
    """This round's labels, made (or kept) in the locked ``folder`` and each chunk checked as
    made by ``src`` with these settings: ``(chunk paths, merged labels)``."""
    lock = lock_labels(folder)
    try:
        paths = produce_labels(src, folder, a.minutes, a.chunks, a.chunk_hands, a.seed,
                               a.samples, a.workers, log=log, teacher=a.teacher,
                               bid_samples=a.bid_samples, ray_address=a.ray, stats=stats,
                               on_chunk=on_chunk, log_every=a.log_every)
        if not paths:
            raise ValueError(f"no label chunk in {folder} to learn (--minutes 0 labels none)"
                             if a.minutes <= 0 else
                             "no label chunk was finished within --minutes")
        # every chunk read is one of this run, made by this very network (its SHA-256)
        sha = file_sha256(src)
        own = merge_labels([check_chunk(q, sha, a.chunk_hands, a.seed,
                                        chunk_number(q),
                                        a.samples, a.teacher, a.bid_samples) for q in paths])
    finally:
        lock.release()
    return paths, own


def _distilled_checkpoint(data: dict, net, shape: dict | None, src: str) -> dict:
    """The output checkpoint's payload (but its ``distill`` entry): the source's config, shape
    and progress (widened when ``shape`` is given), the distilled weights, the source's path."""
    res = {k: data[k] for k in ("config", "model_shape", "progress") if k in data}
    res["model"] = net.state_dict()
    if shape is not None:
        res["model_shape"] = dict(res["model_shape"], **shape)
        if isinstance(res.get("config"), dict):
            res["config"] = dict(res["config"], **shape)
    res["source"] = src
    return res


def _distill_record(a, rec: dict, own: dict, own_stats: dict, also_labels, rate: float,
                    label_s: float, widened_from, hist, seed: int, precision: str) -> dict:
    """The checkpoint's ``distill`` entry: the settings (``seed``: the fit's, ``label_seed``: the
    labelled hands'), the labels' figures, the network it was widened from (``widened_from``, or
    None), the fit's arithmetic (``precision``, as used) and the loss history."""
    return {"hands": int(len(rec["seed"])), "own_hands": int(len(own["seed"])),
            "also_labels": [os.path.abspath(f) for f in also_labels],
            "teacher": a.teacher, "bid_samples": a.bid_samples,
            "card_labels": own_stats["card_labels"],
            "bid_labels": own_stats["bid_labels"], "regret": own_stats["regret"],
            "labels_per_second": rate, "ray": a.ray is not None,
            "samples": a.samples,
            "temperature": a.temperature, "prior": a.prior, "bid_deals": a.bid_deals,
            "epochs": a.epochs, "passes": len(hist) - 1, "lr": a.lr, "batch": a.batch,
            "drop_flat": a.drop_flat, "regret_weight": a.regret_weight,
            "seed": seed,
            "label_seed": a.seed,
            "precision": precision,
            "label_minutes": label_s / 60,
            "widened_from": (None if widened_from is None else
                             {"hidden": list(widened_from.hidden),
                              "head_hidden": widened_from.head_hidden}),
            "history": [{k: float(v) for k, v in h.items()} for h in hist]}

def build_parser() -> argparse.ArgumentParser:
    """The parser of ``spades distill`` (its shared options: ``spades_env.options``)."""
    p = argparse.ArgumentParser(prog="spades distill",
                                description=__doc__.splitlines()[0])
    opt.add_checkpoint(p, "the checkpoint to start from (required)", old=("--from",))
    opt.add_out(p, "the checkpoint to write, stripped and playable (required)")
    p.add_argument("--labels", default=None,
                   help="label chunk folder (default: OUT without .pt, + _labels)")
    p.add_argument("--minutes", type=float, default=30.0,
                   help="labelling budget (wall clock); 0 labels nothing new and learns the "
                        "chunks already in --labels")
    p.add_argument("--chunks", type=int, default=1000, help="most chunks to label")
    p.add_argument("--chunk-hands", type=int, default=50)
    p.add_argument("--samples", type=int, default=40, help="search deals per card decision")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads of the fit, after the labels (1 gives the same weights "
                        "on any host)")
    p.add_argument("--precision", default="fp32", choices=PRECISIONS,
                   help="the fit's arithmetic: bf16 runs its forward passes in bfloat16 (about "
                        "2x a pass where the CPU has native bfloat16), auto picks bf16 there")
    opt.add_seed(p, "seed of the labelled hands and the fit")
    p.add_argument("--temperature", type=float, default=3.0, help="soft-target temperature, points")
    p.add_argument("--prior", type=float, default=0.0,
                   help="weight of the starting policy in the card targets (build_dataset)")
    p.add_argument("--bid-deals", type=int, default=50000,
                   help="fresh deals whose bids hold the starting network's bids (bid_rows)")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--lr", type=float, default=1e-3, help="the fit's Adam step size")
    p.add_argument("--batch", type=int, default=512,
                   help="rows a step of the fit (2048 makes a pass 1.5x as fast on 2 cores "
                        "as 512, with --lr 2e-3 as good a pass)")
    p.add_argument("--drop-flat", action="store_true",
                   help="leave out the card rows whose candidates the search valued alike")
    p.add_argument("--regret-weight", type=float, default=0.0,
                   help="weight (0 to 1000) of the expected regret (points) beside the "
                        "cross-entropy of each card row (0: the cross-entropy alone)")
    p.add_argument("--hidden", default=None,
                   help="wider trunk, e.g. 512,256 (spades_env.agents.model.widen; default: the "
                        "source's widths)")
    p.add_argument("--head-hidden", type=int, default=None,
                   help="wider heads, e.g. 128 (default: the source's width)")
    p.add_argument("--also-labels", nargs="+", default=[], metavar="DIR",
                   help="label folders of earlier rounds (hands played by other networks), "
                        "added to this round's labels")
    p.add_argument("--teacher", default="hard", choices=TEACHERS,
                   help="the search that labels: hard (uniform deals) or expert (built on the "
                        "starting network itself: a teacher that grows with the student)")
    p.add_argument("--bid-samples", type=int, default=0,
                   help="deals per bid of the bid search; the bids then learn its values (0: "
                        "the bids are not labelled and stay the source's)")
    opt.add_ray(p, "label on a Ray cluster (auto or HOST:PORT; pip install -e '.[ray]'); the "
                   "same chunks as a local run")
    return p


def main(argv=None) -> int:
    p = build_parser()
    a = p.parse_args(argv)
    opt.required(p, a, "checkpoint", "checkpoint")
    opt.required(p, a, "out", "--out")
    folder = a.labels or os.path.splitext(a.out)[0] + "_labels"
    try:
        hidden = None
        if a.hidden is not None:
            try:
                hidden = [int(w) for w in a.hidden.split(",")]
            except ValueError:
                raise ValueError(f"--hidden must be comma-separated integers like 512,256, got "
                                 f"{a.hidden!r}") from None
        r = distill_checkpoint(a.checkpoint, a.out, a.labels, a.minutes, a.chunks, a.chunk_hands,
                               a.samples, a.workers, a.seed, a.temperature, a.prior, a.bid_deals,
                               a.epochs, a.lr, hidden, a.head_hidden, a.also_labels,
                               log=lambda m: print(m, flush=True), teacher=a.teacher,
                               bid_samples=a.bid_samples, ray_address=a.ray, threads=a.threads,
                               precision=a.precision, batch=a.batch, drop_flat=a.drop_flat,
                               regret_weight=a.regret_weight)
    except (ValueError, FileNotFoundError, OSError) as e:  # bad input, bad file, full disk
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = len(files_in(folder, "chunk_", ".npz")) if os.path.isdir(folder) else 0
        if kept:
            print(f"interrupted: {kept} label chunks kept in {folder}; run the same command again "
                  f"to resume", file=sys.stderr)
        else:
            print("interrupted: no label chunk was written yet", file=sys.stderr)
        return 130
    print(f"wrote {a.out} ({r['minutes']:.1f} min in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
