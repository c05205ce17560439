"""Deprecated alias of ``spades_env.training.export``; ``python -m training.export`` runs
``spades export`` with a notice (removed in 0.8.0)."""

import sys

if __name__ == "__main__":
    from spades_env.cli import moved

    sys.exit(moved("training.export", "export"))
else:
    import spades_env.training.export as _moved

    sys.modules[__name__] = _moved
