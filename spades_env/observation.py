"""The one definition of the observation layout, shared by the AEC env and the batched engine.

The observation of seat ``me`` is built only from ``game.view(me)``. Seats are relative to the
observer: ``rel = (seat - me) % 4`` so 0 = me, 1 = left (next to act after me), 2 = partner,
3 = right. Teams are relative too: "mine" then "theirs". dtype ``float32``.

| piece          | size  | meaning                                                                 |
|----------------|-------|-------------------------------------------------------------------------|
| phase          | 3     | one-hot: bidding, Blind Nil exchange, play (all 0 when the game is over) |
| looked         | 1     | 1 once the observer has seen its own hand (always 1 without Blind Nil)  |
| hand           | 52    | own cards (card id = suit*13 + rank); all 0 before looking              |
| played         | 4x52  | cards played this hand, by relative seat                                 |
| trick          | 4x52  | the current trick: the card each relative seat played to it             |
| led_suit       | 4     | one-hot suit led to the current trick (all 0 before the lead)           |
| bids           | 4x16  | per relative seat, one-hot: 0 not yet bid, 1 Nil, 1+b bid b (1..13), 15 Blind Nil |
| tricks_won     | 4     | tricks won this hand by relative seat / 13                              |
| voids          | 4x4   | known voids by relative seat, by suit: failed to follow suit, or led a spade before spades were broken (void in clubs, diamonds, hearts) |
| spades_broken  | 1     | 1 when spades are broken                                                |
| trick_number   | 1     | completed tricks / 13                                                   |
| dealer         | 4     | one-hot relative seat of the dealer                                     |
| to_act         | 4     | one-hot relative seat of the player to act (all 0 when over)            |
| scores         | 2     | team totals (mine, theirs) / target_score                               |
| bags           | 2     | team bag counts (mine, theirs) / bag_limit                              |
| target         | 1     | target_score / 500                                                      |
| exchange       | 2x52  | this hand's Blind Nil exchange as the observer saw it: [0:52] the cards it passed to its partner that the partner still holds, [52:104] the cards it received from its partner; all 0 without an exchange |

``OBS_SIZE`` is the total (679). ``OFFSETS[name]`` gives ``(start, stop)``.

Version history (``OBS_VERSION``):

- 2 (679 floats): the ``exchange`` piece appended (the cards passed and received in a Blind Nil
  exchange); ``voids`` also shows the voids a spade lead before spades were broken reveals. Every
  piece of version 1 keeps its offset, so a version-2 vector's first 575 floats are the
  version-1 observation of the same view except for those extra voids
  (``OBS_SIZE_V1``; a policy trained on version 1 is fed ``obs[:OBS_SIZE_V1]``).
- 1 (575 floats): the pieces up to ``target``.
"""

from __future__ import annotations

import numpy as np

from .cards import NUM_CARDS, is_int

PIECES: tuple[tuple[str, int], ...] = (
    ("phase", 3),
    ("looked", 1),
    ("hand", 52),
    ("played", 4 * 52),
    ("trick", 4 * 52),
    ("led_suit", 4),
    ("bids", 4 * 16),
    ("tricks_won", 4),
    ("voids", 4 * 4),
    ("spades_broken", 1),
    ("trick_number", 1),
    ("dealer", 4),
    ("to_act", 4),
    ("scores", 2),
    ("bags", 2),
    ("target", 1),
    ("exchange", 2 * 52),  # version 2: new pieces go at the end, earlier offsets never move
)

OFFSETS: dict[str, tuple[int, int]] = {}
_o = 0
for _name, _size in PIECES:
    OFFSETS[_name] = (_o, _o + _size)
    _o += _size
OBS_SIZE = _o
del _o, _name, _size
OBS_VERSION = 2
# size of the version-1 observation: the pieces up to ``target`` (trained checkpoints read these)
OBS_SIZE_V1 = OFFSETS["target"][1]
assert OBS_SIZE_V1 == 575 and OBS_SIZE == 679

BID_SLOTS = 16
BID_NOT_YET = 0
BID_BLIND_NIL = 15


def bid_slot(bid, blind: bool) -> int:
    """Index inside one seat's 16-wide bid block: ``bid`` None (not yet bid) or 0..13, ``blind``
    a bool (Blind Nil, only with ``bid == 0``).

    Raises:
        ValueError: anything else.
    """
    if bid is None:
        return BID_NOT_YET
    if isinstance(bid, (bool, np.bool_)) or not isinstance(bid, (int, np.integer)) \
            or not 0 <= bid <= 13:
        raise ValueError(f"bid must be None or an int 0..13, got {bid!r}")
    if blind:
        if bid != 0:
            raise ValueError(f"a Blind Nil bid is 0, got {bid}")
        return BID_BLIND_NIL
    return 1 + int(bid)


