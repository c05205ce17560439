"""``obs_format="compact"`` in the AEC env (``spades_v2``) and the Gymnasium env: the 120-byte
observation expands to the float32 observation of the same game bit for bit, at every step, for
every agent; its space holds it; the settings with no compact form are refused by name."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.test import api_test

import spades_env  # noqa: F401  (registers the Gymnasium ids)
from spades_env import compact, spades_v1, spades_v2
from spades_env.aec_obs import mask_array, pack_row
from spades_env.cards import BLIND_NIL_ACTION, NUM_ACTIONS
from spades_env.observation import OBS_SIZE, encode

AGENTS = [f"player_{s}" for s in range(4)]


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float32 and a.shape == b.shape \
        and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("rules, hands", [
    ("standard", 3),
    ("house", 4),  # Blind Nil and its exchange
    ("house,nil_pass=2", 3),  # Blind Nil and Nil passing: exchanges both ways
    ("joker_joker_deuce_deuce", 2),
    ("suicide,two_of_clubs_leads=true,spades_lead_any_time=true", 2),
    ("whiz,loss_threshold=-150", 2),
], ids=["standard", "house", "nil-pass", "jokers", "suicide-2C", "whiz"])
def test_compact_expands_to_the_float32_observation_at_every_step(rules, hands):
    """Two envs, one compact and one float32, play the same random game: at every step every
    agent's compact row expands (with the env's rules table) to its float32 row, bit for bit,
    the masks are equal and the compact space holds the row."""
    fl = spades_v2.raw_env(rules=rules, max_hands=hands)
    co = spades_v2.raw_env(rules=rules, max_hands=hands, obs_format="compact")
    space = co.observation_space("player_0")["observation"]
    assert space == gym.spaces.Box(0, 255, (compact.COMPACT_SIZE,), np.uint8)
    assert fl.observation_space("player_0")["action_mask"] == \
        co.observation_space("player_0")["action_mask"]
    table = compact.rules_table(co.rules)
    rng = np.random.default_rng(7)
    steps = exchanges = 0
    for g in range(2):
        fl.reset(seed=100 + g)
        co.reset(seed=100 + g)
        while co.agents:
            for a in AGENTS:
                c, f = co.observe(a), fl.observe(a)
                obs = c["observation"]
                assert obs.dtype == np.uint8 and obs.shape == (120,) and space.contains(obs)
                x = compact.expand(obs, table)
                assert _same_bits(x, f["observation"]), (a, steps)
                assert np.array_equal(c["action_mask"], f["action_mask"])
                assert np.array_equal(obs, compact.pack(f["observation"]))  # the one layout
            if co.terminations[co.agent_selection] or co.truncations[co.agent_selection]:
                co.step(None)
                fl.step(None)
                continue
            legal = np.flatnonzero(co.observe(co.agent_selection)["action_mask"])
            act = BLIND_NIL_ACTION if BLIND_NIL_ACTION in legal and rng.random() < 0.5 \
                else int(legal[rng.integers(len(legal))])
            exchanges += bool(co.game.exchanges)
            co.step(int(act))
            fl.step(int(act))
            steps += 1
    assert steps >= 2 * 56
    if "house" in rules:
        assert exchanges > 0  # the exchange piece was exercised


def test_compact_rows_are_the_observation_of_the_view():
    """At the start of play and after a few cards, expand(compact) equals ``encode(view)``
    (the reference encoder) for each seat."""
    env = spades_v2.raw_env(obs_format="compact", rules="house")
    env.reset(seed=3)
    table = compact.rules_table(env.rules)
    for _ in range(12):
        for s in range(4):
            got = compact.expand(env.observe(AGENTS[s])["observation"], table)
            assert _same_bits(got, encode(env.game.view(s)))
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[-1]))


def test_pack_row_equals_compact_pack_and_mask_array_the_bits():
    env = spades_v2.raw_env(rules="house")
    env.reset(seed=5)
    for _ in range(30):
        for s in range(4):
            row = env._enc.buf[s, :OBS_SIZE]
            assert np.array_equal(pack_row(row), compact.pack(row))
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    rng = np.random.default_rng(0)
    for m in [0, 1, (1 << 68) - 1, 1 << 67, 0xFFFF << 52, *map(int, rng.integers(0, 2 ** 62, 50))]:
        got = mask_array(m)
        assert got.dtype == np.int8 and got.shape == (NUM_ACTIONS,) and got.flags.writeable
        assert got.tolist() == [(m >> a) & 1 for a in range(NUM_ACTIONS)]
        got[:] = 0  # a fresh array: the next one is unchanged
        assert mask_array(m).tolist() == [(m >> a) & 1 for a in range(NUM_ACTIONS)]


def test_compact_env_passes_pettingzoo_api_test_and_pickles():
    api_test(spades_v2.env(obs_format="compact", rules="house"), num_cycles=200)
    env = pickle.loads(pickle.dumps(spades_v2.raw_env(obs_format="compact", target_score=250)))
    env.reset(seed=1)
    assert env.obs_format == "compact" and env.rules.target_score == 250
    assert env.observe("player_0")["observation"].dtype == np.uint8
    assert spades_v2.observation_space(obs_format="compact")["observation"].shape == (120,)


def test_compact_with_bots_and_parallel_env():
    env = spades_v2.env(obs_format="compact", bots={"player_1": "random", "player_3": "random"})
    env.reset(seed=2)
    obs, *_ = env.last()
    assert obs["observation"].shape == (120,) and env.agents == ["player_0", "player_2"]
    par = spades_v2.parallel_env(obs_format="compact")
    obs, _ = par.reset(seed=2)
    assert all(o["observation"].dtype == np.uint8 for o in obs.values())


@pytest.mark.parametrize("make, words", [
    (lambda: spades_v1.env(obs_format="compact"), ["obs_format='compact'", "spades_v1",
                                                   "obs_version=2"]),
    (lambda: spades_v1.raw_env(obs_format="compact"), ["obs_format='compact'", "spades_v1"]),
    (lambda: spades_v2.env(obs_format="compact", history=True),
     ["obs_format='compact'", "history=True"]),
    (lambda: spades_v2.observation_space(history=True, obs_format="compact"),
     ["obs_format='compact'", "history=True"]),
    (lambda: spades_v2.env(obs_format="uint8"), ["obs_format", "'float32'", "'compact'",
                                                 "'uint8'"]),
    (lambda: gym.make("Spades-v1", obs_format="compact"), ["obs_format='compact'", "spades_v1"]),
    (lambda: gym.make("SpadesHand-v2", obs_format="compact", history=True),
     ["obs_format='compact'", "history=True"]),
], ids=["v1", "v1-raw", "history", "space-history", "unknown", "gym-v1", "gym-history"])
def test_settings_without_a_compact_form_are_refused(make, words):
    with pytest.raises(ValueError) as err:
        make()
    for w in words:
        assert w in str(err.value), (w, str(err.value))


@pytest.mark.parametrize("env_id", ["Spades-v2", "SpadesHand-v2"])
def test_gymnasium_env_compact_equals_float32(env_id):
    """The Gymnasium env with ``obs_format="compact"``: Box uint8 (120,), and each observation
    expands to the float32 env's observation of the same game (same seed, same actions)."""
    co = gym.make(env_id, obs_format="compact", opponents="easy", partner="easy", rules="house")
    fl = gym.make(env_id, opponents="easy", partner="easy", rules="house")
    space = co.observation_space
    assert space == gym.spaces.Box(0, 255, (120,), np.uint8)
    table = compact.rules_table(co.unwrapped.rules)
    rng = np.random.default_rng(1)
    for ep in range(2):
        (oc, _), (of, _) = co.reset(seed=ep), fl.reset(seed=ep)
        done, n = False, 0
        while not done:
            assert space.contains(oc) and _same_bits(compact.expand(oc, table), of)
            mask = co.unwrapped.action_masks()
            assert np.array_equal(mask, fl.unwrapped.action_masks())
            a = int(rng.choice(np.flatnonzero(mask)))
            oc, rc, tc, uc, _ = co.step(a)
            of, rf, tf, uf, _ = fl.step(a)
            assert (rc, tc, uc) == (rf, tf, uf)
            done, n = tc or uc, n + 1
        assert _same_bits(compact.expand(oc, table), of) and n >= 13
