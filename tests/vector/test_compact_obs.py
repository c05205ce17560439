"""The compact observation (``spades_env.compact``): its layout worked out by hand, exact
pack/expand over random games of the scalar engine under every preset, the batched engine's
compact output against its float32 output on both backends, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spades_env import Rules, SpadesGame
from spades_env import compact as cpt
from spades_env.observation import OBS_SIZE, OFFSETS, encode, rules_features
from spades_env.rules import PRESETS
from spades_env.vector import HAND_STEPS, SpadesVectorEnv

BACKENDS = ["torch", "native"]


def _same_bits(a, b) -> bool:
    """Equal bit for bit (float32 compared as int32: -0.0 and NaN patterns count)."""
    a = torch.as_tensor(np.array(a) if isinstance(a, np.ndarray) else a).contiguous()
    b = torch.as_tensor(np.array(b) if isinstance(b, np.ndarray) else b).contiguous()
    a, b = a.view(torch.int32), b.view(torch.int32)
    return a.shape == b.shape and torch.equal(a, b)


def _scalar_observations(rules: Rules, games: int, seed: int) -> np.ndarray:
    """Observations of random seats at every move of ``games`` random games (scalar engine)."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(games):
        game = SpadesGame(rules=rules, seed=seed * 100 + g)
        moves = 0
        while not game.is_over and moves < 300:
            rows.append(encode(game.view(int(rng.integers(4)))))
            game.apply(int(rng.choice(game.legal_actions())))
            moves += 1
        rows.append(encode(game.view(int(rng.integers(4)))))  # the finished game's view too
    return np.stack(rows)


def test_the_layout_worked_by_hand():
    """One observation packed byte by byte: index k is bit k % 8 of byte k // 8; the counts,
    the rules id and the side floats sit where the module docstring says."""
    assert (cpt.COMPACT_SIZE, cpt.BITS, cpt.COUNTS, cpt.RULES_ID, cpt.SIDE) == \
        (120, (0, 89), (89, 94), 94, (96, 116))
    obs = np.zeros(OBS_SIZE, np.float32)
    obs[0] = 1.0                            # phase: bidding -> byte 0, bit 0
    obs[4 + 51] = 1.0                       # hand: card 51 -> index 55 -> byte 6, bit 7
    obs[OFFSETS["bids"][0] + 16 * 3 + 15] = 1.0  # index 476 + 63 = 539 -> byte 67, bit 3
    obs[OFFSETS["tricks_won"][0] + 2] = np.float32(5) / np.float32(13)  # partner: 5 tricks
    obs[OFFSETS["trick_number"][0]] = np.float32(9) / np.float32(13)
    obs[OFFSETS["scores"][0]:OFFSETS["target"][1]] = [0.25, -0.125, 0.3, 0.0, 1.0]
    obs[OFFSETS["rules"][0]:OFFSETS["rules"][1]] = rules_features(Rules())
    c = cpt.pack(obs, rules_id=3)
    assert c.dtype == np.uint8 and c.shape == (120,)
    assert c[0] == 0b1 and c[6] == 0b1000_0000 and c[67] == 0b1000
    assert np.count_nonzero(c[:89]) == 3      # the counts, side and rules leave no bits
    assert c[89:94].tolist() == [0, 0, 5, 0, 9] and c[94] == 3 and c[95] == 0
    assert c[96:116].view("<f4").tolist() == [0.25, -0.125, np.float32(0.3), 0.0, 1.0]
    assert not c[116:].any()
    # the rules piece comes back from the table row byte 94 names
    table = np.stack([np.zeros(32, np.float32)] * 3 + [rules_features(Rules())])
    assert _same_bits(cpt.expand(c, table), obs)
    assert cpt.FLAGS.sum() == OBS_SIZE - 4 - 1 - 5 - 32


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_pack_expand_is_exact_over_random_games(preset):
    """Every observation of random games under each preset (Blind Nil's exchange under
    ``house``, the jokers' deck...) comes back bit for bit, numpy and torch, and through the
    torch gathers the CUDA path runs."""
    rules = PRESETS[preset]
    x = _scalar_observations(rules, games=3, seed=len(preset))
    table = cpt.rules_table(rules)
    c = cpt.pack(x)
    assert c.shape == (len(x), 120)
    assert _same_bits(cpt.expand(c, table), x)
    ct = cpt.pack(torch.from_numpy(x))
    assert torch.equal(ct, torch.from_numpy(c))
    assert _same_bits(cpt.expand(ct, torch.from_numpy(table)), x)
    res = torch.empty((len(x), OBS_SIZE))
    cpt._expand_gather(ct, torch.from_numpy(table), ct[:, cpt.RULES_ID].long(), res)
    assert _same_bits(res, x)
    if preset == "house":  # the exchange piece is a flag piece: it was there and came back
        ex = OFFSETS["exchange"]
        assert x[:, ex[0]:ex[1]].any()


