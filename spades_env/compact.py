"""The compact observation: the 711-float observation (version 3, ``observation.OBS_SIZE``) in
``COMPACT_SIZE`` = 120 bytes, and its exact expansion back to float32.

Almost every feature of the observation is a 0/1 flag; the compact form keeps those as bits and
the few numbers in a small block (docs/observation.md, The compact observation):

| bytes | content |
|---|---|
| 0 - 88 | ``BITS``: observation index ``k`` at byte ``k // 8``, bit ``k % 8`` (least significant first); the flag pieces only, every bit of a numeric piece is 0 |
| 89 - 92 | ``COUNTS``: ``tricks_won`` by relative seat, as counts 0..13 (the float is count / 13) |
| 93 | ``trick_number`` as a count 0..13 |
| 94 | ``RULES_ID``: the row of the rules table that holds this game's ``rules`` piece |
| 95 | 0 |
| 96 - 115 | ``SIDE``: ``scores`` (2), ``bags`` (2), ``target`` (1), float32 little-endian |
| 116 - 119 | 0 |

The ``rules`` piece is the same at every move of a game, so it is not stored per decision: a
``rules_table`` (``(R, 32)`` float32, row ``r`` = ``observation.rules_features`` of rule set ``r``)
is given to ``expand`` and byte 94 picks the row (0 for a single rule set).

``expand(pack(obs), table)`` equals ``obs`` bit for bit for every observation the rules reach,
and so does ``expand`` of the batched engine's compact output (``SpadesVectorEnv(obs_format=
"compact")``) against its float32 output. ``expand`` takes numpy arrays (CPU) or torch tensors
(any device: the expansion runs there, e.g. on the learner's GPU per minibatch).

The ``history`` piece (``history=True``) and the 679-float version 2 (``spades_v1``) have no
compact form.

This module is in the layer of the observation (docs/architecture.md) and never imports torch:
given a torch tensor, it works with the torch module that made it (``sys.modules``).
"""

from __future__ import annotations

import sys

import numpy as np

from .observation import OBS_SIZE, OFFSETS, RULES_SIZE

