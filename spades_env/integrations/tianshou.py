"""Tianshou adapter (``pip install -e '.[tianshou]'``).

``tianshou_env(**env_kwargs)`` is Tianshou's ``PettingZooEnv`` over
``TurnCreditWrapper(spades_v1.env(**env_kwargs))``: the multi-agent route (``MultiAgentPolicy``,
``MultiAgentOffPolicyAlgorithm``) then credits every agent with its own hand rewards (without the
wrapper only the agent that played a hand's last card would receive that hand's reward). Options
are those of ``spades_v1.env``, ``bots=`` included (e.g. learners in seats 0 and 2, bots in 1 and
3). Observations are Tianshou's ``{"agent_id", "obs", "mask"}`` dicts (``mask``: bool (68,)).
"""

from __future__ import annotations

import numpy as np

from .. import spades_v1
from . import TurnCreditWrapper

__all__ = ["tianshou_env", "masked_argmax"]


def tianshou_env(**env_kwargs):
    """``tianshou.env.PettingZooEnv`` over ``TurnCreditWrapper(spades_v1.env(**env_kwargs))``.

    Raises:
        ImportError: Tianshou is not installed (``pip install -e '.[tianshou]'``).
        ValueError: a bad ``spades_v1.env`` option.
    """
    try:
        from tianshou.env import PettingZooEnv
    except ImportError as e:
        raise ImportError("tianshou_env needs Tianshou: pip install -e '.[tianshou]'") from e
    return PettingZooEnv(TurnCreditWrapper(spades_v1.env(**env_kwargs)))


def masked_argmax(q: np.ndarray, mask: np.ndarray) -> int:
    """Index of the largest ``q`` (shape (68,)) among the ids where ``mask`` is nonzero.

    Raises:
        ValueError: no legal action in ``mask``.
    """
    m = np.asarray(mask).astype(bool)
    if not m.any():
        raise ValueError("mask has no legal action")
    return int(np.flatnonzero(m)[np.argmax(np.asarray(q)[m])])
