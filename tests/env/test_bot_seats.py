"""spades_v1.env(bots=...): bots seated inside the AEC env, only learning agents exposed."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from spades_env import IllegalActionError, PlayerView, SpadesGame, spades_v1
from spades_env.cards import bid_action

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MEDIUM_OPPONENTS = {"player_1": "medium", "player_3": "medium"}


def test_api_and_seed_tests_pass_with_bots():
    api_test(spades_v1.env(bots=MEDIUM_OPPONENTS), num_cycles=300)
    api_test(spades_v1.env(bots={"player_0": "random", "player_2": "easy", "player_3": "random"},
                           hands_per_episode=1), num_cycles=300)
    seed_test(lambda: spades_v1.env(bots=MEDIUM_OPPONENTS), num_cycles=300)


def test_only_learning_agents_are_exposed_and_act():
    env = spades_v1.env(bots=MEDIUM_OPPONENTS)
    assert env.possible_agents == ["player_0", "player_2"]
    env.reset(seed=3)
    acted = set()
    for agent in env.agent_iter(2000):
        obs, r, term, trunc, info = env.last()
        acted.add(agent)
        if term or trunc:
            env.step(None)
            continue
        assert env.unwrapped.game.current_player == int(agent[-1])  # the learner is to act
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert acted == {"player_0", "player_2"}


def _scripted_bot(bid, seen):
    def bot(view):
        seen.append(view)
        if view.phase == 0:
            return bid_action(bid)
        return view.legal_actions[0]
    return bot


def test_scripted_hand_with_bots_rewards_and_views():
    # The scripted hand of test_env_api: seat 0 holds all spades and wins all 13 tricks.
    # Bids 5 (learner), Nil (bot 1), 1 (learner), 2 (bot 3): team 0 67 points, team 1 +100 - 20
    # = 80, so each learner's reward is (67 - 80) / 100 = -0.13. The hand's last card is played
    # by bot seat 3 (seat 0 leads every trick), so the reward arrives in player_2's step.
    deal = [[s * 13 + r for r in range(13)] for s in (3, 2, 1, 0)]
    game = SpadesGame.from_deal(deal, dealer=3, seed=0)
    seen1, seen3 = [], []
    env = spades_v1.env(bots={"player_1": _scripted_bot(0, seen1),
                              "player_3": _scripted_bot(2, seen3)}, hands_per_episode=1)
    env.reset(seed=0, options={"game": game})
    env.step(bid_action(5))                  # player_0; then bot 1 bids Nil
    assert env.agent_selection == "player_2"
    env.step(bid_action(1))                  # player_2; then bot 3 bids 2
    total = {"player_0": 0.0, "player_2": 0.0}
    for agent in env.agent_iter(200):
        obs, r, term, trunc, info = env.last()
        total[agent] += r
        if term:
            env.step(None)
            continue
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    raw = env.unwrapped
    assert raw.game.hand_results[0].bids == (5, 0, 1, 2)
    assert raw.game.hand_results[0].tricks == (13, 0, 0, 0)
    assert total == pytest.approx({"player_0": -0.13, "player_2": -0.13})
    # each bot saw only its own seat's information set
    assert seen1 and all(isinstance(v, PlayerView) and v.seat == 1 for v in seen1)
    assert all(v.hand & ~game.hands[1] == 0 for v in seen1)
    assert all(v.seat == 3 for v in seen3)


def test_reward_sum_equals_score_difference_over_games():
    env = spades_v1.env(bots={"player_1": "random", "player_3": "easy"}, loss_threshold=-200)
    rng = np.random.default_rng(0)
    for seed in range(3):
        env.reset(seed=seed)
        total = {"player_0": 0.0, "player_2": 0.0}
        for agent in env.agent_iter(5000):
            obs, r, term, trunc, info = env.last()
            total[agent] += r
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.integers(len(legal))]))
        g = env.unwrapped.game
        expect = (g.scores[0] - g.scores[1]) / 100
        assert total == pytest.approx({"player_0": expect, "player_2": expect})


def test_same_seed_same_deals_as_without_bots_and_same_bot_moves():
    def moves(seed):
        env = spades_v1.env(bots={"player_1": "medium", "player_2": "easy", "player_3": "medium"},
                            hands_per_episode=1)
        env.reset(seed=seed)
        first_hands = list(env.unwrapped.game.initial.get("hands") or [])
        deal = env.unwrapped.game.hands[:]
        for agent in env.agent_iter(200):
            obs, r, term, trunc, info = env.last()
            env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[-1]))
        return env.unwrapped.game.moves, deal, first_hands
    m1, d1, _ = moves(7)
    m2, d2, _ = moves(7)
    assert m1 == m2 and d1 == d2
    plain = spades_v1.env()
    plain.reset(seed=7)
    assert plain.unwrapped.game.hands == d1


def test_checkpoint_bot_spec():
    pytest.importorskip("torch")
    env = spades_v1.env(bots={"player_1": "checkpoint:checkpoints/shipped/agent.pt",
                              "player_3": "checkpoint:checkpoints/shipped/agent.pt"},
                        hands_per_episode=1)
    env.reset(seed=1)
    for agent in env.agent_iter(200):
        obs, r, term, trunc, info = env.last()
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    assert env.unwrapped.game.hand_number == 1
    assert type(env.unwrapped.bots["player_1"]).__name__ == "CheckpointBot"


@pytest.mark.parametrize("bots, msg", [
    ({"player_9": "medium"}, "unknown agent 'player_9'"),
    ({"player_1": "grandmaster"}, "unknown bot 'grandmaster'"),
    ({"player_1": 3}, "bot for player_1 must be"),
    ({a: "random" for a in spades_v1.AGENTS}, "at least one learning agent"),
    (["player_1"], "bots must be a dict"),
    ({"player_1": "checkpoint:/nonexistent.pt"}, "no checkpoint file"),
])
def test_bad_bots_raise(bots, msg):
    with pytest.raises(ValueError, match=msg):
        spades_v1.env(bots=bots)


def test_bot_illegal_action_is_a_clear_error():
    env = spades_v1.env(bots={"player_1": lambda view: 0, "player_3": "random"})
    with pytest.raises(ValueError, match=r"bot for player_1 .* illegal action 0"):
        for seed in range(20):  # player_1 bids 0 (a card id) at its first turn
            env.reset(seed=seed)
            for agent in env.agent_iter(20):
                obs, r, term, trunc, info = env.last()
                env.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_learner_illegal_action_raw_raises_wrapped_terminates():
    from spades_env.bot_seats import BotSeatsEnv
    raw = BotSeatsEnv(MEDIUM_OPPONENTS, spades_v1.raw_env)
    raw.reset(seed=0)
    before = raw.game.to_json()
    with pytest.raises(IllegalActionError):
        raw.step(0)  # a card during bidding
    assert raw.game.to_json() == before
    env = spades_v1.env(bots=MEDIUM_OPPONENTS)
    env.reset(seed=0)
    agent = env.agent_selection
    env.step(0)
    assert all(env.terminations.values())
    assert env._cumulative_rewards[agent] == -1
    assert not env.observe(env.agent_selection)["action_mask"].any()


def test_state_and_render_pass_through():
    env = spades_v1.env(bots=MEDIUM_OPPONENTS, render_mode="rgb_array")
    env.reset(seed=0)
    assert env.state().shape == (735,) and env.state_space.contains(env.state())
    assert env.render().shape == (480, 640, 3)
