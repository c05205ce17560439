"""Full-information state vector for centralised critics (``env.state()``, ``env.state_space``).

Unlike an observation (one seat's information set, seats relative to the observer), the state
holds everything: all four hands, by **absolute** seat (0..3, team 0 = seats 0 and 2, team 1 =
seats 1 and 3). It is meant for a centralised critic during training (CTDE: MAPPO, QMIX...), never
as a policy's input: a policy that reads it sees hidden cards. dtype ``float32``.

| piece          | size  | meaning                                                                  |
|----------------|-------|--------------------------------------------------------------------------|
| phase          | 4     | one-hot: bidding, Blind Nil exchange, play, game over                    |
| to_act         | 4     | one-hot seat to act (all 0 when the game is over)                        |
| dealer         | 4     | one-hot seat of the dealer                                               |
| hands          | 4x52  | cards held now, by seat (card id = suit*13 + rank)                       |
| looked         | 4     | 1 once the seat has seen its hand (always 1 without Blind Nil)           |
| played         | 4x52  | cards played this hand, by seat                                          |
| trick          | 4x52  | the current trick: the card each seat played to it                      |
| led_suit       | 4     | one-hot suit led to the current trick (all 0 before the lead)            |
| bids           | 4x16  | per seat, one-hot: 0 not yet bid, 1 Nil, 1+b bid b (1..13), 15 Blind Nil |
| tricks_won     | 4     | tricks won this hand by seat / 13                                        |
| voids          | 4x4   | voids shown by seat (failed to follow suit), by suit                     |
| spades_broken  | 1     | 1 when spades are broken                                                 |
| trick_number   | 1     | completed tricks / 13                                                    |
| scores         | 2     | team totals (team 0, team 1) / target_score                              |
| bags           | 2     | team bag counts (team 0, team 1) / bag_limit                             |
| target         | 1     | target_score / 500                                                       |

``STATE_SIZE`` is the total (735); ``STATE_OFFSETS[name]`` gives ``(start, stop)``. The state is
the engine's: when an episode ends after a hand while the game goes on (``hands_per_episode``,
``max_hands``), the engine has already dealt the next hand and the state shows that deal.

Bounds (``state_space``, and the ``scores`` bounds of the observation space): every value is in
[0, 1] except ``scores``, in ``[-score_bound(rules, max_hands), +score_bound(...)]``, and
``target``, in ``[0, target_score / 500]`` (its value is that bound). ``score_bound`` is the most a team total can reach in
``max_hands`` hands, divided by ``target_score``; with no hand cap (``max_hands=None``) no total is
bounded and the bound is float32's largest finite value.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from .observation import BID_SLOTS, bid_slot, check_out, write_mask
from .rules import Rules, per_trick

STATE_PIECES: tuple[tuple[str, int], ...] = (
    ("phase", 4),
    ("to_act", 4),
    ("dealer", 4),
    ("hands", 4 * 52),
    ("looked", 4),
    ("played", 4 * 52),
    ("trick", 4 * 52),
    ("led_suit", 4),
    ("bids", 4 * BID_SLOTS),
    ("tricks_won", 4),
    ("voids", 4 * 4),
    ("spades_broken", 1),
    ("trick_number", 1),
    ("scores", 2),
    ("bags", 2),
    ("target", 1),
)

STATE_OFFSETS: dict[str, tuple[int, int]] = {}
_o = 0
for _name, _size in STATE_PIECES:
    STATE_OFFSETS[_name] = (_o, _o + _size)
    _o += _size
STATE_SIZE = _o
del _o, _name, _size


def hand_points_bound(rules: Rules) -> int:
    """Largest change of one team's total in one hand under ``rules`` (points, int).

    A gain is at most a 13-trick contract (130, or 260 under ``big_bid_double``: ``per_trick``)
    plus 13 overtricks plus two made Nils; a loss at most a set 13-trick contract (130), two
    failed Nils and the bag penalties that at most ``bag_limit - 1 + 13`` bags can trip
    (docs/rules.md, Scoring a hand and House rules).
    """
    nil = max(rules.nil_bonus, rules.blind_nil_bonus)
    gain = per_trick(rules, 13) * 13 + 13 + 2 * nil
    loss = 130 + 2 * nil + rules.bag_penalty * ((rules.bag_limit - 1 + 13) // rules.bag_limit)
    return max(gain, loss)


def score_bound(rules: Rules, max_hands: int | None) -> float:
    """Bound on ``|team total| / target_score`` over a game of at most ``max_hands`` hands started
    from 0-0 (float). ``max_hands=None``: float32's largest finite value (no total is bounded).

    Raises:
        ValueError: ``rules`` is not a ``Rules`` or ``max_hands`` not None or an int >= 1.
    """
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be a spades_env.Rules, got {type(rules).__name__}")
    if max_hands is not None and (isinstance(max_hands, (bool, np.bool_))
                                  or not isinstance(max_hands, (int, np.integer))
                                  or max_hands < 1):
        raise ValueError(f"max_hands must be None or an int >= 1, got {max_hands!r}")
    if max_hands is None:
        return float(np.finfo(np.float32).max)
    return float(max_hands) * hand_points_bound(rules) / rules.target_score


def state_space(rules: Rules, max_hands: int | None = 100) -> spaces.Box:
    """The ``Box`` of ``encode_state`` vectors: shape ``(STATE_SIZE,)``, float32, finite bounds."""
    low = np.zeros(STATE_SIZE, dtype=np.float32)
    high = np.ones(STATE_SIZE, dtype=np.float32)
    a, b = STATE_OFFSETS["scores"]
    bound = np.float32(score_bound(rules, max_hands))
    low[a:b] = -bound
    high[a:b] = bound
    t = STATE_OFFSETS["target"][0]
    high[t] = np.float32(rules.target_score / 500.0)
    return spaces.Box(low=low, high=high, shape=(STATE_SIZE,), dtype=np.float32)


def encode_state(game, out: np.ndarray | None = None) -> np.ndarray:
    """Full-information state of ``game`` (a ``SpadesGame``): shape ``(STATE_SIZE,)``, float32.

    Layout: the module docstring table (absolute seats, all hands). ``out`` (float32, that shape)
    is overwritten and returned when given.

    Raises:
        ValueError: ``game`` is not a ``SpadesGame`` or ``out`` is not a writeable float32 array
            of shape ``(STATE_SIZE,)``.
    """
    from .engine import SpadesGame
    if not isinstance(game, SpadesGame):
        raise ValueError(f"encode_state needs a SpadesGame, got {type(game).__name__}")
    out = check_out(out, STATE_SIZE)
    o = {k: v[0] for k, v in STATE_OFFSETS.items()}
    out[o["phase"] + int(game.phase)] = 1.0
    if game.current_player >= 0 and not game.is_over:
        out[o["to_act"] + game.current_player] = 1.0
    out[o["dealer"] + game.dealer] = 1.0
    for s in range(4):
        write_mask(out, o["hands"] + 52 * s, game.hands[s])
        write_mask(out, o["played"] + 52 * s, game.played[s])
        out[o["looked"] + s] = 1.0 if game.looked[s] else 0.0
        out[o["bids"] + BID_SLOTS * s + bid_slot(game.bids[s], game.blind[s])] = 1.0
        out[o["tricks_won"] + s] = game.tricks_won[s] / 13.0
        for suit in range(4):
            if (game.voids[s] >> suit) & 1:
                out[o["voids"] + 4 * s + suit] = 1.0
    for s, c in game.current_trick:
        out[o["trick"] + 52 * s + c] = 1.0
    if game.trick:
        out[o["led_suit"] + game.led_suit] = 1.0  # the deck's suit (Rules.deck)
    out[o["spades_broken"]] = 1.0 if game.spades_broken else 0.0
    out[o["trick_number"]] = game.trick_number / 13.0
    rules = game.rules
    out[o["scores"]] = game.scores[0] / rules.target_score
    out[o["scores"] + 1] = game.scores[1] / rules.target_score
    out[o["bags"]] = game.bags[0] / rules.bag_limit
    out[o["bags"] + 1] = game.bags[1] / rules.bag_limit
    out[o["target"]] = rules.target_score / 500.0
    return out


__all__ = ["STATE_PIECES", "STATE_OFFSETS", "STATE_SIZE", "encode_state", "state_space",
           "score_bound", "hand_points_bound"]
