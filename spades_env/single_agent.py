"""Gymnasium single-agent Spades: one learned seat, bots in the other three.

``SpadesSingleAgentEnv`` runs the ``spades_v1`` AEC env (same observation vector, same rewards,
same options) and lets bots play every seat but ``seat``. A bot is a level name for
``spades_env.bots.make_bot`` (``"random"``, ``"easy"``, ``"medium"``, ...) or any callable
``view -> action id`` taking a ``PlayerView`` (so it sees only its own seat's information).

| item              | value                                                                 |
|-------------------|-----------------------------------------------------------------------|
| observation_space | ``Box`` float32, shape ``(679,)`` (``(3591,)`` with ``history=True``): the ``spades_v1`` vector of ``seat``; ``(711,)`` (``(3623,)``) with ``obs_version=3``, the ``spades_v2`` vector; ``Box`` uint8 ``(120,)`` (0..255) with ``obs_format="compact"`` (``obs_version=3`` only, e.g. ``Spades-v2``; not with history): ``compact.expand(obs, compact.rules_table(env.unwrapped.rules))`` is the float32 vector, bit for bit |
| action_space      | ``Discrete(68)``: the engine's action ids                              |
| action_masks()    | bool ``(68,)``: legal actions now (what ``sb3_contrib.MaskablePPO`` calls); also ``info["action_mask"]`` as int8 |
| reward            | the ``spades_v1`` reward of ``seat``, summed over its own move and the bots' moves up to its next turn |
| terminated        | the game (or the ``hands_per_episode`` episode) is over; or an illegal action (see below) |
| truncated         | ``max_hands`` reached                                                  |
| info              | ``action_mask``; ``hand_result`` (score table) after a hand ends; ``winner`` at game end |

An illegal action ends the episode with ``illegal_reward`` (default -1) and
``info["illegal_action"]`` holding the engine's reason, as PettingZoo's ``TerminateIllegalWrapper``
does; with ``illegal_action="raise"`` it raises ``IllegalActionError`` instead (state unchanged).
With ``illegal_action="random_legal"`` the env plays a uniformly random legal action in its place
(drawn from the env's seeded generator), the game goes on, the step's info holds ``illegal_action``
(the reason) and ``played_action`` (the id played), ``illegal_count`` counts such steps in the
episode and ``illegal_total`` since the env was made (``reset`` clears only the first: an
evaluation loop resets after its last episode). This is for evaluating a policy that was trained
with masks but is run without them (SB3's ``model.predict(obs)`` or plain ``evaluate_policy``): the
hands are played out and the count shows how often the policy chose an illegal action. Training
should use the mask (``action_masks()``), never this replacement. The first illegal action that
ends an episode (the default ``"terminate"``) also emits a ``UserWarning``, once per process: a
policy predicting without its masks otherwise ends hands silently.

``render_mode="rgb_array"``: ``render()`` returns the table seen from ``seat`` (its own hand face
up, the others' hidden), ``uint8`` ``(480, 640, 3)`` (``spades_env.render_image``); it works with
Gymnasium's ``RecordVideo``.

Registered Gymnasium ids (``import spades_env`` registers them): ``"Spades-v1"`` (full games,
defaults as below) and ``"SpadesHand-v1"`` (one hand per episode), and ``"Spades-v2"`` /
``"SpadesHand-v2"``, the same with ``obs_version=3`` (the ``spades_v2`` observation: the rules
piece); any argument below may be
given to ``gym.make`` / ``gym.make_vec``, e.g. ``gym.make("Spades-v1", opponents="easy")``.
``gym.make`` wraps the env, so reach ``action_masks()`` as ``env.unwrapped.action_masks()`` or
``env.get_wrapper_attr("action_masks")()`` (vector envs: ``envs.call("action_masks")``, or the
``"action_mask"`` info key).
"""

from __future__ import annotations

import copy
import warnings
from typing import Callable, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces

from .bots import make_bot
from .cards import AGENTS, NUM_ACTIONS, OPPONENTS, PARTNER
from .engine import IllegalActionError
from .spades_v1 import raw_env, reset_start

BotSpec = "str | Callable"
ILLEGAL_ACTION_MODES = ("terminate", "raise", "random_legal")
_warned_illegal_end = False  # the one-time warning of an episode ended by an illegal action


