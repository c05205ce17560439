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


def _play_to_the_end(e):
    """Every agent to its end (legal actions, then the dead steps) of a one-hand episode."""
    while e.agents:
        ag = e.agent_selection
        done = e.terminations[ag] or e.truncations[ag]
        e.step(None if done else int(np.flatnonzero(e.observe(ag)["action_mask"])[0]))


def test_aec_step_after_the_episode_ended_is_a_clear_error_and_changes_nothing():
    import warnings
    from functools import partial

    from spades_env.bot_seats import BotSeatsEnv
    from spades_env.integrations import TurnCreditWrapper
    ended = r"{}: step\(\) after the episode ended \(every agent is done and removed\); call " \
            r"reset\(\) to start a new episode"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import spades_env.spades_v0 as v0
    for make, who in ((lambda: spades_v1.raw_env(hands_per_episode=1), "raw_env"),
                      (lambda: v0.raw_env(hands_per_episode=1), "raw_env"),
                      (lambda: TurnCreditWrapper(spades_v1.env(hands_per_episode=1)),
                       "TurnCreditWrapper"),
                      (lambda: BotSeatsEnv({"player_1": "random"},
                                           partial(spades_v1.raw_env, hands_per_episode=1)),
                       "BotSeatsEnv")):
        e = make()
        e.reset(seed=2)
        _play_to_the_end(e)
        moves = len(e.unwrapped.game.moves) if who != "BotSeatsEnv" else len(e.game.moves)
        for action in (None, 5):
            with pytest.raises(spades_v1.ResetNeededError, match=ended.format(who)) as err:
                e.step(action)
            assert isinstance(err.value, AssertionError) and isinstance(err.value, RuntimeError)
        assert e.agents == [] and e.terminations == {} and e.rewards == {}
        assert len((e.game if who == "BotSeatsEnv" else e.unwrapped.game).moves) == moves == 56
        e.reset(seed=2)  # and a reset starts the next episode
        assert len(e.agents) == (3 if who == "BotSeatsEnv" else 4)
    b = BotSeatsEnv({"player_1": "random"}, spades_v1.raw_env)
    with pytest.raises(spades_v1.ResetNeededError,
                       match=r"BotSeatsEnv: reset\(\) needs to be called before step\(\)"):
        b.step(55)


def test_env_warns_and_ignores_a_step_after_the_end_as_pettingzoos_wrapper_does(caplog):
    e = spades_v1.env(hands_per_episode=1)
    e.reset(seed=2)
    _play_to_the_end(e)
    caplog.clear()
    assert e.step(None) is None and e.step(5) is None
    assert [r.getMessage() for r in caplog.records] == [
        "[WARNING]: step() called after all agents are terminated or truncated. Should reset() "
        "first."] * 2
    assert e.agents == [] and len(e.unwrapped.game.moves) == 56


def test_parallel_step_after_the_end_gives_five_empty_dicts():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = spades_v1.parallel_env(hands_per_episode=1)
        obs, _ = p.reset(seed=4)
        while p.agents:
            acts = {a: int(np.flatnonzero(obs[a]["action_mask"])[0]) for a in p.agents
                    if obs[a]["action_mask"].any()}
            obs, *_ = p.step(acts)
        for actions in ({}, {"player_0": 5}):
            obs, rew, term, trunc, info = p.step(actions)
            assert (obs, rew, term, trunc, info) == ({}, {}, {}, {}, {})
        assert p.agents == [] and len(p.aec_env.unwrapped.game.moves) == 56


def test_single_agent_step_before_reset_and_after_the_end_say_which():
    env = SpadesSingleAgentEnv(seat=0, hands_per_episode=1)
    with pytest.raises(RuntimeError, match=r"^reset\(\) needs to be called before step\(\)$"):
        env.step(55)
    env.reset(seed=1)
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
        done = term or trunc
    moves = len(env.game.moves)
    with pytest.raises(RuntimeError, match=r"^the episode is over: call reset\(\) before step"):
        env.step(55)
    assert len(env.game.moves) == moves


def test_last_before_reset_and_after_the_end_is_a_clear_error():
    # last() after the end was a bare KeyError: 'player_1' (the last agent removed)
    import re
    import warnings
    from functools import partial

    from spades_env.bot_seats import BotSeatsEnv
    from spades_env.integrations import TurnCreditWrapper
    for make, who in ((lambda: spades_v1.raw_env(hands_per_episode=1), "raw_env"),
                      (lambda: spades_v1.env(hands_per_episode=1), "env()"),
                      (lambda: TurnCreditWrapper(spades_v1.env(hands_per_episode=1)),
                       "TurnCreditWrapper"),
                      (lambda: BotSeatsEnv({"player_1": "random"},
                                           partial(spades_v1.raw_env, hands_per_episode=1)),
                       "BotSeatsEnv")):
        e = make()
        if who != "env()":  # env() keeps PettingZoo's own error before reset
            with pytest.raises(spades_v1.ResetNeededError,
                               match=re.escape(f"{who}: reset() needs to be called before "
                                               f"last()")):
                e.last()
        e.reset(seed=2)
        _play_to_the_end(e)
        for _ in range(2):
            with pytest.raises(spades_v1.ResetNeededError,
                               match="^" + re.escape(f"{who}: last() after the episode ended "
                                                     f"(every agent is done and removed); "
                                                     f"call reset()")):
                e.last()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e.reset(seed=2)
        assert e.last()[2] is False  # a reset starts the next episode


def test_env_rules_take_a_rules_mapping_as_the_cli_does():
    """``rules=`` takes the rules mapping text of ``spades arena --rules`` (``Rules.parse``), not
    only a preset name: ``"house,min_team_bid=4"`` was refused as an unknown preset."""
    from spades_env import Rules
    want = Rules(loss_threshold=-200, blind_nil=True, min_team_bid=4)
    assert spades_v1.raw_env(rules="house,min_team_bid=4").rules == want
    assert spades_v1.raw_env(rules={"preset": "house", "min_team_bid": 4}).rules == want
    assert spades_v1.raw_env(rules="house", min_team_bid=4).rules == want
    assert SpadesSingleAgentEnv(rules="suicide,target_score=300").unwrapped._env.rules \
        == Rules(target_score=300, loss_threshold=-200, suicide=True, min_team_bid=4)
    with pytest.raises(ValueError, match="Rules.mirror and Rules.whiz cannot both be on"):
        spades_v1.raw_env(rules="mirror,whiz=true")
    with pytest.raises(ValueError, match="rules must be a spades_env.Rules, a preset name"):
        spades_v1.raw_env(rules=4)
