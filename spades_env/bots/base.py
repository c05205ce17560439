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
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

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
