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
   treats as one). Bids the search valued learn ``softmax(bid values / temperature)``; the
   others are held where they were (the starting network's own greedy bid).

Why: duplicate matches against ``hard`` showed the policy's bids are sound (its bids played by
``hard``'s card play beat ``hard``) and its card play is where it loses (``checkpoints/README.md``,
Where the agent loses to ``hard``). The search is too slow to play at training scale inside PPO
(10-20 ms a decision); here each of its estimates becomes a supervised target.

A label file (``.npz``, ``FORMAT``, ``VERSION`` 2) holds per hand: the deal's ``seed`` [H] int64,
the ``scores`` [H, 2] int16 and ``bags`` [H, 2] int8 before the hand, the 56 ``moves`` [H, 56]
uint8, the policy's team ``agent_team`` [H] int8, ``values`` [H, 56, 52] float16 (NaN except the
candidates of a card decision with more than one), ``bid_values`` [H, 4, 14] float16 (points by
bid 0..13, NaN off the candidates or when bids are not labelled) and ``regret`` [H, 56] float16
(points, NaN off the policy's valued card decisions); and who made it: ``source``,
``source_sha256``, ``teacher``, ``samples``, ``bid_samples``, ``run_seed``, ``chunk``. The observations are rebuilt by replaying the moves through the
engine (``teacher_records.replay``). Chunk ``k`` of a run with seed ``S`` draws everything from
``np.random.default_rng([S, k])``, so it is reproducible from its seeds and the checkpoint.

    spades distill --from checkpoints/long/latest.pt --out checkpoints/long/distilled.pt
    spades distill --from A.pt --out B.pt --teacher expert --bid-samples 48 --ray auto
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time

import numpy as np

from spades_env import Rules, SpadesGame
from spades_env.bots.pimc import MAX_SAMPLES, PIMCBot, best_candidate
from spades_env.cards import BID_OFFSET, TEAM
from spades_env.engine import Phase
from spades_env.fileio import (check_locked, files_in, locked_identity, npz_rows, read_npz,
                               write_atomic)
from spades_env.records import check_hand_values
from spades_env.cards import is_int

from .envs import randomize_start
from .teacher_records import MOVES_PER_HAND, replay

FORMAT = "spades_env.pimc_labels"
VERSION = 2
"""version 2 adds the ``teacher``, ``bid_samples``, ``bid_values`` and ``regret`` fields;
version 1 files are still read (a ``hard`` teacher, no bid labels, regret unknown)."""
BIDS_PER_HAND = 4  # the standard preset: 4 bids, then 52 cards
NUM_BIDS = 14      # bids 0 (Nil) .. 13
TEACHERS = ("hard", "expert")
"""the searches that can label: ``hard``'s (``PIMCBot``, uniform deals) or ``expert``'s built
on the labelled network itself (``spades_env.bots.expert.ExpertBot``), a teacher that grows
with the student."""


def make_teacher(teacher: str, checkpoint: str, samples: int, bid_samples: int, seed: int):
    """The search that labels (``TEACHERS``), drawing ``samples`` deals per card decision and
    ``bid_samples`` per bid (at least 1).

    ``"hard"`` is ``PIMCBot`` with uniform deals; ``"expert"`` is ``ExpertBot`` on the network
    ``checkpoint`` (``insane``'s bid inference and bid search, deals weighted by that network's
    likelihood of the other seats' plays).

    Raises:
        ValueError: an unknown teacher, or a bad checkpoint (``ExpertBot``).
    """
    if teacher == "hard":
        return PIMCBot(seed=seed, samples=samples, bid_samples=max(1, bid_samples))
    if teacher == "expert":
        from spades_env.bots.expert import ExpertBot
        return ExpertBot(seed=seed, checkpoint=checkpoint, samples=samples,
                         bid_samples=max(1, bid_samples))
    raise ValueError(f"teacher must be one of {list(TEACHERS)}, got {teacher!r}")


# ============================================================================= labels
def label_chunk(checkpoint: str, hands: int, seed: int, chunk: int, samples: int = 40,
                random_start: float = 0.5, teacher: str = "hard", bid_samples: int = 0) -> dict:
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
    Returns:
        the label arrays of the module docstring (``seed``, ``scores``, ``bags``, ``moves``,
        ``agent_team``, ``values``, ``bid_values``, ``regret``).
    Raises:
        ValueError: a bad count, seed or teacher, or a bad checkpoint file.
        FileNotFoundError: no checkpoint file at that path.
    """
    from spades_env.bots.checkpoint_bot import CheckpointBot
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
    rng = np.random.default_rng([seed, chunk])
    policy = CheckpointBot(checkpoint, seed=int(rng.integers(2**31)))
    search = make_teacher(teacher, checkpoint, int(samples), int(bid_samples),
                          int(rng.integers(2**31)))
    rules = Rules()
    out = {"seed": np.zeros(hands, np.int64), "scores": np.zeros((hands, 2), np.int16),
           "bags": np.zeros((hands, 2), np.int8),
           "moves": np.zeros((hands, MOVES_PER_HAND), np.uint8),
           "agent_team": np.zeros(hands, np.int8),
           "values": np.full((hands, MOVES_PER_HAND, 52), np.nan, np.float16),
           "bid_values": np.full((hands, BIDS_PER_HAND, NUM_BIDS), np.nan, np.float16),
           "regret": np.full((hands, MOVES_PER_HAND), np.nan, np.float16)}
    for h in range(hands):
        s = int(rng.integers(2**63))
        g = SpadesGame(rules, seed=s)
        if random_start > 0 and rng.random() < random_start:
            randomize_start(g, rng)
        team = int(rng.integers(2))
        out["seed"][h], out["scores"][h], out["bags"][h] = s, g.scores, g.bags
        out["agent_team"][h] = team
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
                    if len(cards) > 1:  # the played card's class (equivalence_classes), from
                        # the stored (float16) values, so the fields agree exactly
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
    return out


def save_labels(path: str, rec: dict, source: str, samples: int, seed: int = -1,
                chunk: int = -1, source_sha256: str = "", teacher: str = "hard",
                bid_samples: int = 0) -> None:
    """Write a label dict to ``path`` (``.npz``, compressed) atomically, with what made it:
    the ``source`` checkpoint, the ``teacher`` and its ``samples`` and ``bid_samples``, and the
    run's ``seed`` and ``chunk`` index (-1: not from a run). A dict without ``bid_values`` or
    ``regret`` (made by an earlier version) is saved with them all NaN.

    Raises:
        ValueError: ``rec`` lacks a field or holds one of the wrong shape or dtype (the file
            would not load).
        OSError: ``could not write PATH: REASON``; ``path`` unchanged.
    """
    fields = _check_fields(rec, "labels to save")
    for name, v, kind in (("source", source, str), ("source_sha256", source_sha256, str),
                          ("samples", samples, int), ("seed", seed, int), ("chunk", chunk, int),
                          ("teacher", teacher, str), ("bid_samples", bid_samples, int)):
        if not (is_int(v) if kind is int else isinstance(v, kind)):
            raise ValueError(f"labels to save: {name} must be {kind.__name__}, got {v!r}")
    for name, v in (("samples", samples), ("bid_samples", bid_samples)):
        if not 0 <= v <= MAX_SAMPLES:
            raise ValueError(f"labels to save: {name} must be in [0, {MAX_SAMPLES}], got {v!r}")
    if teacher not in TEACHERS:
        raise ValueError(f"labels to save: teacher must be one of {list(TEACHERS)}, got "
                         f"{teacher!r}")
    buf = io.BytesIO()
    np.savez_compressed(buf, format=np.array(FORMAT), version=np.array(VERSION),
                        source=np.array(str(source)), samples=np.array(int(samples)),
                        run_seed=np.array(int(seed)), chunk=np.array(int(chunk)),
                        source_sha256=np.array(str(source_sha256)),
                        teacher=np.array(teacher), bid_samples=np.array(int(bid_samples)),
                        rules=np.array("standard"), **fields)
    write_atomic(path, buf.getbuffer(), prefix=".tmp_", suffix=".npz", create_folder=True)


_FIELDS = ("seed", "scores", "bags", "moves", "agent_team", "values", "bid_values", "regret")
_OPTIONAL = ("bid_values", "regret")  # absent from version 1: all NaN


def _check_fields(d: dict, where: str) -> dict:
    """The eight label arrays of ``d``, checked (shapes, dtypes, values; ``bid_values`` and
    ``regret`` may be absent and are then all NaN); raises ValueError naming ``where`` and the
    field."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a dict of arrays, got {type(d).__name__}")
    seed = d.get("seed")
    if not isinstance(seed, np.ndarray) or seed.ndim != 1:
        raise ValueError(f"{where}: field 'seed' missing or not a 1-d array")
    n = len(seed)
    want = {"seed": ((n,), np.int64), "scores": ((n, 2), np.int16), "bags": ((n, 2), np.int8),
            "moves": ((n, MOVES_PER_HAND), np.uint8), "agent_team": ((n,), np.int8),
            "values": ((n, MOVES_PER_HAND, 52), np.float16),
            "bid_values": ((n, BIDS_PER_HAND, NUM_BIDS), np.float16),
            "regret": ((n, MOVES_PER_HAND), np.float16)}
    out = {}
    for k, (shape, dt) in want.items():
        v = seed if k == "seed" else d.get(k)
        if v is None and k in _OPTIONAL:
            v = np.full(shape, np.nan, dt)
        if not isinstance(v, np.ndarray) or v.shape != shape or v.dtype != dt:
            raise ValueError(f"{where}: field {k!r} missing or not {dt.__name__}{list(shape)}")
        out[k] = v
    check_hand_values(out, where)
    if not np.isin(out["agent_team"], (0, 1)).all():
        raise ValueError(f"{where}: field 'agent_team' must hold 0 or 1")
    v = out["values"]
    if np.isinf(v).any():
        raise ValueError(f"{where}: field 'values' holds an infinite value")
    if not np.isnan(v[:, :BIDS_PER_HAND]).all():
        raise ValueError(f"{where}: field 'values' holds card values on a bid")
    if np.isinf(out["bid_values"]).any():
        raise ValueError(f"{where}: field 'bid_values' holds an infinite value")
    r = out["regret"].astype(np.float32)
    if np.isinf(r).any() or (r < 0).any():
        raise ValueError(f"{where}: field 'regret' holds a negative or infinite value")
    known = ~np.isnan(r)
    if known.any():  # only at card decisions the teacher valued, at most their value spread
        vals = v[known].astype(np.float32)
        if known[:, :BIDS_PER_HAND].any() or ((~np.isnan(vals)).sum(-1) < 2).any():
            raise ValueError(f"{where}: field 'regret' holds a value where no card decision "
                             f"was valued")
        spread = np.nanmax(vals, -1) - np.nanmin(vals, -1)
        if (r[known] > spread + 0.25).any():  # (float16 rounding of the values)
            raise ValueError(f"{where}: field 'regret' exceeds the spread of the values it "
                             f"comes from")
    return out


