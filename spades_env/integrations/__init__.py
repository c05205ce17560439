"""Adapters for training frameworks, and a player that brings any policy into the arena.

Framework-free (importable with the base install):

| name                   | for                                                                    |
|------------------------|------------------------------------------------------------------------|
| ``PolicyPlayer``       | any policy ``fn(obs, mask) -> action id`` as an arena player (``spades_env.arena.play_match``) |
| ``TurnCreditWrapper``  | Tianshou's multi-agent route: every agent receives its own hand rewards (see its docstring) |
| ``vector_masks``       | action masks of a Gymnasium vector env in the default (next-step) autoreset mode |

Framework modules (import them only with the framework installed, ``pip install -e .[rllib]`` /
``.[tianshou]``): ``spades_env.integrations.rllib`` (``SpadesRLlibEnv``: RLlib's
``observations``/``action_mask`` keys, bots inside; ``ActionMaskingPPOModule``; Ray cluster
helpers) and ``spades_env.integrations.tianshou`` (``tianshou_env``). Details and the framework
table: ``docs/integrations.md``; runnable scripts: ``examples/``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from pettingzoo import AECEnv

from ..cards import NUM_ACTIONS

__all__ = ["PolicyPlayer", "TurnCreditWrapper", "vector_masks", "legal_mask", "measure_learner",
           "add_measure_args"]


def legal_mask(view) -> np.ndarray:
    """Action mask of a ``PlayerView``: int8 ``(68,)``, 1 for each id in ``view.legal_actions``
    (all 0 when the seat is not to act) -- the env's ``"action_mask"``."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    mask[list(view.legal_actions)] = 1
    return mask


class PolicyPlayer:
    """An arena player (``act(view) -> action id``) from any policy ``fn(obs, mask) -> action``.

    Args:
        fn: called with ``obs`` (float32 ``(OBS_SIZE,)``, the ``spades_v1`` observation of the seat, or
            what ``encoder`` returns) and ``mask`` (int8 ``(68,)``, 1 = legal); returns an action
            id (int, numpy integer or 0-d integer array).
        name: label in the arena's table.
        history: encode with the ``history`` piece (``OBS_SIZE + HISTORY_SIZE``), as
            ``spades_v1.env(history=True)``.
        encoder: ``view -> obs`` to use instead (e.g. ``spades_env.observation.encode``: the
            ``spades_v2`` observation, version 3, with the rules piece).
    Raises:
        ValueError: from ``act``, when ``fn`` returns something that is not a legal action id
            (the message names the player, the action and the legal ids).

    Usage: ``play_match(PolicyPlayer(fn, "ppo"), "random", games=100, seed=1)``. The player sees
    only its seat's view (the observation is built from ``view``), as every bot does.
    """

    def __init__(self, fn: Callable, name: str = "policy", history: bool = False,
                 encoder: Callable | None = None):
        if not callable(fn):
            raise ValueError(f"fn must be a callable fn(obs, mask) -> action, got {fn!r}")
        self.fn = fn
        self.name = str(name)
        if encoder is None:
            from ..spades_v1 import encode_full

            def encoder(view, _h=bool(history)):
                return encode_full(view, _h, obs_version=2)  # as spades_v1 gives it
        self.encoder = encoder

    def act(self, view) -> int:
        obs = self.encoder(view)
        mask = legal_mask(view)
        a = self.fn(obs, mask)
        if isinstance(a, np.ndarray) and a.size == 1 and np.issubdtype(a.dtype, np.integer):
            a = a.reshape(()).item()
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) \
                or not 0 <= int(a) < NUM_ACTIONS or not mask[int(a)]:
            raise ValueError(f"player {self.name!r} returned {a!r}, not a legal action id; legal: "
                             f"{list(view.legal_actions)}")
        return int(a)

    def __call__(self, view) -> int:
        return self.act(view)


