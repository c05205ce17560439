"""Tianshou: the credit route through Tianshou's own collector and buffer, and the example's
--smoke beats random and its own untrained start in the arena."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_beats, run_example

from spades_env import spades_v1

HANDS = 300  # duplicate pairs against random (the example's default)
INIT_HANDS = 100  # against the untrained start (the example's default)
BOTS = {"player_1": "random", "player_3": "random"}


def _collect(env_fn, episodes=24):
    """Collect single-hand episodes with Tianshou's Collector and a uniformly random masked
    policy; return the buffer's agent ids and reward vectors, and the episodes' returns."""
    from tianshou.algorithm.multiagent.marl import MultiAgentPolicy
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    env = env_fn()
    rnd = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    policy = MultiAgentPolicy({a: rnd.policy for a in env.agents})
    venv = DummyVectorEnv([env_fn])
    venv.seed(0)
    buf = VectorReplayBuffer(10_000, 1)
    stats = Collector(policy, venv, buf).collect(n_episode=episodes, reset_before_collect=True)
    data = buf.sample(0)[0]
    return env.agents, np.asarray(data.obs.agent_id), np.asarray(data.rew), stats


def test_tianshou_collector_credits_every_agent_its_own_hand_rewards():
    from spades_env.integrations.tianshou import tianshou_env
    agents, ids, rew, stats = _collect(lambda: tianshou_env(bots=BOTS, hands_per_episode=1))
    assert agents == ["player_0", "player_2"]
    # a reward in agent a's column appears only at a's own steps (what Tianshou credits to a)
    for k, a in enumerate(agents):
        assert np.all(ids[rew[:, k] != 0] == a)
    returns = np.asarray(stats.returns)                  # (episodes, agents)
    assert returns.shape == (24, 2)
    # partners receive the same hand reward in every episode, and a nonzero one almost always
    assert np.allclose(returns[:, 0], returns[:, 1])
    assert (returns[:, 0] != 0).sum() >= 20
    credited = [rew[ids == a, k].sum() for k, a in enumerate(agents)]
    assert credited == pytest.approx(returns.sum(axis=0).tolist())


def test_without_the_credit_route_rewards_land_on_the_wrong_steps():
    from tianshou.env import PettingZooEnv
    agents, ids, rew, stats = _collect(
        lambda: PettingZooEnv(spades_v1.env(bots=BOTS, hands_per_episode=1)))
    lost = sum(((rew[:, k] != 0) & (ids != a)).sum() for k, a in enumerate(agents))
    assert lost >= 10  # each hand's reward reaches only one of the two partners' steps


def test_tianshou_dqn_smoke_beats_random(tmp_path):
    r = run_example("tianshou_dqn.py", "--smoke", tmp_path=tmp_path)
    assert_beats(r, HANDS)
    assert_beats(r, INIT_HANDS, "vs_init")
