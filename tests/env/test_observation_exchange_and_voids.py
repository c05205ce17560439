"""Observation version 2: the Blind Nil exchange piece and the voids a spade lead
before spades are broken reveals; version-1 offsets unchanged; the batched engine in parity; no
hidden information in the new pieces."""

from __future__ import annotations

import numpy as np
import pytest

from spades_env import Rules, SpadesGame, bid_action, spades_v1
from spades_env.cards import BLIND_NIL_ACTION, LOOK_ACTION
from spades_env.observation import OBS_SIZE, OBS_SIZE_V1, OBS_VERSION, OFFSETS, decode, encode

V1_OFFSETS = {  # observation version 1 (spades_env 0.1.0), by hand from its docstring table
    "phase": (0, 3), "looked": (3, 4), "hand": (4, 56), "played": (56, 264),
    "trick": (264, 472), "led_suit": (472, 476), "bids": (476, 540), "tricks_won": (540, 544),
    "voids": (544, 560), "spades_broken": (560, 561), "trick_number": (561, 562),
    "dealer": (562, 566), "to_act": (566, 570), "scores": (570, 572), "bags": (572, 574),
    "target": (574, 575),
}
S, H, D, C = (list(range(13 * s, 13 * s + 13)) for s in (3, 2, 1, 0))


def test_version_1_pieces_keep_their_offsets_and_the_new_piece_is_at_the_end():
    assert OBS_VERSION == 3 and OBS_SIZE_V1 == 575 and OBS_SIZE == 711
    assert {k: OFFSETS[k] for k in V1_OFFSETS} == V1_OFFSETS
    assert OFFSETS["exchange"] == (575, 679) and list(OFFSETS)[-2:] == ["exchange", "rules"]


def _voids(obs, rel):
    a = OFFSETS["voids"][0] + 4 * rel
    return obs[a:a + 4].tolist()


@pytest.mark.parametrize("flb", [False, True])
def test_a_spade_led_before_spades_are_broken_shows_the_leader_void_in_the_other_suits(flb):
    # seat 0 holds every spade and leads first (dealer 3): leading the 2S is only legal from a
    # hand of nothing but spades, so every seat learns seat 0 has no club, diamond or heart
    g = SpadesGame.from_deal([S, H, D, C], dealer=3, rules=Rules(forced_spade_lead_breaks=flb))
    for _ in range(4):
        g.apply(bid_action(3))
    for me in range(4):
        assert _voids(encode(g.view(me)), (0 - me) % 4) == [0, 0, 0, 0]
    g.apply(S[0])
    for me in range(4):
        obs = encode(g.view(me))
        assert _voids(obs, (0 - me) % 4) == [1, 1, 1, 0]      # relative seat of seat 0
        assert decode(obs)["voids"][(0 - me) % 4] == [0, 1, 2]
    assert g.voids[0] == 0  # the engine's voids stay "failed to follow suit" only
    g.apply(H[0])           # seat 1 cannot follow spades: void in spades, shown as before
    assert _voids(encode(g.view(2)), (1 - 2) % 4) == [0, 0, 0, 1]


def test_a_spade_led_after_spades_were_broken_reveals_nothing():
    # seat 0 leads the 2C; seat 1 (no clubs) trumps with the 2S: spades broken, seat 1 wins and
    # leads the 3S, legal with hearts still in hand: seat 1 shows a club void only
    s0 = C[:7] + D[:6]
    s1 = S[:5] + H[:8]
    s2 = C[7:] + D[6:9] + H[8:11] + S[5:6]
    s3 = [c for c in range(52) if c not in s0 + s1 + s2]
    g = SpadesGame.from_deal([s0, s1, s2, s3], dealer=3)
    for _ in range(4):
        g.apply(bid_action(2))
    for c in (C[0], S[0], C[7], D[9]):  # seat 3 has no club either: it discards the JD
        g.apply(c)
    assert g.spades_broken and g.current_player == 1
    g.apply(S[1])
    obs = encode(g.view(0))
    assert _voids(obs, 1) == [1, 0, 0, 0] and _voids(obs, 3) == [1, 0, 0, 0]


