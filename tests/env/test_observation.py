"""Observation layout: docstring tables vs OFFSETS, the env's incremental buffers vs the reference
encoder at every step, and decoding the vector back into the engine's state."""

from __future__ import annotations

import re

import numpy as np
import pytest

from spades_env import Rules, SpadesGame, observation, spades_v1
from spades_env.cards import BLIND_NIL_ACTION, LOOK_ACTION, bid_action, parse_card, parse_cards
from spades_env.engine import Phase
from spades_env.observation import OBS_SIZE, OFFSETS, PIECES, decode, encode
from spades_env.spades_v1 import HISTORY_OFFSET, HISTORY_SIZE, encode_full


# ----------------------------------------------------------------------------- tables
def test_offsets_match_spades_v1_docstring_table():
    rows = re.findall(r"^\| (\d+)(?: - (\d+))?\s+\| (\w+)\s+\|", spades_v1.__doc__, re.M)
    table = {name: (int(a), int(b or a) + 1) for a, b, name in rows}
    expected = {k: v for k, v in OFFSETS.items() if k != "rules"}  # spades_v1: version 2
    expected["history"] = (HISTORY_OFFSET, HISTORY_OFFSET + HISTORY_SIZE)
    assert table == expected
    assert OBS_SIZE == 711 and HISTORY_OFFSET == 679 and HISTORY_SIZE == 52 * 56


def test_pieces_match_observation_docstring_table():
    rows = re.findall(r"^\| (\w+)\s+\| ([\dx]+)\s+\|", observation.__doc__, re.M)
    sizes = {name: int(np.prod([int(x) for x in size.split("x")])) for name, size in rows}
    assert sizes == dict(PIECES)
    assert list(sizes) == [name for name, _ in PIECES]


# ----------------------------------------------------------------------------- fast == reference
def _check_all_rows(raw):
    game = raw.game
    for s in range(4):
        ref = encode_full(game.view(s), raw.history, raw.obs_version)
        got = raw.observe(f"player_{s}")["observation"]
        if not np.array_equal(ref, got):
            bad = np.flatnonzero(ref != got)[:8]
            raise AssertionError(f"seat {s}, move {len(game.moves)}: indices {bad.tolist()} "
                                 f"ref {ref[bad].tolist()} got {got[bad].tolist()}")


@pytest.mark.parametrize("opts", [
    dict(loss_threshold=-300),
    dict(loss_threshold=-300, history=True, blind_nil=True),
    dict(loss_threshold=-300, blind_nil=True, forced_spade_lead_breaks=True),
])
def test_incremental_buffers_equal_reference_encoder(opts):
    """At every step of random games (game over included), every seat's row equals
    encode_full(game.view(seat))."""
    rng = np.random.default_rng(3)
    raw = spades_v1.raw_env(**opts)
    steps = 0
    for g in range(16):
        raw.reset(seed=50 + g)
        while True:
            _check_all_rows(raw)
            if raw.terminations["player_0"] or raw.truncations["player_0"]:
                break
            legal = np.flatnonzero(raw.observe(raw.agent_selection)["action_mask"])
            raw.step(int(legal[rng.integers(len(legal))]))
            steps += 1
        assert raw.game.is_over  # so the final rows were checked against a finished game
    assert steps > 1200


@pytest.mark.parametrize("opts", [
    dict(spades_lead_any_time=True), dict(nil_pass=2, two_of_clubs_leads=True),
    dict(min_team_bid=4, bid_total_not_13=True), dict(whiz=True, history=True),
], ids=["spades-any-time", "nil-pass-2C", "board-not13", "whiz"])
def test_incremental_buffers_equal_reference_under_house_rules(opts):
    """Under the house rules every row equals ``encode_full(game.view(seat))`` at every step:
    with ``spades_lead_any_time`` the hand's first rows show spades broken (they did not)."""
    rng = np.random.default_rng(4)
    raw = spades_v1.raw_env(max_hands=2, **opts)
    for g in range(2):
        raw.reset(seed=70 + g)
        while not raw.truncations["player_0"] and not raw.terminations["player_0"]:
            _check_all_rows(raw)
            legal = np.flatnonzero(raw.observe(raw.agent_selection)["action_mask"])
            a = 52 if 52 in legal and rng.random() < 0.4 else int(legal[rng.integers(len(legal))])
            raw.step(int(a))