MAX_LABEL_HANDS = 100_000
"""most hands one label file may hold (``load_labels``; about 6 KB a hand)."""


def _label_layout(path: str):
    def layout(headers):
        n = npz_rows(headers, "seed", path, MAX_LABEL_HANDS)
        scalars = {"format": ("U", True), "version": ("iu", True), "rules": ("U", False),
                   "source": ("U", False), "source_sha256": ("U", False),
                   "samples": ("iu", False), "run_seed": ("iu", False), "chunk": ("iu", False),
                   "teacher": ("U", False), "bid_samples": ("iu", False)}
        arrays = {"seed": ((n,), np.int64), "scores": ((n, 2), np.int16),
                  "bags": ((n, 2), np.int8), "moves": ((n, MOVES_PER_HAND), np.uint8),
                  "agent_team": ((n,), np.int8), "values": ((n, MOVES_PER_HAND, 52), np.float16)}
        for k in _OPTIONAL:  # version 2 (version 1 files lack them)
            if k in headers:
                arrays[k] = (((n, BIDS_PER_HAND, NUM_BIDS) if k == "bid_values" else
                              (n, MOVES_PER_HAND)), np.float16)
        return scalars, arrays
    return layout


def load_labels(path: str) -> dict:
    """Read a label file written by ``save_labels`` (``spades_env.fileio.read_npz``: only the
    known fields, sizes checked before anything is inflated, special files refused).

    Returns the eight arrays plus ``source``, ``source_sha256``, ``teacher`` (str),
    ``samples``, ``bid_samples``, ``run_seed``, ``chunk`` (int) and ``rules`` (str).
    Raises:
        ValueError: a missing, foreign or corrupt file, an unknown field, or arrays of the wrong
            shape, dtype or values, naming ``path`` and the field.
    """
    d = read_npz(path, "PIMC label file", _label_layout(path))
    if str(d["format"]) != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} file")
    version = int(d["version"])
    if version not in (1, VERSION):
        raise ValueError(f"{path}: {FORMAT} version {version}, this reader knows versions 1 "
                         f"and {VERSION}")
    v2 = ("teacher", "bid_samples", "bid_values", "regret")
    if version == 1 and any(k in d for k in v2):
        raise ValueError(f"{path}: a version-1 label file holds the version-2 field(s) "
                         f"{[k for k in v2 if k in d]}")
    if version == 2 and not all(k in d for k in v2):
        raise ValueError(f"{path}: version-2 field(s) {[k for k in v2 if k not in d]} missing")
    teacher = str(d.get("teacher", "hard"))
    if teacher not in TEACHERS:
        raise ValueError(f"{path}: field 'teacher': {teacher[:40]!r} is not one of "
                         f"{list(TEACHERS)}")
    for k in ("samples", "bid_samples"):
        if k in d and not 0 <= int(d[k]) <= MAX_SAMPLES:
            raise ValueError(f"{path}: field {k!r} must be in [0, {MAX_SAMPLES}], got "
                             f"{int(d[k])}")
    rules = str(d.get("rules", "standard"))
    if rules != "standard":
        raise ValueError(f"{path}: labels of rules {rules!r}; only standard rules are labelled")
    out = _check_fields(d, path)
    bid_samples = int(d.get("bid_samples", 0))
    bids_valued = (~np.isnan(out["bid_values"])).any(-1)
    if bid_samples == 0 and bids_valued.any():
        raise ValueError(f"{path}: field 'bid_values' holds values but 'bid_samples' is 0")
    if bid_samples > 0 and not bids_valued.all():
        raise ValueError(f"{path}: field 'bid_values': a bid without values though "
                         f"'bid_samples' is {bid_samples}")
    out.update(source=str(d.get("source", "")), samples=int(d.get("samples", 0)),
               run_seed=int(d.get("run_seed", -1)), chunk=int(d.get("chunk", -1)),
               source_sha256=str(d.get("source_sha256", "")), rules=rules, teacher=teacher,
               bid_samples=bid_samples)
    return out


