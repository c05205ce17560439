"""Deprecated alias of ``spades_env.training.ppo_selfplay`` (removed in 0.8.0)."""

import sys

import spades_env.training.ppo_selfplay as _moved

sys.modules[__name__] = _moved
