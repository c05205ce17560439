"""The one definition of the observation layout, shared by the AEC env and the batched engine.

The observation of seat ``me`` is built only from ``game.view(me)``. Seats are relative to the
observer: ``rel = (seat - me) % 4`` so 0 = me, 1 = left (next to act after me), 2 = partner,
3 = right. Teams are relative too: "mine" then "theirs". dtype ``float32``.

| piece          | size  | meaning                                                                 |
|----------------|-------|-------------------------------------------------------------------------|
| phase          | 3     | one-hot: bidding, Blind Nil exchange, play (all 0 when the game is over) |
| looked         | 1     | 1 once the observer has seen its own hand (always 1 without Blind Nil)  |
| hand           | 52    | own cards by card id (suit*13 + rank; under jokers the big joker is id 26, the little joker id 0); all 0 before looking |
| played         | 4x52  | cards played this hand, by relative seat                                 |
| trick          | 4x52  | the current trick: the card each relative seat played to it             |
| led_suit       | 4     | one-hot suit led to the current trick (all 0 before the lead); the deck's suit: under jokers a joker or the 2D leads spades |
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
| rules          | 32    | the game's rules (``rules_features``): one slot per switch, the same for every seat and every move; unused slots 0 |

``OBS_SIZE`` is the total (711). ``OFFSETS[name]`` gives ``(start, stop)``.

Version history (``OBS_VERSION``):

- 3 (711 floats): the ``rules`` piece appended, so that one network can tell rule sets apart
  (``RULE_FEATURES`` lists its slots). Every piece of version 2 keeps its offset: a network
  trained on version 2 reads ``obs[:OBS_SIZE_V2]`` and plays the rules it was trained under
  (``spades_env.bots.CheckpointBot`` refuses others).

- 2 (679 floats): the ``exchange`` piece appended (the cards passed and received in a Blind Nil
  exchange); ``voids`` also shows the voids a spade lead before spades were broken reveals. Every
  piece of version 1 keeps its offset, so a version-2 vector's first 575 floats are the
  version-1 observation of the same view except for those extra voids
  (``OBS_SIZE_V1``; a policy trained on version 1 is fed ``obs[:OBS_SIZE_V1]``).
- 1 (575 floats): the pieces up to ``target``.
"""

from __future__ import annotations

import numpy as np

from .cards import BLIND_NIL_ACTION, LOOK_ACTION, NEXT_SEAT, NUM_CARDS, PARTNER, TEAM, is_int
from .engine import Phase, PlayerView, SpadesGame
from .rules import spades_broken_after

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
    ("rules", 32),  # version 3
)

OFFSETS: dict[str, tuple[int, int]] = {}
_o = 0
for _name, _size in PIECES:
    OFFSETS[_name] = (_o, _o + _size)
    _o += _size
OBS_SIZE = _o
del _o, _name, _size
OBS_VERSION = 3
# size of the version-1 observation: the pieces up to ``target`` (trained checkpoints read these)
OBS_SIZE_V1 = OFFSETS["target"][1]
# size of the version-2 observation: the pieces up to ``exchange`` (the env ``spades_v1``)
OBS_SIZE_V2 = OFFSETS["exchange"][1]
OBS_SIZES = (OBS_SIZE_V1, OBS_SIZE_V2, OBS_SIZE)
"""The observation widths a network may read, by version (1, 2, 3): each a prefix of the next."""
assert OBS_SIZE_V1 == 575 and OBS_SIZE_V2 == 679 and OBS_SIZE == 711

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


# ----------------------------------------------------------------------------- the rules piece
RULE_FEATURES: tuple[tuple[str, str, float], ...] = (
    # (Rules field, coding, scale): "flag" 1.0 when on (an int: non-zero); "value" field / scale;
    # "set" 1.0 when the field is not None (loss_threshold); "minus" -field / scale.
    ("target_score", "value", 500.0),
    ("loss_threshold", "set", 1.0),
    ("loss_threshold", "minus", 500.0),
    ("blind_nil", "flag", 1.0),
    ("forced_spade_lead_breaks", "flag", 1.0),
    ("bag_limit", "value", 10.0),
    ("bag_penalty", "value", 100.0),
    ("nil_bonus", "value", 100.0),
    ("blind_nil_bonus", "value", 200.0),
    ("failed_nil_tricks_count", "flag", 1.0),
    ("blind_nil_deficit", "value", 500.0),
    ("min_team_bid", "value", 13.0),
    ("suicide", "flag", 1.0),
    ("mirror", "flag", 1.0),
    ("whiz", "flag", 1.0),
    ("bid_total_not_13", "flag", 1.0),
    ("nil_pass", "value", 3.0),
    ("spades_lead_any_time", "flag", 1.0),
    ("bags_score_points", "flag", 1.0),
    ("big_bid_double", "flag", 1.0),
    ("big_bid_double", "value", 13.0),
    ("moon_wins", "flag", 1.0),
    ("two_of_clubs_leads", "flag", 1.0),
    ("jokers", "flag", 1.0),
)
"""Slot ``k`` of the ``rules`` piece codes ``RULE_FEATURES[k]``; the slots after the last are 0
(room for later switches: a new switch takes the next slot, earlier slots never move)."""
RULES_SIZE = 32
assert len(RULE_FEATURES) <= RULES_SIZE