def _check_write_mask(out, start, mask) -> None:
    if not is_int(mask) or not 0 <= mask < 1 << 52:
        raise ValueError(f"mask must be an int in 0..2**52-1 (a 52-bit card mask), got {mask!r}")
    if not isinstance(out, np.ndarray) or out.ndim != 1:
        raise ValueError(f"out must be a 1-d numpy array, got {type(out).__name__}")
    if not is_int(start) or not 0 <= start <= out.shape[0] - 52:
        raise ValueError(f"start must be an int with room for 52 entries in out (size "
                         f"{out.shape[0]}), got {start!r}")


def check_out(out, size: int):
    """``out`` for an encoder: ``None`` (a new zero vector) or a writeable float32 numpy array of
    shape ``(size,)`` (zeroed); ``ValueError`` otherwise."""
    if out is None:
        return np.zeros(size, dtype=np.float32)
    if not isinstance(out, np.ndarray) or out.shape != (size,) or out.dtype != np.float32 \
            or not out.flags.writeable:
        raise ValueError(f"out must be a writeable float32 numpy array of shape ({size},), got "
                         f"{getattr(out, 'dtype', type(out).__name__)} "
                         f"{getattr(out, 'shape', '')}")
    out[:] = 0.0
    return out


# 13-bit chunk -> float32 vector of its bits, to write 13 card flags with one slice copy.
_CHUNK_BITS = ((np.arange(1 << 13)[:, None] >> np.arange(13)[None, :]) & 1).astype(np.float32)


def write_mask(out: np.ndarray, start: int, mask: int) -> None:
    """Write a 52-bit card mask into ``out[start:start+52]`` as 0/1 floats.

    Raises:
        ValueError: ``out`` is not a 1-d numpy array with room for 52 floats at ``start``, or
            ``mask`` is not an int in 0..2**52-1.
    """
    if type(mask) is not int or not 0 <= mask < 1 << 52 or type(start) is not int \
            or not isinstance(out, np.ndarray) or not 0 <= start <= out.shape[-1] - 52:
        _check_write_mask(out, start, mask)
    out[start:start + 13] = _CHUNK_BITS[mask & 0x1FFF]
    out[start + 13:start + 26] = _CHUNK_BITS[(mask >> 13) & 0x1FFF]
    out[start + 26:start + 39] = _CHUNK_BITS[(mask >> 26) & 0x1FFF]
    out[start + 39:start + 52] = _CHUNK_BITS[(mask >> 39) & 0x1FFF]


