"""Deprecated alias of ``spades_env.training.config`` (removed in 0.8.0)."""

import sys

import spades_env.training.config as _moved

sys.modules[__name__] = _moved
