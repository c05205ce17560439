"""Tianshou adapter (``pip install -e '.[tianshou]'``).

``tianshou_env(**env_kwargs)`` is Tianshou's ``PettingZooEnv`` over
``TurnCreditWrapper(spades_v1.env(**env_kwargs))``: the multi-agent route (``MultiAgentPolicy``,
``MultiAgentOffPolicyAlgorithm``) then credits every agent with its own hand rewards (without the
wrapper only the agent that played a hand's last card would receive that hand's reward). Options
are those of ``spades_v1.env``, ``bots=`` included (e.g. learners in seats 0 and 2, bots in 1 and
3). Observations are Tianshou's ``{"agent_id", "obs", "mask"}`` dicts (``mask``: bool (68,)).

DQN reads the ``mask`` itself (masked Q-values and masked exploration). Actor-critic algorithms
(PPO, A2C, discrete SAC...) hand the whole observation to the actor and the critic:
``masked_actor(actor)`` wraps an actor of the plain observation vector (e.g. Tianshou's
``DiscreteActor(Net(...), softmax_output=False)``: logits) so that illegal actions get no
probability, and ``obs_only(critic)`` gives a critic the vector alone. A raw
``PettingZooEnv(spades_v1.env())`` (without ``TurnCreditWrapper``) warns once: it credits each
hand's reward to whoever played its last card. ``quiet_progress()`` makes Tianshou's trainer
bars follow ``show_progress=False`` and ``TQDM_DISABLE=1`` (its off-policy update bar ignores both).
"""

from __future__ import annotations

import os

import numpy as np

from .. import spades_v1
from . import TurnCreditWrapper

__all__ = ["tianshou_env", "masked_argmax", "masked_actor", "obs_only", "quiet_progress"]


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


_classes: dict = {}  # the torch modules below, defined at first use (this module needs no torch)


def _obs_parts(obs):
    """``(vector, mask or None)`` of a Tianshou observation batch (or dict) or a plain vector."""
    if hasattr(obs, "obs") and hasattr(obs, "mask"):
        return obs.obs, obs.mask
    if isinstance(obs, dict) and "obs" in obs:
        return obs["obs"], obs.get("mask")
    return obs, None


def _modules():
    if not _classes:
        import torch

        class MaskedActor(torch.nn.Module):
            """``actor`` on the observation vector; illegal actions' outputs suppressed (module
            docstring of ``spades_env.integrations.tianshou``)."""

            def __init__(self, actor):
                super().__init__()
                self.actor = actor
                self.softmax_output = bool(getattr(actor, "softmax_output", False))

            def forward(self, obs, state=None, info=None):
                x, mask = _obs_parts(obs)
                out, hidden = self.actor(x, state=state, info=info)
                if mask is None:
                    return out, hidden
                legal = torch.as_tensor(np.asarray(mask), device=out.device).bool()
                if legal.shape != out.shape:
                    raise ValueError(f"mask of shape {tuple(legal.shape)} for actor outputs of "
                                     f"shape {tuple(out.shape)}")
                if self.softmax_output:  # probabilities: renormalised over the legal actions
                    out = out * legal
                    return out / out.sum(-1, keepdim=True).clamp_min(1e-12), hidden
                return out.masked_fill(~legal, torch.finfo(out.dtype).min), hidden

        class ObsOnly(torch.nn.Module):
            """``net`` on the observation vector of a ``{"obs", "mask"}`` observation."""

            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, obs, *args, **kwargs):
                return self.net(_obs_parts(obs)[0], *args, **kwargs)

        _classes.update(MaskedActor=MaskedActor, ObsOnly=ObsOnly)
    return _classes


def masked_actor(actor):
    """A Tianshou actor for this env's ``{"obs", "mask"}`` observations from ``actor``, a
    ``torch.nn.Module`` ``(obs_vector, state, info) -> (logits or probabilities, hidden)`` such
    as ``DiscreteActor(Net(...), softmax_output=False)`` (what ``DiscreteActorPolicy``'s default
    ``dist_fn`` expects): illegal actions get the lowest logit (probability 0 after the softmax);
    an actor with ``softmax_output=True`` gets its probabilities renormalised over the legal
    actions. Observations without a mask pass through unchanged.

    Raises:
        ImportError: torch is not installed. ValueError: ``actor`` is not a torch module; from
            the actor's call, a mask whose shape differs from its outputs.
    """
    try:
        import torch
    except ImportError as e:
        raise ImportError("masked_actor needs torch: pip install -e '.[tianshou]'") from e
    if not isinstance(actor, torch.nn.Module):
        raise ValueError(f"actor must be a torch.nn.Module, got {type(actor).__name__}")
    return _modules()["MaskedActor"](actor)


def obs_only(net):
    """``net`` (e.g. a critic) called on the observation vector of this env's ``{"obs", "mask"}``
    observations (Tianshou hands actor-critic critics the whole observation).

    Raises:
        ImportError: torch is not installed. ValueError: ``net`` is not a torch module.
    """
    try:
        import torch
    except ImportError as e:
        raise ImportError("obs_only needs torch: pip install -e '.[tianshou]'") from e
    if not isinstance(net, torch.nn.Module):
        raise ValueError(f"net must be a torch.nn.Module, got {type(net).__name__}")
    return _modules()["ObsOnly"](net)


def quiet_progress() -> None:
    """Make Tianshou's trainer progress bars follow ``show_progress=False`` and the environment
    variable ``TQDM_DISABLE`` (1/true/yes): Tianshou 2.0's off-policy trainer passes ``disable=``
    to its per-update bar itself, which overrides both. Patches ``tianshou.trainer.Trainer`` once
    (idempotent); bars asked for are unchanged otherwise.

    Raises:
        ImportError: Tianshou is not installed.
    """
    try:
        from tianshou import trainer
    except ImportError as e:
        raise ImportError("quiet_progress needs Tianshou: pip install -e '.[tianshou]'") from e
    prop = trainer.Trainer.__dict__.get("_pbar")
    if not isinstance(prop, property) or getattr(prop.fget, "_spades_quiet", False):
        return
    make_bar = prop.fget

    def _pbar(self):
        bar = make_bar(self)
        env_off = os.environ.get("TQDM_DISABLE", "").strip().lower() in ("1", "true", "yes")
        if not (env_off or not getattr(self.params, "show_progress", True)):
            return bar

        def quiet(*args, **kwargs):
            kwargs["disable"] = True
            return bar(*args, **kwargs)
        return quiet

    _pbar._spades_quiet = True
    trainer.Trainer._pbar = property(_pbar, doc=prop.__doc__)
