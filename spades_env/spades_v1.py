# noqa: D212, D415
"""
# Spades (partnership, four players)

A PettingZoo AEC environment for partnership Spades, built on :class:`spades_env.SpadesGame`
(the rules are ``docs/rules.md``; the engine decides every legality, trick and score, this
module only passes them through).

| Import             | `from spades_env import spades_v1`                         |
|--------------------|------------------------------------------------------------|
| Actions            | Discrete                                                   |
| Parallel API       | No                                                         |
| Manual Control     | No                                                         |
| Agents             | `agents = ['player_0', 'player_1', 'player_2', 'player_3']` |
| Agents             | 4                                                          |
| Action Shape       | Discrete(68)                                               |
| Action Values      | 0..67                                                      |
| Observation Shape  | (679,) (3591,) with `history=True`                         |
| Observation Values | mostly [0, 1]; finite bounds for scores (see the table)    |
| State Shape        | (735,) full information, `state()` / `state_space`         |

## Arguments

```python
from spades_env import spades_v1

env = spades_v1.env(render_mode=None, reward="hand", hands_per_episode=None, max_hands=100,
                    history=False, rules=None, bots=None, obs_format="float32", **rule_fields)
```

- `render_mode`: `None`, `"ansi"` (``render()`` returns the text table), `"human"` (prints it) or
  `"rgb_array"` (``render()`` returns the table as an RGB image, `uint8` `(480, 640, 3)`, every
  hand face up; `spades_env.render_image`).
- `bots` (`env()` only): `{"player_1": "medium", "player_3": "medium"}`: the env plays those seats
  with bots (any `make_bot` spec, `checkpoint:PATH` included, or a callable `view -> action`) and
  its agents are the other seats only (`spades_env.bot_seats`).
- `reward`: `"hand"` (default) or `"game"`, see Rewards.
- `hands_per_episode`: `None` (default: the episode is the whole game, to the target) or a positive
  int: the episode ends (as a termination) after that many hands; `1` gives single-hand training.
- `max_hands`: a game still running after this many hands (default 100) ends as a truncation;
  `None` means no cap.
- `history`: append the ordered card-play history of the hand to the observation (see below).
- `obs_format`: `"float32"` (default) or `"compact"`: the observation as the 120 bytes of
  `spades_env.compact` (uint8, `Box(0, 255, (120,))`; `compact.expand(obs,
  compact.rules_table(env.rules))` is the float32 vector, bit for bit). Only `spades_v2`
  (observation version 3) without `history` has it: here it raises `ValueError`.
- `rules`: a `spades_env.Rules`, a preset name or a rules mapping (`"house,min_team_bid=4"`,
  `Rules.parse`); any `Rules` field may also be given as a keyword
  (`target_score=250`, `blind_nil=True`, ...), overriding that field of `rules`.
  Unknown keywords raise `ValueError`.

## Agents

`player_i` sits in seat `i` (docs/rules.md): seats 0..3 clockwise, partners opposite, team 0 =
`player_0` + `player_2`, team 1 = `player_1` + `player_3`. Agents act in the engine's order
(bidding left of the dealer first, then the trick leader, ...), not in a fixed cycle.

## Action space

| Action ID | Action                                                              |
|-----------|---------------------------------------------------------------------|
| 0..51     | play card `suit*13 + rank` (suits C D H S = 0..3, ranks 2..A = 0..12); also passes that card in the Blind Nil exchange |
| 52..65    | bid `action - 52` tricks; 52 is Nil                                 |
| 66        | bid Blind Nil (only with `blind_nil=True`, before looking)          |
| 67        | look at the hand (decline Blind Nil; only with `blind_nil=True`)    |

## Observation space

The observation is a dict with an `'observation'` vector (`float32`) and an `'action_mask'`
(`int8`, shape `(68,)`): the engine's legal actions for the agent to act, all zeros for every
other agent (and for everyone once the episode is over). The vector is built only from what the
observing seat may know (`game.view(seat)`); seats are relative to the observer: `rel = (seat - me)
% 4`, so 0 = me, 1 = left, 2 = partner, 3 = right; teams are (mine, theirs). The layout is the one
defined in `spades_env/observation.py` (shared with the batched torch engine):

| Index       | Piece          | Meaning                                                                 |
|-------------|----------------|-------------------------------------------------------------------------|
| 0 - 2       | phase          | one-hot: bidding, Blind Nil exchange, play (all 0 when the game or episode is over) |
| 3           | looked         | 1 once the observer has seen its own hand (always 1 without Blind Nil)  |
| 4 - 55      | hand           | own cards by card id; all 0 before looking                              |
| 56 - 263    | played         | 4 x 52: cards played this hand, by relative seat                        |
| 264 - 471   | trick          | 4 x 52: the card each relative seat played to the current trick        |
| 472 - 475   | led_suit       | one-hot suit led to the current trick (all 0 before the lead)           |
| 476 - 539   | bids           | 4 x 16 one-hot by relative seat: 0 not yet bid, 1 Nil, 1+b bid b, 15 Blind Nil |
| 540 - 543   | tricks_won     | tricks won this hand by relative seat / 13                              |
| 544 - 559   | voids          | 4 x 4: known voids by relative seat, by suit: failed to follow suit, or led a spade before spades were broken (then void in clubs, diamonds and hearts) |
| 560         | spades_broken  | 1 when spades are broken                                                |
| 561         | trick_number   | completed tricks / 13                                                   |
| 562 - 565   | dealer         | one-hot relative seat of the dealer                                     |
| 566 - 569   | to_act         | one-hot relative seat of the player to act (all 0 when over)            |
| 570 - 571   | scores         | team totals (mine, theirs) / target_score (unbounded, may be negative)  |
| 572 - 573   | bags           | team bag counts (mine, theirs) / bag_limit                              |
| 574         | target         | target_score / 500                                                      |
| 575 - 678   | exchange       | 2 x 52, this hand's Blind Nil exchange as the observer saw it: 575 - 626 the cards it passed to its partner that the partner still holds (known until played), 627 - 678 the cards it received from its partner; all 0 without an exchange (other seats never see it) |
| 679 - 3590  | history        | only with `history=True`: 52 slots x 56, slot k = the k-th card played this hand: one-hot relative seat (4) then one-hot card id (52); unused slots all 0 |

All values are in [0, 1] except `scores` and `target`. The space's bounds are finite: `scores`
within +-`spades_env.state.score_bound(rules, max_hands)` (the most a team total can move in
`max_hands` hands, over `target_score`: 146 with the standard rules and the default cap of 100;
float32's largest value with `max_hands=None`), `target` within [0, target_score / 500]. A game
passed with `reset(options={"game": g})` whose totals are already beyond those bounds leaves them.

## State

`state()` returns the full-information state (float32 `(735,)`, all four hands, absolute seats;
the layout table is in `spades_env/state.py`) and `state_space` its `Box`: for centralised critics
during training, never as a policy input. The history piece holds
the card plays in order; the order of the bids needs no history (bidding starts left of the
dealer), and the Blind Nil exchange is left out (only two seats see it). When an episode ends
after a hand but the game goes on (`hands_per_episode`, `max_hands`), the final observation shows
the finished hand as the engine shows a finished game: all tricks taken, phase and to_act all 0,
the new totals.

## Rewards

| `reward=` | when                    | each agent receives                                              |
|-----------|-------------------------|------------------------------------------------------------------|
| `"hand"`  | at the end of each hand | (own team's hand points - other team's hand points) / 100       |
| `"game"`  | at the end of the game  | +1 to the winning team, -1 to the losing team                    |
| `"game"`  | episode ends after `hands_per_episode` hands | +1 / -1 to the team ahead / behind in game total, 0 if level |
| `"game"`  | truncation (`max_hands`)| 0                                                                |

Partners always receive equal rewards and the two teams' rewards sum to zero. With `"hand"`, the
sum of an agent's rewards over a game is (own total - other total) / 100 (the engine's scores).
`env()` wraps `raw_env` with PettingZoo's `TerminateIllegalWrapper(illegal_reward=-1)`,
`AssertOutOfBoundsWrapper` and `OrderEnforcingWrapper` (fast subclasses with the same behaviour,
`spades_env.aec_wrappers`, tested move by move against PettingZoo's classes; one difference:
after an illegal move every mask is all zeros): an illegal action ends the episode with -1 for
the agent that took it and 0 for the others, as PettingZoo documents for its classic games. Something that is not an action
id 0..67 at all (a float, a string, a bool, -1, 68...) raises `ActionOutOfSpaceError` (a
`ValueError` and the `AssertionError` of PettingZoo's wrapper, raised even under `python -O`).
`raw_env.step` raises `IllegalActionError` (a `ValueError`) with the reason instead, and leaves
the state unchanged.

## Infos

At the end of each hand every agent's info holds `"hand_result"`: the hand's score table
(`HandResult.to_dict()`: bids, tricks, and per team contract points, bags, Nil points, bag
penalty, hand points, total, bags after). It stays until that agent acts again. At the end of the
game the info also holds `"winner"` (team 0 or 1). The legal actions are `np.flatnonzero(mask)`.

## Seeding

`reset(seed=s)` fixes the dealer draw and every deal of the game; `reset()` without a seed continues
the env's own generator (seeded from entropy only if the env was never seeded).

## Version History

* v1 (spades_env 0.2.0): observation version 2 (`spades_env.observation.OBS_VERSION`), 679
  floats. New `exchange` piece (575 - 678: the cards passed and received in a Blind Nil
  exchange); `voids` also shows the voids revealed by a spade led before spades were broken.
  Pieces 0 - 574 keep their offsets: a policy trained on version 1 (575 floats) reads
  `obs[:575]` (`OBS_SIZE_V1`); the history piece moved to 679. Also new: `bots=` seats played by
  the env, `state()` / `state_space`, `render_mode="rgb_array"`, `illegal_action=`. The Gymnasium
  ids moved with it: `Spades-v1`, `SpadesHand-v1`.
* v0 (spades_env 0.1.0): initial release, observation version 1 (575 floats). `spades_v0` is
  kept as an alias that warns and gives v1; `Spades-v0` is no longer registered.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv

from .aec_obs import check_obs_format, compact_box, mask_array, pack_row
from .aec_wrappers import ActionOutOfSpaceError, wrap
from .cards import AGENTS, NUM_ACTIONS
from .engine import IllegalActionError, ResetNeededError, SpadesGame
from .observation import (  # noqa: F401 - the encoders, re-exported (their home is observation)
    HISTORY_SIZE, HISTORY_SLOT, OBS_SIZE, OBS_SIZE_V2, OFFSETS, IncrementalEncoder,
    encode, encode_full, encode_history, rules_features,
)
from .render import render_game, render_score_table
from .state import encode_state, score_bound, state_space
from .rules import HandResult, Rules, TeamScore

REWARD_MODES = ("hand", "game")
HISTORY_OFFSET = OBS_SIZE_V2
"""Where the history piece starts in this env's observation (version 2: after 679 floats;
``spades_v2.HISTORY_OFFSET`` is 711)."""

_RULE_FIELDS = tuple(f.name for f in dataclasses.fields(Rules))


# ---------------------------------------------------------------------------- env
_TEAM_FIELDS = tuple(f.name for f in dataclasses.fields(TeamScore))
_TUPLE_FIELDS = ("bids", "blind", "tricks")


def _hand_result_dict(res: HandResult) -> dict:
    """``res.to_dict()`` without ``dataclasses.asdict``'s deep copies (tested equal)."""
    teams = []
    for t in res.teams:
        d = {f: getattr(t, f) for f in _TEAM_FIELDS}
        for k in _TUPLE_FIELDS:
            d[k] = list(d[k])
        teams.append(d)
    return {"hand_number": res.hand_number, "dealer": res.dealer, "bids": list(res.bids),
            "blind": list(res.blind), "tricks": list(res.tricks), "teams": teams}


