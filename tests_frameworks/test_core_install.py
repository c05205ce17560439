"""The base install (``pip install -e .``, no extras): the engine, the envs, the bots and the arena
work without torch, and the torch parts say what to install (nox session ``core``).

Unlike ``tests/docs/test_layers.py`` (which hides torch from a process of the full environment), this
runs in an environment where torch, TensorBoard, PyYAML and matplotlib were never installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest


def test_the_trainer_packages_are_absent():
    for name in ("torch", "tensorboard", "yaml", "matplotlib"):
        assert importlib.util.find_spec(name) is None, f"{name} is installed in the core session"


def test_a_game_through_the_aec_env_with_bots():
    from spades_env import spades_v1
    env = spades_v1.env(bots={"player_1": "medium", "player_3": "medium"})
    env.reset(seed=7)
    rewards = {}
    for agent in env.agent_iter(max_iter=20000):
        obs, rew, term, trunc, info = env.last()
        rewards[agent] = rewards.get(agent, 0.0) + rew
        if term or trunc:
            env.step(None)
            continue
        assert obs["observation"].shape == (679,) and obs["action_mask"].dtype == np.int8
        env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    assert not env.agents
    # the env plays seats 1 and 3 itself; the two learning seats are partners: same reward
    assert sorted(rewards) == ["player_0", "player_2"]
    assert rewards["player_0"] == rewards["player_2"] != 0


def test_gymnasium_id_and_arena():
    import gymnasium as gym

    import spades_env  # noqa: F401 - registers the ids
    from spades_env.arena import play_match
    env = gym.make("SpadesHand-v1")
    obs, info = env.reset(seed=2)
    assert obs.shape == (679,)
    res = play_match("medium", "random", games=2, seed=3)
    assert res.games == 2 and res.sides[0].games_won + res.sides[1].games_won + res.truncated == 2


@pytest.mark.parametrize("code,hint", [
    ("import spades_env.vector", "pip install 'spades_env[torch]'"),
    ("from spades_env.bots import make_bot; make_bot('checkpoint:checkpoints/shipped/agent.pt')",
     "pip install 'spades_env[torch]'"),
    ("import spades_env.training", "pip install 'spades_env[train]'"),
])
def test_torch_parts_say_what_to_install(code, hint):
    r = subprocess.run([sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=120)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1 and last.startswith("ImportError: ") and hint in last, last


def test_the_0_7_training_alias_is_not_installed(tmp_path):
    """The distribution packages ``spades_env`` only: run away from the checkout, no top-level
    ``training`` (the 0.7 alias of ``spades_env.training``, removed in 0.8.0) is found."""
    r = subprocess.run([sys.executable, "-c", "import training"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'training'"


def test_parallel_env_is_turn_based_and_passes_the_parallel_api_test():
    from pettingzoo.test import parallel_api_test

    from spades_env import spades_v1
    env = spades_v1.parallel_env(hands_per_episode=1)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(3)
    total = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    while env.agents:
        acting = [a for a in env.agents if obs[a]["action_mask"].any()]
        assert len(acting) == 1  # turn-based: one agent has legal actions
        # an action for every agent, as a parallel policy gives: only the acting one's counts
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) if a in acting
                   else 0 for a in env.agents}
        obs, rew, term, trunc, _ = env.step(actions)
        steps += 1
        for a, r in rew.items():
            total[a] += r
    assert steps == 52 + 4  # four bids and 52 cards: one hand
    assert total["player_0"] == total["player_2"] == -total["player_1"] != 0
    parallel_api_test(spades_v1.parallel_env(hands_per_episode=1,
                                             bots={"player_1": "random"}), num_cycles=100)


def test_spades_train_without_torch_is_one_error_line():
    import os
    spades = os.path.join(os.path.dirname(sys.executable), "spades")  # the console script
    r = subprocess.run([spades, "train", "--config", "configs/smoke.yaml"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: spades train: training needs torch, which is not installed: pip install "
        "'spades_env[train]' (torch, tensorboard, pyyaml, matplotlib)"]