def merge_labels(parts: list[dict]) -> dict:
    """Concatenate label dicts (in the given order). Raises ValueError for none."""
    if not parts:
        raise ValueError("no label chunks to merge")
    return {**{k: np.concatenate([p[k] for p in parts]) for k in _FIELDS}, "rules": "standard"}


# ============================================================================= targets
def equivalence_classes(mask: np.ndarray, valued: np.ndarray) -> np.ndarray:
    """The class of every legal card: the candidate that stands for it in the search.

    The search values only the lowest card of each run of equivalent cards
    (``PIMCBot._candidates``: same suit, nothing outstanding between them), so a legal card that
    has no value belongs to the nearest valued card below it in its suit.

    Args:
        mask: bool ``[N, >=52]``, the legal actions (only the 52 cards are read).
        valued: bool ``[N, 52]``, the candidates (cards with a value).
    Returns:
        int64 ``[N, 52]``: a card id 0..51 for every legal card, 52 for the others.
    """
    mask, valued = np.asarray(mask, bool), np.asarray(valued, bool)
    if mask.ndim != 2 or mask.shape[1] < 52 or valued.shape != (len(mask), 52):
        raise ValueError(f"mask must be [N, >=52] and valued [N, 52], got {list(mask.shape)} and "
                         f"{list(valued.shape)}")
    n = len(mask)
    rep = np.full((n, 52), 52, np.int64)
    cur = np.full(n, 52, np.int64)
    for c in range(52):
        if c % 13 == 0:
            cur[:] = 52
        cur = np.where(valued[:, c], c, cur)
        rep[:, c] = np.where(mask[:, c], cur, 52)
    return rep


def _check_temperature(t) -> None:
    if isinstance(t, bool) or not isinstance(t, (int, float, np.floating, np.integer)) \
            or not np.isfinite(t) or t <= 0:
        raise ValueError(f"temperature must be a finite number > 0 (points), got {t!r}")