def rules_features(rules) -> np.ndarray:
    """The ``rules`` piece of the observation under ``rules`` (a ``Rules``): float32
    ``(RULES_SIZE,)``, slot ``k`` coding ``RULE_FEATURES[k]`` (docs/observation.md). Computed once
    per rule set and cached; the returned array is read-only.

    Raises:
        ValueError: ``rules`` is not a ``Rules``.
    """
    last = _LAST_RULES[0]  # one tuple, replaced whole: safe across threads
    if rules is last[0]:  # the same (frozen) Rules object as the last call: no hashing
        return last[1]
    from .rules import Rules
    if not isinstance(rules, Rules):
        raise ValueError(f"rules_features needs a spades_env.Rules, got {type(rules).__name__}")
    got = _RULES_CACHE.get(rules)
    if got is None:
        got = np.zeros(RULES_SIZE, dtype=np.float32)
        for k, (name, coding, scale) in enumerate(RULE_FEATURES):
            v = getattr(rules, name)
            if coding == "flag":
                got[k] = 1.0 if v else 0.0
            elif coding == "set":
                got[k] = 0.0 if v is None else 1.0
            elif coding == "minus":
                got[k] = 0.0 if v is None else -v / scale
            else:
                got[k] = v / scale
        got.flags.writeable = False
        if len(_RULES_CACHE) > 256:
            _RULES_CACHE.clear()
        _RULES_CACHE[rules] = got
    _LAST_RULES[0] = (rules, got)
    return got


_RULES_CACHE: dict = {}
_LAST_RULES: list = [(None, None)]


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


def _check_view(view, what: str) -> None:
    if not isinstance(view, PlayerView):
        raise ValueError(f"{what} needs a PlayerView (game.view(seat)), got "
                         f"{type(view).__name__}")


def encode(view, out: np.ndarray | None = None) -> np.ndarray:
    """Observation vector of ``view`` (a ``PlayerView``), shape ``(OBS_SIZE,)``, ``float32``
    (the module docstring's table). ``out`` (float32, that shape) is overwritten and returned
    when given.

    This is the reference encoder; faster incremental encoders must match it exactly.

    Raises:
        ValueError: ``view`` is not a ``PlayerView`` or ``out`` is not a writeable float32 array
            of shape ``(OBS_SIZE,)``.
    """
    _check_view(view, "encode")
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
        out[o["led_suit"][0] + view.led_suit] = 1.0  # the deck's suit (a joker leads spades)
    out[o["spades_broken"][0]] = 1.0 if view.spades_broken else 0.0
    out[o["trick_number"][0]] = view.trick_number / 13.0
    out[o["dealer"][0] + ((view.dealer - me) & 3)] = 1.0
    if view.current_player >= 0:
        out[o["to_act"][0] + ((view.current_player - me) & 3)] = 1.0
    rules = view.rules
    mine, theirs = TEAM[me], 1 - TEAM[me]
    out[o["scores"][0]] = view.scores[mine] / rules.target_score
    out[o["scores"][0] + 1] = view.scores[theirs] / rules.target_score
    out[o["bags"][0]] = view.bags[mine] / rules.bag_limit
    out[o["bags"][0] + 1] = view.bags[theirs] / rules.bag_limit
    out[o["target"][0]] = rules.target_score / 500.0
    # the Blind Nil exchange: cards passed to the partner that it still holds (known_cards), and
    # the cards received from it
    ex = o["exchange"][0]
    write_mask(out, ex, view.known_cards[PARTNER[me]])
    received = 0
    for _frm, to, c in view.exchange:
        if to == me:
            received |= 1 << c
    write_mask(out, ex + 52, received)
    out[o["rules"][0]:o["rules"][1]] = rules_features(rules)
    return out


