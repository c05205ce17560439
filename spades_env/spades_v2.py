"""``spades_v2``: the PettingZoo AEC env of ``spades_v1`` with observation version 3.

Everything is as in ``spades_env.spades_v1`` (its docstring is the spec: options, agents,
actions, rewards, infos, seeding), except the observation: 711 floats, version 2's 679 followed
by the ``rules`` piece (32 floats: ``spades_env.observation.rules_features``, one slot per rule
switch, the same at every move of a game), then the history piece at 711 with ``history=True``.
One network can then tell rule sets apart and be trained on several (docs/observation.md, The
rules piece); a network trained on version 2 reads the first 679 floats and plays only the rules
it was trained under.

| Import             | `from spades_env import spades_v2`                          |
|--------------------|-------------------------------------------------------------|
| Observation Shape  | (711,) (3623,) with `history=True`; (120,) uint8 with `obs_format="compact"` |

`obs_format="compact"` (not with `history=True`) gives the observation as the 120 bytes of
`spades_env.compact` (uint8, `Box(0, 255, (120,))`, `spades_env.aec_obs`):
`compact.expand(obs, compact.rules_table(env.rules))` is the float32 observation, bit for bit.

## Version History

* v2 (spades_env 0.9.0): observation version 3 (711 floats): the `rules` piece (679 - 710).
  Pieces 0 - 678 keep their offsets; the history piece moved to 711. Gymnasium ids `Spades-v2`,
  `SpadesHand-v2`. `spades_v1` is unchanged (679 floats). Since then (unreleased):
  `obs_format="compact"`, the 120-byte observation.
* v1, v0: see `spades_env.spades_v1`.
"""

from __future__ import annotations

from . import spades_v1 as _v1
from .observation import HISTORY_SIZE, HISTORY_SLOT, OBS_SIZE
from .spades_v1 import (  # noqa: F401 - the same errors and helpers as v1
    AGENTS, ActionOutOfSpaceError, IllegalActionError, ResetNeededError,
)

HISTORY_OFFSET = OBS_SIZE
"""Where the history piece starts in this env's observation (after the 711 floats)."""


class raw_env(_v1.raw_env):
    """``spades_v1.raw_env`` with observation version 3 (``obs_version=3``): the same options."""

    OBS_VERSION = 3
    metadata = {**_v1.raw_env.metadata, "name": "spades_v2"}


def env(bots=None, **kwargs):
    """The wrapped AEC env, as ``spades_v1.env`` (``bots=`` seats included), with observation
    version 3. Raises ``ValueError`` for a bad option."""
    return _v1.wrap_env(raw_env, bots, kwargs)


def parallel_env(**kwargs):
    """PettingZoo ``ParallelEnv`` over ``env(**kwargs)``, as ``spades_v1.parallel_env``."""
    return _v1.parallel_env(_env=env, **kwargs)


def observation_space(history: bool = False, rules=None, max_hands: int | None = 100,
                      obs_format: str = "float32"):
    """The Dict space of one agent's observation (``spades_v1.observation_space`` with
    ``obs_version=3``; ``obs_format="compact"``: uint8 ``(120,)``). Raises ``ValueError`` for a
    bad argument."""
    return _v1.observation_space(history, rules, max_hands, obs_version=3, obs_format=obs_format)


__all__ = ["env", "raw_env", "parallel_env", "observation_space", "ActionOutOfSpaceError",
           "ResetNeededError", "IllegalActionError", "AGENTS", "HISTORY_OFFSET", "HISTORY_SIZE",
           "HISTORY_SLOT"]
