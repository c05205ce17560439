"""Bots seated inside the AEC env: ``spades_v1.env(bots={"player_1": "medium", ...})``.

``BotSeatsEnv`` runs a ``spades_v1.raw_env`` (made by the ``make_inner`` it is given) and plays the seats named in ``bots`` itself, so a
framework sees only the learning agents (``possible_agents`` = the other seats, in seat order).
After each learning agent's move (and at ``reset``) the bots play until a learning agent is to act
or the episode ends.

| item            | value                                                                     |
|-----------------|---------------------------------------------------------------------------|
| agents          | the seats not in ``bots`` (1 to 4 agents), e.g. ``['player_0', 'player_2']`` |
| observation     | the ``spades_v1`` observation of that agent (unchanged)                    |
| reward          | the ``spades_v1`` reward of that agent, summed over its own move and the bots' moves that follow it (a hand ended by a bot's card is credited in that step) |
| info            | the agent's ``spades_v1`` info (``hand_result`` after a hand, ``winner``)  |
| state()         | the full-information state (``spades_env.state``), as ``raw_env.state()``  |
| render()        | as ``raw_env.render()``                                                    |

A bot is a ``make_bot`` spec (``"random"``, ``"easy"``, ``"medium"``, ``"hard"``, ``"insane"``,
``"checkpoint:PATH"``), an object with ``act(view) -> action id`` or a callable
``view -> action id``; it receives only its seat's ``PlayerView``. Named bots are rebuilt at every
``reset`` with seeds drawn from the env's generator, so ``reset(seed=s)`` replays the same game for
the same learner actions; the deals are those of ``spades_v1.env().reset(seed=s)``.
"""

from __future__ import annotations

import numpy as np
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv

from .cards import AGENTS
from .engine import IllegalActionError, ResetNeededError

__all__ = ["BotSeatsEnv"]


def _check_bots(bots) -> dict[int, object]:
    """``{agent: spec}`` -> ``{seat: spec}``, with clear errors (make_bot's for a bad name)."""
    from .bots import make_bot
    if not isinstance(bots, dict):
        raise ValueError(f"bots must be a dict {{agent: bot}}, e.g. {{'player_1': 'medium'}}, "
                         f"got {bots!r}")
    out = {}
    for agent, spec in bots.items():
        if agent not in AGENTS:
            raise ValueError(f"bots: unknown agent {agent!r}; agents are {list(AGENTS)}")
        if isinstance(spec, str):
            make_bot(spec, seed=0)  # fail now, with make_bot's message
        elif not (hasattr(spec, "act") or callable(spec)):
            raise ValueError(f"bot for {agent} must be a make_bot name, an object with "
                             f"act(view) or a callable view -> action, got {spec!r}")
        out[AGENTS.index(agent)] = spec
    if len(out) == 4:
        raise ValueError("bots seats all four agents: leave at least one learning agent")
    return out


