"""The fields of a small teacher-records file, for the tests of the records and their readers."""

import numpy as np


def _teacher_fields(n=2, **over):
    d = {"format": np.array("spades_env.teacher_records"), "version": np.array(1),
         "teacher": np.array("random"), "rules": np.array("standard"),
         "seed": np.arange(n, dtype=np.int64), "scores": np.zeros((n, 2), np.int16),
         "bags": np.zeros((n, 2), np.int8), "moves": np.zeros((n, 56), np.uint8)}
    d.update(over)
    return {k: v for k, v in d.items() if v is not None}
