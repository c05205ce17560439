"""Deprecated alias of ``spades_env.training.distill``; ``python -m training.distill`` runs
``spades distill`` with a notice (removed in 0.8.0)."""

import sys

if __name__ == "__main__":
    from spades_env.cli import moved

    sys.exit(moved("training.distill", "distill"))
else:
    import spades_env.training.distill as _moved

    sys.modules[__name__] = _moved