def _checked_obs(obs) -> tuple[np.ndarray, bool]:
    """``decode``'s input as float64, refused unless it is an observation (``decode``'s Raises);
    with whether it holds the rules piece (version 3)."""
    try:
        obs = np.asarray(obs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"obs must be an array of numbers, got {type(obs).__name__}") from None
    if obs.ndim != 1 or obs.shape[0] < OBS_SIZE_V2:
        raise ValueError(f"obs must be a 1-d array of at least {OBS_SIZE_V2} floats (version 2; "
                         f"{OBS_SIZE} with the rules piece), got shape {obs.shape}")
    has_rules = obs.shape[0] >= OBS_SIZE
    bad = np.flatnonzero(~np.isfinite(obs[:OBS_SIZE if has_rules else OBS_SIZE_V2]))
    if len(bad):
        raise ValueError(f"obs holds NaN or infinite values (at index {int(bad[0])}): not an "
                         f"observation")
    piece = obs[OFFSETS["bids"][0]:OFFSETS["bids"][1]]
    for r in range(4):  # every observation has one bid slot set per seat ("not yet" included)
        hot = int(np.count_nonzero(piece[16 * r:16 * r + 16] > 0.5))
        if hot != 1:
            raise ValueError(f"obs is not an observation: the bid of relative seat {r} has {hot} "
                             f"slots set, not one (an all-zero or foreign vector?)")
    return obs, has_rules


def decode(obs: np.ndarray) -> dict:
    """Decode an observation back into named, relative-seat fields (for tests and debugging).

    Returns a dict with ``phase`` (int or None), ``looked``, ``hand`` (list of card ids),
    ``played`` (4 lists), ``trick`` (4 card ids or None), ``led_suit``, ``bids`` (4 x (bid or None,
    blind)), ``tricks_won`` (4 ints), ``voids`` (4 lists of suits), ``spades_broken``,
    ``trick_number``, ``dealer``, ``to_act``, ``scores`` and ``bags`` (scaled floats), ``target``,
    ``passed`` and ``received`` (the exchange piece's two card lists), ``rules`` (the rules
    piece's 32 floats; None for a version-2 vector of 679 floats).

    Raises:
        ValueError: ``obs`` is not a 1-d array of at least ``OBS_SIZE_V2`` numbers (679 floats
            are version 2; 711 or more are read as version 3 and decoded from their first
            ``OBS_SIZE``: pass ``spades_v1``'s history vectors as ``obs[:679]``), holds NaN
            or infinite values, or is no observation (each seat's bid must be one-hot: an
            all-zero vector is refused).
    """
    obs, has_rules = _checked_obs(obs)
    o = OFFSETS

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
        "rules": [float(x) for x in seg("rules")] if has_rules else None,
    }


HISTORY_SLOT = 4 + 52
HISTORY_SIZE = 52 * HISTORY_SLOT  # 2912
HISTORY_OFFSET = OBS_SIZE  # the history piece follows the base layout


# ----------------------------------------------------------------------------- the env's encoders
def encode_history(view, out: np.ndarray | None = None) -> np.ndarray:
    """Reference encoder of the optional ``history`` piece: shape ``(HISTORY_SIZE,)``, float32.

    Slot ``k`` (56 floats) holds the ``k``-th card played this hand (``view.play_history``): a
    one-hot of the player's seat relative to ``view.seat`` (4) then a one-hot of the card (52).

    Raises:
        ValueError: ``view`` is not a ``PlayerView`` or ``out`` is not a writeable float32 array
            of shape ``(HISTORY_SIZE,)``.
    """
    _check_view(view, "encode_history")
    out = check_out(out, HISTORY_SIZE)
    me = view.seat
    for k, (s, c) in enumerate(view.play_history):
        out[k * HISTORY_SLOT + ((s - me) & 3)] = 1.0
        out[k * HISTORY_SLOT + 4 + c] = 1.0
    return out


