"""RLlib (new API stack): the MultiAgentEnv adapter, the masking module, and the example's
--smoke beats random and its own untrained start in the arena; self-play runs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_beats, run_example

from spades_env.integrations.rllib import SpadesRLlibEnv

HANDS = 300  # duplicate pairs against random (the example's default)
INIT_HANDS = 100  # against the untrained start (the example's default)


def test_rllib_env_keys_masks_and_rewards():
    env = SpadesRLlibEnv({"bots": {"player_1": "random", "player_3": "random"},
                          "hands_per_episode": 1})
    assert env.possible_agents == ["player_0", "player_2"]
    obs, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    total = {a: 0.0 for a in env.possible_agents}
    steps = 0
    while True:
        (agent, o), = obs.items()
        assert set(o) == {"observations", "action_mask"}
        assert o["action_mask"].dtype == np.float32 and o["action_mask"].sum() >= 1
        assert env.observation_spaces[agent].contains(o)
        action = int(rng.choice(np.flatnonzero(o["action_mask"])))
        obs, rew, term, trunc, infos = env.step({agent: action})
        steps += 1
        for a, r in rew.items():
            total[a] += r
        if term["__all__"] or trunc["__all__"]:
            break
    assert steps == 28                       # 2 learners x (1 bid + 13 cards)
    assert set(obs) == {"player_0", "player_2"}  # every agent gets its final observation
    hr = infos["player_0"]["hand_result"]
    expect = (hr["teams"][0]["hand_points"] - hr["teams"][1]["hand_points"]) / 100
    assert total == pytest.approx({"player_0": expect, "player_2": expect})


def test_masking_module_never_picks_an_illegal_action():
    import torch
    from ray.rllib.core.columns import Columns

    from spades_env.integrations.rllib import ActionMaskingPPOModule
    env = SpadesRLlibEnv({"hands_per_episode": 1})
    space = env.observation_spaces["player_0"]
    module = ActionMaskingPPOModule(observation_space=space, action_space=env.action_spaces[
        "player_0"], model_config={"fcnet_hiddens": [32], "vf_share_layers": False})
    obs, _ = env.reset(seed=1)
    (agent, o), = obs.items()
    batch = {Columns.OBS: {k: torch.as_tensor(v)[None].repeat(64, 1) for k, v in o.items()}}
    logits = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS]
    acts = torch.distributions.Categorical(logits=logits).sample()
    assert set(acts.tolist()) <= set(np.flatnonzero(o["action_mask"]).tolist())
    values = module.compute_values(
        {Columns.OBS: {k: torch.as_tensor(v)[None] for k, v in o.items()}})
    assert values.shape == (1,)


def test_rllib_ppo_smoke_beats_random(tmp_path):
    r = run_example("rllib_ppo.py", "--smoke", tmp_path=tmp_path)
    assert_beats(r, HANDS)
    assert_beats(r, INIT_HANDS, "vs_init")


def test_rllib_self_play_runs(tmp_path):
    r = run_example("rllib_ppo.py", "--self-play", "--iterations", "1", "--train-batch", "400",
                    "--eval-hands", "10", "--init-hands", "0", tmp_path=tmp_path)
    assert r["env_steps"] >= 400
    assert r["arena"]["pairs"] == 10 and r["vs_init"] is None


def test_the_route_from_the_gymnasium_ids():
    # docs/integrations.md: SpadesHand-v1 (seat 0 learns, bots in the other three seats, one
    # hand) is SpadesRLlibEnv with the three bots and hands_per_episode=1
    import gymnasium as gym

    import spades_env  # noqa: F401  (registers the ids)
    bots = {"player_1": "random", "player_2": "random", "player_3": "random"}
    env = SpadesRLlibEnv({"bots": bots, "hands_per_episode": 1})
    assert env.possible_agents == ["player_0"]
    obs, _ = env.reset(seed=0)
    gym_env = gym.make("SpadesHand-v1", partner="random", opponents="random")
    assert env.observation_spaces["player_0"]["observations"].shape == \
        gym_env.observation_space.shape
    rng = np.random.default_rng(0)
    steps, total = 0, 0.0
    while True:
        o = obs["player_0"]
        obs, rew, term, trunc, infos = env.step(
            {"player_0": int(rng.choice(np.flatnonzero(o["action_mask"])))})
        steps += 1
        total += rew.get("player_0", 0.0)
        if term["__all__"] or trunc["__all__"]:
            break
    assert steps == 14  # a bid and 13 cards, as an episode of SpadesHand-v1
    hr = infos["player_0"]["hand_result"]
    assert total == pytest.approx(
        (hr["teams"][0]["hand_points"] - hr["teams"][1]["hand_points"]) / 100)
