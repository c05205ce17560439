"""README.md is true: its Python snippets run as written (the SB3 one in the ``sb3`` framework
session: ``tests_frameworks/test_sb3.py``), every ``spades`` command it shows exists and parses,
and it stays short enough to read in five minutes."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from spades_env import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def blocks(lang: str) -> list[str]:
    """The README's fenced code blocks in ``lang``, in order."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return re.findall(rf"^```{lang}\n(.*?)^```", f.read(), re.M | re.S)


def test_readme_is_short_and_starts_with_what_it_is():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(lines) <= 130, len(lines)
    assert lines[0] == "# spades_env" and "Spades" in lines[2]


@pytest.mark.parametrize("index", [0, 2])
def test_python_snippets_run(index):
    code = blocks("python")[index]
    assert "sb3_contrib" not in code
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_sb3_snippet_is_the_one_the_sb3_session_runs():
    code = blocks("python")[1]
    assert "MaskablePPO" in code
    with open(os.path.join(ROOT, "tests_frameworks", "test_sb3.py"), encoding="utf-8") as f:
        assert "test_readme_sb3_snippet_runs" in f.read()


def test_every_spades_command_line_exists_and_parses(monkeypatch):
    """Each ``spades CMD ...`` line parses with that command's own parser (its main is stopped
    right after parsing)."""
    pytest.importorskip("torch")  # `spades train` reaches its parser through spades_env.training
    lines = [line.split("#")[0].strip() for block in blocks("bash") for line in block.splitlines()]
    commands = [shlex.split(line) for line in lines if line.startswith("spades ")]
    assert len(commands) >= 4
    import argparse
    parsed = []

    class Parsed(Exception):
        pass

    def stop(self, args=None, namespace=None):
        ns = real(self, args, namespace)
        parsed.append(self.prog)
        raise Parsed

    real = argparse.ArgumentParser.parse_args
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    for argv in commands:
        assert argv[1] in cli.COMMANDS, argv
        with pytest.raises(Parsed):
            cli.main(argv[1:])
    assert parsed == [f"spades {argv[1]}" for argv in commands]
    makefile = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    for target in ("train", "test"):
        assert f"make {target}" in "".join(blocks("bash")) and f"\n{target}:" in makefile