def encode_full(view, history: bool = False, obs_version: int = OBS_VERSION) -> np.ndarray:
    """Observation vector as the env gives it: ``encode(view)`` (its first 679 floats for
    ``obs_version`` 2, the ``spades_v1`` env) then, with ``history``, the history piece.
    Shape ``(width + HISTORY_SIZE,)`` or ``(width,)``, float32, ``width`` 711 or 679."""
    width = OBS_SIZE if obs_version == OBS_VERSION else OBS_SIZE_V2
    full = encode(view)
    out = np.zeros(width + (HISTORY_SIZE if history else 0), dtype=np.float32)
    out[:width] = full[:width]
    if history:
        encode_history(view, out[width:])
    return out


_CARD_MID_VALUES = np.array([1.0] * 8 + [0.0] * 6 + [1.0] * 4, dtype=np.float32)
"""The values of ``_card_tables(...)["mid"][p][c]``'s indices: the card in ``played`` and
``trick`` (8 ones), out of the hand and of the partner's ``exchange`` piece, ``to_act`` off for
``p`` (6 zeros), on for the next seat (4 ones)."""
_CARD_LAST_VALUES = _CARD_MID_VALUES[:14].copy()
"""The values of ``_card_tables(...)["last"][p][c]`` (a trick's fourth card: no next seat)."""
_CARD_TABLES: dict = {}
_PLAY = Phase.PLAY
_SWAP_TEAMS = np.array([1, 0, 3, 2])
assert OFFSETS["bags"][0] == OFFSETS["scores"][0] + 2 == OFFSETS["scores"][1]


def _card_tables(width: int, history: bool) -> dict:
    """The flat indices into ``IncrementalEncoder.flat`` (4 rows of ``width``) that each move
    writes, built once per width and shared (read-only) by every encoder of that width.

    ``mid[p][c]`` / ``last[p][c]``: seat ``p`` plays card ``c`` inside a trick / as its fourth
    card, written with ``_CARD_MID_VALUES`` / ``_CARD_LAST_VALUES`` in one scatter."""
    got = _CARD_TABLES.get(width)
    if got is not None:
        return got
    W = width
    o = {k: v[0] for k, v in OFFSETS.items()}
    rows = np.arange(4) * W
    # relative seat of `seat` seen from each observer row `me`
    rel = np.array([[(s - me) & 3 for me in range(4)] for s in range(4)])  # [seat, me]

    def per_seat(off, stride, extra=0):
        # flat indices, for each absolute seat s, of (off + stride*rel(s, me) + extra) per row
        return [rows + off + stride * rel[s] + extra for s in range(4)]

    t: dict = {}
    t["pc"] = [[np.concatenate([rows + o["played"] + 52 * rel[s] + c,
                                rows + o["trick"] + 52 * rel[s] + c]) for c in range(52)]
               for s in range(4)]
    t["led"] = [rows + o["led_suit"] + su for su in range(4)]
    void = [[rows + o["voids"] + 4 * rel[s] + su for su in range(4)] for s in range(4)]
    # the flat indices of every suit mask (``rules.voids_revealed``) by seat
    t["voids"] = [[np.concatenate([void[s][su] for su in range(4) if (m >> su) & 1]
                                  or [np.zeros(0, np.int64)]) for m in range(16)]
                  for s in range(4)]
    # a card played by seat s leaves the "passed" half of its partner's exchange piece
    t["passed"] = [[PARTNER[s] * W + o["exchange"] + c for c in range(52)] for s in range(4)]
    t["sb"] = rows + o["spades_broken"]
    t["to_act"] = to_act = per_seat(o["to_act"], 1)
    t["dealer"] = per_seat(o["dealer"], 1)
    t["tw"] = per_seat(o["tricks_won"], 1)
    t["bid"] = [[rows + o["bids"] + BID_SLOTS * rel[s] + slot for slot in range(BID_SLOTS)]
                for s in range(4)]
    t["bid_not_yet"] = np.concatenate([rows + o["bids"] + BID_SLOTS * r for r in range(4)])
    t["dealer_to_act"] = [[np.concatenate([t["dealer"][d], to_act[p]]) for p in range(4)]
                          for d in range(4)]
    last = [[np.concatenate([t["pc"][s][c], [s * W + o["hand"] + c, t["passed"][s][c]],
                             to_act[s]]) for c in range(52)] for s in range(4)]
    t["last"] = last
    t["mid"] = [[np.concatenate([last[s][c], to_act[NEXT_SEAT[s]]]) for c in range(52)]
                for s in range(4)]
    assert len(t["mid"][0][0]) == len(_CARD_MID_VALUES)
    assert len(t["last"][0][0]) == len(_CARD_LAST_VALUES)
    if history:
        t["hist"] = [[np.concatenate([rows + HISTORY_OFFSET + rel[s],
                                      rows + HISTORY_OFFSET + 4 + c]) for c in range(52)]
                     for s in range(4)]
    for v in t.values():
        for a in (v if isinstance(v, list) else [v]):
            for x in (a if isinstance(a, list) else [a]):
                if isinstance(x, np.ndarray):
                    x.flags.writeable = False
    _CARD_TABLES[width] = t
    return t


