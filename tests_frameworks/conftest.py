"""Helpers for the framework tests (run by ``nox``, each framework in its own environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, *args: str, tmp_path: Path, timeout: float = 600) -> dict:
    """Run ``examples/<name>`` with ``args`` and ``--json``; return the JSON it wrote plus
    ``wall_s`` (seconds) and ``stderr`` (its last 20,000 characters). Fails the test with the
    script's output when it exits non-zero."""
    out = tmp_path / f"{Path(name).stem}.json"
    cmd = [sys.executable, str(ROOT / "examples" / name), *args, "--json", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wall = time.perf_counter() - t0
    print(f"{name} {' '.join(args)}: {wall:.1f} s\n{proc.stdout[-3000:]}")
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n"
                    f"{proc.stderr[-4000:]}")
    result = json.loads(out.read_text())
    result["wall_s"] = wall
    result["stderr"] = proc.stderr[-20000:]
    return result


def assert_beats(result: dict, hands: int, key: str = "arena") -> None:
    """The learner beats its opponent in ``result[key]``: the 95% interval of its point difference
    per hand (``hands`` duplicate pairs) lies above 0. ``key``: ``"arena"`` (the ``--vs`` bot,
    ``random``) or ``"vs_init"`` (the learner's own untrained start, so that the check passes only
    through training: an untrained policy that happens never to bid Nil can beat ``random``)."""
    arena = result[key]
    assert arena is not None, f"the example wrote no {key!r} result"
    assert arena["pairs"] == hands
    lo, hi = arena["point_diff_ci"]
    assert lo > 0, f"learner does not beat {arena['sides'][1]['name']}: CI [{lo}, {hi}]"
