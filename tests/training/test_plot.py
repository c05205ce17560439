"""The learning-curve command (``spades_env.training.plot``) refuses a checkpoint whose evaluation
entries are malformed: one error line naming the file and the entry, and no picture written."""

import os

import pytest

from spades_env.training.checkpoint import save_checkpoint
from tests.helpers import _run


@pytest.mark.slow
def test_plot_refuses_malformed_eval_entries(tiny, tmp_path):
    from spades_env.training.checkpoint import load_checkpoint
    base = {k: v for k, v in load_checkpoint(tiny).items() if k not in ("format", "version")}
    cases = {"no_decisions": ([{"rows": [{"opponent": "random", "diff": 1.0}]}],
                              "eval: entry 0: decisions must be an integer >= 0"),
             "row_not_mapping": ([{"decisions": 5, "rows": [5]}],
                                 "eval: entry 0: each row needs an opponent name"),
             "entry_not_mapping": ([7], "eval: entry 0 must be a mapping"),
             "nan_bound": ([{"decisions": 5, "rows": [{"opponent": "r", "diff": 1.0,
                                                        "diff_lo": float("nan")}]}],
                           "eval: entry 0: each row needs an opponent name and a finite diff")}
    for name, (ev, match) in cases.items():
        p = str(tmp_path / f"{name}.pt")
        save_checkpoint(p, {**base, "eval": ev})
        r = _run("-m", "spades_env.training.plot", p, "--out", str(tmp_path / "c.png"))
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith(f"error: {p}: {match}"), r.stderr
    assert not os.path.exists(tmp_path / "c.png")
