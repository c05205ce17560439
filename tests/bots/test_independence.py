"""What an accessor returns, or what a constructor is given, is never shared with the live game:
editing it changes nothing in the game or env."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from spades_env import Rules, SpadesGame, spades_v1
from spades_env.bots import make_bot
from spades_env.single_agent import SpadesSingleAgentEnv


def _played(seed=0, moves=10, rules=None) -> SpadesGame:
    g = SpadesGame(rules, seed=seed)
    bot = make_bot("random", seed=seed)
    for _ in range(moves):
        g.apply(bot.act(g.view(g.current_player)))
    return g


def _vandalise(x):
    """Edit every list and dict inside ``x`` in place (the edits a caller might make)."""
    if isinstance(x, dict):
        for k in list(x):
            if isinstance(x[k], (dict, list)):
                _vandalise(x[k])
            elif isinstance(x[k], bool):
                x[k] = not x[k]
            elif isinstance(x[k], int):
                x[k] += 1
        x["added"] = 1
    elif isinstance(x, list):
        for i, v in enumerate(x):
            if isinstance(v, (dict, list)):
                _vandalise(v)
            elif isinstance(v, int) and not isinstance(v, bool):
                x[i] = v + 1
        x.append(0)


def test_editing_a_to_dict_snapshot_never_changes_the_game():
    for g in (_played(0), _played(1, 80), _played(2, 0), _played(3, 0).clone()):
        before = g.to_json()
        _vandalise(g.to_dict())
        assert g.to_json() == before
        SpadesGame.from_json(g.to_json())


def test_the_initial_state_is_a_copy_each_time():
    g = _played(4)
    before = g.to_json()
    init = g.initial
    init["dealer"] = (init["dealer"] + 1) % 4      # this once broke the game's own save
    init["hands"][0] = 0
    assert g.to_json() == before
    SpadesGame.from_json(g.to_json())


def test_from_dict_keeps_nothing_of_the_callers_dict():
    g = _played(5, 30)
    d = json.loads(g.to_json())
    h = SpadesGame.from_dict(d)
    _vandalise(d)
    assert h.to_json() == g.to_json()
    SpadesGame.from_json(h.to_json())


def test_clone_is_deeply_independent_both_ways():
    g = _played(6, 25, Rules.preset("house"))
    before = g.to_json()
    c = g.clone()
    _vandalise(c.to_dict())
    init = c.initial
    _vandalise(init)
    c.hands[0] = 0                                   # even the clone's own lists
    c.hand_results.append(None)
    assert g.to_json() == before
    c2 = g.clone()
    while not c2.is_over and c2.hand_number < 2:      # play the clone on
        c2.apply(c2.legal_actions()[0])
    assert g.to_json() == before
    c3 = g.clone()
    g.apply(g.legal_actions()[0])                    # and the original on
    assert c3.to_json() == before


def test_a_clones_random_stream_cannot_be_changed_through_its_snapshot():
    g = SpadesGame(seed=1)
    c = g.clone()
    s = c.to_dict()
    s["rng"]["state"]["state"] += 1                  # the same, through the RNG state
    assert c.rng.integers(1 << 30) == g.rng.integers(1 << 30)


def test_accessors_return_new_objects():
    g = _played(7, 12)
    h = g.hand(g.current_player)
    h.append(99)
    assert 99 not in g.hand(g.current_player)
    la = g.legal_actions()
    la.clear()
    assert g.legal_actions()
    v = g.view(0)
    assert isinstance(v.bids, tuple) and isinstance(v.hand_results, tuple)
    assert isinstance(v.play_history, tuple) and isinstance(v.known_cards, tuple)
    t = g.current_trick
    t.append((0, 0))
    assert len(g.current_trick) == len(g.trick)


def test_games_seeded_with_any_numpy_bit_generator_save_and_load():
    for bg in (np.random.MT19937(1), np.random.Philox(2), np.random.SFC64(3)):
        g = SpadesGame(seed=np.random.Generator(bg))
        for _ in range(6):
            g.apply(g.legal_actions()[0])
        h = SpadesGame.from_json(g.to_json())
        assert h.to_json() == g.to_json()
        while g.hand_number == 0:                    # the next deal comes from the same stream
            g.apply(g.legal_actions()[0])
            h.apply(h.legal_actions()[0])
        assert g.hands == h.hands


def test_vector_get_game_returns_a_game_of_its_own():
    torch = pytest.importorskip("torch")
    from spades_env.vector import SpadesVectorEnv

    env = SpadesVectorEnv(2, seed=0, backend="torch")
    env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(10):
        env.step(env.sample_actions(gen))
    a = env.get_game(1)
    ref = a.to_json()
    a.apply(a.legal_actions()[0])                    # play ahead on it, then vandalise it
    a.scores[0] += 1000
    a.hands[0] = 0
    assert env.get_game(1).to_json() == ref
    env.step(env.sample_actions(gen))
    b = env.get_game(1)
    assert len(b.moves) == 11 and b.hands[0] != 0


def test_vector_state_dict_in_and_out_are_copies():
    torch = pytest.importorskip("torch")
    from spades_env.vector import SpadesVectorEnv

    for backend in ("torch", "native"):
        env = SpadesVectorEnv(2, seed=0, backend=backend)
        env.reset()
        for _ in range(7):
            env.step(env.sample_actions())
        sd = env.state_dict()
        ref = copy.deepcopy(sd)
        for k, v in sd.items():
            if isinstance(v, torch.Tensor) and v.dtype != torch.bool:
                v.add_(1)
        assert all(torch.equal(env.state_dict()[k], ref[k]) for k in env._STATE)
        env.load_state_dict(ref)
        for k in env._STATE:
            if ref[k].dtype == torch.bool:
                ref[k].logical_not_()
            else:
                ref[k].add_(1)
        obs, mask, _ = env.current()
        again = env.state_dict()
        assert all(not torch.equal(again[k], ref[k]) for k in env._STATE)
        s = env.scores
        s.add_(5)
        assert not torch.equal(env.scores, s)


def test_env_infos_are_per_agent_copies():
    env = spades_v1.raw_env()
    env.reset(seed=3)
    while not env.infos["player_0"]:
        env.step(env.legal_actions()[0])
    hr = env.infos["player_0"]["hand_result"]
    hr["bids"][0] = 99
    hr["teams"][0]["total"] = -1
    assert env.infos["player_1"]["hand_result"]["bids"][0] != 99
    assert env.infos["player_1"]["hand_result"]["teams"][0]["total"] == env.game.scores[0]


def test_single_agent_info_mask_is_the_callers_to_edit():
    env = SpadesSingleAgentEnv(partner="random", opponents="random", illegal_action="raise")
    obs, info = env.reset(seed=2)
    legal = np.flatnonzero(env.action_masks())
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    info["action_mask"][:] = 1                       # the caller marks everything legal
    assert list(np.flatnonzero(env.action_masks())) == list(legal)
    try:
        env.step(illegal)
    except ValueError:
        pass                                         # still refused: the env kept its own mask
    else:
        raise AssertionError("an edit of info['action_mask'] made an illegal action legal")