def encode(view, out: np.ndarray | None = None) -> np.ndarray:
    """Observation vector of ``view`` (a ``PlayerView``), shape ``(OBS_SIZE,)``, ``float32``
    (the module docstring's table). ``out`` (float32, that shape) is overwritten and returned
    when given.

    This is the reference encoder; faster incremental encoders must match it exactly.

    Raises:
        ValueError: ``view`` is not a ``PlayerView`` or ``out`` is not a writeable float32 array
            of shape ``(OBS_SIZE,)``.
    """
    from .engine import PlayerView
    if not isinstance(view, PlayerView):
        raise ValueError(f"encode needs a PlayerView (game.view(seat)), got "
                         f"{type(view).__name__}")
    out = check_out(out, OBS_SIZE)
    me = view.seat
    o = OFFSETS
    if view.phase < 3:
        out[o["phase"][0] + view.phase] = 1.0
    out[o["looked"][0]] = 1.0 if view.looked else 0.0
    write_mask(out, o["hand"][0], view.hand)
    voids = view.known_voids
    for s in range(4):
        r = (s - me) & 3
        write_mask(out, o["played"][0] + 52 * r, view.played[s])
        out[o["bids"][0] + BID_SLOTS * r + bid_slot(view.bids[s], view.blind[s])] = 1.0
        out[o["tricks_won"][0] + r] = view.tricks_won[s] / 13.0
        for suit in range(4):
            if (voids[s] >> suit) & 1:
                out[o["voids"][0] + 4 * r + suit] = 1.0
    for s, c in view.current_trick:
        out[o["trick"][0] + 52 * ((s - me) & 3) + c] = 1.0
    if view.current_trick:
        out[o["led_suit"][0] + view.current_trick[0][1] // 13] = 1.0
    out[o["spades_broken"][0]] = 1.0 if view.spades_broken else 0.0
    out[o["trick_number"][0]] = view.trick_number / 13.0
    out[o["dealer"][0] + ((view.dealer - me) & 3)] = 1.0
    if view.current_player >= 0:
        out[o["to_act"][0] + ((view.current_player - me) & 3)] = 1.0
    rules = view.rules
    mine, theirs = me & 1, 1 - (me & 1)
    out[o["scores"][0]] = view.scores[mine] / rules.target_score
    out[o["scores"][0] + 1] = view.scores[theirs] / rules.target_score
    out[o["bags"][0]] = view.bags[mine] / rules.bag_limit
    out[o["bags"][0] + 1] = view.bags[theirs] / rules.bag_limit
    out[o["target"][0]] = rules.target_score / 500.0
    # the Blind Nil exchange: cards passed to the partner that it still holds (known_cards), and
    # the cards received from it
    ex = o["exchange"][0]
    write_mask(out, ex, view.known_cards[(me + 2) & 3])
    received = 0
    for _frm, to, c in view.exchange:
        if to == me:
            received |= 1 << c
    write_mask(out, ex + 52, received)
    return out


def decode(obs: np.ndarray) -> dict:
    """Decode an observation back into named, relative-seat fields (for tests and debugging).

    Returns a dict with ``phase`` (int or None), ``looked``, ``hand`` (list of card ids),
    ``played`` (4 lists), ``trick`` (4 card ids or None), ``led_suit``, ``bids`` (4 x (bid or None,
    blind)), ``tricks_won`` (4 ints), ``voids`` (4 lists of suits), ``spades_broken``,
    ``trick_number``, ``dealer``, ``to_act``, ``scores`` and ``bags`` (scaled floats), ``target``,
    ``passed`` and ``received`` (the exchange piece's two card lists).

    Raises:
        ValueError: ``obs`` is not a 1-d array of at least ``OBS_SIZE`` numbers (a longer one,
            e.g. with the env's history piece, is decoded from its first ``OBS_SIZE``), holds NaN
            or infinite values, or is no observation (each seat's bid must be one-hot: an
            all-zero vector is refused).
    """
    try:
        obs = np.asarray(obs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"obs must be an array of numbers, got {type(obs).__name__}") from None
    if obs.ndim != 1 or obs.shape[0] < OBS_SIZE:
        raise ValueError(f"obs must be a 1-d array of at least {OBS_SIZE} floats, got shape "
                         f"{obs.shape}")
    bad = np.flatnonzero(~np.isfinite(obs[:OBS_SIZE]))
    if len(bad):
        raise ValueError(f"obs holds NaN or infinite values (at index {int(bad[0])}): not an "
                         f"observation")
    o = OFFSETS
    piece = obs[o["bids"][0]:o["bids"][1]]
    for r in range(4):  # every observation has one bid slot set per seat ("not yet" included)
        hot = int(np.count_nonzero(piece[16 * r:16 * r + 16] > 0.5))
        if hot != 1:
            raise ValueError(f"obs is not an observation: the bid of relative seat {r} has {hot} "
                             f"slots set, not one (an all-zero or foreign vector?)")

    def seg(name):
        a, b = o[name]
        return obs[a:b]

    def cards(v):
        return [int(i) for i in np.flatnonzero(v > 0.5)]

    def onehot(v):
        nz = np.flatnonzero(v > 0.5)
        return int(nz[0]) if len(nz) else None

    bids = []
    for r in range(4):
        slot = onehot(seg("bids")[16 * r:16 * r + 16])
        if slot == BID_NOT_YET:
            bids.append((None, False))
        elif slot == BID_BLIND_NIL:
            bids.append((0, True))
        else:
            bids.append((slot - 1, False))
    trick = []
    for r in range(4):
        c = cards(seg("trick")[52 * r:52 * r + 52])
        trick.append(c[0] if c else None)
    return {
        "phase": onehot(seg("phase")),
        "looked": bool(seg("looked")[0] > 0.5),
        "hand": cards(seg("hand")),
        "played": [cards(seg("played")[52 * r:52 * r + 52]) for r in range(4)],
        "trick": trick,
        "led_suit": onehot(seg("led_suit")),
        "bids": bids,
        "tricks_won": [int(round(x * 13)) for x in seg("tricks_won")],
        "voids": [[s for s in range(4) if seg("voids")[4 * r + s] > 0.5] for r in range(4)],
        "spades_broken": bool(seg("spades_broken")[0] > 0.5),
        "trick_number": int(round(seg("trick_number")[0] * 13)),
        "dealer": onehot(seg("dealer")),
        "to_act": onehot(seg("to_act")),
        "scores": [float(x) for x in seg("scores")],
        "bags": [float(x) for x in seg("bags")],
        "target": float(seg("target")[0]),
        "passed": cards(seg("exchange")[:52]),
        "received": cards(seg("exchange")[52:]),
    }


__all__ = ["PIECES", "OFFSETS", "OBS_SIZE", "OBS_SIZE_V1", "OBS_VERSION", "encode", "decode",
           "write_mask", "bid_slot", "check_out", "NUM_CARDS"]