def test_a_mixed_table_picks_each_rows_rules():
    """Two rule sets in one batch: byte 94 picks the rules piece of each row."""
    a, b = Rules(), PRESETS["suicide"]
    xa, xb = _scalar_observations(a, 1, 1)[:20], _scalar_observations(b, 1, 2)[:20]
    c = np.concatenate([cpt.pack(xa, 0), cpt.pack(xb, 1)])
    table = cpt.rules_table([a, b])
    assert table.shape == (2, 32)
    assert _same_bits(cpt.expand(c, table), np.concatenate([xa, xb]))
    res = torch.empty((40, OBS_SIZE))
    ct = torch.from_numpy(c)
    cpt._expand_gather(ct, torch.from_numpy(table), ct[:, 94].long(), res)
    assert _same_bits(res, np.concatenate([xa, xb]))


def test_errors_name_what_is_wrong():
    x = _scalar_observations(Rules(), 1, 0)[:5]
    bad = x.copy()
    bad[0, 10] = 0.5  # a hand flag that is no flag
    with pytest.raises(ValueError, match="neither 0 nor 1"):
        cpt.pack(bad)
    bad = x.copy()
    bad[0, OFFSETS["tricks_won"][0]] = 0.5  # not k / 13
    with pytest.raises(ValueError, match="count / 13"):
        cpt.pack(bad)
    with pytest.raises(ValueError, match="711 floats"):
        cpt.pack(np.zeros((2, 679), np.float32))
    c = cpt.pack(x, rules_id=2)
    with pytest.raises(ValueError, match="rules id 2 in byte 94 but the table has 2 rows"):
        cpt.expand(c, cpt.rules_table([Rules(), Rules()]))
    with pytest.raises(ValueError, match="uint8 rows of 120 bytes"):
        cpt.expand(c.astype(np.int16), cpt.rules_table(Rules()))
    with pytest.raises(ValueError, match=r"table must be \(R, 32\)"):
        cpt.expand(c, np.zeros(31, np.float32))
    with pytest.raises(ValueError, match="1 to 256 rule sets"):
        cpt.rules_table([])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", ["standard", "suicide", "joker_joker_deuce_deuce"])
def test_vector_compact_expands_to_the_float32_output(backend, preset):
    """Two envs on one seed, one float32 and one compact, step by step over three hands (games
    ending and restarting on the short target of a capped episode): the expansion equals the
    float32 observation bit for bit, and mask, seat, rewards and dones are the same."""
    rules = PRESETS[preset]
    for copy in (True, False):
        kw = dict(seed=7, rules=rules, backend=backend, copy=copy, hands_per_episode=2)
        ef = SpadesVectorEnv(33, **kw)
        ec = SpadesVectorEnv(33, obs_format="compact", **kw)
        assert ec.obs_format == "compact" and ef.obs_format == "float32"
        assert _same_bits(ec.rules_table, rules_features(rules)[None])
        of, mf, sf = ef.reset()
        oc, mc, sc = ec.reset()
        gen = torch.Generator().manual_seed(3)
        for step in range(3 * HAND_STEPS):
            assert oc.dtype == torch.uint8 and oc.shape == (33, 120)
            assert _same_bits(cpt.expand(oc, ec.rules_table), of), (copy, step)
            assert torch.equal(mf, mc) and torch.equal(sf, sc)
            a = ef.sample_actions(gen)
            of, mf, sf, rf, df, _ = ef.step(a)
            oc, mc, sc, rc, dc, _ = ec.step(a)
            assert torch.equal(rf, rc) and torch.equal(df, dc)


