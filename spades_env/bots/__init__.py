"""Baseline bots (``docs/bots.md``): ``random``, ``easy``, ``medium``, ``hard``, ``insane``,
``expert`` (search on the shipped network; needs torch), and ``checkpoint:PATH`` for a trained
policy.

A bot decides from one seat's view only: ``bot.act(view) -> action id`` where
``view = game.view(seat)`` (a ``PlayerView``). It never receives the game, so it cannot read hidden
cards. Every bot draws randomness only from its own ``np.random.Generator`` seeded at construction.
"""

from __future__ import annotations

import numpy as np

from .base import Bot, RandomBot

BOT_LEVELS = ("random", "easy", "medium", "hard", "insane", "expert")


def make_bot(name: str, seed=None, **kwargs) -> Bot:
    """Build a bot by name.

    Args:
        name: one of ``BOT_LEVELS`` or ``checkpoint:PATH``.
        seed: int / None / ``np.random.Generator`` for the bot's own RNG.
        kwargs: level-specific options (e.g. ``samples=`` for ``hard``/``insane``).
    Raises:
        ValueError: unknown name, an option the level does not take, or a missing checkpoint.
    """
    if not isinstance(name, str):
        raise ValueError(f"bot name must be a string, got {name!r}")
    if name == "random":
        cls = RandomBot
    elif name in ("easy", "medium"):
        from .heuristic import EasyBot, MediumBot
        cls = EasyBot if name == "easy" else MediumBot
    elif name in ("hard", "insane"):
        from .pimc import HardBot, InsaneBot
        cls = HardBot if name == "hard" else InsaneBot
    elif name == "expert":
        try:
            from spades_env.bots.expert import ExpertBot  # search on a trained network (torch)
        except ImportError as e:
            if (e.name or "").split(".")[0] != "torch":
                raise
            raise ImportError("bot 'expert' needs PyTorch, which is not installed: pip install "
                              "'spades_env[torch]' (or torch>=2.2)") from None
        cls = ExpertBot
    elif name.startswith("checkpoint:"):
        import os
        path = name[len("checkpoint:"):]
        if not os.path.isfile(path):
            raise ValueError(f"bot {name!r}: no checkpoint file at {path!r}")
        try:
            from spades_env.bots.checkpoint_bot import CheckpointBot  # the trained-policy bot (torch)
        except ImportError as e:
            if (e.name or "").split(".")[0] != "torch":
                raise
            raise ImportError(f"bot {name!r} needs PyTorch, which is not installed: pip install "
                              f"'spades_env[torch]' (or torch>=2.2)") from None
        try:
            return CheckpointBot(path, seed=seed, **kwargs)
        except TypeError as e:
            raise ValueError(f"bad option for bot {name!r}: {e}") from None
    else:
        raise ValueError(
            f"unknown bot {name!r}; choose one of {list(BOT_LEVELS)} or 'checkpoint:PATH'")
    try:
        return cls(seed=seed, **kwargs)
    except TypeError as e:
        raise ValueError(f"bad option for bot {name!r}: {e}") from None

__all__ = ["Bot", "RandomBot", "make_bot", "BOT_LEVELS", "np"]
