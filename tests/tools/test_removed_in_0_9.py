"""What 0.9.0 removed (CHANGELOG.md, 0.9.0, Removed): the old names are gone, and the old command
forms answer with one line naming what replaces them."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pyproject() -> str:
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        return f.read()


def _section(text: str, name: str) -> dict[str, str]:
    """``{key: value}`` of the ``key = "value"`` lines of one ``[name]`` table of a TOML text."""
    body = text.split(f"\n[{name}]\n", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w-]+) = "([^"]*)"', body, re.M))


def test_the_only_console_script_is_spades():
    assert _section(_pyproject(), "project.scripts") == {"spades": "spades_env.cli:main"}


def test_the_distribution_packages_only_spades_env():
    """The top-level ``training`` package (the 0.7 alias of ``spades_env.training``) is no longer
    packaged. (``import training`` is no test of this: an environment installed from an older
    checkout may still find it.)"""
    include = re.search(r"^include = \[(.*)\]$", _pyproject(), re.M)
    assert include and include.group(1) == '"spades_env*"'


@pytest.mark.parametrize("old, new, name", [
    ("spades_env.agents.bot", "spades_env.bots.checkpoint_bot", "CheckpointBot"),
    ("spades_env.agents.expert", "spades_env.bots.expert", "ExpertBot")])
def test_the_network_bots_old_modules_are_gone(old, new, name):
    with pytest.raises(ModuleNotFoundError) as e:
        importlib.import_module(old)
    assert e.value.name == old
    assert inspect.isclass(getattr(importlib.import_module(new), name))


@pytest.mark.parametrize("module, command", [("spades_env.play", "play"),
                                             ("spades_env.arena", "arena")])
def test_the_old_python_m_forms_say_what_replaces_them(module, command):
    r = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert (r.returncode, r.stdout, r.stderr) == (
        2, "", f"error: `python -m {module}` was removed in 0.9.0: use `spades {command}`\n")


def test_the_notice_helpers_of_the_old_forms_are_gone():
    from spades_env import arena, cli
    from spades_env.play import cli as play_cli
    assert [m.__name__ for m in (cli, arena, play_cli)
            if {"moved", "main_moved"} & set(vars(m))] == []


# the names each trainer module gave for an import path of 0.6: they live in their own modules
ONLY_RE_EXPORTED = {
    "spades_env.training.ppo_selfplay": [
        "collect_teacher_data", "collect_teacher_bids", "collect_teacher_vec", "concat_data",
        "seat_priv", "behaviour_clone", "pool_bot_options", "distill_round_paths",
        "label_folder_suffix"],
    "spades_env.training.distill": [
        "BIDS_PER_HAND", "FORMAT", "MAX_LABEL_HANDS", "NUM_BIDS", "RAY_RETRIES", "VERSION",
        "card_targets", "equivalence_classes", "label_chunk", "make_teacher", "save_labels",
        "soft_targets"],
}


@pytest.mark.parametrize("module", sorted(ONLY_RE_EXPORTED))
def test_the_trainer_modules_give_only_their_own_names(module):
    mod = importlib.import_module(module)
    assert [n for n in ONLY_RE_EXPORTED[module] if hasattr(mod, n)] == []
    foreign = [n for n in mod.__all__ if (inspect.isfunction(getattr(mod, n))
                                          or inspect.isclass(getattr(mod, n)))
               and getattr(mod, n).__module__ != module]
    assert foreign == []
