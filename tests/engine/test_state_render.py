"""Full-information state (state(), state_space), finite observation bounds, rgb_array render."""

from __future__ import annotations

import re

import numpy as np
import pytest

import spades_env.state as st
from spades_env import Rules, SpadesGame, SpadesSingleAgentEnv, spades_v1
from spades_env.rules import score_hand
from spades_env.cards import bid_action
from spades_env.render_image import draw_table

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _suits_deal():
    """Seat 0 holds all spades, 1 hearts, 2 diamonds, 3 clubs."""
    return [[s * 13 + r for r in range(13)] for s in (3, 2, 1, 0)]


def test_state_offsets_match_the_docstring_table():
    rows = re.findall(r"^\| (\w+)\s+\| (\d+)(?:x(\d+))?\s+\|", st.__doc__, flags=re.M)
    table = [(name, int(a) * (int(b) if b else 1)) for name, a, b in rows]
    assert table == list(st.STATE_PIECES)
    assert st.STATE_SIZE == 735 == sum(n for _, n in table)


def test_state_of_a_scripted_position():
    game = SpadesGame.from_deal(_suits_deal(), dealer=3, scores=(120, -40), bags=(3, 7), seed=0)
    for b in (5, 0, 1, 2):          # seats 0, 1, 2, 3 bid (left of dealer 3 is seat 0)
        game.apply(bid_action(b))
    game.apply(3 * 13 + 12)         # seat 0 (only spades) leads the ace of spades
    game.apply(2 * 13 + 0)          # seat 1 cannot follow: plays the 2 of hearts
    s = st.encode_state(game)
    o = st.STATE_OFFSETS
    seg = {k: s[a:b] for k, (a, b) in o.items()}
    assert seg["phase"].tolist() == [0, 0, 1, 0]
    assert np.flatnonzero(seg["to_act"]).tolist() == [2]
    assert np.flatnonzero(seg["dealer"]).tolist() == [3]
    hands = seg["hands"].reshape(4, 52)
    assert np.flatnonzero(hands[0]).tolist() == list(range(39, 51))     # spades but the ace
    assert np.flatnonzero(hands[1]).tolist() == list(range(27, 39))     # hearts but the 2
    assert np.flatnonzero(hands[3]).tolist() == list(range(0, 13))
    trick = seg["trick"].reshape(4, 52)
    assert np.flatnonzero(trick[0]).tolist() == [51] and np.flatnonzero(trick[1]).tolist() == [26]
    assert np.flatnonzero(seg["led_suit"]).tolist() == [3]
    bids = seg["bids"].reshape(4, 16)
    assert [int(np.flatnonzero(r)[0]) for r in bids] == [6, 1, 2, 3]  # 1+b, Nil = slot 1
    voids = seg["voids"].reshape(4, 4)
    assert np.flatnonzero(voids[1]).tolist() == [3]                     # seat 1 showed no spade
    # a forced spade lead (a hand of only spades) does not break spades under the standard rules
    assert seg["spades_broken"][0] == 0
    assert seg["scores"].tolist() == pytest.approx([120 / 500, -40 / 500])
    assert seg["bags"].tolist() == pytest.approx([0.3, 0.7])
    assert seg["target"][0] == pytest.approx(1.0)


def test_env_state_in_space_every_step_and_hidden_cards_only_there():
    env = spades_v1.env(hands_per_episode=1)
    env.reset(seed=5)
    assert np.isfinite(env.state_space.low).all() and np.isfinite(env.state_space.high).all()
    rng = np.random.default_rng(0)
    for agent in env.agent_iter(200):
        s = env.state()
        assert s.dtype == np.float32 and env.state_space.contains(s)
        obs, r, term, trunc, info = env.last()
        if term:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    with pytest.raises(RuntimeError, match="reset"):
        spades_v1.raw_env().state()


