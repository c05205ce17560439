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
        from ..engine import _make_rng
        self.rng = _make_rng(seed)

    def act(self, view) -> int:
        raise NotImplementedError

    def __call__(self, view) -> int:
        return self.act(view)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RandomBot(Bot):
    """Uniform over the legal actions (bids, Blind Nil decisions and cards alike)."""

    name = "random"

    def act(self, view) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"seat {view.seat} has no legal action (not its turn?)")
        return int(legal[int(self.rng.integers(len(legal)))])