def test_blind_nil_paths_equal_reference():
    """Blind Nil bids, looks and the exchange (the rebuild path), forced through."""
    rng = np.random.default_rng(9)
    raw = spades_v1.raw_env(blind_nil=True, history=True, max_hands=4)
    for g in range(6):
        raw.reset(seed=g)
        while not raw.truncations["player_0"] and not raw.terminations["player_0"]:
            _check_all_rows(raw)
            legal = np.flatnonzero(raw.observe(raw.agent_selection)["action_mask"])
            # bid Blind Nil often so that exchanges happen
            a = BLIND_NIL_ACTION if BLIND_NIL_ACTION in legal and rng.random() < 0.4 \
                else int(legal[rng.integers(len(legal))])
            raw.step(int(a))
        assert any(any(h.blind) for h in raw.game.hand_results)


def test_episode_end_rows_show_finished_hand():
    raw = spades_v1.raw_env(hands_per_episode=1, history=True)
    raw.reset(seed=21)
    rng = np.random.default_rng(0)
    while not raw.terminations["player_0"]:
        legal = np.flatnonzero(raw.observe(raw.agent_selection)["action_mask"])
        raw.step(int(legal[rng.integers(len(legal))]))
    res = raw.game.hand_results[0]
    for s in range(4):
        d = decode(raw.observe(f"player_{s}")["observation"])
        assert d["phase"] is None and d["to_act"] is None
        assert d["trick_number"] == 13 and d["trick"] == [None] * 4
        assert sorted(sum(d["played"], [])) == list(range(52)) and d["hand"] == []
        assert d["tricks_won"] == [res.tricks[(s + r) % 4] for r in range(4)]
        mine, theirs = res.teams[s % 2], res.teams[1 - s % 2]
        assert d["scores"] == pytest.approx([mine.total / 500, theirs.total / 500])
        assert d["dealer"] == (res.dealer - s) % 4


# ----------------------------------------------------------------------------- decode vs engine
def _compare_decoded(obs, game, me):
    d = decode(obs)
    rel = [(me + r) % 4 for r in range(4)]  # relative seat r -> absolute seat
    assert d["phase"] == (None if game.phase == Phase.GAME_OVER else int(game.phase))
    assert d["looked"] == game.looked[me]
    assert d["hand"] == (sorted(game.hand(me)) if game.looked[me] else [])
    for r, s in enumerate(rel):
        assert d["played"][r] == [c for c in range(52) if (game.played[s] >> c) & 1]
        want_bid = (None, False) if game.bids[s] is None else (game.bids[s], game.blind[s])
        assert d["bids"][r] == want_bid
        assert d["tricks_won"][r] == game.tricks_won[s]
        assert d["voids"][r] == [su for su in range(4) if (game.voids[s] >> su) & 1]
        in_trick = [c for seat, c in game.current_trick if seat == s]
        assert d["trick"][r] == (in_trick[0] if in_trick else None)
    assert d["led_suit"] == game.led_suit
    assert d["spades_broken"] == game.spades_broken
    assert d["trick_number"] == game.trick_number
    assert d["dealer"] == (game.dealer - me) % 4
    assert d["to_act"] == (None if game.current_player < 0 else (game.current_player - me) % 4)
    t = game.rules.target_score
    assert d["scores"] == pytest.approx([game.scores[me % 2] / t, game.scores[1 - me % 2] / t])
    bl = game.rules.bag_limit
    assert d["bags"] == pytest.approx([game.bags[me % 2] / bl, game.bags[1 - me % 2] / bl])
    assert d["target"] == pytest.approx(t / 500)


def test_decode_matches_engine_in_random_games():
    rng = np.random.default_rng(12)
    raw = spades_v1.raw_env(loss_threshold=-200, blind_nil=True)
    for g in range(3):
        raw.reset(seed=g)
        while not raw.terminations["player_0"]:
            for s in range(4):
                _compare_decoded(raw.observe(f"player_{s}")["observation"], raw.game, s)
            legal = np.flatnonzero(raw.observe(raw.agent_selection)["action_mask"])
            raw.step(int(legal[rng.integers(len(legal))]))


