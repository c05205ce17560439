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


def quoted_name(name: str, limit: int = 80) -> str:
    """``repr(name)`` for a message, cut after ``limit`` characters with the full length said (a
    pasted file as a bot name must not fill the terminal)."""
    if len(name) <= limit:
        return repr(name)
    return f"{name[:limit]!r}... ({len(name)} characters)"


def make_bot(name: str, seed=None, **kwargs) -> Bot:
    """Build a bot by name.

    Args:
        name: one of ``BOT_LEVELS`` or ``checkpoint:PATH``.
        seed: int / None / ``np.random.Generator`` for the bot's own RNG.
        kwargs: level-specific options (e.g. ``samples=`` for ``hard``/``insane``).
    Raises:
        ValueError: unknown name, an option the level does not take, search options whose
            product makes one decision too costly (``bots.work.LIMITS``, docs/bots.md, Limits),
            or a missing checkpoint.
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
            raise ValueError(f"bot {quoted_name(name)}: no checkpoint file at "
                             f"{quoted_name(path)}")
        try:
            from spades_env.bots.checkpoint_bot import CheckpointBot  # the trained-policy bot (torch)
        except ImportError as e:
            if (e.name or "").split(".")[0] != "torch":
                raise
            raise ImportError(f"bot {quoted_name(name)} needs PyTorch, which is not installed: "
                              f"pip install 'spades_env[torch]' (or torch>=2.2)") from None
        try:
            return CheckpointBot(path, seed=seed, **kwargs)
        except TypeError as e:
            raise ValueError(f"bad option for bot {quoted_name(name)}: {e}") from None
    else:
        raise ValueError(f"unknown bot {quoted_name(name)}; choose one of {list(BOT_LEVELS)} or "
                         f"'checkpoint:PATH'")
    try:
        return cls(seed=seed, **kwargs)
    except TypeError as e:
        raise ValueError(f"bad option for bot {quoted_name(name)}: {e}") from None


def bot_files(name) -> list[str]:
    """The files a bot named ``name`` reads when it is made: ``[PATH]`` for
    ``checkpoint:PATH``, the shipped network (``agents.SHIPPED_CHECKPOINT``) for ``expert``,
    ``[]`` for the others (and for a name that is not a bot: ``make_bot`` says what is wrong).
    A command refuses an output that is one of them (``fileio.check_outputs_apart``)."""
    if not isinstance(name, str):
        return []
    if name.startswith("checkpoint:"):
        return [name[len("checkpoint:"):]] if len(name) > len("checkpoint:") else []
    if name == "expert":
        from spades_env.agents import SHIPPED_CHECKPOINT  # no torch: the path only
        return [str(SHIPPED_CHECKPOINT)]
    return []


def bot_inputs(option: str, names) -> list[tuple[str, str]]:
    """``(how, path)`` pairs for ``fileio.check_outputs_apart``: each file read by the bots
    ``names`` (one name or a list) given with ``option``, e.g. ``("--team0 checkpoint:x.pt",
    "x.pt")``."""
    names = [names] if isinstance(names, str) else list(names or [])
    return [(f"{option} {quoted_name(n) if len(n) > 80 else n}", f) for n in names
            for f in bot_files(n)]


__all__ = ["Bot", "RandomBot", "make_bot", "BOT_LEVELS", "quoted_name", "bot_files",
           "bot_inputs", "np"]
