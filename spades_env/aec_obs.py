"""What the AEC env's ``observe`` returns, built from its encoder's rows: the observation in the
env's ``obs_format`` (``"float32"``, or ``"compact"``: the 120-byte form of ``spades_env.compact``)
and the int8 action mask.

| ``obs_format`` | ``observe(agent)["observation"]`` | space |
|---|---|---|
| ``"float32"`` (default) | float32 ``(679,)`` (``spades_v1``) or ``(711,)`` (``spades_v2``), then the history piece with ``history=True`` | ``Box`` float32, bounds by piece |
| ``"compact"`` (``spades_v2`` only) | uint8 ``(COMPACT_SIZE,)`` = ``(120,)``: ``compact.pack`` of the version-3 row, rules id 0 | ``Box`` uint8 ``(120,)``, low 0, high 255 |

``compact.expand(obs, compact.rules_table(env.rules))`` equals the float32 observation of the
same env bit for bit. The history piece and observation version 2 have no compact form.
"""

from __future__ import annotations

import sys

import numpy as np
from gymnasium import spaces

from .cards import NUM_ACTIONS
from .compact import BITS, COMPACT_SIZE, COUNTS, FLAGS, RULES_ID, SIDE
from .observation import OBS_SIZE, OFFSETS

__all__ = ["OBS_FORMATS", "check_obs_format", "compact_box", "pack_row", "mask_array"]

OBS_FORMATS = ("float32", "compact")


def check_obs_format(obs_format, obs_version: int, history: bool) -> bool:
    """Whether ``obs_format`` asks for the compact observation (True) or the float32 one.

    Raises:
        ValueError: ``obs_format`` is not one of ``OBS_FORMATS``, or ``"compact"`` with
            ``history=True`` or with ``obs_version`` 2 (``spades_v1``: 679 floats), which have no
            compact form (the message names both settings).
    """
    if obs_format not in OBS_FORMATS or not isinstance(obs_format, str):
        raise ValueError(f"obs_format must be one of {OBS_FORMATS}, got {obs_format!r}")
    if obs_format == "float32":
        return False
    if obs_version != 3:
        raise ValueError(f"obs_format='compact' needs observation version 3 (spades_v2, "
                         f"Spades-v2, obs_version=3): obs_version={obs_version!r} (spades_v1, "
                         f"679 floats) has no compact form")
    if history:
        raise ValueError("obs_format='compact' cannot be used with history=True: the history "
                         "piece has no compact form (use obs_format='float32' with history, or "
                         "history=False)")
    return True


def compact_box() -> spaces.Box:
    """The space of a compact observation: ``Box`` uint8, shape ``(COMPACT_SIZE,)``, low 0,
    high 255."""
    return spaces.Box(low=0, high=255, shape=(COMPACT_SIZE,), dtype=np.uint8)


_LITTLE = sys.byteorder == "little"
_HI, _ZERO = (3, 0) if _LITTLE else (0, 3)  # a float32's sign/exponent byte; the lowest byte
# of float 0 (phase, a flag 0.0 or 1.0), always 0


def _flag_bytes() -> np.ndarray:
    """For each bit of ``BITS`` in unpackbits' order (most significant first), the row byte to
    read: the high byte of that flag's float (non-zero for 1.0, zero for 0.0), or ``_ZERO`` for
    a numeric piece and the padding."""
    idx = np.full(8 * (BITS[1] - BITS[0]), _ZERO, dtype=np.intp)
    for i in np.flatnonzero(FLAGS):
        idx[8 * (i // 8) + 7 - i % 8] = 4 * i + _HI
    return idx


_FLAG_BYTES = _flag_bytes()
_U8 = np.dtype(np.uint8)
_THIRTEENTHS = {float(np.float32(k / 13.0)): k for k in range(14)}
"""The count k of each float k / 13 the encoder writes (``tricks_won``, ``trick_number``)."""
_TW = OFFSETS["tricks_won"][0]
_TN = OFFSETS["trick_number"][0] - _TW  # trick_number in the list of floats from _TW
_SIDE_LO, _SIDE_HI = OFFSETS["scores"][0], OFFSETS["target"][1]
_GAP = bytes(SIDE[0] - RULES_ID - 1)  # byte 95
_END = bytes(COMPACT_SIZE - SIDE[1])  # bytes 116 - 119
assert OFFSETS["tricks_won"][1] - _TW == 4 and COUNTS == (BITS[1], BITS[1] + 5)
assert RULES_ID == COUNTS[1] and 4 * (_SIDE_HI - _SIDE_LO) == SIDE[1] - SIDE[0]


def pack_row(row: np.ndarray) -> np.ndarray:
    """``compact.pack(row)`` (rules id 0) of one of the env's own rows, without its checks: a
    new uint8 ``(COMPACT_SIZE,)`` array.

    ``row``: a C-contiguous float32 ``(OBS_SIZE,)`` observation (version 3) whose flags are
    exactly 0.0 or 1.0 and whose counts are k / 13, as the encoder writes them (``compact.pack``
    checks that; here another flag value packs to something else, another count raises
    ``KeyError``).
    """
    v = row[_TW:_TW + _TN + 1].tolist()
    k = _THIRTEENTHS
    side = row[_SIDE_LO:_SIDE_HI]
    return np.frombuffer(bytearray(
        np.packbits(row.view(_U8).take(_FLAG_BYTES)).tobytes()
        + bytes((k[v[0]], k[v[1]], k[v[2]], k[v[3]], k[v[_TN]], 0)) + _GAP
        + (side if _LITTLE else side.astype("<f4")).tobytes() + _END), _U8)


# ---------------------------------------------------------------------------- the action mask
_T13 = ((np.arange(1 << 13)[:, None] >> np.arange(13)) & 1).astype(np.uint8).tobytes()
_CHUNKS = [_T13[13 * c:13 * c + 13] for c in range(1 << 13)]
"""``_CHUNKS[c]``: the 13 bytes (0 or 1) of the bits of ``c``, least significant first."""
_LAST = [_CHUNKS[c][:NUM_ACTIONS - 65] for c in range(1 << (NUM_ACTIONS - 65))]
_I8 = np.dtype(np.int8)
del _T13


def mask_array(mask: int) -> np.ndarray:
    """The action mask of a 68-bit int mask (bit ``a`` = action id ``a``, as
    ``SpadesGame.legal_mask``): a new writeable int8 ``(NUM_ACTIONS,)`` array of 0 and 1."""
    c = _CHUNKS  # five 13-bit chunks (the suits' cards, the bids) and the last 3 bits
    return np.frombuffer(bytearray(b"".join((
        c[mask & 0x1FFF], c[mask >> 13 & 0x1FFF], c[mask >> 26 & 0x1FFF], c[mask >> 39 & 0x1FFF],
        c[mask >> 52 & 0x1FFF], _LAST[mask >> 65]))), _I8)


assert OBS_SIZE == len(FLAGS)