def test_scripted_positions_by_hand():
    """A hand-checked position: dealer seat 1, bids 3, Nil, 4, 2 (seats 2, 3, 0, 1 bid in that
    order), first trick 2C 9C KC and seat 1 (void in clubs) ruffs with 3S; second trick led by
    seat 1 with 4S."""
    hands = [
        "AS KS QS JS 10S 9S 8S AH KH QH JH 10H 9H",
        "7S 6S 5S 4S 3S 2S 8H 7H 6H 5H 4H 3H 2H",
        "AD KD QD JD 10D 9D 8D 7D 6D 5D 4D 3D 2C",
        "AC KC QC JC 10C 9C 8C 7C 6C 5C 4C 3C 2D",
    ]
    game = SpadesGame.from_deal([parse_cards(h) for h in hands], dealer=1, scores=(120, -40),
                                bags=(3, 7), seed=0)
    raw = spades_v1.raw_env(history=True)
    raw.reset(options={"game": game})
    for b in (3, 0, 4, 2):  # seats 2, 3, 0, 1
        raw.step(bid_action(b))
    # seat 2 leads 2C, seat 3 KC, seat 0 (no clubs) discards 9H, seat 1 (no clubs) ruffs 3S
    for c in ("2C", "KC", "9H", "3S"):
        raw.step(parse_card(c))
    assert raw.agent_selection == "player_1"
    raw.step(parse_card("4S"))  # seat 1 leads 4S (spades broken by the ruff)
    d = decode(raw.observe("player_0")["observation"])  # seen by seat 0
    assert d["phase"] == 2 and d["looked"]
    assert d["hand"] == sorted(parse_cards("AS KS QS JS 10S 9S 8S AH KH QH JH 10H"))
    # relative seats from seat 0: 0 me, 1 = seat 1, 2 = seat 2, 3 = seat 3
    assert d["bids"] == [(4, False), (2, False), (3, False), (0, False)]
    assert d["played"] == [[parse_card("9H")], sorted(parse_cards("3S 4S")),
                           [parse_card("2C")], [parse_card("KC")]]
    assert d["trick"] == [None, parse_card("4S"), None, None]
    assert d["led_suit"] == 3
    assert d["tricks_won"] == [0, 1, 0, 0]
    assert d["voids"] == [[0], [0], [], []]
    assert d["spades_broken"] and d["trick_number"] == 1
    assert d["dealer"] == 1 and d["to_act"] == 2
    assert d["scores"] == pytest.approx([120 / 500, -40 / 500])
    assert d["bags"] == pytest.approx([0.3, 0.7])
    # seen by seat 3 (team 1): relative seat 1 = seat 0, 2 = seat 1, 3 = seat 2
    d3 = decode(raw.observe("player_3")["observation"])
    assert d3["bids"] == [(0, False), (4, False), (2, False), (3, False)]
    assert d3["trick"] == [None, None, parse_card("4S"), None]
    assert d3["scores"] == pytest.approx([-40 / 500, 120 / 500])
    assert d3["dealer"] == 2 and d3["to_act"] == 3
    # history piece of seat 0: slots 0..4 = (rel 2, 2C), (3, KC), (0, 9H), (1, 3S), (1, 4S)
    h = raw.observe("player_0")["observation"][HISTORY_OFFSET:].reshape(52, 56)
    got = [(int(np.flatnonzero(h[k, :4])[0]), int(np.flatnonzero(h[k, 4:])[0])) for k in range(5)]
    assert got == [(2, parse_card("2C")), (3, parse_card("KC")), (0, parse_card("9H")),
                   (1, parse_card("3S")), (1, parse_card("4S"))]
    assert not h[5:].any()


def test_blind_nil_hand_hidden_before_looking():
    game = SpadesGame(Rules(blind_nil=True), seed=4)
    raw = spades_v1.raw_env(blind_nil=True)
    raw.reset(options={"game": game})
    first = raw.game.current_player
    obs = raw.observe(f"player_{first}")
    assert obs["action_mask"].nonzero()[0].tolist() == [BLIND_NIL_ACTION, LOOK_ACTION]
    assert decode(obs["observation"])["hand"] == [] and not decode(obs["observation"])["looked"]
    raw.step(LOOK_ACTION)
    d = decode(raw.observe(f"player_{first}")["observation"])
    assert d["looked"] and len(d["hand"]) == 13


def test_observations_are_copies_and_in_space():
    raw = spades_v1.raw_env()
    raw.reset(seed=0)
    a = raw.observe("player_0")
    a["observation"][:] = 7.0
    b = raw.observe("player_0")
    assert b["observation"].max() <= 1.0
    assert raw.observation_space("player_0").contains(b)
    assert encode(raw.game.view(0))[:679].tolist() == b["observation"].tolist()


@pytest.mark.parametrize("fill", [0.0, np.nan, np.inf, -np.inf])
def test_decode_refuses_vectors_that_are_no_observation(fill):
    from spades_env.observation import OBS_SIZE, decode
    with pytest.raises(ValueError, match="not an observation"):
        decode(np.full(OBS_SIZE, fill))


def test_decode_still_reads_real_observations():
    from spades_env.observation import OBS_SIZE, decode, encode
    g = SpadesGame(seed=3)
    row = np.zeros(OBS_SIZE, np.float32)
    encode(g.view(g.current_player), row)
    d = decode(row)
    assert d["bids"] == [(None, False)] * 4 and len(d["hand"]) == 13
