"""Tianshou: the credit route through Tianshou's own collector and buffer, and the example's
--smoke beats random and its own untrained start in the arena."""

from __future__ import annotations

import os

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
    # the warm-up draws legal moves only (collect(random=True) played ~438 illegal ones), and
    # no progress bar is drawn (TQDM_DISABLE=1, show_progress=False)
    assert r["warmup_steps"] >= 1000 and r["warmup_illegal"] == 0
    assert "gradient update" not in r["stderr"] and "it/s" not in r["stderr"]


def _illegal_moves(actor_fn, steps=400):
    """Moves and illegal moves of a fresh discrete actor-critic policy (Tianshou's
    ``DiscreteActorPolicy``) collecting ``steps`` steps on ``tianshou_env``."""
    import torch
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.multiagent.marl import MultiAgentPolicy
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import DiscreteActor

    from spades_env.integrations.tianshou import tianshou_env
    torch.manual_seed(0)
    env = tianshou_env(bots=BOTS, hands_per_episode=1)
    obs_space = env.observation_space["observation"]
    actor = DiscreteActor(preprocess_net=Net(state_shape=obs_space.shape, hidden_sizes=[64]),
                          action_shape=env.action_space.n, softmax_output=False)
    policy = DiscreteActorPolicy(actor=actor_fn(actor), action_space=env.action_space,
                                 observation_space=obs_space)
    venv = DummyVectorEnv([lambda: tianshou_env(bots=BOTS, hands_per_episode=1)])
    venv.seed(0)
    buf = VectorReplayBuffer(10_000, 1)
    Collector(MultiAgentPolicy({a: policy for a in env.agents}), venv, buf).collect(
        n_step=steps, reset_before_collect=True)
    idx = buf.sample_indices(0)
    mask = np.asarray(buf.obs.mask)[idx].astype(bool)
    act = np.asarray(buf.act)[idx].astype(int)
    return len(idx), int((~mask[np.arange(len(idx)), act]).sum())


def test_masked_actor_gives_an_actor_critic_policy_legal_moves_only():
    from spades_env.integrations.tianshou import masked_actor, obs_only
    n, illegal = _illegal_moves(masked_actor)
    assert n >= 400 and illegal == 0
    n, illegal = _illegal_moves(obs_only)  # the same actor reading the vector, no mask
    assert illegal > 50


def test_masked_actor_renormalises_probabilities_and_checks_its_input():
    import torch
    from tianshou.data import Batch

    from spades_env.integrations.tianshou import masked_actor

    class Probs(torch.nn.Module):
        softmax_output = True

        def forward(self, obs, state=None, info=None):
            return torch.full((len(obs), 4), 0.25), state

    mask = np.array([[1, 0, 1, 0], [0, 0, 0, 1]], dtype=bool)
    out, _ = masked_actor(Probs())(Batch(obs=np.zeros((2, 3)), mask=mask))
    assert out.tolist() == [[0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0]]
    with pytest.raises(ValueError, match="mask of shape"):
        masked_actor(Probs())(Batch(obs=np.zeros((2, 3)), mask=np.ones((2, 5), dtype=bool)))
    with pytest.raises(ValueError, match="torch.nn.Module"):
        masked_actor(lambda obs: obs)


def test_a_raw_pettingzoo_env_warns_once_about_credit(monkeypatch):
    from tianshou.env import PettingZooEnv

    from spades_env.integrations.tianshou import tianshou_env
    monkeypatch.setattr(spades_v1, "_warned_raw_tianshou", False)
    with pytest.warns(UserWarning, match="without TurnCreditWrapper"):
        PettingZooEnv(spades_v1.env(bots=BOTS, hands_per_episode=1))
    import warnings
    monkeypatch.setattr(spades_v1, "_warned_raw_tianshou", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the credit route: no warning
        env = tianshou_env(bots=BOTS, hands_per_episode=1)
        env.reset()
    assert spades_v1._warned_raw_tianshou is False


def test_quiet_progress_disables_the_update_bar_and_is_idempotent(monkeypatch):
    from tianshou import trainer

    from spades_env.integrations.tianshou import quiet_progress
    quiet_progress()
    patched = trainer.Trainer.__dict__["_pbar"]
    quiet_progress()
    assert trainer.Trainer.__dict__["_pbar"] is patched

    class Params:
        show_progress = True

    class Fake:
        params = Params()

    monkeypatch.setenv("TQDM_DISABLE", "1")
    bar = patched.fget(Fake())(range(3), disable=False)
    assert bar.disable and list(bar) == [0, 1, 2]
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert not patched.fget(Fake())(range(3), disable=False, file=open(os.devnull, "w")).disable