_warned_raw_tianshou = False


def _warn_raw_tianshou() -> None:
    """Warn (once per process) when Tianshou's ``PettingZooEnv`` resets this env with no
    ``integrations.TurnCreditWrapper`` between them: Tianshou then credits each hand's reward only
    to the agent that played its last card. Looks up the caller's frames (only at a reset)."""
    global _warned_raw_tianshou
    f = sys._getframe(2)
    for _ in range(24):
        if _warned_raw_tianshou or f is None:
            return
        name = f.f_globals.get("__name__", "")
        if name == "spades_env.integrations":  # TurnCreditWrapper.reset
            return
        if name.startswith("tianshou."):
            _warned_raw_tianshou = True
            warnings.warn("spades_v1 under Tianshou's PettingZooEnv without TurnCreditWrapper: "
                          "each hand's reward reaches only the agent that played its last card. "
                          "Use spades_env.integrations.tianshou.tianshou_env(...) (or "
                          "PettingZooEnv(TurnCreditWrapper(spades_v1.env(...)))). Shown once.",
                          UserWarning, stacklevel=2)
            return
        f = f.f_back


def parallel_env(**kwargs):
    """PettingZoo ``ParallelEnv`` over ``env(**kwargs)`` (same options, ``bots=`` included):
    PettingZoo's ``turn_based_aec_to_parallel``, since the game is turn-based (the trick's winner
    leads, so ``aec_to_parallel``'s fixed cycle does not hold). Every live agent observes each
    step; only the agent to act has legal actions, and the others' actions are ignored.

    ``step`` raises ``ResetNeededError`` before the first ``reset()`` (as the AEC env does), and
    ``ValueError`` naming the agent to act for actions that are not a dict, lack that agent or
    name an agent that is not in ``possible_agents``; an action out of range raises the AEC
    env's ``ActionOutOfSpaceError``. After the episode ended (``agents`` empty) it returns five
    empty dicts, as PettingZoo's ``aec_to_parallel`` does (its turn-based wrapper returns four)."""
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel_wrapper

    class TurnBasedParallelEnv(turn_based_aec_to_parallel_wrapper):
        def step(self, actions):
            if "agents" not in self.__dict__:  # set by reset()
                raise ResetNeededError("parallel_env()")
            if self.agents:
                who = self.aec_env.agent_selection
                if not isinstance(actions, dict):
                    raise ValueError(f"parallel_env(): step takes a dict of actions by agent "
                                     f"(with {who!r}, the agent to act), got "
                                     f"{type(actions).__name__}")
                unknown = [a for a in actions if a not in self.possible_agents]
                if unknown:
                    raise ValueError(f"parallel_env(): actions for unknown agents "
                                     f"{[str(a)[:40] for a in unknown[:4]]}; the agents are "
                                     f"{list(self.possible_agents)} and {who!r} is to act")
                if who not in actions:
                    raise ValueError(f"parallel_env(): the actions lack {who!r}, the agent to act")
            else:  # the episode is over: the five values of a step, all empty
                return {}, {}, {}, {}, {}
            return super().step(actions)

    return TurnBasedParallelEnv(kwargs.pop("_env", env)(**kwargs))