def test_score_bound_holds_big_bids():
    """``big_bid_double``: a made 13-trick contract scores 20 per trick (260), more than the
    bound of 143 + two Nils when Nils and bags are worth nothing."""
    rules = Rules(big_bid_double=7, nil_bonus=0, blind_nil_bonus=0, bag_penalty=0)
    t0, _ = score_hand([7, 0, 6, 0], [6, 0, 7, 0], [0, 0], rules)
    assert t0.hand_points == 260
    assert st.hand_points_bound(rules) >= 260
    assert st.hand_points_bound(Rules()) == 730  # unchanged without the switch


def test_score_bound_by_hand_and_finite_observation_bounds():
    # standard: a Nil is worth at most max(100, 200) = 200; gain <= 130 + 13 + 400 = 543,
    # loss <= 130 + 400 + 2 * 100 (9 carried + 13 new bags trip the penalty twice) = 730
    assert st.hand_points_bound(Rules()) == 730
    assert st.score_bound(Rules(), 100) == pytest.approx(730 * 100 / 500)
    assert st.score_bound(Rules(target_score=250), 10) == pytest.approx(730 * 10 / 250)
    assert st.score_bound(Rules(), None) == float(np.finfo(np.float32).max)
    for kw in ({}, {"max_hands": None}, {"history": True}, {"target_score": 250}):
        box = spades_v1.env(**kw).observation_space("player_0")["observation"]
        assert np.isfinite(box.low).all() and np.isfinite(box.high).all()
    box = spades_v1.env().observation_space("player_0")["observation"]
    a, b = spades_v1.OFFSETS["scores"]
    assert box.high[a:b].tolist() == pytest.approx([146.0, 146.0])
    assert box.low[a:b].tolist() == pytest.approx([-146.0, -146.0])
    # a 100-hand game stays inside the bounds
    env = spades_v1.env(max_hands=100)
    env.reset(seed=1)
    for agent in env.agent_iter(100_000):
        obs, r, term, trunc, info = env.last()
        assert env.observation_space(agent).contains(obs)
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[-1]))


# ----------------------------------------------------------------------------- rgb_array
def test_rgb_array_fixed_size_and_changes_when_a_card_is_played():
    env = spades_v1.env(render_mode="rgb_array", hands_per_episode=1)
    env.reset(seed=2)
    frames = [env.render()]
    for agent in env.agent_iter(60):
        obs, r, term, trunc, info = env.last()
        if term:
            break
        before = env.render()
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        after = env.render()
        assert after.shape == (480, 640, 3) and after.dtype == np.uint8
        assert not np.array_equal(before, after)   # a bid or a card changes the picture
        frames.append(after)
    assert len({f.tobytes() for f in frames}) == len(frames)


def test_single_agent_image_hides_the_other_hands():
    # Swap one heart of seat 1 with one diamond of seat 2: seat 0's information is unchanged,
    # so seat 0's picture must be identical, while the referee's picture differs.
    deal = _suits_deal()
    alt = [h[:] for h in deal]
    alt[1][0], alt[2][0] = alt[2][0], alt[1][0]
    g1 = SpadesGame.from_deal(deal, dealer=3, seed=0)
    g2 = SpadesGame.from_deal(alt, dealer=3, seed=0)
    assert np.array_equal(draw_table(g1, viewer=0), draw_table(g2, viewer=0))
    assert not np.array_equal(draw_table(g1), draw_table(g2))
    assert not np.array_equal(draw_table(g1, viewer=1), draw_table(g2, viewer=1))
    with pytest.raises(ValueError, match="viewer"):
        draw_table(g1, viewer=4)
    env = SpadesSingleAgentEnv(seat=2, partner="random", opponents="random",
                               render_mode="rgb_array")
    env.reset(seed=0)
    assert np.array_equal(env.render(), draw_table(env.game, viewer=2))


def test_record_video_writes_a_video(tmp_path):
    import gymnasium as gym
    from gymnasium.wrappers import RecordVideo
    env = RecordVideo(gym.make("SpadesHand-v1", render_mode="rgb_array", partner="random",
                               opponents="random"), str(tmp_path), episode_trigger=lambda k: True)
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        done = term or trunc
    env.close()
    videos = list(tmp_path.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000
