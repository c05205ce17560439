"""Deprecated alias of ``spades_env.training.plot``; ``python -m training.plot`` runs
``spades plot`` with a notice (removed in 0.8.0)."""

import sys

if __name__ == "__main__":
    from spades_env.cli import moved

    sys.exit(moved("training.plot", "plot"))
else:
    import spades_env.training.plot as _moved

    sys.modules[__name__] = _moved
