"""The PIMC label file: one chunk of search-labelled hands, its format, writer, reader and checks.

A label file (``.npz``, ``FORMAT``, ``VERSION`` 2) holds per hand: the deal's ``seed`` [H] int64,
the ``scores`` [H, 2] int16 and ``bags`` [H, 2] int8 before the hand, the 56 ``moves`` [H, 56]
uint8, the policy's team ``agent_team`` [H] int8, ``values`` [H, 56, 52] float16 (NaN except the
candidates of a card decision with more than one), ``bid_values`` [H, 4, 14] float16 (points by
bid 0..13, NaN off the candidates or when bids are not labelled) and ``regret`` [H, 56] float16
(points, NaN off the policy's valued card decisions); and who made it: ``source``,
``source_sha256``, ``teacher`` (one of ``TEACHERS``), ``samples``, ``bid_samples``, ``run_seed``,
``chunk``. The observations are rebuilt by replaying the moves through the engine
(``teacher_records.replay``). Chunk ``k`` of a run with seed ``S`` draws everything from
``np.random.default_rng([S, k])``, so it is reproducible from its seeds and the checkpoint.

``save_labels`` writes a file, ``load_labels`` reads and checks one, ``check_chunk`` refuses a
chunk of another labelling run, ``merge_labels`` joins chunks and ``chunk_stats`` sums one up.
The labels are made by ``training.labelling`` and become training rows in
``training.distill_targets``.
"""

from __future__ import annotations

import io
import os

import numpy as np

from spades_env import Rules, SpadesGame
from spades_env.bots.pimc import MAX_SAMPLES
from spades_env.cards import BID_OFFSET, TEAM, action_str, is_int
from spades_env.fileio import write_atomic
from spades_env.readers import npz_rows, read_npz
from spades_env.records import check_hand_values

from .teacher_records import MOVES_PER_HAND, mask_bits

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


def _names(actions) -> str:
    return ", ".join(action_str(int(a)) for a in actions)


def check_legal(rec: dict, where: str) -> None:
    """Replay every hand of checked label arrays (``_check_fields``) through the engine and refuse
    anything the rules do not allow at its decision: a move that is illegal there, a card value
    (``values``) on a card the seat cannot play, a bid value (``bid_values``) on a bid it cannot
    make, and a ``regret`` that is not the policy's: one on a decision of the search team, one
    whose played card has no valued class (``distill_targets.equivalence_classes``), or one that
    is not the best value minus that class's value.

    The replay records each decision's legal actions as a bit mask; the values and regrets of
    all the decisions are then checked at once on those masks (about 3x the speed of a check
    per decision), and the first problem in replay order is the one reported.

    Raises:
        ValueError: ``WHERE: hand H, decision K (seat S): field 'NAME' ...`` naming the card or
            bid (the first one found).
    """
    rules = Rules()
    n = len(rec["seed"])
    moves = rec["moves"]
    masks = np.zeros((n, MOVES_PER_HAND), object)  # the legal actions' bits (68: Python ints)
    seats = np.zeros((n, MOVES_PER_HAND), np.int8)
    stop = n * MOVES_PER_HAND  # the first illegal move's decision (row-major), if any
    for h in range(n):
        g = SpadesGame(rules, seed=int(rec["seed"][h]))
        g.scores = [int(x) for x in rec["scores"][h]]
        g.bags = [int(x) for x in rec["bags"][h]]
        for k in range(MOVES_PER_HAND):
            m = g.legal_mask()
            masks[h, k], seats[h, k] = m, g.current_player
            a = int(moves[h, k])
            if not m >> a & 1:
                stop = h * MOVES_PER_HAND + k
                break
            g.apply(a)
        if stop < n * MOVES_PER_HAND:
            break
    # the decisions the checks at once flag (a superset of those refused), then each of them in
    # replay order by the checks of one decision, which word the error
    for f in np.flatnonzero(_flagged(rec, masks, seats)[:stop]):
        h, k = divmod(int(f), MOVES_PER_HAND)
        _check_decision(rec, h, k, int(masks[h, k]), int(seats[h, k]), where)
    if stop < n * MOVES_PER_HAND:
        h, k = divmod(stop, MOVES_PER_HAND)
        a, m = int(moves[h, k]), int(masks[h, k])
        raise ValueError(f"{where}: hand {h}, decision {k} (seat {int(seats[h, k])}): field "
                         f"'moves': {action_str(a)} (action {a}) is illegal there (legal: "
                         f"{_names(_bits(m))})")


def _bits(m: int) -> list[int]:
    return np.flatnonzero(mask_bits([m])[0]).tolist()


