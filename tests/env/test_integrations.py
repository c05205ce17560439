"""spades_env.integrations (framework-free parts): PolicyPlayer in the arena, the turn-credit
route for Tianshou-style reward attribution, and the parallel (turn-based) conversion."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from spades_env import SpadesGame, spades_v1
from spades_env.arena import play_match
from spades_env.bots import make_bot
from spades_env.integrations import PolicyPlayer, TurnCreditWrapper, legal_mask
from spades_env.observation import OBS_SIZE_V2, encode

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# ----------------------------------------------------------------------------- PolicyPlayer
def test_policy_player_sees_the_env_observation_and_mask():
    game = SpadesGame(seed=4)
    calls = []

    def fn(obs, mask):
        calls.append((obs, mask))
        return int(np.flatnonzero(mask)[0])

    p = PolicyPlayer(fn, name="first")
    view = game.view(game.current_player)
    assert p.act(view) == view.legal_actions[0]
    obs, mask = calls[0]
    assert np.array_equal(obs, encode(view)[:OBS_SIZE_V2]) and obs.dtype == np.float32
    assert mask.dtype == np.int8 and np.flatnonzero(mask).tolist() == list(view.legal_actions)
    assert np.array_equal(legal_mask(view), mask)
    hp = PolicyPlayer(lambda o, m: (calls.append(o), int(np.flatnonzero(m)[0]))[1], history=True)
    hp.act(view)
    assert calls[-1].shape == (OBS_SIZE_V2 + spades_v1.HISTORY_SIZE,)


def test_policy_player_matches_the_bot_it_wraps_in_the_arena():
    # A PolicyPlayer that asks a medium bot (through the view it closes over) must give the
    # same match as the medium bot itself: same seeds, same moves, same points.
    class ViaPolicy:
        name = "medium-via-policy"

        def __init__(self, seed):
            self.bot = make_bot("medium", seed=seed)
            self.player = PolicyPlayer(lambda obs, mask: self.bot.act(self._view))

        def act(self, view):
            self._view = view
            return self.player.act(view)

    a = play_match(lambda seed: ViaPolicy(seed), "random", hands=6, seed=3)
    b = play_match(lambda seed: make_bot("medium", seed=seed), "random", hands=6, seed=3)
    assert a.pair_diffs == b.pair_diffs and a.sides[0].points == b.sides[0].points


def test_policy_player_illegal_or_odd_output_is_a_clear_error():
    game = SpadesGame(seed=1)
    view = game.view(game.current_player)   # bidding: card ids are illegal
    with pytest.raises(ValueError, match=r"player 'bad' returned 0, not a legal action id"):
        PolicyPlayer(lambda o, m: 0, name="bad").act(view)
    with pytest.raises(ValueError, match="not a legal action id"):
        PolicyPlayer(lambda o, m: 1.5).act(view)
    assert PolicyPlayer(lambda o, m: np.array([53])).act(view) == 53  # a 1-element int array
    with pytest.raises(ValueError, match="callable"):
        PolicyPlayer("medium")


def test_uniform_policy_player_does_not_beat_random():
    # sanity of the arena check the examples use: a uniform policy is no better than random
    rng = np.random.default_rng(0)
    uniform = PolicyPlayer(lambda o, m: int(rng.choice(np.flatnonzero(m))), name="uniform")
    res = play_match(uniform, "random", hands=150, seed=11)
    lo, hi = res.point_diff_ci
    assert lo < 0 < hi


# ----------------------------------------------------------------------------- turn credit
def _tianshou_like_run(env, rng, seed):
    """Play as Tianshou's PettingZooEnv + multi-agent policy do: after each step read the
    ``rewards`` vector and credit only the column of the agent that acted. Returns the rewards
    credited per agent (the nonzero ones, in order) and the game."""
    env.reset(seed=seed)
    credited = {a: [] for a in env.possible_agents}
    while True:
        actor = env.agent_selection
        obs = env.observe(actor)
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if env.rewards[actor]:
            credited[actor].append(env.rewards[actor])
        nxt = env.agent_selection
        if env.terminations[nxt] or env.truncations[nxt]:
            return credited, env.unwrapped.game


@pytest.mark.parametrize("kwargs", [
    {},
    {"hands_per_episode": 1},
    {"bots": {"player_1": "random", "player_3": "easy"}},
])
def test_every_agent_receives_every_hand_reward(kwargs):
    rng = np.random.default_rng(0)
    env = TurnCreditWrapper(spades_v1.env(loss_threshold=-200, **kwargs))
    hands = 0
    for seed in range(4):
        credited, game = _tianshou_like_run(env, rng, seed)
        team_r = [(h.teams[0].hand_points - h.teams[1].hand_points) / 100
                  for h in game.hand_results]
        hands += len(team_r)
        for a in env.possible_agents:
            sign = 1 if int(a[-1]) % 2 == 0 else -1
            assert credited[a] == pytest.approx([sign * r for r in team_r if r != 0]), a
    assert hands >= 4


def test_without_the_wrapper_most_hand_rewards_are_lost():
    # the failure the wrapper fixes: only the agent that played a hand's last card is credited
    rng = np.random.default_rng(0)
    env = spades_v1.env(loss_threshold=-200)
    got = total = 0
    for seed in range(4):
        credited, game = _tianshou_like_run(env, rng, seed)
        nonzero = sum(1 for h in game.hand_results if h.teams[0].hand_points
                      != h.teams[1].hand_points)
        total += 4 * nonzero
        got += sum(len(v) for v in credited.values())
    assert got * 4 == total  # exactly one of the four agents per hand


def test_turn_credit_final_turns_and_dead_steps():
    env = TurnCreditWrapper(spades_v1.env(hands_per_episode=1))
    env.reset(seed=2)
    rng = np.random.default_rng(1)
    while not env._in_final:
        obs = env.observe(env.agent_selection)
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    finals = []
    while env._in_final:
        a = env.agent_selection
        obs, r, term, trunc, info = env.last()
        assert obs["action_mask"].all() and not term  # any action, ignored
        finals.append(a)
        env.step(0)
    assert len(finals) == 3 and len(set(finals)) == 3
    assert all(env.terminations.values())
    for agent in env.agent_iter(10):   # PettingZoo's dead steps remove the agents
        env.step(None)
    assert env.agents == []


# ----------------------------------------------------------------------------- parallel API
def test_turn_based_aec_to_parallel_passes_parallel_api_test():
    par = turn_based_aec_to_parallel(spades_v1.env(hands_per_episode=1))
    parallel_api_test(par, num_cycles=200)
    par = turn_based_aec_to_parallel(spades_v1.env(bots={"player_1": "random",
                                                          "player_3": "random"},
                                                    hands_per_episode=1))
    parallel_api_test(par, num_cycles=200)
    obs, infos = par.reset(seed=0)
    assert set(obs) == {"player_0", "player_2"}


def test_arena_ray_without_ray_or_cluster_is_a_clear_error():
    # the base install has no Ray; with Ray, nothing listens on port 1
    with pytest.raises(ValueError, match=r"Ray is not installed|cannot connect to the Ray"):
        play_match("easy", "easy", hands=2, ray_address="127.0.0.2:1")
    with pytest.raises(ValueError, match="make_bot name"):
        play_match(lambda seed: make_bot("easy", seed=seed), "easy", hands=2,
                   ray_address="127.0.0.2:1")


def test_the_examples_measure_options_refuse_bad_values_before_training():
    import argparse

    from spades_env.integrations import add_measure_args
    p = argparse.ArgumentParser()
    add_measure_args(p)
    a = p.parse_args([])
    assert (a.eval_hands, a.vs, a.init_hands, a.untrained, a.json) == (300, "random", 100, False,
                                                                      None)
    assert p.parse_args(["--init-hands", "0", "--vs", "easy"]).init_hands == 0
    for bad in (["--eval-hands", "0"], ["--eval-hands", "x"], ["--init-hands", "-1"],
                ["--vs", "nosuchbot"]):
        with pytest.raises(SystemExit):
            p.parse_args(bad)