def soft_targets(values: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(values / temperature)`` over the valued cards of each row.

    Args:
        values: float ``[N, 52]`` in points, NaN for cards that are not candidates; every row has
            at least one value.
        temperature: points (> 0): a card worth ``temperature`` points more gets ``e`` times the
            probability.
    Returns:
        float32 ``[N, 52]``, rows summing to 1, 0 on NaN cards.
    Raises:
        ValueError: a bad temperature or a row with no value.
    """
    _check_temperature(temperature)
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 52:
        raise ValueError(f"values must be [N, 52], got shape {list(v.shape)}")
    ok = ~np.isnan(v)
    if not ok.any(1).all():
        raise ValueError("a row of values has no candidate")
    z = np.where(ok, v / temperature, -np.inf)
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    return (p / p.sum(1, keepdims=True)).astype(np.float32)


def card_targets(values: np.ndarray, class_probs: np.ndarray, temperature: float,
                 prior: float) -> np.ndarray:
    """Card-row targets: ``class_probs ** prior * exp(values / temperature)``, normalised over
    the valued cards (``build_dataset``'s ``prior``).

    Args:
        values: float ``[N, 52]``, points, NaN off the candidates.
        class_probs: float ``[N, 52]``, the reference policy's probability of each candidate's
            class (``equivalence_classes``), floored at 1e-6.
        temperature: points (> 0). prior: 0..1.
    Returns: float32 ``[N, 52]``.
    """
    if isinstance(prior, bool) or not isinstance(prior, (int, float, np.floating)) \
            or not 0.0 <= prior <= 1.0:
        raise ValueError(f"prior must be a number in [0, 1], got {prior!r}")
    class_probs = np.asarray(class_probs, dtype=np.float64)
    if np.isnan(class_probs).any():
        raise ValueError("class_probs holds NaN")
    v = np.asarray(values, dtype=np.float64)
    if prior > 0:
        v = v + temperature * prior * np.log(np.maximum(class_probs, 1e-6))
    return soft_targets(v, temperature)


def build_dataset(rec: dict, reference, temperature: float, prior: float = 0.0) -> dict:
    """Rows to learn from: every bid, and every card decision with a real choice.

    Args:
        rec: label arrays (``load_labels`` / ``label_chunk``).
        reference: the starting network (``spades_env.agents.model.Agent``); the bid it plays
            (greedy) is the bid rows' target.
        temperature: of ``soft_targets``, in points.
        prior: 0 gives card rows the plain ``soft_targets``; 1 gives the KL-regularised
            improvement of the reference policy, ``pi_ref(class) * exp(value / temperature)``
            normalised (the closed form of maximising value minus ``temperature`` times the KL to
            ``pi_ref``: Abdolmaleki et al., MPO, 2018; Peng et al., AWR, 2019); in between, the
            reference's class probability raised to ``prior``. Noisy search values then change a
            card only where they favour another one by several ``temperature``.
    Bid rows whose bids the search valued (``bid_values``, ``label_chunk``'s ``bid_samples``)
    take ``softmax(values / temperature)`` over the valued bids; the others the reference's bid.

    Returns:
        ``obs`` float32 ``[D, OBS_SIZE]``, ``mask`` bool ``[D, 68]``, ``target`` float32
        ``[D, 68]``, ``card`` bool ``[D]`` (card row), ``rep`` int64 ``[D, 52]``
        (``equivalence_classes``; 52 everywhere on bid rows), ``values`` float32 ``[D, 52]``
        (NaN on bid rows).
    Raises:
        ValueError: a move the engine refuses (a corrupt record).
    """
    import torch
    rows = replay(rec)
    n = len(rec["seed"])
    values = rec["values"].reshape(n * MOVES_PER_HAND, 52).astype(np.float32)
    valued = ~np.isnan(values)
    is_bid = np.zeros((n, MOVES_PER_HAND), bool)
    is_bid[:, :BIDS_PER_HAND] = True
    is_bid = is_bid.reshape(-1)
    card = valued.sum(1) > 1
    keep = is_bid | card
    obs = rows["obs"][keep].astype(np.float32)
    mask = rows["mask"][keep]
    card, values, valued = card[keep], values[keep], valued[keep]
    rep = equivalence_classes(mask, valued)
    ref = np.zeros((len(obs), 68), np.float32)
    with torch.no_grad():
        for i in range(0, len(obs), 4096):
            lg = reference.masked(reference.policy_logits(torch.as_tensor(obs[i:i + 4096])),
                                  torch.as_tensor(mask[i:i + 4096]))
            ref[i:i + 4096] = torch.softmax(lg, -1).numpy()
    target = np.zeros((len(obs), 68), np.float32)
    bid_rows = np.nonzero(~card)[0]
    target[bid_rows, ref[bid_rows].argmax(1)] = 1.0  # the greedy policy's bid, kept
    bv = rec.get("bid_values")
    if bv is not None:  # bids the search valued: its soft target instead
        bv = bv.reshape(n * BIDS_PER_HAND, NUM_BIDS).astype(np.float64)
        searched = ~np.isnan(bv).all(1)
        if searched.any():
            # the kept rows are in move order: each hand's 4 bids come first
            rows_bid = bid_rows[searched]
            legal = mask[rows_bid, BID_OFFSET:BID_OFFSET + NUM_BIDS]
            vals = np.where(legal, bv[searched], np.nan)
            if np.isnan(vals).all(1).any():
                raise ValueError("labels: a bid's values cover no legal bid (a corrupt record)")
            target[rows_bid] = 0.0
            target[rows_bid, BID_OFFSET:BID_OFFSET + NUM_BIDS] = soft_targets(
                np.pad(vals, ((0, 0), (0, 52 - NUM_BIDS)), constant_values=np.nan), temperature
            )[:, :NUM_BIDS]
    cls = np.zeros((int(card.sum()), 53))
    np.add.at(cls, (np.arange(len(cls))[:, None], rep[card]), ref[card, :52])
    target[card, :52] = card_targets(values[card], cls[:, :52], temperature, prior)
    values[~card] = np.nan
    return {"obs": obs, "mask": mask, "target": target, "card": card, "rep": rep,
            "values": values}


def bid_rows(reference, deals: int, seed: int, random_start: float = 0.5) -> dict:
    """Bidding rows that hold the reference's bids in place: ``deals`` fresh deals, each seat bids
    what the reference plays (greedy), and every bid becomes a row whose target is that bid.

    Bids cost no search, so these rows can far outnumber the labelled hands' 4 bids each: the
    card rows move the shared trunk, and the bids must not move with it.

    Returns ``build_dataset``'s arrays for ``4 * deals`` bid rows.
    """
    import torch

    from spades_env.cards import NUM_ACTIONS
    from spades_env.observation import OBS_SIZE, encode
    rng = np.random.default_rng([seed, 1 << 20])
    n = 4 * deals
    obs = np.zeros((n, OBS_SIZE), np.float32)
    mask = np.zeros((n, NUM_ACTIONS), bool)
    target = np.zeros((n, NUM_ACTIONS), np.float32)
    r = 0
    for _ in range(deals):
        g = SpadesGame(Rules(), seed=int(rng.integers(2**63)))
        if random_start > 0 and rng.random() < random_start:
            randomize_start(g, rng)
        for _k in range(BIDS_PER_HAND):
            view = g.view(g.current_player)
            encode(view, obs[r])
            mask[r, list(view.legal_actions)] = True
            with torch.no_grad():
                lg = reference.masked(reference.policy_logits(torch.as_tensor(obs[r:r + 1])),
                                      torch.as_tensor(mask[r:r + 1]))
            a = int(lg.argmax(-1))
            target[r, a] = 1.0
            g.apply(a)
            r += 1
    return {"obs": obs, "mask": mask, "target": target, "card": np.zeros(n, bool),
            "rep": np.full((n, 52), 52, np.int64), "values": np.full((n, 52), np.nan, np.float32)}


def concat_rows(a: dict, b: dict) -> dict:
    """Rows of two ``build_dataset``-style dicts, one after the other."""
    return {k: np.concatenate([a[k], b[k]]) for k in a}


# ============================================================================= augmentation
SIDE_SUIT_PERMUTATIONS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))
"""The six orders of the side suits (clubs 0, diamonds 1, hearts 2); spades (3) stays trump."""

_CARD_PIECES = ("hand", "played", "trick", "exchange")


def card_map(perm) -> np.ndarray:
    """int64 ``[52]``: the id each card takes when side suit ``s`` becomes ``perm[s]``.

    Raises ValueError unless ``perm`` is an order of (0, 1, 2)."""
    if isinstance(perm, (str, bytes)) or not hasattr(perm, "__len__") or len(perm) != 3 \
            or not all(is_int(x) for x in perm) or sorted(int(x) for x in perm) != [0, 1, 2]:
        raise ValueError(f"perm must be an order of the side suits (0, 1, 2), got {perm!r}")
    suit = [int(x) for x in perm] + [3]
    c = np.arange(52)
    return np.array([suit[s] for s in c // 13]) * 13 + c % 13


def suit_permutation(perm) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays that relabel the side suits of observations and actions.

    Renaming the side suits changes nothing in the game (only spades are special: trump, and the
    rule on leading them), so a position and its relabelled copy have the same values with the
    cards renamed. ``obs[..., oi]`` is the observation of the relabelled position and
    ``actions[..., ai]`` (any per-action array: mask, logits, targets) its actions.

    Args:
        perm: a permutation of (0, 1, 2): side suit ``s`` becomes ``perm[s]``.
    Returns:
        ``oi`` int64 ``[OBS_SIZE]``, ``ai`` int64 ``[68]``.
    """
    from spades_env.observation import OBS_SIZE, OFFSETS
    cm = card_map(perm)  # checks perm
    inv = np.empty(52, np.int64)
    inv[cm] = np.arange(52)
    oi = np.arange(OBS_SIZE)
    for name in _CARD_PIECES:
        a, b = OFFSETS[name]
        for k in range(a, b, 52):
            oi[k:k + 52] = k + inv
    sinv = np.empty(4, np.int64)
    sinv[list(perm) + [3]] = np.arange(4)
    a, _b = OFFSETS["led_suit"]
    oi[a:a + 4] = a + sinv
    a, b = OFFSETS["voids"]
    for k in range(a, b, 4):
        oi[k:k + 4] = k + sinv
    ai = np.arange(68)
    ai[:52] = inv
    return oi, ai


# ============================================================================= learning
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
    with torch.no_grad():
        obs = torch.as_tensor(data["obs"][index])
        lg = net.masked(net.policy_logits(obs), torch.as_tensor(data["mask"][index]))
        a = lg.argmax(-1).numpy()
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
            log=print) -> list[dict]:
    """Train ``net`` (in place) on ``build_dataset`` rows.

    Loss per row: on a card row, the cross-entropy of the soft target against the network's
    probability of each class of equivalent cards (``equivalence_classes``); on a bid row, the
    cross-entropy against the reference's greedy bid, weighted ``bid_weight``. Adam, the step size
    falling linearly from ``lr`` to 0, gradient norm clipped at 0.5.

    Args:
        net: ``Agent``; trained in place (all layers; the value heads get no gradient).
        epochs, lr, batch: passes over the rows, Adam step size, rows per step.
        holdout: share of rows kept out for ``evaluate_rows`` before and after each pass.
        seed: shuffling seed.
        augment: each step relabels its rows' side suits by one of the six orders, drawn at
            random (``suit_permutation``; the game is unchanged, so each labelled position counts
            six ways).
    Returns:
        one dict per evaluation (``epoch``: 0 before training, then 1..epochs; ``loss``; and
        ``evaluate_rows``' fields on the held-out rows).
    Raises:
        ValueError: a loss that is not finite (diverged; ``net`` is then unusable).
    """
    import torch
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(data["obs"]))
    nval = int(len(idx) * holdout)
    val, train = idx[:nval], idx[nval:]
    obs, mask = torch.as_tensor(data["obs"]), torch.as_tensor(data["mask"])
    target, rep = torch.as_tensor(data["target"]), torch.as_tensor(data["rep"])
    card = torch.as_tensor(data["card"])
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    steps = epochs * -(-len(train) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: max(0.0, 1.0 - i / max(1, steps)))
    perms = []
    for perm in SIDE_SUIT_PERMUTATIONS:
        oi, ai = suit_permutation(perm)
        cm = np.append(card_map(perm), 52)
        perms.append((torch.as_tensor(oi), torch.as_tensor(ai), torch.as_tensor(cm)))
    hist = [{"epoch": 0, "loss": float("nan"), **evaluate_rows(net, data, val)}]
    log(f"before: {hist[0]}")
    for ep in range(1, epochs + 1):
        rng.shuffle(train)
        total, t0 = 0.0, time.time()
        for k in range(0, len(train), batch):
            ix = torch.as_tensor(train[k:k + batch])
            o, m, t, r = obs[ix], mask[ix], target[ix], rep[ix]
            if augment:
                oi, ai, cm = perms[int(rng.integers(len(perms)))]
                o, m, t = o[:, oi], m[:, ai], t[:, ai]
                r = cm[r][:, ai[:52]]
            probs = torch.softmax(net.masked(net.policy_logits(o), m), -1)
            c = card[ix]
            pc = _class_probs(probs[c], r[c])
            loss_card = -(t[c, :52] * pc.clamp_min(1e-8).log()).sum()
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
    return hist


# ============================================================================= command line
def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file's bytes (which checkpoint a chunk was labelled from)."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _chunk_path(folder: str, chunk: int) -> str:
    return os.path.join(folder, f"chunk_{chunk:05d}.npz")


def check_chunk(path: str, sha: str, hands: int, seed: int, chunk: int, samples: int,
                teacher: str = "hard", bid_samples: int = 0) -> dict:
    """Refuse a chunk file that is not chunk ``chunk`` of this run (another checkpoint, seed,
    size, teacher or number of deals): a resumed run must label the positions of the same policy
    with the same search, and a run uses only labels of the network it was given (its SHA-256
    ``sha``).

    Returns:
        the chunk's labels (``load_labels``).
    Raises:
        ValueError: a corrupt or foreign file, or one of another run, naming what differs.
    """
    d = load_labels(path)
    want = {"checkpoint (SHA-256)": (d["source_sha256"], sha), "hands": (len(d["seed"]), hands),
            "seed": (d["run_seed"], seed), "chunk": (d["chunk"], chunk),
            "samples": (d["samples"], samples), "teacher": (d["teacher"], teacher),
            "bid samples": (d["bid_samples"], bid_samples)}
    bad = [f"{k} {got!r} (this run: {exp!r})" for k, (got, exp) in want.items() if got != exp]
    if bad:
        raise ValueError(f"{path} belongs to another labelling run: {', '.join(bad)}; use another "
                         f"--labels folder, or remove that file")
    return d


def chunk_stats(rec: dict) -> dict:
    """What a chunk holds, for the progress lines and TensorBoard: ``hands``, ``card_labels``
    (card decisions valued), ``bid_labels`` (bids valued) and ``regret`` (points: mean over the
    policy team's valued card decisions of the best value minus the value of the card the policy
    played, by the search's estimates; NaN when none)."""
    r = np.asarray(rec.get("regret", np.full(1, np.nan)), np.float64)
    known = ~np.isnan(r)
    bv = rec.get("bid_values")
    return {"hands": int(len(rec["seed"])),
            "card_labels": int((~np.isnan(rec["values"]).all(-1)).sum()),
            "bid_labels": 0 if bv is None else int((~np.isnan(bv)).any(-1).sum()),
            "regret": float(r[known].mean()) if known.any() else float("nan")}


def lock_labels(folder: str):
    """Lock the label folder ``folder`` for one labelling run (``spades_env.fileio.lock_folder``:
    created if missing, never through a symlink, owned by this user; a second run on the same
    folder is refused while the first holds it) and check that chunks can be written there.

    Returns:
        the held ``FolderLock`` (``release()`` it when the chunks have been read).
    Raises:
        ValueError: the folder is in use by another run, unsafe, or cannot be written (the
            message names it).
    """
    from spades_env.fileio import FolderInUse, check_output_file, lock_folder
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


def _progress_line(path, st, sec, totals, t_start) -> str:
    """``chunk_00003.npz: 50 hands, 1811 card + 200 bid labels in 61 s (33/s); policy regret
    0.82 points per card; round: 200 hands, 31 labels/s``."""
    name = os.path.basename(path)
    if sec is None:
        head = f"{name}: kept from an earlier run ({st['hands']} hands)"
    else:
        n = st["card_labels"] + st["bid_labels"]
        head = (f"{name}: {st['hands']} hands, {st['card_labels']} card + {st['bid_labels']} bid "
                f"labels in {sec:.0f} s ({n / max(sec, 1e-9):.1f}/s)")
    rate = totals["made_labels"] / max(time.time() - t_start, 1e-9)
    regret = ("not recorded (a version-1 chunk)" if np.isnan(st["regret"])
              else f"{st['regret']:.2f} points per card")
    return f"{head}; policy regret {regret}; round: {totals['hands']} hands, {rate:.1f} labels/s"


def produce_labels(checkpoint: str, folder: str, minutes: float, chunks: int, chunk_hands: int,
                   seed: int, samples: int, workers: int, random_start: float = 0.5,
                   log=print, teacher: str = "hard", bid_samples: int = 0,
                   ray_address: str | None = None, stats: dict | None = None,
                   on_chunk=None) -> list[str]:
    """Label chunks 0, 1, ... until ``chunks`` are done or ``minutes`` have passed, in
    ``workers`` local processes, or as Ray tasks on the cluster at ``ray_address``. Chunks already
    in ``folder`` are checked (``check_chunk``) and kept: a stopped run resumes. Returns the
    paths of chunks ``0..chunks-1`` that exist, in order. Logs one line per chunk
    (``_progress_line``: hands, labels, labels per second, the policy's regret).

    On Ray (``spades_env.ray_cluster``: the package shipped to the nodes), the checkpoint's bytes
    go to the nodes and each chunk is a task of one CPU; the driver writes the chunks, so the
    nodes need no shared folder. A chunk's labels depend only on its seeds and the checkpoint:
    the same bits as a local run. A task whose worker or node dies is run again (``max_retries``),
    costing only that chunk.

    The caller holds the folder's lock (``lock_labels``). ``on_chunk`` (if given) is called
    after each chunk with ``{"chunk", "round_hands", "labels_per_second", "regret"}`` (the
    chunk's regret; the rate: labels made so far per second of this call). ``stats`` (a dict,
    if given) receives the totals: ``hands``, ``card_labels``, ``bid_labels``, ``made_labels`` (labelled by this
    call), ``label_seconds`` and ``regret`` (mean over the chunks' hands).

    Raises:
        ValueError: a chunk in ``folder`` that is corrupt or from another run; Ray missing or
            the cluster unreachable;
            ``spades_env.fileio.FolderReplaced`` when the locked folder was moved or replaced
            while the chunks were made.
    """
    os.makedirs(folder, exist_ok=True)
    spec = {"checkpoint": checkpoint, "sha": file_sha256(checkpoint), "hands": chunk_hands,
            "seed": seed, "samples": samples, "random_start": random_start, "teacher": teacher,
            "bid_samples": bid_samples}
    identity = locked_identity(folder)
    deadline = time.time() + minutes * 60
    totals = {"hands": 0, "card_labels": 0, "bid_labels": 0, "made_labels": 0,
              "label_seconds": 0.0, "regret_sum": 0.0, "regret_hands": 0}
    t_start = time.time()

    def done(path, rec, sec) -> bool:
        st = chunk_stats(rec)
        for k in ("hands", "card_labels", "bid_labels"):
            totals[k] += st[k]
        if sec is not None:
            totals["made_labels"] += st["card_labels"] + st["bid_labels"]
            totals["label_seconds"] += sec
        if not np.isnan(st["regret"]):
            totals["regret_sum"] += st["regret"] * st["hands"]
            totals["regret_hands"] += st["hands"]
        log(_progress_line(path, st, sec, totals, t_start))
        if on_chunk is not None:
            on_chunk({"chunk": os.path.basename(path), "round_hands": totals["hands"],
                      "labels_per_second": totals["made_labels"] / max(time.time() - t_start,
                                                                        1e-9),
                      "regret": st["regret"]})
        if time.time() >= deadline:
            log(f"label budget of {minutes} min reached")
            return True
        return False

    if ray_address is None:
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
            check_cluster(("spades_env", "spades_env.training.distill", "torch"))
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


_LIMITS = (  # name, kind, low, high
    ("minutes", float, 1e-3, 10_000.0), ("chunks", int, 1, 100_000), ("chunk_hands", int, 1, 10_000),
    ("samples", int, 1, MAX_SAMPLES), ("workers", int, 1, 64), ("seed", int, 0, 2**62),
    ("temperature", float, 1e-3, 1e4), ("prior", float, 0.0, 1.0), ("bid_deals", int, 0, 1_000_000),
    ("epochs", int, 1, 1_000), ("lr", float, 1e-7, 1.0), ("bid_samples", int, 0, MAX_SAMPLES))


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
                       ray_address: str | None = None, on_chunk=None) -> dict:
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
    label on that Ray cluster; ``on_chunk``: called after each chunk (``produce_labels``).
    Returns:
        ``{"checkpoint": out, "hands": int, "chunks": int, "label_minutes": float,
        "minutes": float, "labels_per_second": float, "regret": float}`` (``regret``: the
        source policy's, in points per card, by this round's teacher).
    Raises:
        ValueError: a bad value (naming it), a source trained on other rules, widths that
            ``check_widen`` refuses, no chunk finished within ``minutes``, or an ``also_labels``
            folder or chunk given twice (same device and inode: another name, a symbolic or
            hard link), or that is this run's own label folder.
        FileNotFoundError, OSError: a missing source, an output that cannot be written.
    """
    import copy

    import torch
    torch.set_num_threads(1)
    from spades_env.fileio import check_not_input, check_output_file

    from .checkpoint import build_agent, load_checkpoint, save_checkpoint
    a = argparse.Namespace(minutes=minutes, chunks=chunks, chunk_hands=chunk_hands,
                           samples=samples, workers=workers, seed=seed, temperature=temperature,
                           prior=prior, bid_deals=bid_deals, epochs=epochs, lr=lr, labels=labels,
                           teacher=teacher, bid_samples=bid_samples, ray=ray_address)
    folder = labels or os.path.splitext(out)[0] + "_labels"
    t0 = time.time()
    check_args(a)
    if ray_address is not None:  # before any work: Ray installed, the address answers
        from spades_env.ray_cluster import check_address
        check_address(ray_address)
    data = load_checkpoint(src)
    rules = (data.get("config") or {}).get("rules", "standard")
    if rules != "standard":
        raise ValueError(f"{src} was trained on rules {rules!r}; the labels are "
                         f"standard-rules hands")
    net = build_agent(data, "cpu")
    shape = _wider_shape(hidden, head_hidden, net)
    check_not_input(out, [src], "--out")
    check_output_file(out, "output checkpoint", create_folder=True)
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
    extra = merge_labels([load_labels(q) for q in extra_files]) if extra_files else None  # now,
    lock = lock_labels(folder)                        # not after the labelling: checked early
    try:
        stats: dict = {}
        paths = produce_labels(src, folder, minutes, chunks, chunk_hands, seed, samples, workers,
                               log=log, teacher=teacher, bid_samples=bid_samples,
                               ray_address=ray_address, stats=stats, on_chunk=on_chunk)
        if not paths:
            raise ValueError("no label chunk was finished within --minutes")
        # every chunk read is one of this run, made by this very network (its SHA-256)
        sha = file_sha256(src)
        own = merge_labels([check_chunk(q, sha, chunk_hands, seed,
                                        int(os.path.basename(q)[len("chunk_"):-len(".npz")]),
                                        samples, teacher, bid_samples) for q in paths])
    finally:
        lock.release()
    rec = own if extra is None else merge_labels([own, extra])
    label_s = time.time() - t0
    reference = copy.deepcopy(net).eval()
    if shape is not None:
        from spades_env.agents.model import widen
        torch.manual_seed(int(seed))  # the new units' initial weights: the same every run
        net = widen(net, shape["hidden"], shape["head_hidden"])
    ds = build_dataset(rec, reference, temperature, prior)
    if bid_deals > 0:
        ds = concat_rows(ds, bid_rows(reference, bid_deals, seed))
    log(f"{len(rec['seed'])} hands from {len(paths) + len(extra_files)} chunks "
        f"({len(extra_files)} from --also-labels): {int(ds['card'].sum())} card "
        f"rows, {int((~ds['card']).sum())} bid rows ({label_s / 60:.1f} min)")
    hist = distill(net, ds, epochs=epochs, lr=lr, seed=seed)
    res = {k: data[k] for k in ("config", "model_shape", "progress") if k in data}
    res["model"] = net.state_dict()
    if shape is not None:
        res["model_shape"] = dict(res["model_shape"], **shape)
        if isinstance(res.get("config"), dict):
            res["config"] = dict(res["config"], **shape)
    res["source"] = src
    own_stats = chunk_stats(own)
    rate = stats["made_labels"] / stats["wall_seconds"] if stats.get("made_labels") \
        else float("nan")  # labels made per second of wall clock (none made: all kept)
    res["distill"] = {"hands": int(len(rec["seed"])), "own_hands": int(len(own["seed"])),
                      "also_labels": [os.path.abspath(f) for f in also_labels],
                      "teacher": teacher, "bid_samples": bid_samples,
                      "card_labels": own_stats["card_labels"],
                      "bid_labels": own_stats["bid_labels"], "regret": own_stats["regret"],
                      "labels_per_second": rate, "ray": ray_address is not None,
                      "samples": samples,
                      "temperature": temperature, "prior": prior, "bid_deals": bid_deals,
                      "epochs": epochs, "lr": lr, "seed": seed, "label_minutes": label_s / 60,
                      "widened_from": (None if shape is None else
                                       {"hidden": list(reference.hidden),
                                        "head_hidden": reference.head_hidden}),
                      "history": [{k: float(v) for k, v in h.items()} for h in hist]}
    save_checkpoint(out, res)
    return {"checkpoint": out, "hands": int(len(rec["seed"])), "chunks": len(paths),
            "label_minutes": label_s / 60, "minutes": (time.time() - t0) / 60,
            "labels_per_second": rate, "regret": own_stats["regret"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="spades distill",
                                description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="src", required=True, help="checkpoint to start from")
    p.add_argument("--out", required=True, help="checkpoint to write (stripped, playable)")
    p.add_argument("--labels", default=None,
                   help="label chunk folder (default: OUT without .pt, + _labels)")
    p.add_argument("--minutes", type=float, default=30.0, help="labelling budget (wall clock)")
    p.add_argument("--chunks", type=int, default=1000, help="most chunks to label")
    p.add_argument("--chunk-hands", type=int, default=50)
    p.add_argument("--samples", type=int, default=40, help="search deals per card decision")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--temperature", type=float, default=3.0, help="soft-target temperature, points")
    p.add_argument("--prior", type=float, default=0.0,
                   help="weight of the starting policy in the card targets (build_dataset)")
    p.add_argument("--bid-deals", type=int, default=50000,
                   help="fresh deals whose bids hold the starting network's bids (bid_rows)")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--lr", type=float, default=1e-3)
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
                        "--from network itself: a teacher that grows with the student)")
    p.add_argument("--bid-samples", type=int, default=0,
                   help="deals per bid of the bid search; the bids then learn its values (0: "
                        "the bids are not labelled and stay the source's)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="label on a Ray cluster (auto or HOST:PORT; pip install -e '.[ray]'); "
                        "the same chunks as a local run")
    a = p.parse_args(argv)
    folder = a.labels or os.path.splitext(a.out)[0] + "_labels"
    try:
        hidden = None
        if a.hidden is not None:
            try:
                hidden = [int(w) for w in a.hidden.split(",")]
            except ValueError:
                raise ValueError(f"--hidden must be comma-separated integers like 512,256, got "
                                 f"{a.hidden!r}") from None
        r = distill_checkpoint(a.src, a.out, a.labels, a.minutes, a.chunks, a.chunk_hands,
                               a.samples, a.workers, a.seed, a.temperature, a.prior, a.bid_deals,
                               a.epochs, a.lr, hidden, a.head_hidden, a.also_labels,
                               log=lambda m: print(m, flush=True), teacher=a.teacher,
                               bid_samples=a.bid_samples, ray_address=a.ray)
    except (ValueError, FileNotFoundError, OSError) as e:  # bad input, bad file, full disk
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = len(files_in(folder, "chunk_", ".npz"))
        print(f"interrupted: {kept} label chunks kept in {folder}; run the same command again to "
              f"resume", file=sys.stderr)
        return 130
    print(f"wrote {a.out} ({r['minutes']:.1f} min in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
