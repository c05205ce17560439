"""Deprecated alias of ``spades_env.training.evaluate``; ``python -m training.evaluate`` runs
``spades eval`` with a notice (removed in 0.8.0)."""

import sys

if __name__ == "__main__":
    from spades_env.cli import moved

    sys.exit(moved("training.evaluate", "eval"))
else:
    import spades_env.training.evaluate as _moved

    sys.modules[__name__] = _moved
