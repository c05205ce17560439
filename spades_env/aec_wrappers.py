"""The wrappers of ``spades_v1.env()`` / ``spades_v2.env()``: PettingZoo's
``TerminateIllegalWrapper(illegal_reward=-1)``, ``AssertOutOfBoundsWrapper`` and
``OrderEnforcingWrapper``, with the hot paths (``last``, ``observe``, ``step``) written to do the
same checks without the chain of ``__getattr__`` look-ups.

Behaviour is PettingZoo's (the api and seed tests run on ``env()``, and the wrappers are tested
move by move against PettingZoo's classes); the classes subclass PettingZoo's, so ``isinstance``
checks still hold. One difference: after an illegal move every mask is all zeros. Something that
is not an action id 0..67 at all raises ``ActionOutOfSpaceError``, even under ``python -O``.

``wrap(env)`` stacks the three in PettingZoo's order; then ``OrderEnforcing.last`` and ``step``
run the whole chain in one call (the checks of each wrapper, in order, as separate calls would).
"""

from __future__ import annotations

import numpy as np
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from .cards import NUM_ACTIONS
from .engine import ResetNeededError

__all__ = ["wrap", "ActionOutOfSpaceError", "TerminateIllegal", "AssertOutOfBounds",
           "OrderEnforcing"]


class ActionOutOfSpaceError(ValueError, AssertionError):
    """``env()``'s step was given something that is not an action id 0..67 (a float, a string,
    a bool, an out-of-range int...). A ``ValueError``, and an ``AssertionError`` as PettingZoo's
    ``AssertOutOfBoundsWrapper`` raises; the state is unchanged."""


def wrap(env):
    """``env`` (an AEC env: ``raw_env`` or ``BotSeatsEnv``) in ``TerminateIllegal(-1)``, then
    ``AssertOutOfBounds``, then ``OrderEnforcing`` (the outermost, returned)."""
    return OrderEnforcing(AssertOutOfBounds(TerminateIllegal(env, illegal_reward=-1)))


def check_action(raw, action) -> None:
    """``AssertOutOfBounds``'s check of ``action`` for ``raw.agent_selection``: an int action id
    0..67 (a numpy integer too), or None for an agent that is done.

    Raises:
        ActionOutOfSpaceError: anything else (a bool, a float, -1, 68...); nothing changes.
    """
    if type(action) is int or (isinstance(action, np.integer) and action.shape == ()):
        ok = 0 <= action < NUM_ACTIONS
    elif isinstance(action, (bool, np.bool_)):
        ok = False  # Discrete.contains(True) holds (a bool is an int): not an action id here
    else:
        agent = raw.agent_selection
        ok = (action is None and (raw.terminations[agent] or raw.truncations[agent])) \
            or raw.action_spaces[agent].contains(action)
    if not ok:  # raised, not asserted: ``python -O`` must not let -1 or 99 through
        raise ActionOutOfSpaceError(f"action is not in action space: {action!r} (an int "
                                    f"action id 0..{NUM_ACTIONS - 1})")


class TerminateIllegal(wrappers.TerminateIllegalWrapper):
    """PettingZoo's ``TerminateIllegalWrapper``: an action the last observed mask forbids ends
    the episode, ``illegal_reward`` to the agent that took it, 0 to the others."""

    def __init__(self, env, illegal_reward):
        super().__init__(env, illegal_reward)
        self._raw = env.unwrapped

    def observe(self, agent):
        raw = self._raw
        obs = raw.observe(agent)
        if agent == raw.agent_selection:
            self._prev_obs = obs
        return obs

    def step(self, action):
        raw = self._raw
        agent = raw.agent_selection
        if self._prev_obs is None:
            self.observe(agent)
        mask = self._prev_obs["action_mask"]
        self._prev_obs = None
        self._prev_info = None
        dead = raw.terminations[agent] or raw.truncations[agent]
        if self._terminated and dead:
            raw._was_dead_step(action)
        elif not dead and not mask[action]:
            EnvLogger.warn_on_illegal_move()
            raw._cumulative_rewards[agent] = 0
            raw.terminations = dict.fromkeys(raw.agents, True)
            raw.truncations = dict.fromkeys(raw.agents, True)
            raw.rewards = dict.fromkeys(raw.truncations, 0)
            raw.rewards[agent] = float(self._illegal_value)
            raw._accumulate_rewards()
            raw._deads_step_first()
            raw._done = True
            self._terminated = True
        else:
            raw.step(action)


class AssertOutOfBounds(wrappers.AssertOutOfBoundsWrapper):
    """PettingZoo's ``AssertOutOfBoundsWrapper``, raising ``ActionOutOfSpaceError``
    (``check_action``)."""

    def __init__(self, env):
        super().__init__(env)
        self._raw = env.unwrapped

    def step(self, action):
        if type(action) is not int or not 0 <= action < NUM_ACTIONS:
            check_action(self._raw, action)
        self.env.step(action)


class OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper``; over ``AssertOutOfBounds(TerminateIllegal(...))``
    (``wrap``) its ``last`` and ``step`` run the chain's checks in one call."""

    def __init__(self, env):
        super().__init__(env)
        self._raw = env.unwrapped
        inner = getattr(env, "env", None)
        self._chain = inner if type(env) is AssertOutOfBounds \
            and type(inner) is TerminateIllegal else None

    def last(self, observe: bool = True):
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        raw = self._raw
        if not raw.agents:  # PettingZoo's would raise a bare KeyError of the last agent
            raise ResetNeededError("env()", ended=True, call="last()")
        agent = raw.agent_selection
        if not observe:
            obs = None
        elif self._chain is not None:  # TerminateIllegal.observe of the agent to act
            obs = self._chain._prev_obs = raw.observe(agent)
        else:
            obs = self.env.observe(agent)
        return (obs, raw._cumulative_rewards[agent], raw.terminations[agent],
                raw.truncations[agent], raw.infos[agent])

    def step(self, action):
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not self._raw.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            chain = self._chain
            if chain is None:
                self.env.step(action)
                return
            if type(action) is not int or not 0 <= action < NUM_ACTIONS:
                check_action(self._raw, action)  # AssertOutOfBounds
            chain.step(action)
