"""Bot interface and the ``random`` bot."""

from __future__ import annotations

import numpy as np


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


class RandomBot(Bot):
    """Uniform over the legal actions (bids, Blind Nil decisions and cards alike)."""

    name = "random"

    def act(self, view) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"seat {view.seat} has no legal action (not its turn?)")
        return int(legal[int(self.rng.integers(len(legal)))])