COMPACT_SIZE = 120
BITS = (0, -(-OBS_SIZE // 8))  # bytes 0..88: one bit per observation index
COUNTS = (89, 94)  # tricks_won (4 counts) then trick_number (1 count)
RULES_ID = 94
SIDE = (96, 116)  # scores, bags, target: 5 float32
assert BITS[1] <= COUNTS[0] and COUNTS[1] <= RULES_ID < SIDE[0] and SIDE[1] <= COMPACT_SIZE

NUMERIC = ("tricks_won", "trick_number", "scores", "bags", "target", "rules")
"""The pieces that are not 0/1 flags (their bits are 0; their values live in the bytes above)."""

_WON = OFFSETS["tricks_won"]
_TN = OFFSETS["trick_number"][0]
_SIDE_OBS = (OFFSETS["scores"][0], OFFSETS["target"][1])
_RULES_OBS = OFFSETS["rules"]
assert OFFSETS["bags"][0] == _SIDE_OBS[0] + 2 and _SIDE_OBS[1] - _SIDE_OBS[0] == 5
assert _WON[1] - _WON[0] == 4 and _RULES_OBS[1] - _RULES_OBS[0] == RULES_SIZE

FLAGS = np.ones(OBS_SIZE, dtype=bool)
"""``(OBS_SIZE,)`` bool: True at the indices stored as bits."""
for _name in NUMERIC:
    FLAGS[OFFSETS[_name][0]:OFFSETS[_name][1]] = False
FLAGS.flags.writeable = False
_FLAG_F32 = FLAGS.astype(np.float32)


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _torch():
    """The torch module of the tensors given (imported by whoever made them)."""
    return sys.modules["torch"]


def _rules_ids(rules_id):
    """``rules_id`` checked: an int, or integers (array, list, tensor), each in 0..255."""
    if _is_torch(rules_id):
        rules_id = rules_id.detach().cpu().numpy()
    ids = np.asarray(rules_id)
    if ids.dtype == bool or not (np.issubdtype(ids.dtype, np.integer) or (
            np.issubdtype(ids.dtype, np.floating) and np.all(np.isfinite(ids))
            and np.all(ids == np.round(ids)))):
        raise ValueError(f"rules_id must be an int or integers in 0..255 (a row of the rules "
                         f"table), got {rules_id!r}"[:200])
    if ids.size and (ids.min() < 0 or ids.max() > 255):
        raise ValueError(f"rules_id must be in 0..255 (byte {RULES_ID}), got values "
                         f"{int(ids.min())}..{int(ids.max())}")
    return ids.astype(np.uint8)


def rules_table(rule_sets) -> np.ndarray:
    """The rules table of ``rule_sets`` (a ``Rules`` or a sequence of them): float32
    ``(R, RULES_SIZE)``, row ``r`` = ``observation.rules_features(rule_sets[r])``.

    Raises:
        ValueError: an element is not a ``Rules``, or more than 256 rule sets (byte 94).
    """
    from .observation import rules_features
    from .rules import Rules
    sets = [rule_sets] if isinstance(rule_sets, Rules) else list(rule_sets)
    if not 1 <= len(sets) <= 256:
        raise ValueError(f"a rules table holds 1 to 256 rule sets, got {len(sets)}")
    return np.stack([rules_features(r) for r in sets]).astype(np.float32)


def pack(obs, rules_id=0):
    """The compact form of float32 observations: ``(..., OBS_SIZE)`` -> ``(..., COMPACT_SIZE)``
    uint8, numpy or torch (the same kind and device as ``obs``).

    ``rules_id`` (int 0..255, or one per row) is written to byte 94; the ``rules`` piece itself
    is not stored (see the module docstring). Exact for observations the rules reach: flags 0/1,
    ``tricks_won`` and ``trick_number`` multiples of 1/13.

    Raises:
        ValueError: the last dimension is not ``OBS_SIZE``; a value NaN or infinite; a flag
            neither 0 nor 1; a count not k / 13 for k in 0..13 (not an observation: packing
            would lose it); ``rules_id`` not integers in 0..255.
    """
    ids = _rules_ids(rules_id)
    if _is_torch(obs):
        return _pack_torch(obs, ids)
    x = np.asarray(obs, dtype=np.float32)
    if x.shape[-1:] != (OBS_SIZE,):
        raise ValueError(f"pack needs observations of {OBS_SIZE} floats (version 3) in the last "
                         f"dimension, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("pack: the observation holds NaN or infinite values")
    flags = x * _FLAG_F32
    if not np.all((flags == 0) | (flags == 1)):
        raise ValueError("pack: a flag of the observation is neither 0 nor 1 (not an "
                         "observation of spades_env.observation)")
    counts = np.concatenate([x[..., _WON[0]:_WON[1]], x[..., _TN:_TN + 1]], axis=-1) * 13
    k = np.rint(counts)
    if not np.all((k >= 0) & (k <= 13) & (np.float32(k) / np.float32(13) ==
                                          np.concatenate([x[..., _WON[0]:_WON[1]],
                                                          x[..., _TN:_TN + 1]], axis=-1))):
        raise ValueError("pack: tricks_won or trick_number is not a count / 13 in 0..13")
    out = np.zeros(x.shape[:-1] + (COMPACT_SIZE,), dtype=np.uint8)
    out[..., BITS[0]:BITS[1]] = np.packbits(flags.astype(np.uint8), axis=-1, bitorder="little")
    out[..., COUNTS[0]:COUNTS[1]] = k.astype(np.uint8)
    out[..., RULES_ID] = ids
    out[..., SIDE[0]:SIDE[1]] = np.ascontiguousarray(
        x[..., _SIDE_OBS[0]:_SIDE_OBS[1]]).astype("<f4").view(np.uint8)
    return out


def _pack_torch(obs, ids):
    torch = _torch()
    if obs.shape[-1:] != (OBS_SIZE,):
        raise ValueError(f"pack needs observations of {OBS_SIZE} floats (version 3) in the last "
                         f"dimension, got shape {tuple(obs.shape)}")
    lead = obs.shape[:-1]
    x = obs.detach().reshape(-1, OBS_SIZE).to(torch.float32)  # as numpy's: any dtype cast
    n = x.shape[0]
    if n == 0:
        return torch.zeros((*lead, COMPACT_SIZE), dtype=torch.uint8, device=x.device)
    if not bool(torch.isfinite(x).all()):
        raise ValueError("pack: the observation holds NaN or infinite values")
    flags = x * torch.as_tensor(_FLAG_F32, device=x.device)
    if not bool(((flags == 0) | (flags == 1)).all()):
        raise ValueError("pack: a flag of the observation is neither 0 nor 1 (not an "
                         "observation of spades_env.observation)")
    cnt = torch.cat([x[:, _WON[0]:_WON[1]], x[:, _TN:_TN + 1]], 1)
    k = torch.round(cnt * 13)
    if not bool(((k >= 0) & (k <= 13) & (k / 13 == cnt)).all()):
        raise ValueError("pack: tricks_won or trick_number is not a count / 13 in 0..13")
    out = torch.zeros((n, COMPACT_SIZE), dtype=torch.uint8, device=x.device)
    bits = torch.zeros((n, 8 * (BITS[1] - BITS[0])), dtype=torch.uint8, device=x.device)
    bits[:, :OBS_SIZE] = flags.to(torch.uint8)
    weights = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.uint8, device=x.device)
    out[:, BITS[0]:BITS[1]] = (bits.view(n, -1, 8) * weights).sum(-1, dtype=torch.uint8)
    out[:, COUNTS[0]:COUNTS[1]] = k.to(torch.uint8)
    out[:, RULES_ID] = torch.as_tensor(np.broadcast_to(ids, lead).reshape(-1).copy(),
                                       device=x.device)
    out[:, SIDE[0]:SIDE[1]] = x[:, _SIDE_OBS[0]:_SIDE_OBS[1]].contiguous().view(torch.uint8)
    return out.reshape(*lead, COMPACT_SIZE)


def expand(compact, table, out=None):
    """The float32 observation of compact rows: ``(..., COMPACT_SIZE)`` uint8 ->
    ``(..., OBS_SIZE)`` float32, bit for bit the observation that was packed.

    Args:
        compact: uint8 numpy array or torch tensor (CPU or CUDA; the result is on its device).
        table: the rules table, ``(R, RULES_SIZE)`` float32 (``rules_table``; a ``(RULES_SIZE,)``
            row is taken as R = 1), numpy or torch; byte 94 of each row picks its row (a table
            of one row applies to every row).
        out: optional float32 torch tensor of the result's shape on the rows' device, written in
            place and returned (torch rows only; numpy's ``expand`` returns a new array).
    Raises:
        ValueError: wrong dtype or last dimension, a table of the wrong width, a rules id
            beyond the table's rows, or an ``out`` that does not fit.
    """
    if _is_torch(compact):
        return _expand_torch(compact, table, out)
    if out is not None:
        raise ValueError("expand: out is for torch rows (written in place); with numpy rows "
                         "expand returns a new array")
    if _is_torch(table):
        table = table.detach().cpu().numpy()
    c = np.asarray(compact)
    if c.dtype != np.uint8 or c.shape[-1:] != (COMPACT_SIZE,):
        raise ValueError(f"expand needs uint8 rows of {COMPACT_SIZE} bytes, got {c.dtype} "
                         f"{c.shape}")
    tab = np.asarray(table, dtype=np.float32).reshape(-1, RULES_SIZE) \
        if np.size(table) % RULES_SIZE == 0 and np.ndim(table) in (1, 2) \
        and np.shape(table)[-1] == RULES_SIZE else None
    if tab is None or len(tab) == 0:
        raise ValueError(f"table must be (R, {RULES_SIZE}) float32 (rules_table), got shape "
                         f"{np.shape(table)}")
    rid = c[..., RULES_ID] if len(tab) > 1 else np.zeros(c.shape[:-1], dtype=np.intp)
    if rid.size and int(rid.max()) >= len(tab):
        raise ValueError(f"rules id {int(rid.max())} in byte {RULES_ID} but the table has "
                         f"{len(tab)} rows")
    x = np.unpackbits(c[..., BITS[0]:BITS[1]], axis=-1, count=OBS_SIZE,
                      bitorder="little").astype(np.float32)
    cnt = c[..., COUNTS[0]:COUNTS[1]].astype(np.float32) / np.float32(13)
    x[..., _WON[0]:_WON[1]] = cnt[..., :4]
    x[..., _TN] = cnt[..., 4]
    x[..., _SIDE_OBS[0]:_SIDE_OBS[1]] = np.ascontiguousarray(
        c[..., SIDE[0]:SIDE[1]]).view("<f4").astype(np.float32)
    x[..., _RULES_OBS[0]:_RULES_OBS[1]] = tab[rid]
    return x


_TORCH_LUT: dict = {}


def _torch_lut(device):
    """``(256, 8)`` float32 on ``device``: row ``b`` holds the bits of byte ``b``, least
    significant first (a gather by byte writes eight floats at once)."""
    torch = _torch()
    got = _TORCH_LUT.get(device)
    if got is None:
        got = ((torch.arange(256)[:, None] >> torch.arange(8)) & 1).float().to(device)
        _TORCH_LUT[device] = got
    return got


def _expand_torch(compact, table, out):
    torch = _torch()
    if compact.dtype != torch.uint8 or compact.shape[-1:] != (COMPACT_SIZE,):
        raise ValueError(f"expand needs uint8 rows of {COMPACT_SIZE} bytes, got {compact.dtype} "
                         f"{tuple(compact.shape)}")
    dev = compact.device
    if _is_torch(table):
        table = table.detach()
    tab = torch.as_tensor(table, dtype=torch.float32, device=dev)
    if tab.dim() == 1:
        tab = tab.view(1, -1)
    if tab.dim() != 2 or tab.shape[1] != RULES_SIZE or tab.shape[0] == 0:
        raise ValueError(f"table must be (R, {RULES_SIZE}) float32 (rules_table), got shape "
                         f"{tuple(tab.shape)}")
    lead = compact.shape[:-1]
    c = compact.reshape(-1, COMPACT_SIZE)
    n = c.shape[0]
    rid = c[:, RULES_ID].long()
    if tab.shape[0] > 1 or n == 0:
        if n and int(rid.max()) >= tab.shape[0]:
            raise ValueError(f"rules id {int(rid.max())} in byte {RULES_ID} but the table has "
                             f"{tab.shape[0]} rows")
    if out is not None:
        if not _is_torch(out):
            raise ValueError(f"out must be a torch tensor (float32 {(*lead, OBS_SIZE)} on "
                             f"{dev}), got {type(out).__name__}")
        if out.dtype != torch.float32 or tuple(out.shape) != (*lead, OBS_SIZE) \
                or out.device != dev:
            raise ValueError(f"out must be float32 {(*lead, OBS_SIZE)} on {dev}, got "
                             f"{out.dtype} {tuple(out.shape)} on {out.device}")
    if dev.type == "cpu":  # numpy's unpackbits: about 3x torch's gathers on the CPU
        x = torch.from_numpy(expand(c.numpy(), tab.numpy()))
        if out is None:
            return x.view(*lead, OBS_SIZE)
        out.copy_(x.view(*lead, OBS_SIZE))
        return out
    res = torch.empty((n, OBS_SIZE), dtype=torch.float32, device=dev)
    _expand_gather(c, tab, rid, res)
    if out is None:
        return res.view(*lead, OBS_SIZE)
    out.copy_(res.view(*lead, OBS_SIZE))
    return out


def _expand_gather(c, tab, rid, res) -> None:
    """``expand`` with torch ops on any device (the CUDA path): ``c`` ``(n, COMPACT_SIZE)``
    uint8, ``tab`` ``(R, RULES_SIZE)``, ``rid`` ``(n,)`` int64 into ``res`` ``(n, OBS_SIZE)``."""
    torch = _torch()
    n = c.shape[0]
    if n == 0:
        return
    idx = c[:, BITS[0]:BITS[1]].reshape(-1).long()
    res.copy_(_torch_lut(c.device).index_select(0, idx).view(n, 8 * (BITS[1] - BITS[0]))
              [:, :OBS_SIZE])
    res[:, _WON[0]:_WON[1]] = c[:, COUNTS[0]:COUNTS[0] + 4].float().div_(13.0)
    res[:, _TN] = c[:, COUNTS[0] + 4].float().div_(13.0)
    res[:, _SIDE_OBS[0]:_SIDE_OBS[1]] = c[:, SIDE[0]:SIDE[1]].contiguous().view(torch.float32)
    res[:, _RULES_OBS[0]:_RULES_OBS[1]] = tab[0] if tab.shape[0] == 1 else tab.index_select(0, rid)


__all__ = ["COMPACT_SIZE", "BITS", "COUNTS", "RULES_ID", "SIDE", "NUMERIC", "FLAGS", "pack",
           "expand", "rules_table"]
