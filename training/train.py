"""Deprecated alias of ``spades_env.training.train``; ``python -m training.train`` runs
``spades train`` with a notice (removed in 0.8.0)."""

import sys

if __name__ == "__main__":
    from spades_env.cli import moved

    sys.exit(moved("training.train", "train"))
else:
    import spades_env.training.train as _moved

    sys.modules[__name__] = _moved
