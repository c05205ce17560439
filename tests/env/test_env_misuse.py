"""How the envs answer misuse and odd input: a step before reset is one clear error in the AEC env,
its wrappers and the parallel env, the parallel env names the agent to act when its actions lack
it or name unknown agents, a 0-d integer array is taken as an action by the AEC and single-agent
envs, and ``history`` must be a bool."""

import numpy as np
import pytest

from spades_env import SpadesSingleAgentEnv, spades_v1


def test_step_before_reset_is_a_clear_error():
    from spades_env import spades_v1
    from spades_env.integrations import TurnCreditWrapper
    for env, who in ((spades_v1.raw_env(), "raw_env"),
                     (TurnCreditWrapper(spades_v1.env()), "TurnCreditWrapper")):
        with pytest.raises(spades_v1.ResetNeededError,
                           match=f"{who}: reset\\(\\) needs to be called before step\\(\\)") as e:
            env.step(55)
        assert isinstance(e.value, AssertionError) and isinstance(e.value, RuntimeError)


def test_parallel_env_misuse_gets_the_aec_envs_clear_errors():
    import warnings
    from spades_env import spades_v1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(spades_v1.ResetNeededError,
                           match=r"parallel_env\(\): reset\(\) needs to be called before step"):
            spades_v1.parallel_env().step({"player_0": 1})
        p = spades_v1.parallel_env()
        p.reset(seed=0)
        with pytest.raises(ValueError, match="the actions lack 'player_0', the agent to act"):
            p.step({})
        with pytest.raises(ValueError, match=r"unknown agents \['bob'\].*'player_0' is to act"):
            p.step({"bob": 1, "player_0": 56})
        with pytest.raises(ValueError, match=r"takes a dict of actions by agent \(with "
                                             r"'player_0', the agent to act\), got list"):
            p.step([56, 56, 56, 56])
        legal = np.flatnonzero(p.aec_env.observe("player_0")["action_mask"])
        obs, rew, term, trunc, info = p.step({"player_0": int(legal[0])})
        assert info["player_0"]["active_agent"] == "player_1"


def test_single_agent_accepts_zero_dim_int_array():
    # a 0-d int array is in Discrete(68) (what model.predict(obs) returns for one observation)
    env = SpadesSingleAgentEnv(seat=0, partner="random", opponents="random")
    env.reset(seed=0)
    assert env.action_space.contains(np.array(52))
    obs, reward, terminated, truncated, info = env.step(np.array(52))  # bid Nil
    assert not terminated and "illegal_action" not in info
    assert env.game.bids[0] == 0


def test_aec_env_accepts_zero_dim_int_array():
    env = spades_v1.env()
    env.reset(seed=1)
    agent = env.agent_selection
    seat = int(agent[-1])
    env.step(np.array(55))  # bid 3: in bounds and in the mask, so it must be played
    assert env.unwrapped.game.bids[seat] == 3
    assert not any(env.unwrapped.terminations.values())


def test_env_history_must_be_a_bool():
    """Regression: env(history="no") was taken as truthy and silently grew the observation."""
    from spades_env import spades_v1
    for bad in ("no", 1, None):
        with pytest.raises(ValueError, match="history must be True or False"):
            spades_v1.env(history=bad)
    assert spades_v1.env(history=False).observation_space("player_0")["observation"].shape == (679,)
