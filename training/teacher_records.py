"""Deprecated alias of ``spades_env.training.teacher_records``; ``python -m training.teacher_records`` runs
``spades teacher-records`` with a notice (removed in 0.8.0)."""

import sys

if __name__ == "__main__":
    from spades_env.cli import moved

    sys.exit(moved("training.teacher_records", "teacher-records"))
else:
    import spades_env.training.teacher_records as _moved

    sys.modules[__name__] = _moved
