"""Observation version 3: the rules piece, the env ``spades_v2``, and networks of earlier
versions refusing rules they were not trained under (docs/observation.md, The rules piece)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from spades_env import PRESETS, Rules, SpadesGame, spades_v1, spades_v2
from spades_env.observation import (OBS_SIZE, OBS_SIZE_V2, OFFSETS, RULE_FEATURES, RULES_SIZE,
                                    decode, encode, rules_features)

R0, R1 = OFFSETS["rules"]


def _slot(field, coding=None):
    return next(k for k, (f, c, _s) in enumerate(RULE_FEATURES)
                if f == field and (coding is None or c == coding))


def test_the_rules_piece_is_the_last_32_floats_of_711():
    assert (R0, R1) == (679, 711) and R1 - R0 == RULES_SIZE == 32 and OBS_SIZE == 711
    assert OBS_SIZE_V2 == 679


def test_rules_features_of_the_presets_worked_by_hand():
    std = rules_features(Rules())
    # standard: target 500/500, no loss threshold, bag limit 10/10, penalty 100/100, Nil 100/100,
    # Blind Nil 200/200, bags score points: 1; every other slot 0
    ones = {_slot("target_score"), _slot("bag_limit"), _slot("bag_penalty"), _slot("nil_bonus"),
            _slot("blind_nil_bonus"), _slot("bags_score_points")}
    assert [k for k in range(RULES_SIZE) if std[k] != 0] == sorted(ones)
    assert all(std[k] == 1.0 for k in ones)
    house = rules_features(PRESETS["house"])  # loss at -200, Blind Nil on
    assert house[_slot("loss_threshold", "set")] == 1.0
    assert house[_slot("loss_threshold", "minus")] == np.float32(200 / 500)
    assert house[_slot("blind_nil")] == 1.0
    suicide = rules_features(PRESETS["suicide"])  # board 4: 4/13
    assert suicide[_slot("suicide")] == 1.0
    assert suicide[_slot("min_team_bid")] == np.float32(4 / 13)
    assert rules_features(PRESETS["short"])[_slot("target_score")] == 0.5
    r = Rules(big_bid_double=10, nil_pass=2, loss_threshold=0)
    f = rules_features(r)
    assert f[_slot("big_bid_double", "flag")] == 1.0
    assert f[_slot("big_bid_double", "value")] == np.float32(10 / 13)
    assert f[_slot("nil_pass")] == np.float32(2 / 3)
    assert f[_slot("loss_threshold", "set")] == 1.0 and f[_slot("loss_threshold", "minus")] == 0
    # every preset has its own piece
    pieces = {tuple(rules_features(p).tolist()) for p in PRESETS.values()}
    assert len(pieces) == len(PRESETS)
    assert not np.any(std[len(RULE_FEATURES):])  # the free slots are 0
    with pytest.raises(ValueError, match="needs a spades_env.Rules"):
        rules_features("standard")
    assert not std.flags.writeable  # a cached array that no caller may change


def test_every_rules_field_has_a_slot():
    """A new switch must take a slot, or one network could not tell two rule sets apart."""
    named = {f for f, _c, _s in RULE_FEATURES}
    assert named == {f.name for f in dataclasses.fields(Rules)}


@pytest.mark.parametrize("preset", ["standard", "mirror", "suicide", "house"])
def test_encode_writes_the_piece_and_it_never_changes_in_a_game(preset):
    rules = PRESETS[preset]
    g = SpadesGame(rules, seed=5)
    rng = np.random.default_rng(0)
    want = rules_features(rules)
    while not g.is_over and g.hand_number < 2:
        for s in range(4):
            obs = encode(g.view(s))
            assert np.array_equal(obs[R0:R1], want)
            assert decode(obs)["rules"] == want.tolist()
        legal = g.legal_actions()
        g.apply(int(legal[rng.integers(len(legal))]))


def test_spades_v2_gives_711_floats_and_spades_v1_stays_at_679():
    e2, e1 = spades_v2.raw_env(rules="mirror"), spades_v1.raw_env(rules="mirror")
    e2.reset(seed=3)
    e1.reset(seed=3)
    o2 = e2.observe("player_0")["observation"]
    o1 = e1.observe("player_0")["observation"]
    assert o2.shape == (711,) and o1.shape == (679,)
    assert np.array_equal(o2[:679], o1)
    assert np.array_equal(o2[R0:R1], rules_features(PRESETS["mirror"]))
    assert e2.observation_space("player_0")["observation"].contains(o2)
    assert e2.metadata["name"] == "spades_v2" and e1.metadata["name"] == "spades_v1"
    h2 = spades_v2.raw_env(history=True)
    h2.reset(seed=3)
    assert h2.observe("player_1")["observation"].shape == (711 + 2912,)
    with pytest.raises(ValueError, match="obs_version must be 2"):
        spades_v1.raw_env(obs_version=4)


def test_gymnasium_v2_ids_give_the_rules_piece():
    import gymnasium as gym
    env = gym.make("SpadesHand-v2", rules="whiz")
    obs, _ = env.reset(seed=1)
    assert obs.shape == (711,) and np.array_equal(obs[R0:R1], rules_features(PRESETS["whiz"]))
    env.close()


def test_batched_engine_writes_the_piece_on_both_backends():
    torch = pytest.importorskip("torch")
    from spades_env.vector import SpadesVectorEnv
    for backend in ("torch", "native"):
        try:
            env = SpadesVectorEnv(4, seed=1, rules=PRESETS["suicide"], backend=backend)
        except Exception as e:  # noqa: BLE001 - no C compiler on this machine
            if backend == "native":
                pytest.skip(f"native kernel unavailable: {e}")
            raise
        obs, mask, seat = env.reset()
        assert obs.shape == (4, 711)
        want = torch.tensor(rules_features(PRESETS["suicide"]))
        for _ in range(10):
            assert torch.equal(obs[:, R0:R1], want.expand(4, -1))
            a = torch.multinomial(mask.float(), 1).squeeze(1)
            obs, mask, seat, *_ = env.step(a)


# ------------------------------------------------------------------ networks of earlier versions
SHIPPED = "checkpoints/shipped/agent.pt"  # observation version 2, trained under standard


def test_a_version_2_network_refuses_other_rules_by_name():
    pytest.importorskip("torch")
    from spades_env.bots import make_bot
    bot = make_bot(f"checkpoint:{SHIPPED}")
    assert bot.agent.obs_size == 679 and bot.trained_rules == Rules()
    g = SpadesGame(PRESETS["short"], seed=1)  # only the target differs: the network sees it
    assert 52 <= bot.act(g.view(g.current_player)) <= 65
    g = SpadesGame(PRESETS["mirror"], seed=1)
    with pytest.raises(ValueError, match=r"trained under the rules 'standard'.*cannot play "
                                         r"'mirror'.*any_rules=True"):
        bot.act(g.view(g.current_player))
    ok = make_bot(f"checkpoint:{SHIPPED}", any_rules=True)
    assert ok.act(g.view(g.current_player)) in g.legal_actions()
    with pytest.raises(ValueError, match="any_rules must be True or False"):
        make_bot(f"checkpoint:{SHIPPED}", any_rules="yes")


def test_the_arena_refuses_before_the_first_game():
    pytest.importorskip("torch")
    from spades_env.arena import play_match
    with pytest.raises(ValueError, match="cannot play 'whiz'"):
        play_match(f"checkpoint:{SHIPPED}", "random", games=2, rules=PRESETS["whiz"])


def test_widen_input_acts_exactly_as_the_version_2_network():
    torch = pytest.importorskip("torch")
    from spades_env.agents.checkpoint import build_agent, check_model, load_checkpoint
    from spades_env.agents.model import Agent, widen_input
    data = load_checkpoint(SHIPPED)
    kw = check_model(data, SHIPPED)
    old = build_agent(data, "cpu")
    state, kw3 = widen_input(data["model"], kw, OBS_SIZE)
    assert kw3["obs_size"] == 711 and kw["obs_size"] == 679
    new = Agent(**kw3)
    new.load_state_dict(state)
    g = SpadesGame(PRESETS["mirror"], seed=9)
    obs = torch.as_tensor(np.stack([encode(g.view(s)) for s in range(4)]))
    priv = torch.rand((4, 156))
    with torch.no_grad():
        assert torch.allclose(new.policy_logits(obs), old.policy_logits(obs), atol=1e-5)
        if old.critic is not None:
            assert torch.allclose(new.critic_value(obs, priv), old.critic_value(obs, priv),
                                  atol=1e-5)
    with pytest.raises(ValueError, match="reads 711 floats, more than 679"):
        widen_input(state, kw3, 679)
