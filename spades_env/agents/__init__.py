"""Trained policies at play time: the network a checkpoint holds and its checked loading (the bots
that play them are ``spades_env.bots.checkpoint_bot`` and ``spades_env.bots.expert``).

| module       | owns                                                                      | needs  |
|--------------|---------------------------------------------------------------------------|--------|
| ``model``    | ``Agent``: the policy/value network (shared trunk, card-play, bid and value heads, optional privileged critic) | torch |
| ``checkpoint`` | ``load_checkpoint`` / ``build_agent``: the checkpoint format and the checks every load makes | torch |

This package's ``__init__`` holds only the network's size limits and needs no torch, so the
training configuration can check a network before torch is imported. Training
(``spades_env/training/``) builds on this package; nothing here imports ``training``.
"""

from __future__ import annotations

from pathlib import Path

from spades_env.cards import NUM_CARDS
from spades_env.observation import OBS_SIZE

_PACKAGED = Path(__file__).resolve().parent / "shipped" / "agent.pt"
SHIPPED_CHECKPOINT = _PACKAGED if _PACKAGED.is_file() else \
    Path(__file__).resolve().parents[2] / "checkpoints" / "shipped" / "agent.pt"
"""the project's trained agent, the network of ``make_bot("expert")`` when no checkpoint is
given: ``checkpoints/shipped/agent.pt`` of the repository, which a wheel or an sdist install
carries as ``spades_env/agents/shipped/agent.pt`` (``setup.py`` copies it into the package)."""

PRIV_SIZE = 3 * NUM_CARDS
"""floats of the privileged critic's extra input: the other three seats' hands, seat-relative."""
MAX_WIDTH = 16384
"""widest layer of the network (``hidden`` widths, ``head_hidden``)."""
MAX_PARAMS = 100_000_000
"""most network parameters (400 MB of float32 weights, plus twice that for Adam's moments)."""


def network_params(hidden, head_hidden: int, critic_hidden=()) -> int:
    """Parameter count (int) of ``model.Agent(hidden, head_hidden, critic_hidden=...)``: trunk,
    three heads and privileged critic, for the full observation (an upper estimate used to refuse
    absurd networks before anything is allocated)."""
    n, w = 0, OBS_SIZE
    for h in hidden:
        n += w * h + h
        w = h
    n += 3 * (w * head_hidden + head_hidden) + head_hidden * 69 + 69
    w = OBS_SIZE + PRIV_SIZE
    for h in critic_hidden:
        n += w * h + h
        w = h
    return n + (w + 1 if len(critic_hidden) else 0)


__all__ = ["SHIPPED_CHECKPOINT", "PRIV_SIZE", "MAX_WIDTH", "MAX_PARAMS", "network_params"]
