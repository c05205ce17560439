"""Framework test sessions (``nox``): each framework in its own virtual environment.

The frameworks pin conflicting versions (``ray[rllib]`` pins its own Gymnasium, Tianshou pulls
numba/pandas), so each one is installed and tested on its own:

| session      | installs                                        | runs                                       |
|--------------|-------------------------------------------------|--------------------------------------------|
| ``sb3``      | ``torch==2.13.0``, ``-e .[sb3]``, pytest        | ``tests_frameworks/test_sb3.py`` (examples sb3_maskable_ppo.py, gymnasium_vector.py) |
| ``tianshou`` | ``torch==2.13.0``, ``-e .[tianshou]``, pytest   | ``tests_frameworks/test_tianshou.py`` (examples/tianshou_dqn.py) |
| ``rllib``    | ``torch==2.13.0``, ``-e .[rllib,ray]``, pytest  | ``tests_frameworks/test_rllib.py`` and ``test_ray_cluster.py`` (a local Ray cluster) |
| ``core``     | ``-e .`` (the base install: no torch), pytest  | ``tests_frameworks/test_core_install.py`` (engine, envs, bots, arena without torch) |

``make test`` runs the main suite and then these sessions in two parallel lanes (``rllib,core`` and
``sb3,tianshou``: ``tests_frameworks/run_lanes.py``); ``make test-frameworks`` runs ``nox`` (all
three, one after another). One session: ``.venv/bin/nox -s sb3``; keep the environments between
runs with ``-R`` (reuse, no re-install). ``TORCH_SPEC`` (environment variable, default
``torch==2.13.0``) is installed first in every session, so pip never swaps in another torch
build. Packages are installed without byte-compiling (``--no-compile``: about half the install
time; the modules a test imports are compiled then).
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["sb3", "tianshou", "rllib", "core"]
nox.options.reuse_existing_virtualenvs = True  # re-created only with --no-reuse-existing-virtualenvs
nox.options.error_on_missing_interpreters = True

TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
PYTEST = ("pytest", "-q", "-p", "no:cacheprovider", "--durations=5")  # the slowest five, timed


def _install(session: nox.Session, extras: str) -> None:
    session.install("-q", "--no-compile", TORCH_SPEC)
    # pytest alone, not the main suite's extra (browser, video, property-test packages)
    session.install("-q", "--no-compile", "-e", f".[{extras}]", "pytest>=7.4")


@nox.session
def sb3(session: nox.Session) -> None:
    """Stable-Baselines3 / sb3-contrib MaskablePPO and Gymnasium vector envs."""
    _install(session, "sb3")
    session.run(*PYTEST, "tests_frameworks/test_sb3.py", *session.posargs)


@nox.session
def tianshou(session: nox.Session) -> None:
    """Tianshou (multi-agent DQN with the credit route)."""
    _install(session, "tianshou")
    session.run(*PYTEST, "tests_frameworks/test_tianshou.py", *session.posargs)


@nox.session
def rllib(session: nox.Session) -> None:
    """RLlib (new API stack) and Ray: a local Ray cluster for RLlib and the arena."""
    _install(session, "rllib,ray")
    session.run(*PYTEST, "tests_frameworks/test_rllib.py", "tests_frameworks/test_ray_cluster.py",
                *session.posargs)


@nox.session
def core(session: nox.Session) -> None:
    """The base install without torch: what ``pip install spades_env`` gives."""
    session.install("-q", "--no-compile", "-e", ".", "pytest>=7.4")
    session.run(*PYTEST, "tests_frameworks/test_core_install.py", *session.posargs)
