"""Bot interface and the ``random`` bot."""

from __future__ import annotations

import numpy as np

from ..cards import BID_OFFSET, MAX_BID
from ..rules import exchanges


class Bot:
    """A player that decides from one seat's ``PlayerView``.

    Subclasses implement ``act(view) -> int`` (an action id from ``view.legal_actions``).
    ``name`` is the level name. Randomness comes only from ``self.rng``.
    """

    name = "bot"

    def __init__(self, seed=None):
        """``seed``: None, an int >= 0, a ``np.random.SeedSequence`` or a ``np.random.Generator``
        (used as is); anything else (negative, float, str, bool...) raises ``ValueError``."""
        from ..engine import make_rng
        self.rng = make_rng(seed)

    def act(self, view) -> int:
        raise NotImplementedError

    def __call__(self, view) -> int:
        return self.act(view)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def check_probability(name: str, v) -> float:
    """``v`` as a float in [0, 1]; ``ValueError`` naming ``name`` for anything else (bools,
    strings, NaN)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {v!r}")
    return float(v)


def check_flag(name: str, v) -> bool:
    """``v`` as a bool; ``ValueError`` naming ``name`` for anything but True/False."""
    if not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {v!r}")
    return bool(v)


def legal_bid_numbers(view) -> list[int]:
    """The bids 0..13 (0 = Nil; numbers, not action ids) among ``view.legal_actions``, ascending:
    what ``rules.legal_bids`` allows the seat now."""
    return [a - BID_OFFSET for a in view.legal_actions if BID_OFFSET <= a <= BID_OFFSET + MAX_BID]


def nearest_legal_bid(view, bid: int) -> int:
    """The action id of the legal bid (``legal_bid_numbers``) closest to ``bid`` (0..13), the
    lower on a tie: how a bot keeps its wanted bid inside what the rules allow.

    Raises:
        ValueError: the view has no legal bid (not its turn to bid, or a Blind Nil decision).
    """
    numbers = legal_bid_numbers(view)
    if not numbers:
        raise ValueError(f"seat {view.seat} has no legal bid now")
    return BID_OFFSET + min(numbers, key=lambda b: (abs(b - bid), b))


def exchanged_seats(view) -> frozenset:
    """The seats whose hands changed in this hand's exchanges (``rules.exchanges``): after the
    bids, so their bids no longer describe the cards they hold."""
    if any(b is None for b in view.bids):
        return frozenset()
    return frozenset(s for n, _ in exchanges(view.rules, view.bids, view.blind, view.dealer)
                     for s in (n, (n + 2) % 4))


class RandomBot(Bot):
    """Uniform over the legal actions (bids, Blind Nil decisions and cards alike)."""

    name = "random"

    def act(self, view) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"seat {view.seat} has no legal action (not its turn?)")
        return int(legal[int(self.rng.integers(len(legal)))])
