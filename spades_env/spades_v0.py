"""Deprecated name of ``spades_env.spades_v1`` (the AEC env before its observation grew).

``spades_v0`` was the env of spades_env 0.1.0 with observation version 1 (575 floats). Version 2
of the observation (679 floats, spades_env 0.2.0) made the env ``spades_v1``; this module gives
v1 under the old name with a ``FutureWarning`` (shown by default, whichever way the module is
imported), so old scripts run and say what changed. A
network trained on version 1 still plays: it reads the first 575 floats (``OBS_SIZE_V1``).
"""

from __future__ import annotations

import warnings

from .spades_v1 import *  # noqa: F401,F403 - the whole public API of v1
from .spades_v1 import __all__  # noqa: F401

warnings.warn("spades_env.spades_v0 is deprecated: the env is spades_env.spades_v1 since "
              "spades_env 0.2.0 (observation version 2, 679 floats); spades_v0 now gives v1",
              FutureWarning, stacklevel=2)