class BotSeatsEnv(AECEnv, EzPickle):
    """AEC env whose ``bots`` seats are played by bots (module docstring: the table).

    Args:
        bots: ``{agent: bot}`` for 1 to 3 of ``player_0..3`` (bot: ``make_bot`` spec, object with
            ``act(view)``, or callable ``view -> action``).
        make_inner: makes the AEC env whose seats are played (``spades_v1.env(bots=...)`` passes
            ``functools.partial(raw_env, **options)``), called once the bots are checked.
    Raises:
        ValueError: a bad ``bots`` dict (unknown agent, bad spec, all four seats) or a bad env
            option; at ``step``, a bot that returns an illegal action (names the seat and bot).
        IllegalActionError: from ``step``, a learning agent's illegal action (the state is
            unchanged); ``spades_v1.env`` wraps this class to end the episode instead.
    """

    def __init__(self, bots, make_inner):
        EzPickle.__init__(self, bots, make_inner)
        super().__init__()
        self._specs = _check_bots(bots)
        self.inner = make_inner()
        self.metadata = dict(self.inner.metadata)
        self.render_mode = self.inner.render_mode
        self.possible_agents = [a for s, a in enumerate(AGENTS) if s not in self._specs]
        self.agents = list(self.possible_agents)
        self._learners = frozenset(self.possible_agents)
        self.observation_spaces = {a: self.inner.observation_spaces[a]
                                   for a in self.possible_agents}
        self.action_spaces = {a: self.inner.action_spaces[a] for a in self.possible_agents}
        self.state_space = self.inner.state_space
        self._bots: dict[int, object] = {}
        self._bot_rng: np.random.Generator | None = None
        self._done = True
        self.game = None

    # ------------------------------------------------------------------ spaces, views
    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    @property
    def rules(self):
        return self.inner.rules

    @property
    def bots(self) -> dict:
        """The bots of the current game, ``{agent: bot}`` (rebuilt at each ``reset``)."""
        return {AGENTS[s]: b for s, b in self._bots.items()}

    def observe(self, agent):
        """The ``spades_v1`` observation of ``agent`` (all-zero mask once the episode is over)."""
        d = self.inner.observe(agent)
        if self._done:
            d["action_mask"][:] = 0
        return d

    def legal_actions(self) -> list[int]:
        """Legal action ids of the learning agent to act ([] once the episode is over)."""
        return [] if self._done else self.inner.legal_actions()

    def state(self) -> np.ndarray:
        """Full-information state (``raw_env.state``): float32 ``(735,)``."""
        return self.inner.state()

    def render(self):
        return self.inner.render()

    def close(self):
        self.inner.close()

    # ------------------------------------------------------------------ reset / step
    def reset(self, seed=None, options=None):
        """Start a game (``raw_env.reset``), build the bots, let them play up to a learning agent.

        ``seed`` fixes the deals (the same as ``raw_env`` with that seed) and the bots' seeds.
        """
        from .bots import make_bot
        inner = self.inner
        inner.reset(seed=seed, options=options)
        if seed is not None or self._bot_rng is None:
            self._bot_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
        self._bots = {}
        for s in sorted(self._specs):
            spec = self._specs[s]
            bot_seed = int(self._bot_rng.integers(2 ** 63))
            self._bots[s] = make_bot(spec, seed=bot_seed) if isinstance(spec, str) else spec
        self.game = inner.game
        self.agents = list(self.possible_agents)
        self._done = False
        self._last = self.possible_agents[-1]
        gained = self._advance()
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = {a: gained[a] for a in self.agents}
        self._sync()

    def _advance(self) -> dict:
        """Bots act until a learning agent is to act or the episode ends; returns each learning
        agent's rewards from those moves."""
        inner = self.inner
        learners = self.possible_agents
        gained = dict.fromkeys(learners, 0.0)
        while not inner._done and inner.agent_selection not in self._learners:
            s = inner.game.current_player
            bot = self._bots[s]
            view = inner.game.view(s)
            action = bot.act(view) if hasattr(bot, "act") else bot(view)
            try:
                inner.step(action)
            except IllegalActionError as e:
                raise ValueError(f"bot for {AGENTS[s]} ({self._specs[s]!r}) chose an illegal "
                                 f"action {action!r}: {e}") from None
            rewards = inner.rewards
            for a in learners:
                gained[a] += rewards[a]
        return gained

    def _sync(self) -> None:
        inner = self.inner
        agents = self.agents
        self.terminations = {a: inner.terminations[a] for a in agents}
        self.truncations = {a: inner.truncations[a] for a in agents}
        self.infos = {a: inner.infos[a] for a in agents}
        self._done = inner._done
        if not self._done:
            self.agent_selection = inner.agent_selection
        else:  # the next learning agent after the last one that acted takes the first dead step
            k = self.possible_agents.index(self._last)
            self.agent_selection = self.possible_agents[(k + 1) % len(self.possible_agents)]

    def last(self, observe: bool = True):
        """PettingZoo's ``AECEnv.last`` for ``agent_selection``.

        Raises:
            ResetNeededError: before ``reset()``, or after the episode ended (no agent left).
        """
        if self.game is None or not self.agents:
            raise ResetNeededError("BotSeatsEnv", ended=self.game is not None, call="last()")
        return super().last(observe)

    def step(self, action):
        """Take ``action`` for ``agent_selection``, then let the bots play.

        Raises:
            IllegalActionError: an illegal action (state unchanged).
            ValueError: a bot returned an illegal action.
            ResetNeededError: called before ``reset()``, or after the episode ended
                (no agent left).
        """
        if self.game is None or not self.agents:
            raise ResetNeededError("BotSeatsEnv", ended=self.game is not None)
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        inner = self.inner
        inner.step(action)  # raises before any change if illegal
        own = {a: inner.rewards[a] for a in self.agents}
        gained = self._advance()
        self._last = agent
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: own[a] + gained[a] for a in self.agents}
        self._sync()
        self._accumulate_rewards()