def env(bots=None, **kwargs):
    """The wrapped AEC env (illegal-action, bounds and order-enforcing wrappers); see the module
    docstring for the options. Raises ``ValueError`` for a bad option.

    ``bots={"player_1": "medium", "player_3": "medium"}`` (any ``make_bot`` spec, an object with
    ``act(view)`` or a callable ``view -> action``): the env plays those seats itself and its
    agents are only the other seats (``spades_env.bot_seats.BotSeatsEnv``).
    """
    return wrap_env(raw_env, bots, kwargs)


def wrap_env(raw, bots, kwargs):
    """``raw(**kwargs)`` (an AEC env class of this module or ``spades_v2``) with ``bots`` seated
    and the wrappers of ``env``."""
    if bots:
        from functools import partial

        from .bot_seats import BotSeatsEnv
        e = BotSeatsEnv(bots, partial(raw, **kwargs))
    elif bots is None or bots == {}:
        e = raw(**kwargs)
    else:
        raise ValueError(f"bots must be a dict {{agent: bot}} or None, got {bots!r}")
    return wrap(e)


def _make_rules(rules, rule_kwargs) -> Rules:
    if rules is None:
        rules = Rules()
    elif isinstance(rules, (str, dict)):
        rules = Rules.parse(rules)  # a preset name or a rules mapping (docs/rules.md)
    elif not isinstance(rules, Rules):
        raise ValueError(f"rules must be a spades_env.Rules, a preset name or a rules mapping "
                         f"('house,min_team_bid=4'), got {rules!r}")
    unknown = sorted(set(rule_kwargs) - set(_RULE_FIELDS))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; env options are render_mode, reward, "
                         f"hands_per_episode, max_hands, history, rules, obs_version, obs_format, "
                         f"and the Rules fields "
                         f"{list(_RULE_FIELDS)}")
    if rule_kwargs:
        rules = dataclasses.replace(rules, **rule_kwargs)  # Rules validates the values
    return rules


