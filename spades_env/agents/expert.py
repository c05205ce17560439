"""Deprecated alias: ``ExpertBot`` moved to ``spades_env.bots.expert`` in 0.7.0 (so that the
players, ``bots``, sit above the network, ``agents``, with no import cycle); removed in 0.8.0."""

import sys
import warnings

from ..bots import expert as _moved

warnings.warn("spades_env.agents.expert moved to spades_env.bots.expert (0.7.0); this alias is removed "
              "in 0.8.0", FutureWarning, stacklevel=2)
sys.modules[__name__] = _moved
