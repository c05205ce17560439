"""SpadesSingleAgentEnv: gymnasium's env checker, rewards vs the engine, masks, bots, illegal
actions, seeding."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from spades_env import IllegalActionError, SpadesGame, SpadesSingleAgentEnv
from spades_env.bots import RandomBot
from spades_env.cards import bid_action
from spades_env.observation import OBS_SIZE_V2, encode

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_check_env_passes():
    check_env(SpadesSingleAgentEnv(seat=0, partner="random", opponents="random"),
              skip_render_check=True)
    check_env(SpadesSingleAgentEnv(seat=3, partner="random", opponents="random",
                                   hands_per_episode=1, blind_nil=True, history=True),
              skip_render_check=True)


def _play(env, rng, seed):
    obs, info = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        game = env.game
        assert game.current_player == env.seat
        mask = env.action_masks()
        assert mask.dtype == bool and np.flatnonzero(mask).tolist() == game.legal_actions()
        assert np.array_equal(info["action_mask"].astype(bool), mask)
        assert np.array_equal(obs, encode(game.view(env.seat))[:OBS_SIZE_V2])
        legal = np.flatnonzero(mask)
        obs, r, term, trunc, info = env.step(int(legal[rng.integers(len(legal))]))
        total += r
        steps += 1
        if term or trunc:
            return total, steps, term, trunc, info


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
def test_rewards_add_up_to_engine_scores(seat):
    rng = np.random.default_rng(seat)
    env = SpadesSingleAgentEnv(seat=seat, partner="random", opponents="random",
                               loss_threshold=-200)
    for g in range(5):
        total, steps, term, trunc, info = _play(env, rng, seed=10 * seat + g)
        game = env.game
        assert term and not trunc and game.is_over
        mine, theirs = game.scores[seat % 2], game.scores[1 - seat % 2]
        assert total == pytest.approx((mine - theirs) / 100)
        assert info["winner"] == game.winner
        assert info["hand_result"] == game.hand_results[-1].to_dict()
        assert not env.action_masks().any()


def test_game_reward_and_truncation():
    rng = np.random.default_rng(0)
    env = SpadesSingleAgentEnv(seat=1, partner="random", opponents="random", reward="game",
                               loss_threshold=-100)
    total, *_ = _play(env, rng, seed=5)
    assert total == (1.0 if env.game.winner == 1 else -1.0)
    env = SpadesSingleAgentEnv(seat=1, partner="random", opponents="random", reward="game",
                               max_hands=1)
    total, steps, term, trunc, info = _play(env, rng, seed=5)
    assert (total, term, trunc) == (0.0, False, True)
    assert steps == 14  # 1 bid + 13 cards


def test_same_seed_same_game_and_different_seed_differs():
    def run(seed):
        env = SpadesSingleAgentEnv(seat=2, partner="random", opponents="random",
                                   hands_per_episode=1)
        rng = np.random.default_rng(0)
        _play(env, rng, seed)
        return env.game.moves
    assert run(3) == run(3)
    assert run(3) != run(4)


def test_callable_bots_get_views_of_their_own_seat():
    seen = []

    def first_legal(view):
        assert view.current_player == view.seat and view.hand.bit_count() <= 13
        seen.append(view.seat)
        return view.legal_actions[0]

    env = SpadesSingleAgentEnv(seat=0, partner=first_legal,
                               opponents=(RandomBot(seed=1), first_legal), hands_per_episode=1)
    total, steps, term, trunc, info = _play(env, np.random.default_rng(0), seed=1)
    assert term and steps == 14
    assert set(seen) == {2, 3}
    assert seen.count(2) == 14 and seen.count(3) == 14


def test_illegal_action_terminates_or_raises():
    env = SpadesSingleAgentEnv(seat=0, partner="random", opponents="random")
    obs, info = env.reset(seed=0)
    assert env.game.phase == 0  # bidding: a card is illegal
    before = env.game.to_json()
    obs2, r, term, trunc, info = env.step(0)
    assert (r, term, trunc) == (-1.0, True, False)
    assert "bidding" in info["illegal_action"] and not env.action_masks().any()
    assert env.game.to_json() == before
    with pytest.raises(RuntimeError, match="reset"):
        env.step(bid_action(3))
    env = SpadesSingleAgentEnv(seat=0, partner="random", opponents="random",
                               illegal_action="raise")
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match="bidding"):
        env.step(0)
    env.step(bid_action(3))  # still usable: nothing changed


@pytest.mark.parametrize("kwargs, msg", [
    (dict(seat=4), "seat"),
    (dict(partner="grandmaster"), "unknown bot"),
    (dict(opponents=("random",)), "pair"),
    (dict(opponents=3), "pair"),
    (dict(illegal_action="ignore"), "illegal_action"),
    (dict(reward="money"), "reward"),
])
def test_bad_arguments_raise(kwargs, msg):
    args = dict(partner="random", opponents="random")
    args.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        SpadesSingleAgentEnv(**args)


def test_scripted_deal_via_underlying_env_and_render():
    env = SpadesSingleAgentEnv(seat=0, partner="random", opponents="random", render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "seat 0" in text and "Score" in text
    assert isinstance(env.game, SpadesGame)


def test_default_bots_play_a_hand():
    # defaults: partner and opponents "medium" (spades_env/bots/heuristic.py)
    env = SpadesSingleAgentEnv(hands_per_episode=1)
    total, steps, term, trunc, info = _play(env, np.random.default_rng(0), seed=2)
    assert term and steps == 14
    res = env.game.hand_results[0]
    assert total == pytest.approx((res.teams[0].hand_points - res.teams[1].hand_points) / 100)