def _check_options(render_mode, reward, hands_per_episode, max_hands, metadata):
    if render_mode is not None and render_mode not in metadata["render_modes"]:
        raise ValueError(f"render_mode must be None or one of {metadata['render_modes']}, "
                         f"got {render_mode!r}")
    if reward not in REWARD_MODES:
        raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
    for name, v in (("hands_per_episode", hands_per_episode), ("max_hands", max_hands)):
        if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)
                              or not 1 <= v <= 10 ** 9):
            raise ValueError(f"{name} must be None or an int in 1..10**9, got {v!r}")


def reset_start(seed, options, rules: Rules, only_game: str | None = None) -> SpadesGame | None:
    """The checks of ``reset(seed, options)``, shared by this env and ``SpadesSingleAgentEnv``:
    ``seed`` None or an int >= 0, ``options`` None or a dict whose ``"game"`` (if any) is a
    running ``SpadesGame`` under ``rules``. With ``only_game`` (the caller's name) any other key
    of ``options`` is refused too. Returns that game, or None.

    Raises:
        ValueError: naming the argument and what it should be.
    """
    if seed is not None and (isinstance(seed, (bool, np.bool_))
                             or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed must be None or an int >= 0, got {seed!r}")
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"options must be None or a dict, got {type(options).__name__}")
    unknown = sorted(map(repr, set(options or {}) - {"game"})) if only_game else []
    if unknown:
        raise ValueError(f"unknown reset option(s) {', '.join(unknown)}; "
                         f"{only_game}.reset takes options={{'game': SpadesGame}}")
    start = (options or {}).get("game")
    if start is not None:
        if not isinstance(start, SpadesGame):
            raise ValueError(f"options['game'] must be a SpadesGame, got {start!r}")
        if start.rules != rules:
            raise ValueError(f"options['game'] has rules {start.rules}, the env has {rules}")
        if start.is_over:
            raise ValueError("options['game'] is already over")
    return start