def _check_decision(rec: dict, h: int, k: int, m: int, p: int, where: str) -> None:
    """``check_legal``'s checks of one decision's values and regret (``m``: its legal actions'
    bits, ``p``: the seat to act); raises the first problem's ValueError."""
    at = f"{where}: hand {h}, decision {k} (seat {p})"
    if k < BIDS_PER_HAND:
        bad = [BID_OFFSET + int(b) for b in np.flatnonzero(~np.isnan(rec["bid_values"][h, k]))
               if not m >> (BID_OFFSET + int(b)) & 1]
        if bad:
            raise ValueError(f"{at}: field 'bid_values' holds a value on {action_str(bad[0])}, "
                             f"which that seat cannot bid there (legal: {_names(_bits(m))})")
        return
    v = rec["values"][h, k]
    valued = ~np.isnan(v)
    bad = [int(c) for c in np.flatnonzero(valued) if not m >> int(c) & 1]
    if bad:
        raise ValueError(f"{at}: field 'values' holds a value on card {action_str(bad[0])} "
                         f"(card {bad[0]}), which that seat cannot play there (legal: "
                         f"{_names(_bits(m))})")
    r = rec["regret"][h, k]
    if not np.isnan(r):
        _check_regret(v, valued, float(r), int(rec["moves"][h, k]),
                      TEAM[p] == int(rec["agent_team"][h]), at)


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
    # the latest valued card at or below each card of its suit block of 13: a running maximum of
    # the valued cards' ids, restarted at every suit
    ids = np.where(valued, np.arange(52, dtype=np.int8), np.int8(-1)).reshape(len(mask), 4, 13)
    cur = np.maximum.accumulate(ids, axis=2).reshape(len(mask), 52)
    cur[~mask[:, :52] | (cur < 0)] = 52
    return cur.astype(np.int64)


def _flagged(rec: dict, masks: np.ndarray, seats: np.ndarray) -> np.ndarray:
    """``check_legal``'s checks of the values and regrets on every replayed decision at once:
    bool ``[H * 56]``, row-major, True where a value lies on an illegal card or bid, or a regret
    is not the policy's or may not be the best value minus the played card's class value (a
    looser tolerance than ``_check_regret``'s: every decision it refuses is flagged; decisions
    after an illegal move have mask 0 and are not read)."""
    n = len(masks)
    flat = masks.reshape(-1)
    legal = mask_bits(flat)
    card_ok, bid_ok = legal[:, :52], legal[:, BID_OFFSET:BID_OFFSET + NUM_BIDS]
    values = rec["values"].reshape(n * MOVES_PER_HAND, 52)
    valued = ~np.isnan(values)
    is_bid = np.zeros((n, MOVES_PER_HAND), bool)
    is_bid[:, :BIDS_PER_HAND] = True
    is_bid = is_bid.reshape(-1)
    bad = ~is_bid & (valued & ~card_ok).any(1)
    bid_valued = np.zeros((n, MOVES_PER_HAND, NUM_BIDS), bool)
    bid_valued[:, :BIDS_PER_HAND] = ~np.isnan(rec["bid_values"])
    bad |= is_bid & (bid_valued.reshape(-1, NUM_BIDS) & ~bid_ok).any(1)
    regret = rec["regret"].reshape(-1).astype(np.float64)
    known = ~is_bid & ~np.isnan(regret)
    if known.any():
        i = np.nonzero(known)[0]
        team = np.repeat(rec["agent_team"].astype(np.int64), MOVES_PER_HAND)[i]
        policy = np.asarray(TEAM)[seats.reshape(-1)[i]] == team
        played = rec["moves"].reshape(-1)[i].astype(np.int64)
        card = played < 52
        one = np.zeros((len(i), 52), bool)  # the played card alone: its class
        one[np.nonzero(card)[0], played[card]] = True
        cls = equivalence_classes(one, valued[i])[np.arange(len(i)), np.minimum(played, 51)]
        has = card & (cls < 52)
        v32 = values[i].astype(np.float32)
        best = np.where(valued[i], v32, -np.inf).max(1)
        at_cls = v32[np.arange(len(i)), np.minimum(cls, 51)]
        want = (best - at_cls).astype(np.float16).astype(np.float64)
        r = regret[i]
        off = np.abs(r - want) > 0.5 * (1e-3 * np.abs(want) + 0.01)  # looser than the check
        bad[i] |= ~policy | ~has | off
    return bad


def _check_regret(v, valued, r: float, played: int, policy: bool, at: str) -> None:
    """A known regret (``check_legal``): the policy's, of a played card with a valued class, and
    the best value minus that class's value (float16, as ``labelling.label_chunk`` stores it)."""
    if not policy:
        raise ValueError(f"{at}: field 'regret' holds a value on a decision of the search "
                         f"team (regret is the policy team's)")
    cls = next((c for c in range(played, played - played % 13 - 1, -1) if valued[c]), None)
    if cls is None:
        raise ValueError(f"{at}: field 'regret' holds a value but the played card "
                         f"{action_str(played)} has no valued class")
    v32 = v[valued].astype(np.float32)
    want = float(np.float16(v32.max() - np.float32(v[cls])))
    if abs(r - want) > 1e-3 * abs(want) + 0.01:
        raise ValueError(f"{at}: field 'regret' is {r:g} but the values give {want:g} (the best "
                         f"value minus that of the played card {action_str(played)}'s class "
                         f"{action_str(cls)})")


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
    """Read a label file written by ``save_labels`` (``spades_env.readers.read_npz``: only the
    known fields, sizes checked before anything is inflated, special files refused).

    Returns the eight arrays plus ``source``, ``source_sha256``, ``teacher`` (str),
    ``samples``, ``bid_samples``, ``run_seed``, ``chunk`` (int) and ``rules`` (str).
    Raises:
        ValueError: a missing, foreign or corrupt file, an unknown field, arrays of the wrong
            shape, dtype or values, naming ``path`` and the field, or a move, value or regret
            the rules do not allow at its decision (``check_legal``).
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
    check_legal(out, path)
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


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file's bytes (which checkpoint a chunk was labelled from)."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def chunk_number(path: str) -> int:
    """The chunk index in a label chunk's file name (``chunk_00042.npz`` -> 42)."""
    return int(os.path.basename(path)[len("chunk_"):-len(".npz")])


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
