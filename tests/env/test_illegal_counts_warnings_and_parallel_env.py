"""The frameworks' papercuts that need no framework installed (the framework sessions in
``tests_frameworks/`` test them with SB3, Tianshou and Ray themselves): the single-agent env's
count of replaced moves survives ``reset`` and an episode ended by an illegal action warns once;
a raw env under Tianshou's ``PettingZooEnv`` warns once about the credit;
``spades_v1.parallel_env``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from spades_env import single_agent, spades_v1
from spades_env.integrations import TurnCreditWrapper


def _illegal(env) -> int:
    """An action id that is not legal now."""
    return int(np.flatnonzero(~env.action_masks())[0])


def test_illegal_total_survives_reset_and_illegal_count_does_not():
    env = single_agent.SpadesSingleAgentEnv(partner="random", opponents="random",
                                            hands_per_episode=1, illegal_action="random_legal")
    env.reset(seed=0)
    for _ in range(3):
        env.step(_illegal(env))
    assert env.illegal_count == env.illegal_total == 3
    env.reset(seed=1)  # what SB3's evaluate_policy does after the last episode
    assert env.illegal_count == 0 and env.illegal_total == 3


def test_an_episode_ended_by_an_illegal_action_warns_once_per_process(monkeypatch):
    monkeypatch.setattr(single_agent, "_warned_illegal_end", False)
    env = single_agent.SpadesSingleAgentEnv(partner="random", opponents="random",
                                            hands_per_episode=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seed in range(3):
            env.reset(seed=seed)
            *_, term, _, info = env.step(_illegal(env))
            assert term and "illegal_action" in info
    ours = [w for w in caught if "an illegal action ended the episode" in str(w.message)]
    assert len(ours) == 1 and "illegal_action='random_legal'" in str(ours[0].message)


def _fake_tianshou_reset(env):
    """``env.reset()`` called from a frame of a module named like Tianshou's."""
    ns = {"__name__": "tianshou.env.pettingzoo_env"}
    exec("def reset(e):\n    e.reset(seed=0)\n", ns)
    ns["reset"](env)


def test_a_raw_env_reset_by_tianshou_warns_once_and_the_credit_route_does_not(monkeypatch):
    monkeypatch.setattr(spades_v1, "_warned_raw_tianshou", False)
    with pytest.warns(UserWarning, match="without TurnCreditWrapper"):
        _fake_tianshou_reset(spades_v1.env())
    assert spades_v1._warned_raw_tianshou
    monkeypatch.setattr(spades_v1, "_warned_raw_tianshou", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fake_tianshou_reset(TurnCreditWrapper(spades_v1.env()))
        spades_v1.env().reset(seed=0)  # not under Tianshou
    assert not spades_v1._warned_raw_tianshou


def test_parallel_env_steps_the_agent_to_act_and_ignores_the_others():
    env = spades_v1.parallel_env(hands_per_episode=1, bots={"player_1": "random",
                                                            "player_3": "random"})
    obs, _ = env.reset(seed=4)
    assert env.agents == ["player_0", "player_2"]
    steps = 0
    while env.agents:
        acting = [a for a in env.agents if obs[a]["action_mask"].any()]
        assert len(acting) == 1
        actions = {a: int(np.flatnonzero(obs[a]["action_mask"])[0]) if a in acting else 67
                   for a in env.agents}  # 67: never legal here, and ignored
        obs, rew, term, trunc, _ = env.step(actions)
        steps += 1
    assert steps == 2 * 14 and all(term.values())