def _house_exchange():
    """House rules, dealer 3: seat 0 bids Blind Nil, the others look and bid; seat 2 (partner)
    passes 3 cards, then seat 0 passes 3 back. Returns the game and the passed cards."""
    g = _replay_start()
    to_zero = [S[12], S[11], D[12]]   # seat 2 passes its best spades and a diamond
    for c in to_zero:
        g.apply(c)
    to_two = [H[0], H[1], S[12]]      # seat 0 passes two hearts and a spade it just got
    for c in to_two:
        g.apply(c)
    return g, to_zero, to_two


def _ex(obs):
    d = decode(obs)
    return d["passed"], d["received"]


def test_the_exchange_piece_holds_what_each_partner_passed_and_received():
    g, to_zero, to_two = _house_exchange()
    assert g.phase == 2
    # seat 2 passed S12, S11, D12; S12 came back, so seat 0 holds S11 and D12 of them
    assert _ex(encode(g.view(2))) == (sorted([S[11], D[12]]), sorted(to_two))
    assert _ex(encode(g.view(0))) == (sorted(to_two), sorted(to_zero))
    for opponent in (1, 3):   # the other team never sees the exchange
        obs = encode(g.view(opponent))
        assert not obs[OFFSETS["exchange"][0]:OFFSETS["exchange"][1]].any()
    # a passed card is known until it is played: seat 0 plays the D12 it received (it leads)
    assert g.current_player == 0
    g.apply(D[12])
    assert _ex(encode(g.view(2)))[0] == [S[11]]
    assert _ex(encode(g.view(2)))[1] == sorted(to_two)     # what was received stays all hand


def test_the_env_rows_follow_the_exchange_move_by_move():
    """The incremental rows of spades_v1 equal the reference encoder through the exchange and
    the play that follows (the 'passed' cards leave as they are played)."""
    env = spades_v1.raw_env(rules=Rules.preset("house"))
    rng = np.random.default_rng(0)
    for _ in range(3):
        env.reset(options={"game": _replay_start()})
        while not (env.terminations["player_0"] or env.truncations["player_0"]) \
                and env.game.hand_number == 0:
            for s in range(4):
                assert np.array_equal(env.observe(f"player_{s}")["observation"],
                                      encode(env.game.view(s))[:679])
            legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
            env.step(int(legal[rng.integers(len(legal))]))
        assert env.game.hand_results[0].blind[0]


def _replay_start() -> SpadesGame:
    """The house deal of ``_house_exchange`` before any bid (the env plays the exchange)."""
    hands = [S[:4] + H[:9], S[4:8] + H[9:] + D[:5], S[8:] + D[5:], C]
    g = SpadesGame.from_deal(hands, dealer=3, rules=Rules.preset("house"))
    g.apply(BLIND_NIL_ACTION)
    for b in (4, 4, 3):
        g.apply(LOOK_ACTION)
        g.apply(bid_action(b))
    return g


def test_no_leak_the_exchange_piece_does_not_depend_on_the_other_teams_exchange():
    """Team 1's Blind Nil exchange (seat 1 bids Blind Nil, seat 3 passes) with two different
    choices of cards: seats 0 and 2 see exactly the same vectors at every step."""
    hands = [S[:4] + H[:9], S[4:8] + H[9:] + D[:5], S[8:] + D[5:], C]
    rows = []
    for choice in (0, 1):
        g = SpadesGame.from_deal(hands, dealer=0, rules=Rules.preset("house"))
        g.apply(BLIND_NIL_ACTION)                 # seat 1
        for b in (3, 4, 4):
            g.apply(LOOK_ACTION)
            g.apply(bid_action(b))
        seen = []
        while g.phase == 1:
            legal = g.legal_actions()
            g.apply(legal[0] if choice == 0 else legal[-1])
            seen.append([encode(g.view(s)) for s in (0, 2)])
        rows.append((seen, [g.hands[1], g.hands[3]]))
    assert rows[0][1] != rows[1][1]               # the exchanges really differ
    for a, b in zip(rows[0][0], rows[1][0]):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("backend", ["torch", "native"])
