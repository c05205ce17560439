"""Training under several rule sets at once (``rules_mix``): the games split evenly among the rule
sets, each game's observation carries its own rules piece, and the mixed env saves and restores
exactly."""

import numpy as np
import pytest
import torch

from spades_env import Rules
from spades_env.observation import OFFSETS, rules_features
from spades_env.training import config as cfg
from spades_env.compact import expand
from spades_env.training.envs import (MixedRulesEnv, ScalarBatchEnv, compact_obs, env_hands,
                                      make_env, rules_table)

R0, R1 = OFFSETS["rules"]


def _args(**kw):
    base = {"num_envs": 5, "rules_mix": ["suicide", {"preset": "mirror"}], "vector_env": "vector",
            "random_start": 0.0, "reward_scale": 0.01, "hands_per_episode": 1}
    return cfg.from_dict({**base, **kw})


def _first_legal(mask: torch.Tensor) -> torch.Tensor:
    return mask.to(torch.int64).argmax(1)


def test_the_config_takes_rule_mappings_and_refuses_bad_ones():
    args = _args()
    assert args.rules_mix == ["suicide", "preset=mirror"]  # a mapping as the text Rules.parse reads
    assert Rules.parse(args.rules_mix[1]) == Rules.parse("mirror")
    with pytest.raises(ValueError, match="rules_mix.*element 1"):
        _args(rules_mix=["suicide", "no_such_preset"])
    with pytest.raises(ValueError, match="rules_mix: 3 rule sets need at least as many games"):
        cfg.check_ready(_args(num_envs=2, rules_mix=["suicide", "mirror", "whiz"]))
    assert cfg.from_dict({}).rules_mix == []


@pytest.mark.parametrize("kind", ["vector", "scalar"])
def test_the_games_split_evenly_and_each_sees_its_rules(kind):
    env = make_env(_args(vector_env=kind, random_start=0.0 if kind == "vector" else 0.5), seed=3)
    assert isinstance(env, MixedRulesEnv) and env.num_envs == 5
    assert [e.num_envs for e in env.envs] == [3, 2]  # 5 games: the first rule set gets the odd one
    suicide, mirror = Rules.parse("suicide"), Rules.parse("mirror")
    assert env.rules == [suicide, mirror]
    obs, mask, seat = env.reset()
    assert [env.get_game(i).rules for i in range(5)] == [suicide] * 3 + [mirror] * 2
    if kind == "vector":  # the trainer's batched envs give compact rows, byte 94 the rules row
        assert obs.shape == (5, 120) and obs.dtype == torch.uint8
        assert obs[:, 94].tolist() == [0, 0, 0, 1, 1]
        assert torch.equal(rules_table(env), torch.from_numpy(np.stack(
            [rules_features(suicide), rules_features(mirror)])))
    assert torch.equal(compact_obs(env, obs)[:, 94], torch.tensor([0, 0, 0, 1, 1],
                                                                   dtype=torch.uint8))
    obs = expand(compact_obs(env, obs), rules_table(env))
    assert obs.shape == (5, 711) and mask.shape == (5, 68) and seat.shape == (5,)
    for i in range(5):
        want = rules_features(suicide if i < 3 else mirror)
        assert np.array_equal(obs[i, R0:R1].numpy(), want)
        assert np.array_equal(env.observe(i, (int(seat[i]) + 1) % 4)[R0:R1], want)
    assert not np.array_equal(rules_features(suicide), rules_features(mirror))
    hands = env_hands(env)
    assert hands.shape == (5, 4, 52) and hands.sum().item() == 5 * 52
    ended = []
    for _ in range(56):  # one hand in every game (no exchanges under these two presets)
        obs, mask, seat, rewards, dones, info = env.step(_first_legal(mask))
        ended += [i for i, _hr, _bags in info["hands"]]
        # a reward is team-symmetric and only where that game's hand ended
        assert torch.equal(rewards[:, 0], -rewards[:, 1])
    assert sorted(ended) == [0, 1, 2, 3, 4] and bool(dones.all())
    with pytest.raises(ValueError, match="need 5 actions"):
        env.step(torch.zeros(4, dtype=torch.int64))
    with pytest.raises(IndexError, match="game 5 out of range 0..4"):
        env.get_game(5)


def test_the_mixed_env_restores_exactly_and_refuses_other_rules():
    env = make_env(_args(), seed=7)
    obs, mask, seat = env.reset()
    for _ in range(10):
        obs, mask, seat, *_ = env.step(_first_legal(mask))
    saved = env.state_dict()
    after = [env.step(_first_legal(env.current()[1]))[0] for _ in range(20)]
    env.load_state_dict(saved)
    assert torch.equal(env.current()[0], obs)
    again = [env.step(_first_legal(env.current()[1]))[0] for _ in range(20)]
    assert all(torch.equal(a, b) for a, b in zip(after, again))
    other = make_env(_args(rules_mix=["mirror", "suicide"]), seed=7)
    other.reset()
    before = other.current()[0].clone()
    with pytest.raises(ValueError, match="other rule sets"):
        other.load_state_dict(saved)
    with pytest.raises(ValueError, match="holds 1 envs, this one has 2"):
        other.load_state_dict({**saved, "envs": saved["envs"][:1]})
    assert torch.equal(other.current()[0], before)  # a refused state changes nothing


def test_a_mixed_env_of_one_rule_set_is_the_plain_env():
    mixed = make_env(_args(vector_env="scalar", random_start=0.5, rules_mix=["whiz"],
                           num_envs=3), seed=11)
    assert isinstance(mixed.envs[0], ScalarBatchEnv) and mixed.rules == [Rules.parse("whiz")]


@pytest.mark.slow
def test_a_tiny_run_trains_under_two_rule_sets(tmp_path):
    from spades_env.training.checkpoint import load_checkpoint
    from spades_env.training.ppo_selfplay import train
    args = cfg.from_dict({
        "name": "mix", "seed": 2, "num_envs": 4, "num_steps": 56, "total_decisions": 400,
        "hidden": [32], "head_hidden": 16, "critic_hidden": [16], "vector_env": "vector",
        "random_start": 0.0, "rules": "suicide", "rules_mix": ["suicide", "mirror"],
        "bc_teacher": "easy", "bc_hands": 4, "bc_bid_deals": 0, "bc_epochs": 1,
        "bc_dagger_rounds": 0,
        "bc_batch": 64, "pool_bots": ["easy"], "num_minibatches": 2, "update_epochs": 1,
        "eval_every": 0, "eval_opponents": ["random"], "final_eval_deals": 2,
        "runs_dir": str(tmp_path / "runs"), "checkpoint_dir": str(tmp_path / "ck"),
        "progress": False})
    out = train(args, log=lambda *a: None)
    data = load_checkpoint(out["checkpoint"])
    assert data["config"]["rules_mix"] == ["suicide", "mirror"]
    # 4 warm-start hands, 2 under each rule set, 56 decisions each (no exchanges)
    assert data["progress"]["warmstart"]["decisions"] == 4 * 56
    assert data["env"]["format"] == "spades_env.training.MixedRulesEnv"
    assert out["iterations"] >= 2