def observation_space(history: bool = False, rules: Rules | None = None,
                      max_hands: int | None = 100, obs_version: int = 2,
                      obs_format: str = "float32") -> spaces.Dict:
    """The Dict space of one agent's observation (bounds as in the module docstring table):
    ``obs_version`` 2 (``spades_v1``: 679 floats) or 3 (``spades_v2``: 711, the rules piece
    appended, bounded by its own values), then the history piece with ``history``.
    ``obs_format="compact"`` (version 3, no history): ``aec_obs.compact_box()``, uint8 (120,).

    The bounds are finite: ``scores`` within ``+-spades_env.state.score_bound(rules, max_hands)``
    (the most a total can reach in ``max_hands`` hands from 0-0, over ``target_score``), ``target``
    in ``[0, target_score / 500]`` (its value is that bound).

    Raises:
        ValueError: ``history`` not a bool, ``rules`` not a ``Rules``, ``max_hands`` not None
            or an int >= 1, or a bad ``obs_format`` (``aec_obs.check_obs_format``).
    """
    if not isinstance(history, (bool, np.bool_)):
        raise ValueError(f"history must be True or False, got {history!r}")
    rules = rules if rules is not None else Rules()
    base = _base_width(obs_version)
    if check_obs_format(obs_format, obs_version, history):
        return spaces.Dict({"observation": compact_box(), "action_mask": spaces.Box(
            low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8)})
    width = base + (HISTORY_SIZE if history else 0)
    low = np.zeros(width, dtype=np.float32)
    high = np.ones(width, dtype=np.float32)
    if base == OBS_SIZE:  # the rules piece: its values under these rules (above 1 for some)
        a, b = OFFSETS["rules"]
        high[a:b] = np.maximum(high[a:b], rules_features(rules))
    a, b = OFFSETS["scores"]
    bound = np.float32(score_bound(rules, max_hands))
    low[a:b] = -bound
    high[a:b] = bound
    high[OFFSETS["target"][0]] = np.float32(rules.target_score / 500.0)
    return spaces.Dict({
        "observation": spaces.Box(low=low, high=high, shape=(width,), dtype=np.float32),
        "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8),
    })