@pytest.mark.parametrize("flb", [False, True])
def test_vector_engine_infers_the_same_voids_bit_for_bit(backend, flb):
    """Deals that force spade leads before spades are broken (one seat with nothing but spades,
    and random ones): every step's observation equals the scalar encoder's, on both backends."""
    torch = pytest.importorskip("torch")
    from spades_env.vector import SpadesVectorEnv
    n = 8
    rng = np.random.default_rng(5)
    holder = np.zeros((n, 52), dtype=np.int64)
    for i in range(n):
        if i < 4:  # seat i holds all 13 spades
            others = [s for s in range(4) if s != i]
            rest = rng.permutation([s for s in others for _ in range(13)])
            holder[i, :39] = rest
            holder[i, 39:] = i
        else:
            holder[i] = rng.permutation(np.repeat(np.arange(4), 13))
    dealer = np.array([3, 0, 1, 2, 0, 1, 2, 3])
    env = SpadesVectorEnv(n, seed=1, backend=backend, rules=Rules(forced_spade_lead_breaks=flb))
    obs, mask, seat = env.reset(holder=holder, dealer=dealer)
    gen = torch.Generator().manual_seed(2)
    inferred = 0
    for _ in range(56):
        for i in range(n):
            g = env.get_game(i)
            ref = encode(g.view(int(seat[i])))
            assert np.array_equal(obs[i].numpy(), ref), (i, len(g.moves))
            v = g.view(0)
            inferred += sum(bin(a & ~b).count("1") for a, b in zip(v.known_voids, v.voids))
        obs, mask, seat, *_ = env.step(env.sample_actions(gen))
    assert inferred > 0  # the inference happened and was compared


def test_decode_reads_a_longer_vector_and_refuses_a_short_one():
    g = SpadesGame(seed=0)
    full = spades_v1.encode_full(g.view(0), history=True)
    assert decode(full)["hand"] == decode(full[:OBS_SIZE])["hand"] == g.hand(0)
    assert decode(full[:679])["hand"] == g.hand(0) and decode(full[:679])["rules"] is None
    assert decode(full[:OBS_SIZE])["rules"][:3] == [1.0, 0.0, 0.0]  # target 500/500, no loss
    with pytest.raises(ValueError, match="at least 679"):
        decode(full[:OBS_SIZE_V1])


# ------------------------------------------------------------------ trained checkpoints
SHIPPED = "tests/data/agent_v1.pt"  # the agent shipped before observation version 2 (575 floats)


def test_a_version_1_checkpoint_still_plays_reading_the_first_575_floats():
    torch = pytest.importorskip("torch")
    from spades_env.bots import make_bot
    from spades_env.agents.model import Agent
    bot = make_bot(f"checkpoint:{SHIPPED}")
    assert bot.agent.obs_size == OBS_SIZE_V1 == 575
    assert bot.agent.trunk[0].in_features == 575
    g = SpadesGame(Rules(), seed=12)
    checked = 0
    while g.hand_number < 1:
        v = g.view(g.current_player)
        obs = torch.as_tensor(encode(v))
        mask = torch.zeros(1, 68, dtype=torch.bool)
        mask[0, list(v.legal_actions)] = True
        with torch.no_grad():
            wide, _ = bot.agent(obs[None])
            narrow, _ = bot.agent(obs[None, :575])
        assert torch.equal(wide, narrow)
        want = int(Agent.masked(narrow, mask)[0].argmax())
        a = bot.act(v)
        assert a == want
        g.apply(a)
        checked += 1
    assert checked == 56


def test_model_shape_obs_size_is_checked_and_defaults_to_version_1():
    pytest.importorskip("torch")
    from spades_env.training.checkpoint import agent_kwargs
    assert agent_kwargs({"hidden": [16], "head_hidden": 8})["obs_size"] == 575
    assert agent_kwargs({"hidden": [16], "head_hidden": 8, "obs_size": 679})["obs_size"] == 679
    assert agent_kwargs({"hidden": [16], "head_hidden": 8, "obs_size": 711})["obs_size"] == 711
    for bad in (600, 0, True, "679", 575.0, 712):
        with pytest.raises(ValueError, match="obs_size"):
            agent_kwargs({"hidden": [16], "head_hidden": 8, "obs_size": bad})
