"""Helpers of tests in several folders: the repository root, whether the tests run as root, and
running a command (its ``main`` in this process, or a Python subprocess) to read its one-line
error."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


class _Run:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _main(module, *argv, capsys):
    """Run ``module``'s ``main(argv)`` in this process (faster than a subprocess); argparse exits
    become return codes, any other exception propagates (a traceback: the test fails)."""
    import importlib
    main = importlib.import_module(module).main
    capsys.readouterr()
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return _Run(rc, out, err)


def _one_line_error(r):
    """Exit status 2 and an ``error:`` line, no traceback."""
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stderr.strip().splitlines()[-1].startswith("error:"), r.stderr
    return r.stderr.strip().splitlines()[-1]


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
