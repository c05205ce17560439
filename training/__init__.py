"""Deprecated alias: the trainer moved to ``spades_env.training`` in spades_env 0.7.0.

``import training.config`` (and every other submodule) still gives the module of
``spades_env.training`` with a ``FutureWarning``; ``python -m training.train`` (and ``evaluate``,
``distill``, ``export``, ``plot``, ``teacher_records``) runs ``spades train`` (...) with a notice.
This package is removed in 0.8.0.
"""

import sys
import warnings


def _running_a_tool() -> bool:
    """True when the interpreter was started as ``python -m training.X``: that form prints its own
    notice (``spades_env.cli.moved``). Read from ``sys.orig_argv``: while ``-m`` imports a package
    ``sys.argv[0]`` is ``"-m"`` whatever the module, so an import of this package by another
    ``python -m`` program's package must still warn."""
    args = list(getattr(sys, "orig_argv", ()))[1:]
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--", "-c"):
        if args[i].startswith("-m"):  # -m MODULE or -mMODULE
            target = args[i][2:] or (args[i + 1] if i + 1 < len(args) else "")
            return target.startswith("training.")
        i += 2 if args[i] in ("-W", "-X", "--check-hash-based-pycs") else 1
    return False


if not _running_a_tool():
    warnings.warn("the package 'training' moved to 'spades_env.training' (spades_env 0.7.0); "
                  "import spades_env.training instead and run the tools as `spades COMMAND` "
                  "(this alias is removed in 0.8.0)", FutureWarning, stacklevel=2)
