"""Deprecated alias of ``spades_env.training.envs`` (removed in 0.8.0)."""

import sys

import spades_env.training.envs as _moved

sys.modules[__name__] = _moved