class IncrementalEncoder:
    """Four observation rows (one per seat), updated in place move by move.

    ``buf`` has shape ``(4, width)``, float32; ``buf[seat]`` always equals
    ``encode_full(game.view(seat), history)`` (tested at every step of random games), except after
    ``finish_hand`` which shows the finished hand as the engine shows a finished game. The common
    moves (a bid, a card) cost a few numpy scatter writes into precomputed flat indices (one
    write for most cards: ``_card_tables``); rare ones (Blind Nil decisions, the exchange)
    re-encode from ``game.view``.
    """

    def __init__(self, history: bool = False):
        self.history = bool(history)
        self.width = W = OBS_SIZE + (HISTORY_SIZE if self.history else 0)
        self.buf = np.zeros((4, W), dtype=np.float32)
        self.flat = self.buf.reshape(-1)
        o = {k: v[0] for k, v in OFFSETS.items()}
        self._o = o
        tables = _card_tables(W, self.history)
        self._pc, self._card_mid, self._card_last, self._hist = \
            tables["pc"], tables["mid"], tables["last"], tables.get("hist")
        self._led, self._voids, self._passed = tables["led"], tables["voids"], tables["passed"]
        self._to_act, self._dealer, self._tw = tables["to_act"], tables["dealer"], tables["tw"]
        self._bid = tables["bid"]
        self._bid_not_yet = tables["bid_not_yet"]
        self._dealer_to_act = tables["dealer_to_act"]
        self._start_rules = self._start = None  # new_hand's template and its rules
        self._sb = tables["sb"]
        self._hand0 = o["hand"]
        self._trick_lo, self._trick_hi = o["trick"], OFFSETS["led_suit"][1]
        self._tn = o["trick_number"]
        self._phase = o["phase"]
        self._looked = o["looked"]
        self._sc = o["scores"]
        self._bags = o["bags"]
        self._target = o["target"]
        self._rules_lo, self._rules_hi = OFFSETS["rules"]

    # -- whole rows --------------------------------------------------------------------
    def rebuild(self, game: SpadesGame) -> None:
        """Re-encode every row from ``game.view`` (the reference path)."""
        for s in range(4):
            v = game.view(s)
            encode(v, self.buf[s, :OBS_SIZE])
            if self.history:
                encode_history(v, self.buf[s, OBS_SIZE:])

    def new_hand(self, game: SpadesGame) -> None:
        """Rows at the start of a hand (bidding, nothing played), written directly: the part
        every hand under these rules shares (phase, no bids, target, rules piece) is copied from
        a template built once per rule set."""
        buf, flat = self.buf, self.flat
        rules = game.rules
        if self._start_rules is not rules:
            t = self._start = np.zeros_like(buf)
            t[:, self._phase] = 1.0
            t.reshape(-1)[self._bid_not_yet] = 1.0
            t[:, self._target] = rules.target_score / 500.0
            t[:, self._rules_lo:self._rules_hi] = rules_features(rules)
            self._start_rules = rules
        np.copyto(buf, self._start)
        flat[self._dealer_to_act[game.dealer][game.current_player]] = 1.0
        self._write_scores(game.scores, game.bags, rules)
        if game.spades_broken:  # broken from the start (Rules.spades_lead_any_time)
            flat[self._sb] = 1.0
        looked, hands = game.looked, game.hands
        if looked[0] and looked[1] and looked[2] and looked[3]:  # all four hands in one write
            buf[:, self._looked] = 1.0
            buf[:, self._hand0:self._hand0 + 52] = _CHUNK_BITS[[
                h >> k & 0x1FFF for h in hands for k in (0, 13, 26, 39)]].reshape(4, 52)
            return
        for s in range(4):
            if looked[s]:
                buf[s, self._looked] = 1.0
                write_mask(buf[s], self._hand0, hands[s])

    def _write_scores(self, scores, bags, rules) -> None:
        t, bl = float(rules.target_score), float(rules.bag_limit)
        v = np.array((scores[0] / t, scores[1] / t, bags[0] / bl, bags[1] / bl), dtype=np.float32)
        sc = self._sc  # scores (mine, theirs) then bags (mine, theirs): 4 floats in a row
        self.buf[0::2, sc:sc + 4] = v  # seats 0 and 2: team 0 is "mine"
        self.buf[1::2, sc:sc + 4] = v[_SWAP_TEAMS]

    def finish_hand(self, game: SpadesGame) -> None:
        """After ``play`` reported the end of a hand: show it finished (as a game over shows it)."""
        res = game.hand_results[-1]
        buf, flat = self.buf, self.flat
        buf[:, self._trick_lo:self._trick_hi] = 0.0
        buf[:, self._phase:self._phase + 3] = 0.0
        buf[:, self._o["to_act"]:self._o["to_act"] + 4] = 0.0
        for s in range(4):
            flat[self._tw[s]] = res.tricks[s] / 13.0
        buf[:, self._tn] = 1.0
        t0, t1 = res.teams
        self._write_scores((t0.total, t1.total), (t0.bags_after, t1.bags_after), game.rules)

    # -- moves -------------------------------------------------------------------------
    def apply(self, game: SpadesGame, action: int) -> bool:
        """``game.apply(action)`` and update the rows. Returns True when the move ended a hand;
        then the rows are NOT updated for the end and the caller calls ``new_hand`` (the game
        goes on) or ``finish_hand``.

        Raises:
            IllegalActionError: from the engine; nothing changed.
        """
        ph = game.phase
        p = game.current_player
        if ph == _PLAY:
            trick = game.trick
            tl = len(trick)
            deck = game.rules.deck
            led = deck.suit_of[trick[0]] if tl else -1
            sb = game.spades_broken
            hn = game.hand_number
            k = 4 * game.trick_number + tl
            game.apply(action)
            c = action
            flat = self.flat
            if tl < 3:  # played, trick, hand, passed, to_act moved on: one scatter
                flat[self._card_mid[p][c]] = _CARD_MID_VALUES
            else:
                flat[self._card_last[p][c]] = _CARD_LAST_VALUES
            if self.history:
                flat[self._hist[p][c] + k * HISTORY_SLOT] = 1.0
            if tl == 0:
                flat[self._led[deck.suit_of[c]]] = 1.0
            shown = deck.voids_shown[sb][led + 1][c]  # rules.voids_revealed, as the deck's table
            if shown:
                flat[self._voids[p][shown]] = 1.0
            if not sb and deck.suit_of[c] == 3 \
                    and spades_broken_after(c, led, sb, game.rules.forced_spade_lead_breaks, deck):
                flat[self._sb] = 1.0
            if tl < 3:
                return False
            if game.hand_number != hn:
                return True
            self.buf[:, self._trick_lo:self._trick_hi] = 0.0
            w = game.current_player
            flat[self._tw[w]] = game.tricks_won[w] / 13.0
            self.buf[:, self._tn] = game.trick_number / 13.0
            flat[self._to_act[w]] = 1.0
            return False
        if ph == Phase.BIDDING and game.looked[p] and action != BLIND_NIL_ACTION \
                and action != LOOK_ACTION:
            game.apply(action)
            flat = self.flat
            bid_idx = self._bid[p]
            flat[bid_idx[0]] = 0.0
            flat[bid_idx[1 + action - 52]] = 1.0
            flat[self._to_act[p]] = 0.0
            nph = game.phase
            if nph == Phase.BIDDING:
                flat[self._to_act[game.current_player]] = 1.0
            elif nph == Phase.PLAY:
                self.buf[:, self._phase] = 0.0
                self.buf[:, self._phase + 2] = 1.0
                flat[self._to_act[game.current_player]] = 1.0
            else:
                self.rebuild(game)
            return False
        hn = game.hand_number
        game.apply(action)
        if game.hand_number != hn:  # not reachable by a bid or a pass; kept for safety
            return True
        self.rebuild(game)
        return False


__all__ = ["PIECES", "OFFSETS", "OBS_SIZE", "OBS_SIZE_V1", "OBS_SIZE_V2", "OBS_SIZES",
           "OBS_VERSION", "RULE_FEATURES", "RULES_SIZE", "rules_features", "encode", "decode",
           "write_mask", "bid_slot", "check_out", "NUM_CARDS", "HISTORY_SLOT", "HISTORY_SIZE",
           "HISTORY_OFFSET", "encode_history", "encode_full", "IncrementalEncoder"]
