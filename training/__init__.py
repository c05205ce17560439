"""Deprecated alias: the trainer moved to ``spades_env.training`` in spades_env 0.7.0.

``import training.config`` (and every other submodule) still gives the module of
``spades_env.training`` with a ``FutureWarning``; ``python -m training.train`` (and ``evaluate``,
``distill``, ``export``, ``plot``, ``teacher_records``) runs ``spades train`` (...) with a notice.
This package is removed in 0.8.0.
"""

import sys
import warnings

if sys.argv[:1] != ["-m"]:  # ``python -m training.X`` prints its own notice (spades_env.cli.moved)
    warnings.warn("the package 'training' moved to 'spades_env.training' (spades_env 0.7.0); "
                  "import spades_env.training instead and run the tools as `spades COMMAND` "
                  "(this alias is removed in 0.8.0)", FutureWarning, stacklevel=2)