def _base_width(obs_version) -> int:
    """The observation's width before the history piece: 679 (version 2) or 711 (version 3)."""
    if obs_version not in (2, 3) or isinstance(obs_version, bool):
        raise ValueError(f"obs_version must be 2 (spades_v1, 679 floats) or 3 (spades_v2, 711 "
                         f"floats with the rules piece), got {obs_version!r}")
    return OBS_SIZE_V2 if obs_version == 2 else OBS_SIZE


class raw_env(AECEnv, EzPickle):
    """Partnership Spades as a PettingZoo AEC env (the module docstring is the spec).

    Args:
        render_mode: None, "ansi", "human" or "rgb_array" (see the module docstring).
        reward: "hand" or "game".
        hands_per_episode: None or int >= 1.
        max_hands: None or int >= 1 (default 100): truncation cap on hands per game.
        history: append the ordered card-play history piece to the observation.
        rules: a ``Rules``, a preset name or a rules mapping (``Rules.parse``);
            ``**rule_fields`` override its fields.
        obs_version: 2 (``spades_v1``'s default: 679 floats) or 3 (``spades_v2``: 711, the rules
            piece appended).
        obs_format: ``"float32"`` (default) or ``"compact"`` (``spades_v2`` only, without
            history): the observation as the 120 bytes of ``spades_env.compact``, uint8.
    Raises:
        ValueError: an unknown option or a value out of range (the message names it).
    """

    metadata = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "name": "spades_v1",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    OBS_VERSION = 2

    def __init__(self, render_mode=None, reward="hand", hands_per_episode=None, max_hands=100,
                 history=False, rules=None, obs_version=None, obs_format="float32",
                 **rule_fields):
        obs_version = self.OBS_VERSION if obs_version is None else obs_version
        EzPickle.__init__(self, render_mode=render_mode, reward=reward,
                          hands_per_episode=hands_per_episode, max_hands=max_hands,
                          history=history, rules=rules, obs_version=obs_version,
                          obs_format=obs_format, **rule_fields)
        super().__init__()
        _check_options(render_mode, reward, hands_per_episode, max_hands, self.metadata)
        self._base = _base_width(obs_version)
        self.obs_version = int(obs_version)
        if not isinstance(history, (bool, np.bool_)):
            raise ValueError(f"history must be True or False, got {history!r}")
        self._compact = check_obs_format(obs_format, obs_version, history)
        self.obs_format = obs_format
        self.rules = _make_rules(rules, rule_fields)
        self.render_mode = render_mode
        self.reward_mode = reward
        self.hands_per_episode = None if hands_per_episode is None else int(hands_per_episode)
        self.max_hands = None if max_hands is None else int(max_hands)
        self.history = bool(history)
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        self._seat = {a: i for i, a in enumerate(AGENTS)}
        # distinct space objects per agent so that seeding one does not seed the others
        self.observation_spaces = {a: observation_space(self.history, self.rules, self.max_hands,
                                                        self.obs_version, obs_format)
                                   for a in AGENTS}
        self.state_space = state_space(self.rules, self.max_hands)
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in AGENTS}
        self._enc = IncrementalEncoder(self.history)
        # what observe copies, by seat: the row (version 3) or its first 679 floats (version 2);
        # None for version 2 with history (the rules piece cut out of the middle)
        buf = self._enc.buf
        self._obs_rows = None if self.history and self._base != OBS_SIZE else \
            [buf[s] if self._base == OBS_SIZE else buf[s, :self._base] for s in range(4)]
        self._np_random: np.random.Generator | None = None
        self.game: SpadesGame | None = None
        self._done = True
        self._rewards_dirty = False

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ reset
    def reset(self, seed=None, options=None):
        """Start a new game (episode). ``seed`` (int) fixes the dealer draw and every deal.

        ``options={"game": g}`` starts from a copy of the ``SpadesGame`` ``g`` instead (for
        example ``SpadesGame.from_deal(...)`` for a scripted deal; its rules must equal the env's);
        hands are then counted from ``g.hand_number``. Other ``options`` keys are ignored
        (PettingZoo's api_test passes some).

        Raises:
            ValueError: a seed that is not None or an int >= 0, ``options`` that is not a dict,
                or a ``game`` that is not a running ``SpadesGame`` under the env's rules
                (nothing changes then).
        """
        start = reset_start(seed, options, self.rules)
        _warn_raw_tianshou()
        if seed is not None or self._np_random is None:
            self._np_random = np.random.default_rng(None if seed is None else int(seed))
        game_seed = int(self._np_random.integers(2 ** 63))
        self.game = SpadesGame(self.rules, seed=game_seed) if start is None else start.clone()
        self._episode_hands = 0
        self._done = False
        self._rewards_dirty = False
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0.0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos = {a: {} for a in AGENTS}
        self._skip_agent_selection = None
        if start is None:
            self._enc.new_hand(self.game)
        else:
            self._enc.rebuild(self.game)
        self.agent_selection = AGENTS[self.game.current_player]
        if self.render_mode == "human":
            self.render()

    # ------------------------------------------------------------------ observe
    def observe(self, agent):
        """``{"observation": float32 (width,), "action_mask": int8 (68,)}`` for ``agent``; with
        ``obs_format="compact"`` the observation is uint8 (120,) (``aec_obs.pack_row``).

        Both arrays are fresh copies; the mask is all zeros unless ``agent`` is to act.

        Raises:
            ValueError: ``agent`` is not one of ``possible_agents``."""
        try:
            seat = self._seat[agent]
        except (KeyError, TypeError):
            raise ValueError(f"unknown agent {agent!r}; the agents are {list(AGENTS)}") from None
        rows = self._obs_rows
        if rows is None:  # version 2 with history: the rules piece left out
            row = self._enc.buf[seat]
            obs = np.concatenate((row[:self._base], row[OBS_SIZE:]))
        elif self._compact:
            obs = pack_row(rows[seat])
        else:
            obs = rows[seat].copy()
        game = self.game
        if not self._done and seat == game.current_player:
            mask = mask_array(game.legal_mask())
        else:
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        return {"observation": obs, "action_mask": mask}

    def legal_actions(self) -> list[int]:
        """Legal action ids of the agent to act ([] once the episode is over)."""
        return [] if self._done else self.game.legal_actions()

    def state(self) -> np.ndarray:
        """Full-information state for a centralised critic: float32 ``(STATE_SIZE,)`` = (735,),
        layout in ``spades_env.state`` (absolute seats, all four hands). Never a policy input.

        Raises:
            RuntimeError: before the first ``reset``.
        """
        if self.game is None:
            raise RuntimeError("call reset() before state()")
        return encode_state(self.game)

    def last(self, observe: bool = True):
        """``(observation, cumulative reward, terminated, truncated, info)`` of
        ``agent_selection`` (PettingZoo's ``AECEnv.last``).

        Raises:
            ResetNeededError: before ``reset()``, or after the episode ended (no agent left)."""
        agent = getattr(self, "agent_selection", None)
        if agent is None:
            raise ResetNeededError("raw_env", call="last()")
        if not self.agents:
            raise ResetNeededError("raw_env", ended=True, call="last()")
        return (self.observe(agent) if observe else None, self._cumulative_rewards[agent],
                self.terminations[agent], self.truncations[agent], self.infos[agent])

    # ------------------------------------------------------------------ step
    def step(self, action):
        """Take ``action`` (an int action id) for ``agent_selection``.

        Raises:
            IllegalActionError: the action is not legal now (the reason is in the message); the
                state is unchanged.
            ValueError: a non-None action for an agent that is already done.
            ResetNeededError: called before ``reset()``, or after the episode ended (no agent
                left); the state is unchanged.
        """
        agent = getattr(self, "agent_selection", None)
        if agent is None:
            raise ResetNeededError("raw_env")
        if not self.agents:
            raise ResetNeededError("raw_env", ended=True)
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        game = self.game
        if type(action) is not int:
            if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
                action = int(action)
            elif isinstance(action, np.ndarray) and action.shape == () \
                    and np.issubdtype(action.dtype, np.integer):
                action = int(action)  # a 0-d int array is in Discrete(68) too
            else:
                raise IllegalActionError(f"action must be an int action id, got {action!r}")
        hand_over = self._enc.apply(game, action)  # raises before any change if illegal
        self._cumulative_rewards[agent] = 0.0
        if self._rewards_dirty:
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self._rewards_dirty = False
        if self.infos[agent]:
            self.infos[agent] = {}
        if hand_over:
            self._end_of_hand(game)
            if self._done:
                self.agent_selection = AGENTS[self._seat[agent] + 1 & 3]
            else:
                self.agent_selection = AGENTS[game.current_player]
        else:
            self.agent_selection = AGENTS[game.current_player]
        if self.render_mode == "human":
            self.render()

    def _end_of_hand(self, game: SpadesGame) -> None:
        res = game.hand_results[-1]
        self._episode_hands += 1
        rewards = self.rewards
        if self.reward_mode == "hand":
            r = (res.teams[0].hand_points - res.teams[1].hand_points) / 100.0
            rewards["player_0"] = rewards["player_2"] = r
            rewards["player_1"] = rewards["player_3"] = -r
        end = None
        if game.is_over:
            end = "terminated"
            if self.reward_mode == "game":
                r = 1.0 if game.winner == 0 else -1.0
                rewards["player_0"] = rewards["player_2"] = r
                rewards["player_1"] = rewards["player_3"] = -r
        elif self.hands_per_episode is not None and self._episode_hands >= self.hands_per_episode:
            end = "terminated"
            if self.reward_mode == "game":
                d = game.scores[0] - game.scores[1]
                r = 1.0 if d > 0 else (-1.0 if d < 0 else 0.0)
                rewards["player_0"] = rewards["player_2"] = r
                rewards["player_1"] = rewards["player_3"] = -r
        elif self.max_hands is not None and game.hand_number >= self.max_hands:
            end = "truncated"
        for a in AGENTS:
            d = {"hand_result": _hand_result_dict(res)}  # one copy per agent: edits stay local
            if game.is_over:
                d["winner"] = game.winner
            self.infos[a] = d
        self._rewards_dirty = True
        if end is None:
            self._enc.new_hand(game)
        else:
            self._enc.finish_hand(game)
            self._done = True
            flags = dict.fromkeys(AGENTS, True)
            if end == "terminated":
                self.terminations = flags
            else:
                self.truncations = flags
        for a in AGENTS:
            self._cumulative_rewards[a] += rewards[a]

    # ------------------------------------------------------------------ render
    def render(self):
        """"ansi": return the table as text; "human": print it; "rgb_array": return the table as
        an RGB image, ``uint8`` array of shape ``(480, 640, 3)`` (``spades_env.render_image``).
        Full information (a referee's view: every hand face up), for people, never for agents."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render "
                                  "mode.")
            return None
        if self.render_mode == "rgb_array":
            from .render_image import IMAGE_HEIGHT, IMAGE_WIDTH, draw_table
            if self.game is None:
                return np.zeros((IMAGE_HEIGHT, IMAGE_WIDTH, 3), dtype=np.uint8)
            return draw_table(self.game, viewer=None)
        if self.game is None:
            text = "spades_v1: call reset() first"
        else:
            text = render_game(self.game)
            if self._done and self.game.hand_results and not self.game.is_over:
                text += "\nEpisode over after hand " + str(self.game.hand_number) + "\n" + \
                    render_score_table(self.game.hand_results, last=1)
        if self.render_mode == "ansi":
            return text
        print(text)
        return None

    def close(self):
        pass


__all__ = ["env", "raw_env", "parallel_env", "reset_start", "ActionOutOfSpaceError", "ResetNeededError", "AGENTS", "HISTORY_SIZE", "HISTORY_SLOT", "HISTORY_OFFSET",
           "IncrementalEncoder", "encode_full", "encode_history", "observation_space",
           "REWARD_MODES"]