def vector_masks(masks: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Masks to sample the next actions of a Gymnasium vector env in the default autoreset mode.

    In ``AutoresetMode.NEXT_STEP`` (Gymnasium's default) a sub-env whose episode just ended
    reports an all-zero ``info["action_mask"]`` (no legal action: the episode is over), and the
    next ``step`` resets it and ignores its action. This returns ``masks`` (``(N, 68)``) as bool
    with those rows (``done``: ``terminated | truncated``, shape ``(N,)``) set all True, so that
    masked sampling never sees an empty row. With ``AutoresetMode.SAME_STEP`` no row is ever empty
    and this is not needed (``docs/integrations.md``).
    """
    m = np.asarray(masks).astype(bool)
    d = np.asarray(done, dtype=bool)
    if m.ndim != 2 or d.shape != (m.shape[0],):
        raise ValueError(f"masks must be (N, 68) and done (N,), got {m.shape} and {d.shape}")
    m[d] = True
    return m


class TurnCreditWrapper(AECEnv):
    """Every agent receives its own rewards in a framework that credits ``rewards[actor]`` only.

    Tianshou's ``PettingZooEnv`` returns ``env.rewards`` after each step and its multi-agent
    policy gives each agent the reward of the steps where that agent acted. A hand ends on one
    card, so without this wrapper only the agent that played it gets the hand's reward (the other
    three get nothing from it). This wrapper changes what ``rewards`` shows:

    - after a step by agent ``a``, ``rewards[a]`` is everything ``a`` earned since its own
      previous step (its own move and every move since, the bots' included), and 0 for the
      others: each hand reward reaches each agent at its next move (PettingZoo's ``last()``
      convention, the reward that accrued since the agent last acted);
    - when the episode ends, each agent other than the one that made the last move gets one more
      turn (in seat order): its final observation, a mask with every action allowed (the action is
      ignored), and ``rewards`` = what it earned since its last move. Terminations (or
      truncations) are reported after the last of these turns.

    So the rewards credited to an agent's steps add up to exactly its episode reward, and each
    hand's reward reaches every agent (tested); it is credited to the agent's move after the
    hand ended (one move late), which matters only for one-step targets.

    Args:
        env: a ``spades_v1.env(...)`` (bots allowed) or any AEC env with ``action_mask`` obs.
    """

    def __init__(self, env):
        super().__init__()
        self.env = env
        self.metadata = dict(getattr(env, "metadata", {}))
        self.possible_agents = list(env.possible_agents)
        self.agents = list(self.possible_agents)
        self.render_mode = getattr(env, "render_mode", None)
        self._pending: dict = {}
        self._final: list = []
        self._in_final = False

    def observation_space(self, agent):
        return self.env.observation_space(agent)

    def action_space(self, agent):
        return self.env.action_space(agent)

    @property
    def unwrapped(self):
        return self.env.unwrapped

    def state(self):
        return self.env.state()

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()

    def reset(self, seed=None, options=None):
        self.env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self._pending = dict.fromkeys(self.possible_agents, 0.0)
        for a, r in self.env._cumulative_rewards.items():  # rewards from bots' moves at reset
            if a in self._pending:
                self._pending[a] += r
        self._final = []
        self._in_final = False
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: dict(self.env.infos.get(a, {})) for a in self.agents}
        self.agent_selection = self.env.agent_selection

    def observe(self, agent):
        obs = self.env.observe(agent)
        if self._in_final and agent == self.agent_selection and agent in self._final:
            obs = dict(obs)
            obs["action_mask"] = np.ones_like(obs["action_mask"])
        return obs

    def last(self, observe: bool = True):
        """PettingZoo's ``AECEnv.last`` for ``agent_selection``; raises
        ``spades_v1.ResetNeededError`` before ``reset()`` and after the episode ended."""
        agent = getattr(self, "agent_selection", None)
        if agent is None or not self.agents:
            from ..spades_v1 import ResetNeededError
            raise ResetNeededError("TurnCreditWrapper", ended=agent is not None, call="last()")
        return super().last(observe)

    def step(self, action):
        """Step the wrapped env; the rewards are held until the seat's next turn (class
        docstring). Raises ``spades_v1.ResetNeededError`` before ``reset()`` and after the
        episode ended (no agent left)."""
        agent = getattr(self, "agent_selection", None)
        if agent is None or not self._pending or not self.agents:
            from ..spades_v1 import ResetNeededError
            raise ResetNeededError("TurnCreditWrapper", ended=agent is not None
                                   and bool(self._pending))
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)  # PettingZoo's dead-step protocol after the end
        if self._in_final:
            self._deliver(agent)
            self._final.remove(agent)
            if self._final:
                self.agent_selection = self._final[0]
            else:
                self._finish()
            return
        env = self.env
        env.step(action)
        for a in self.possible_agents:
            self._pending[a] += env.rewards.get(a, 0.0)
        self._deliver(agent)
        self.infos = {a: dict(env.infos.get(a, {})) for a in self.agents}
        inner_done = all(env.terminations.get(a, False) or env.truncations.get(a, False)
                         for a in self.possible_agents)
        if not inner_done:
            self.agent_selection = env.agent_selection
            return
        k = self.possible_agents.index(agent)
        n = len(self.possible_agents)
        self._final = [self.possible_agents[(k + i) % n] for i in range(1, n)]
        if self._final:
            self._in_final = True
            self.agent_selection = self._final[0]
        else:
            self._finish()

    def _deliver(self, agent) -> None:
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self.rewards[agent] = float(self._pending[agent])
        self._pending[agent] = 0.0
        self._cumulative_rewards = dict(self.rewards)

    def _finish(self) -> None:
        env = self.env
        trunc = any(env.truncations.get(a, False) for a in self.possible_agents) and not any(
            env.terminations.get(a, False) for a in self.possible_agents)
        self._in_final = False
        self.terminations = dict.fromkeys(self.agents, not trunc)
        self.truncations = dict.fromkeys(self.agents, trunc)
        self.infos = {a: dict(env.infos.get(a, {})) for a in self.agents}


def _deals(text: str, least: int) -> int:
    """An ``argparse`` type: an int >= ``least`` (checked before any training starts)."""
    import argparse
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or n < least:
        raise argparse.ArgumentTypeError(f"must be an int >= {least}, got {text!r}")
    return n


def _bot_name(text: str) -> str:
    """An ``argparse`` type: a name ``make_bot`` takes (checked before any training starts)."""
    import argparse

    from spades_env.bots import make_bot
    try:
        make_bot(text)
    except (ValueError, OSError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def add_measure_args(parser) -> None:
    """The examples' options of ``measure_learner`` on an ``argparse`` parser: ``--eval-hands``
    (300, at least 2), ``--vs`` (``random``, any ``make_bot`` name), ``--init-hands`` (100, 0 =
    skip), ``--untrained`` and ``--json`` (None). Bad values are refused when the command line
    is read, before any training."""
    parser.add_argument("--eval-hands", type=lambda t: _deals(t, 2), default=300,
                        help="duplicate single-hand deals against --vs in the arena (>= 2)")
    parser.add_argument("--vs", type=_bot_name, default="random",
                        help="bot to measure against in the arena")
    parser.add_argument("--init-hands", type=lambda t: _deals(t, 0), default=100,
                        help="duplicate pairs of the trained learner against its untrained start "
                             "(0: skip)")
    parser.add_argument("--untrained", action="store_true",
                        help="skip training: measure the freshly initialised policy")
    parser.add_argument("--json", default=None, help="write the arena result here")


def measure_learner(learner, vs: str, hands: int, seed: int, untrained=None,
                    init_hands: int = 0, log=print):
    """The examples' check of a trained policy, in the arena (``spades_env.arena.play_match``):
    ``hands`` single-hand duplicate deals against bot ``vs`` (seed ``seed + 1000``) and, with
    an ``untrained`` player and ``init_hands`` > 0, ``init_hands`` deals against the learner's own
    untrained start (seed ``seed + 2000``): what training changed.

    Returns ``(result, beats, vs_init)``: the ``ArenaResult`` against ``vs``, whether its 95%
    interval of points per hand is above 0, and the ``ArenaResult`` against the start (or None).
    """
    from spades_env.arena import play_match
    result = play_match(learner, vs, hands=hands, seed=seed + 1000)
    log(result.summary())
    lo, hi = result.point_diff_ci
    beats = lo > 0
    log(f"learner beats {vs}: {beats} (95% CI of points per hand [{lo:+.1f}, {hi:+.1f}])")
    vs_init = None
    if init_hands and untrained is not None:
        vs_init = play_match(learner, untrained, hands=init_hands, seed=seed + 2000)
        log(vs_init.summary())
        lo, hi = vs_init.point_diff_ci
        log(f"learner beats its untrained start: {lo > 0} (95% CI [{lo:+.1f}, {hi:+.1f}])")
    return result, beats, vs_init
