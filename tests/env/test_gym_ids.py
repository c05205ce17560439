"""Registered Gymnasium ids, vector envs and their masks after autoreset, illegal_action modes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import spades_env  # noqa: F401  (registers the ids)
from spades_env import IllegalActionError, SpadesSingleAgentEnv
from spades_env.integrations import vector_masks

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_ids_registered_and_kwargs_pass_through():
    assert {"Spades-v1", "SpadesHand-v1"} <= set(gym.registry)
    env = gym.make("Spades-v1", seat=1, opponents="easy")
    assert isinstance(env.unwrapped, SpadesSingleAgentEnv)
    assert env.unwrapped.seat == 1 and env.unwrapped._specs[2] == "easy"
    assert env.unwrapped.rules.target_score == 500 and env.unwrapped._env.hands_per_episode is None
    hand = gym.make("SpadesHand-v1").unwrapped
    assert hand._env.hands_per_episode == 1
    obs, info = env.reset(seed=0)
    # gym.make's wrappers hide the method: reach it through unwrapped or get_wrapper_attr
    m = env.get_wrapper_attr("action_masks")()
    assert m.dtype == bool and np.array_equal(m, env.unwrapped.action_masks())
    assert np.array_equal(m, info["action_mask"].astype(bool))
    assert np.flatnonzero(m).tolist() == env.unwrapped.game.legal_actions()


def _play_vector(envs, steps, rng):
    """Random legal play from ``infos["action_mask"]``; returns (empty mask rows seen, episodes
    ended)."""
    obs, infos = envs.reset(seed=0)
    masks = infos["action_mask"].astype(bool)
    empty_rows = ended = 0
    for _ in range(steps):
        empty_rows += int((~masks.any(axis=1)).sum())
        if empty_rows:
            break
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
        obs, r, term, trunc, infos = envs.step(actions)
        ended += int((term | trunc).sum())
        masks = infos["action_mask"].astype(bool)
    return empty_rows, ended


def test_make_vec_same_step_autoreset_never_gives_an_empty_mask():
    envs = gym.make_vec("SpadesHand-v1", num_envs=3, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
                        partner="random", opponents="random")
    empty, ended = _play_vector(envs, 80, np.random.default_rng(0))
    assert ended >= 3 and empty == 0
    assert envs.call("action_masks")[0].shape == (68,)


def test_make_vec_next_step_autoreset_rows_and_vector_masks():
    envs = gym.make_vec("SpadesHand-v1", num_envs=3, vectorization_mode="sync",
                        partner="random", opponents="random")
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, infos = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    masks, done, seen_empty = infos["action_mask"].astype(bool), np.zeros(3, bool), 0
    for _ in range(80):
        assert np.array_equal(~masks.any(axis=1), done)  # empty rows: exactly the ended envs
        seen_empty += int(done.sum())
        fixed = vector_masks(masks, done)
        assert fixed.any(axis=1).all() and np.array_equal(fixed[~done], masks[~done])
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in fixed])
        obs, r, term, trunc, infos = envs.step(actions)
        done = term | trunc
        masks = infos["action_mask"].astype(bool)
    assert seen_empty >= 3
    with pytest.raises(ValueError, match="masks must be"):
        vector_masks(np.ones((3, 68)), np.zeros(2, bool))


def test_illegal_action_random_legal_plays_out_the_hand():
    env = SpadesSingleAgentEnv(seat=0, partner="random", opponents="random",
                               hands_per_episode=1, illegal_action="random_legal")
    obs, info = env.reset(seed=3)
    steps, illegal, played = 0, 0, []
    done = False
    while not done:
        legal = np.flatnonzero(env.action_masks())
        obs, r, term, trunc, info = env.step(0)       # a maskless policy: always action 0
        steps += 1
        if 0 not in legal:
            illegal += 1
            assert info["played_action"] in legal and "illegal_action" in info
        else:
            assert "illegal_action" not in info
        played.append(info.get("played_action", 0))
        done = term or trunc
    assert steps == 14 and env.illegal_count == illegal >= 13  # 1 bid + 13 cards; id 0 = 2 of clubs
    assert env.game.hand_number == 1 and env.game.hand_results  # the hand was scored
    # seeded: the same replacements again
    env.reset(seed=3)
    again = []
    done = False
    while not done:
        obs, r, term, trunc, info = env.step(0)
        again.append(info.get("played_action", 0))
        done = term or trunc
    assert again == played


def test_illegal_action_modes_terminate_and_raise():
    env = SpadesSingleAgentEnv(seat=0, partner="random", opponents="random")
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step(0)       # a card while bidding
    assert term and r == -1 and "illegal_action" in info
    env = SpadesSingleAgentEnv(seat=0, partner="random", opponents="random",
                               illegal_action="raise")
    env.reset(seed=0)
    with pytest.raises(IllegalActionError):
        env.step(0)
    with pytest.raises(ValueError, match="illegal_action must be one of"):
        SpadesSingleAgentEnv(illegal_action="penalize")