def test_native_rows_written_on_demand_match_the_reference():
    """The native kernel writes the observation rows only when they are read: after every
    step, ``observe`` of each seat and the state's rows equal the torch backend's, which keeps
    them up to date move by move."""
    rules = PRESETS["mirror"]
    en = SpadesVectorEnv(9, seed=5, rules=rules, backend="native", obs_format="compact")
    et = SpadesVectorEnv(9, seed=5, rules=rules, backend="torch", obs_format="compact")
    en.reset()
    et.reset()
    gen = torch.Generator().manual_seed(1)
    for step in range(HAND_STEPS + 9):
        if step % 5 == 0:
            for i in (0, 8):
                for seat in range(4):
                    assert _same_bits(en.observe(i, seat), et.observe(i, seat))
                    assert _same_bits(en.observe(i, seat),
                                      encode(en.get_game(i).view(seat)))
            sn, st = en.state_dict(), et.state_dict()
            for k in ("_obs4", "_trick_obs", "_hands", "_mask"):
                assert torch.equal(sn[k], st[k]), (step, k)
        a = en.sample_actions(gen)
        en.step(a)
        et.step(a)


def test_native_state_dict_round_trip_in_compact_mode():
    """A native compact env saved mid-trick and loaded into a fresh one continues with the same
    compact observations (the kernel's hand masks are rebuilt from the loaded state)."""
    a = SpadesVectorEnv(6, seed=2, backend="native", obs_format="compact")
    a.reset()
    gen = torch.Generator().manual_seed(4)
    for _ in range(10):
        a.step(a.sample_actions(gen))
    b = SpadesVectorEnv(6, seed=99, backend="native", obs_format="compact")
    b.load_state_dict(a.state_dict())
    for _ in range(HAND_STEPS):
        # the kernel's legal bits (what sample_actions draws from) came back with the state
        g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        assert torch.equal(a.sample_actions(g1), b.sample_actions(g2))
        act = a.sample_actions(gen)
        oa, *_ = a.step(act)
        ob, *_ = b.step(act)
        assert torch.equal(oa, ob)


def test_bad_obs_format_is_refused():
    with pytest.raises(ValueError, match="obs_format must be one of 'float32', 'compact', "
                                         "got 'bits'"):
        SpadesVectorEnv(2, obs_format="bits")


def test_inputs_a_user_tried():
    """Regressions of a break-it session: mixed numpy rows and a torch table, empty torch
    batches (both paths), out= on numpy rows, rules ids outside a byte, NaN named as such,
    float64 torch input, a table that requires grad, and the env's table a copy."""
    env = SpadesVectorEnv(8, seed=1, obs_format="compact")
    c, _, _ = env.reset()
    ref = expand_ref = cpt.expand(c, env.rules_table)
    assert _same_bits(cpt.expand(c.numpy(), env.rules_table), ref)  # numpy rows, torch table
    x = expand_ref.clone()
    assert cpt.pack(x[:0]).shape == (0, 120) and cpt.pack(x[:0]).dtype == torch.uint8
    assert cpt.pack(torch.zeros(2, 0, OBS_SIZE)).shape == (2, 0, 120)
    empty = torch.empty(0, OBS_SIZE)
    cpt._expand_gather(c[:0], env.rules_table, c[:0, 94].long(), empty)
    out = np.zeros((8, OBS_SIZE), np.float32)
    with pytest.raises(ValueError, match="out is for torch rows"):
        cpt.expand(c.numpy(), env.rules_table, out=out)
    with pytest.raises(ValueError, match="out must be a torch tensor"):
        cpt.expand(c, env.rules_table, out=out)
    for bad in (300, -1, np.array([-1, 256]), np.array([1.5, 2.0]), True):
        with pytest.raises(ValueError, match="rules_id must be"):
            cpt.pack(x, bad)
        with pytest.raises(ValueError, match="rules_id must be"):
            cpt.pack(x.numpy(), bad)
    assert cpt.pack(x, np.array([2.0] * 8))[:, 94].tolist() == [2] * 8
    nan = x.clone()
    nan[0, OFFSETS["scores"][0]] = float("nan")
    with pytest.raises(ValueError, match="NaN or infinite"):
        cpt.pack(nan)
    with pytest.raises(ValueError, match="NaN or infinite"):
        cpt.pack(nan.numpy())
    assert torch.equal(cpt.pack(x.double()), cpt.pack(x))  # cast as numpy's pack does
    grad_table = env.rules_table.requires_grad_()
    assert _same_bits(cpt.expand(c, grad_table), ref)
    table = env.rules_table
    table[0, 0] = 7.0  # the caller's copy: the env's observations keep their rules piece
    obs, *_ = env.step(env.sample_actions())
    assert cpt.expand(obs, env.rules_table)[0, OFFSETS["rules"][0]] == 1.0
