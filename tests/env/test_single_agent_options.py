"""``SpadesSingleAgentEnv.reset(options=...)`` honours what ``spades_v1`` honours and refuses the
rest by name."""

from __future__ import annotations

import numpy as np
import pytest

from spades_env import Rules, SpadesGame, bid_action, spades_v1
from spades_env.observation import OBS_SIZE_V2, encode
from spades_env.single_agent import SpadesSingleAgentEnv

# seat 0 all spades, seat 1 all hearts, seat 2 all diamonds, seat 3 all clubs
SUIT_HANDS = [list(range(13 * s, 13 * s + 13)) for s in (3, 2, 1, 0)]


def _env(**kw):
    return SpadesSingleAgentEnv(seat=0, partner="random", opponents="random", **kw)


def test_a_given_game_is_played_from_its_deal():
    start = SpadesGame.from_deal(SUIT_HANDS, dealer=3)  # seat 0 bids first
    env = _env()
    obs, info = env.reset(seed=4, options={"game": start})
    assert env.game.hands == start.hands and env.game is not start
    assert np.array_equal(obs, encode(start.view(0))[:OBS_SIZE_V2])
    raw = spades_v1.raw_env()
    raw.reset(seed=4, options={"game": start})
    assert np.array_equal(obs, raw.observe("player_0")["observation"])
    assert start.moves == []                            # the caller's game is not played
    env.step(bid_action(13))                           # bots bid; seat 0 leads the first trick
    assert env.game.bids[0] == 13 and env.game.current_player == 0
    assert env.game.hands[0] == start.hands[0] and env.game.phase == 2


def test_a_given_game_where_bots_act_first_is_advanced_to_the_learner():
    start = SpadesGame.from_deal(SUIT_HANDS, dealer=0)  # seat 1 bids first: a bot
    env = _env()
    env.reset(seed=1, options={"game": start})
    assert env.game.current_player == 0 and env.game.bids[1] is not None


@pytest.mark.parametrize("options,match", [
    ({"gmae": None}, "'gmae'"),
    ({"game": None, "seed": 3}, "'seed'"),
    ({"hands_per_episode": 1}, "'hands_per_episode'"),
    ({"game": "x"}, "must be a SpadesGame"),
    ({"game": SpadesGame(Rules(target_score=250), seed=0)}, "rules"),
    ("game", "dict"),
    ([("game", None)], "dict"),
])
def test_unknown_or_bad_options_are_refused_by_name_and_nothing_changes(options, match):
    env = _env()
    obs0, _ = env.reset(seed=7)
    before = env.game.to_json()
    with pytest.raises(ValueError, match=match):
        env.reset(options=options)
    assert env.game.to_json() == before
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # the episode goes on


def test_a_finished_game_is_refused():
    rules = Rules(target_score=50)
    g = SpadesGame.from_deal(SUIT_HANDS, dealer=3, rules=rules)
    for b in (13, 0, 0, 0):                             # seat 0 holds every spade: 13 tricks
        g.apply(bid_action(b))
    while not g.is_over:
        g.apply(g.legal_actions()[0])
    assert g.scores[0] >= 130                           # 13 bid and made, Nils made
    with pytest.raises(ValueError, match="already over"):
        _env(rules=rules).reset(options={"game": g})


def test_no_options_and_empty_options_are_the_same_reset():
    a, b = _env(), _env()
    oa, _ = a.reset(seed=11)
    ob, _ = b.reset(seed=11, options={})
    assert np.array_equal(oa, ob) and a.game.to_json() == b.game.to_json()
