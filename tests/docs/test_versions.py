"""Versions: the package version in one place, the changelog entry for it, and the env's own
version (``spades_v1``; the old name ``spades_v0`` warns and gives v1)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import gymnasium as gym
import pytest

import spades_env
from spades_env.observation import OBS_SIZE, OBS_SIZE_V1, OBS_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_version_is_the_same_in_pyproject_package_and_changelog():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        m = re.search(r'^version = "([^"]+)"', f.read(), re.M)
    assert m and m.group(1) == spades_env.__version__ == "0.9.0"
    with open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8") as f:
        changelog = f.read()
    # the newest entry is this version, below at most an "Unreleased" section at the top
    heads = re.findall(r"^## (\S+)", changelog, re.M)
    if heads[0] == "Unreleased":
        heads = heads[1:]
    assert "Unreleased" not in heads
    assert heads[0] == spades_env.__version__


def test_observation_version_and_sizes():
    assert (OBS_VERSION, OBS_SIZE, OBS_SIZE_V1) == (3, 711, 575)
    from spades_env import spades_v1, spades_v2
    env = spades_v1.env()
    assert env.metadata["name"] == "spades_v1"
    env.reset(seed=0)
    assert env.observation_space("player_0")["observation"].shape == (679,)
    env = spades_v2.env()
    assert env.metadata["name"] == "spades_v2"
    env.reset(seed=0)
    assert env.observation_space("player_0")["observation"].shape == (711,)


@pytest.mark.parametrize("statement", ["from spades_env import spades_v0",
                                       "import spades_env.spades_v0 as spades_v0"])
def test_old_env_name_warns_and_gives_v1(statement):
    """Under Python's default warning filters (nothing set), in a fresh process: the user sees
    the warning whichever way the old module is imported, and gets v1."""
    code = f"{statement}\nfrom spades_env import spades_v1\nprint(spades_v0.env is spades_v1.env)"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"
    assert "FutureWarning: spades_env.spades_v0 is deprecated: the env is spades_env.spades_v1" \
        in r.stderr


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_old_gymnasium_id_says_which_version_exists():
    assert "Spades-v1" in gym.registry and "SpadesHand-v1" in gym.registry
    assert "Spades-v0" not in gym.registry
    with pytest.raises(gym.error.DeprecatedEnv, match="Please use `Spades-v2` instead"):
        gym.make("Spades-v0")