def _warn_illegal_end(why: str, reward: float) -> None:
    """Warn, once per process, that an illegal action ended an episode."""
    global _warned_illegal_end
    if _warned_illegal_end:
        return
    _warned_illegal_end = True
    warnings.warn(
        f"SpadesSingleAgentEnv: an illegal action ended the episode ({why}; reward "
        f"{reward:g}). Pick from env.action_masks() (MaskablePPO: predict(obs, "
        f"action_masks=...)), or make the env with illegal_action='random_legal' to evaluate a "
        f"policy without its masks. Shown once per process.", UserWarning, stacklevel=3)


class SpadesSingleAgentEnv(gymnasium.Env):
    """One seat learned, bots in the other three (module docstring: spaces, reward, info).

    Args:
        seat: the learned seat, 0..3.
        partner: bot for seat ``seat + 2``: a ``make_bot`` name or a callable ``view -> action``.
        opponents: bot for both opponents, or a pair ``(left, right)`` (seats ``seat+1``,
            ``seat+3``).
        illegal_action: ``"terminate"`` (default), ``"raise"`` or ``"random_legal"``.
        illegal_reward: reward for an illegal action under ``"terminate"`` (finite float, default
            -1).
        render_mode: None, ``"ansi"``, ``"human"`` or ``"rgb_array"``.
        **options: ``spades_v1.raw_env`` options (``reward``, ``hands_per_episode``,
            ``max_hands``, ``history``, ``rules``, ``obs_version``, ``obs_format`` and ``Rules``
            fields).
    Raises:
        ValueError: a bad seat, bot spec or option (the message names it).

    Named bots are rebuilt on every ``reset`` with seeds drawn from the env's seeded generator,
    so ``reset(seed=s)`` replays the same game when the learner plays the same actions. Callable
    bots keep their own state and randomness.
    """

    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, seat: int = 0, partner="medium", opponents="medium",
                 illegal_action: str = "terminate", illegal_reward: float = -1.0,
                 render_mode: str | None = None, **options):
        if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < 4:
            raise ValueError(f"seat must be 0..3, got {seat!r}")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got "
                             f"{illegal_action!r}")
        self.seat = int(seat)
        self.agent = AGENTS[self.seat]
        if isinstance(opponents, (str, bytes)) or callable(opponents):
            opponents = (opponents, opponents)
        elif not (isinstance(opponents, Sequence) and len(opponents) == 2):
            raise ValueError("opponents must be one bot (a name or a callable) or a pair of bots "
                             f"(left, right), got {opponents!r}")
        left, right = OPPONENTS[self.seat]
        self._specs = {PARTNER[self.seat]: partner, left: opponents[0], right: opponents[1]}
        for s, spec in self._specs.items():
            if not (isinstance(spec, str) or callable(spec)):
                raise ValueError(f"bot for seat {s} must be a make_bot name or a callable "
                                 f"view -> action, got {spec!r}")
            if isinstance(spec, str):
                make_bot(spec, seed=0)  # fail now, with make_bot's message, on a bad name
        self.illegal_action = illegal_action
        if isinstance(illegal_reward, (bool, np.bool_)) \
                or not isinstance(illegal_reward, (int, float, np.integer, np.floating)) \
                or not np.isfinite(illegal_reward):
            raise ValueError(f"illegal_reward must be a finite number, got {illegal_reward!r}")
        self.illegal_reward = float(illegal_reward)
        self.render_mode = render_mode
        self._env = raw_env(render_mode=render_mode, **options)
        self.observation_space = self._env.observation_space(self.agent)["observation"]
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._bots: dict[int, Callable] = {}
        self._done = True
        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        self.illegal_count = 0  # replaced illegal actions in this episode ("random_legal")
        self.illegal_total = 0  # ... since the env was made (reset keeps it)

    @property
    def game(self):
        """The underlying ``SpadesGame`` (full information: for tests and tools, not agents)."""
        return self._env.game

    @property
    def rules(self):
        return self._env.rules

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start a game; bots play until ``seat`` is to act. Returns ``(obs, info)``.

        Args:
            seed: None or an int >= 0 (Gymnasium's seeding).
            options: None or a dict with the one option ``spades_v1`` honours: ``"game"``, a
                running ``SpadesGame`` under the env's rules to start from (a copy is played;
                e.g. ``SpadesGame.from_deal(...)``), or None.
        Raises:
            ValueError: a bad seed, ``options`` that is not a dict, an option other than
                ``"game"`` (named in the message), or a ``game`` that is not a running
                ``SpadesGame`` under the env's rules; nothing changes then.
        """
        game = reset_start(seed, options, self.rules, only_game="SpadesSingleAgentEnv")
        super().reset(seed=None if seed is None else int(seed))
        rng = self.np_random
        self._env.reset(seed=int(rng.integers(2 ** 63)),
                        options=None if game is None else {"game": game})
        self._bots = {}
        for s in sorted(self._specs):
            spec = self._specs[s]
            bot_seed = int(rng.integers(2 ** 63))
            self._bots[s] = make_bot(spec, seed=bot_seed) if isinstance(spec, str) else spec
        self._done = False
        self.illegal_count = 0
        self._advance()
        obs, info = self._observe()
        return obs, info

    def _advance(self) -> float:
        """Let the bots act until it is the learner's turn or the episode ends; returns the
        learner's reward from those moves."""
        env = self._env
        me = self.agent
        total = 0.0
        while not (env.terminations[me] or env.truncations[me]) and env.agent_selection != me:
            s = env.game.current_player
            view = env.game.view(s)
            action = self._bots[s](view)
            try:
                env.step(action)
            except IllegalActionError as e:
                raise ValueError(f"bot for seat {s} ({self._specs[s]!r}) chose an illegal action "
                                 f"{action!r}: {e}") from None
            total += env.rewards[me]
        if env.terminations[me] or env.truncations[me]:
            self._done = True
        return total

    def _observe(self):
        d = self._env.observe(self.agent)
        self._mask = d["action_mask"]
        info = copy.deepcopy(self._env.infos[self.agent])  # the caller's to edit
        info["action_mask"] = self._mask.copy()
        return d["observation"], info

    def action_masks(self) -> np.ndarray:
        """Legal actions of the learner now: bool array of shape ``(68,)`` (all False once the
        episode is over)."""
        return self._mask.astype(bool)

    def step(self, action):
        """Play ``action`` for the learner, then the bots until its next turn or the end.

        Returns ``(obs, reward, terminated, truncated, info)``.
        Raises:
            RuntimeError: the episode is over (call ``reset``).
            IllegalActionError: an illegal action with ``illegal_action="raise"``.
        """
        if self._done:
            raise RuntimeError("the episode is over: call reset() before step()"
                               if self._env.game is not None else
                               "reset() needs to be called before step()")
        env = self._env
        why = None
        if isinstance(action, np.ndarray) and action.shape == () \
                and np.issubdtype(action.dtype, np.integer):
            action = action.item()  # a 0-d int array is in Discrete(68) (e.g. model.predict)
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) \
                or np.ndim(action) != 0:
            why = f"action must be an int action id, got {action!r}"
        else:
            action = int(action)
            if not 0 <= action < NUM_ACTIONS or not self._mask[action]:
                why = env.game.explain_illegal(action) or f"action {action} is not legal now"
        if why is not None and self.illegal_action == "random_legal":
            legal = np.flatnonzero(self._mask)
            action = int(legal[self.np_random.integers(len(legal))])
            self.illegal_count += 1
            self.illegal_total += 1
            obs, reward, term, trunc, info = self.step(action)
            info["illegal_action"] = why
            info["played_action"] = action
            return obs, reward, term, trunc, info
        if why is not None:
            if self.illegal_action == "raise":
                raise IllegalActionError(why)
            _warn_illegal_end(why, self.illegal_reward)
            self._done = True
            obs, info = self._observe()
            self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
            info["action_mask"] = self._mask.copy()
            info["illegal_action"] = why
            return obs, self.illegal_reward, True, False, info
        env.step(action)
        reward = env.rewards[self.agent]
        reward += self._advance()
        obs, info = self._observe()
        me = self.agent
        return obs, float(reward), bool(env.terminations[me]), bool(env.truncations[me]), info

    def render(self):
        """"ansi" returns text, "human" prints (``spades_v1``'s full table); "rgb_array" returns
        the table seen from ``seat``: ``uint8`` array ``(480, 640, 3)``."""
        if self.render_mode == "rgb_array":
            from .render_image import IMAGE_HEIGHT, IMAGE_WIDTH, draw_table
            if self.game is None:
                return np.zeros((IMAGE_HEIGHT, IMAGE_WIDTH, 3), dtype=np.uint8)
            return draw_table(self.game, viewer=self.seat)
        return self._env.render()

    def close(self):
        self._env.close()


__all__ = ["SpadesSingleAgentEnv", "ILLEGAL_ACTION_MODES"]
