"""Every public entry point checks its inputs as the main apply/step path does (no entry point skips a check).

The sweep: each entry point below gets the same hostile values (None, strings, bools, floats,
NaN, negative and huge ints, numpy and torch scalars, containers) and must answer a
``ValueError`` with a message, never ``TypeError``/``AttributeError``/``IndexError``/
``KeyError``/``OverflowError`` or a silent wrong answer; the good inputs still give the values
the rules give.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spades_env import (
    Rules, SpadesGame, action_str, card_id, format_hand, game_outcome, mask_to_cards,
    partner_of, spades_v1, team_of, trick_winner,
)
from spades_env.bots import make_bot
from spades_env.cards import cards_to_mask, parse_cards, popcount, rank_of, suit_of
from spades_env.engine import cards_mask
from spades_env.render import render_game, render_score_table, render_view
from spades_env.single_agent import SpadesSingleAgentEnv
from spades_env.vector import SpadesVectorEnv

HOSTILE = [None, "x", "3", b"AS", 1.5, float("nan"), float("inf"), True, False, np.bool_(True),
           -1, 2 ** 70, -(2 ** 70), [], {}, (1,), np.float32(1.0), np.array([1, 2]),
           torch.tensor(2.5), object()]

SEAT_OK = [0, 3, np.int64(2)]


def _id(x) -> str:
    """Test ids stable across xdist workers (an ``object()``'s repr holds its address)."""
    return "object()" if type(x) is object else repr(x)
SEAT_BAD = HOSTILE + [4, 99]


def _value_error(fn, *args, **kwargs):
    with pytest.raises(ValueError):
        fn(*args, **kwargs)


# ------------------------------------------------------------------ cards and rules helpers
@pytest.mark.parametrize("bad", SEAT_BAD, ids=_id)
def test_seat_helpers_refuse_what_is_not_a_seat(bad):
    _value_error(team_of, bad)
    _value_error(partner_of, bad)
    g = SpadesGame(seed=0)
    _value_error(g.view, bad)
    _value_error(g.hand, bad)                        # hand(seat) checks as view(seat) does


def test_seat_helpers_give_the_rules_answers():
    assert [team_of(s) for s in SEAT_OK] == [0, 1, 0]
    assert [partner_of(s) for s in SEAT_OK] == [2, 1, 0]
    g = SpadesGame(seed=0)
    assert g.hand(np.int64(2)) == g.hand(2) and len(g.hand(3)) == 13


@pytest.mark.parametrize("bad", HOSTILE + [52, 99], ids=_id)
def test_card_helpers_refuse_what_is_not_a_card(bad):
    _value_error(suit_of, bad)
    _value_error(rank_of, bad)
    _value_error(card_id, bad, 0)
    _value_error(card_id, 0, bad)
    _value_error(cards_to_mask, [bad])
    _value_error(cards_mask, [bad])
    if not isinstance(bad, (int, np.integer)) or isinstance(bad, (bool, np.bool_)):
        _value_error(action_str, bad)


@pytest.mark.parametrize("bad", [None, "x", 1.5, True, -1, 2 ** 52, [], np.array([1, 2])],
                         ids=_id)
def test_mask_helpers_refuse_what_is_not_a_52_bit_mask(bad):
    _value_error(mask_to_cards, bad)
    _value_error(format_hand, bad)
    _value_error(popcount, bad)


def test_card_helpers_give_the_layout_answers():
    # card = suit * 13 + rank, clubs 0 .. spades 3, two 0 .. ace 12 (spades_env.cards)
    assert card_id(3, 12) == 51 and suit_of(np.int64(40)) == 3 and rank_of(40) == 1
    assert mask_to_cards((1 << 51) | 1) == [0, 51] and popcount(2 ** 52 - 1) == 52
    assert cards_to_mask([0, 51]) == (1 << 51) | 1 == cards_mask((0, 51))
    assert action_str(np.int64(52)) == "bid Nil" and action_str(99) == "<invalid action 99>"
    for bad in ({"AS": 1}, b"AS KS", 5):
        _value_error(parse_cards, bad)


@pytest.mark.parametrize("bad", HOSTILE + [[0, 1, 2], [0, 1, 2, 52], [5, 5, 6, 7]], ids=_id)
def test_trick_winner_refuses_what_is_not_a_trick(bad):
    _value_error(trick_winner, bad, 0)
    _value_error(trick_winner, [0, 1, 2, 3], bad if not isinstance(bad, list) else 4)


def test_trick_winner_gives_the_rules_answer():
    # led 2C by seat 1; 5C, AC, 3S: the spade (seat 0) wins (docs/rules.md, Play)
    assert trick_winner([0, 3, 12, 40], 1) == 0
    assert trick_winner((np.int64(12), 3, 0, 1), np.int64(2)) == 2   # ace of the led suit


@pytest.mark.parametrize("bad", HOSTILE + [[1], [1, 2, 3], ["a", 0]], ids=_id)
def test_game_outcome_refuses_bad_scores_and_rules(bad):
    if not isinstance(bad, np.ndarray):              # an int array of 2 totals is fine
        _value_error(game_outcome, bad, Rules())
    _value_error(game_outcome, [0, 0], bad)


def test_game_outcome_gives_the_rules_answers():
    assert game_outcome(np.array([510, 490]), Rules()) == 0
    assert game_outcome((-200, 10), Rules(loss_threshold=-200)) == 1
    assert game_outcome([510, 510], Rules()) is None  # level over the target: play on


def test_rules_preset_with_an_unhashable_name_is_a_value_error():
    for bad in ([], {}, np.array([1])):
        _value_error(Rules.preset, bad)


# ------------------------------------------------------------------ engine entry points
@pytest.mark.parametrize("bad", [-1, -(2 ** 70), 1.5, "7", True, np.bool_(False), [], {},
                                 np.float64(3.0), object()], ids=_id)
def test_every_seed_is_checked_the_same_way(bad):
    _value_error(SpadesGame, None, bad)
    _value_error(SpadesGame.from_deal, [list(range(13 * s, 13 * s + 13)) for s in range(4)], 0,
                 seed=bad)
    _value_error(SpadesGame.replay, [], seed=bad)
    _value_error(make_bot, "random", seed=bad)
    _value_error(make_bot, "medium", seed=bad)
    _value_error(spades_v1.raw_env().reset, seed=bad)
    _value_error(SpadesSingleAgentEnv(partner="random", opponents="random").reset, seed=bad)


def test_good_seeds_still_fix_the_game():
    a, b = SpadesGame(seed=np.int64(5)), SpadesGame(seed=5)
    assert a.hands == b.hands and a.dealer == b.dealer
    big = SpadesGame(seed=2 ** 70)
    assert SpadesGame(seed=2 ** 70).hands == big.hands


@pytest.mark.parametrize("bad", [1.0, "1", True, np.bool_(True), 2 ** 70, -1, None], ids=_id)
def test_apply_seat_argument_is_checked(bad):
    g = SpadesGame(seed=0)
    for _ in range(4):
        g.apply(g.legal_actions()[0])
    card = g.legal_actions()[0]                      # the play phase: the fast path
    p = g.current_player
    before = g.to_json()
    if bad is None:
        g.apply(card, seat=bad)                      # None: no seat given
        return
    with pytest.raises(ValueError):
        g.apply(card, seat=bad if bad is not True else (True if p == 1 else bad))
    assert g.to_json() == before


def test_replay_refuses_a_move_log_that_is_not_a_list():
    for bad in (None, 5, "52 53", {"a": 1}):
        _value_error(SpadesGame.replay, bad)


def test_renderers_refuse_foreign_objects():
    for bad in (None, "x", 3, {}, SpadesGame(seed=0).to_dict()):
        _value_error(render_game, bad)
        _value_error(render_view, bad)
    for bad in (None, 3, ["x"], {}):
        _value_error(render_score_table, bad)
    _value_error(render_score_table, [], last=-1)
    assert "hand" in render_score_table([], last=0)


# ------------------------------------------------------------------ PettingZoo env
@pytest.mark.parametrize("bad", [1.5, "3", True, np.bool_(True), -1, 68, 2 ** 70, [], {},
                                 np.float32(3.0), np.array([1, 2]), torch.tensor(2.5)], ids=_id)
def test_env_step_refuses_what_is_not_an_action_id_with_a_value_error(bad):
    env = spades_v1.env()
    env.reset(seed=0)
    with pytest.raises(spades_v1.ActionOutOfSpaceError, match="not in action space"):
        env.step(bad)
    assert isinstance(spades_v1.ActionOutOfSpaceError("x"), AssertionError)  # PettingZoo's kind
    raw = spades_v1.raw_env()
    raw.reset(seed=0)
    before = raw.game.to_json()
    _value_error(raw.step, bad)
    assert raw.game.to_json() == before


def test_env_reset_options_and_observe_agent_are_checked():
    raw = spades_v1.raw_env()
    for bad in ("x", 3, ["game"], True):
        _value_error(raw.reset, options=bad)
    raw.reset(seed=1, options={"options": 1})        # PettingZoo's api_test passes this one
    for bad in ("player_4", 0, None, [], "PLAYER_0"):
        _value_error(raw.observe, bad)
    assert raw.observe("player_0")["observation"].shape == raw.observation_space(
        "player_0")["observation"].shape


@pytest.mark.parametrize("kw", [{"max_hands": 10 ** 30}, {"hands_per_episode": 2 ** 64}])
def test_env_hand_caps_are_bounded(kw):
    _value_error(spades_v1.raw_env, **kw)
    _value_error(SpadesVectorEnv, 2, **kw)


# ------------------------------------------------------------------ single-agent env
@pytest.mark.parametrize("bad", [None, "x", float("nan"), float("inf"), True, [], {},
                                 np.array([1.0, 2.0])], ids=_id)
def test_single_agent_illegal_reward_is_a_finite_number(bad):
    _value_error(SpadesSingleAgentEnv, illegal_reward=bad, partner="random", opponents="random")


@pytest.mark.parametrize("bad", [1.5, "3", True, -1, 68, 2 ** 70, None, np.float32(3.0),
                                 np.array([1, 2])], ids=_id)
def test_single_agent_raise_mode_refuses_odd_actions_with_the_reason(bad):
    env = SpadesSingleAgentEnv(partner="random", opponents="random", illegal_action="raise")
    env.reset(seed=0)
    before = env.game.to_json()
    with pytest.raises(ValueError, match="action"):
        env.step(bad)
    assert env.game.to_json() == before


# ------------------------------------------------------------------ batched engine
@pytest.mark.parametrize("backend", ["torch", "native"])
def test_vector_entry_points_check_their_arguments(backend):
    env = SpadesVectorEnv(2, seed=0, backend=backend)
    env.reset()
    for bad in (-1, 2 ** 64, 1.5, True, "3"):
        _value_error(env.reset, seed=bad)
        _value_error(SpadesVectorEnv, 2, seed=bad, backend=backend)
    for bad in ("x", 3, np.random.default_rng(0)):
        _value_error(env.sample_actions, bad)
    for bad in (-1, 2, 1.0, True, None):
        _value_error(env.get_game, bad)
        _value_error(env.observe, bad, 0)
    for bad in (-1, 4, 1.0, True, None):
        _value_error(env.observe, 0, bad)
    for bad in ([1.5, 52], ["52", "53"], [True, False], [2 ** 70, 52], [[52], [52]]):
        _value_error(env.step, bad)
    assert env.reset(seed=2 ** 64 - 1)[0].shape[0] == 2


# ------------------------------------------------------------------ encoders
def test_encoders_refuse_foreign_views_games_and_out_buffers():
    from spades_env.observation import OBS_SIZE, bid_slot, decode, encode, write_mask
    from spades_env.state import STATE_SIZE, encode_state, state_space
    g = SpadesGame(seed=0)
    v = g.view(0)
    for bad in (None, "x", 3, g, g.to_dict()):
        _value_error(encode, bad)
    for bad in (np.zeros(10, np.float32), np.zeros(OBS_SIZE, np.float64),
                np.zeros(OBS_SIZE, np.int8), [0.0] * OBS_SIZE, np.zeros((1, OBS_SIZE), np.float32)):
        _value_error(encode, v, bad)
        _value_error(encode_state, g, bad)
    ro = np.zeros(OBS_SIZE, np.float32)
    ro.flags.writeable = False
    _value_error(encode, v, ro)
    out = np.full(OBS_SIZE, 7.0, np.float32)
    assert encode(v, out) is out and np.array_equal(out, encode(v))
    assert encode_state(g, np.zeros(STATE_SIZE, np.float32)).shape == (STATE_SIZE,)
    for bad in (None, v, "x"):
        _value_error(encode_state, bad)
    for bad in (None, "x", 3, np.zeros(10), np.zeros((2, OBS_SIZE)), [[1, 2]]):
        _value_error(decode, bad)
    buf = np.zeros(60, np.float32)
    for args in ((buf, 0, -1), (buf, 0, 2 ** 52), (buf, 0, 1.5), (buf, 9, 1), (buf, -1, 1),
                 (buf, 1.0, 1), ([0.0] * 60, 0, 1), (buf, True, 1)):
        _value_error(write_mask, *args)
    write_mask(buf, 8, (1 << 51) | 1)
    assert buf[8] == 1.0 and buf[59] == 1.0 and buf.sum() == 2
    for args in ((14, False), (-1, False), (1.0, False), (True, False), ("3", False), (3, True)):
        _value_error(bid_slot, *args)
    assert (bid_slot(None, False), bid_slot(0, False), bid_slot(13, False),
            bid_slot(0, True)) == (0, 1, 14, 15)
    for bad in (0, -1, 1.5, True, "x"):
        _value_error(state_space, Rules(), bad)
    _value_error(state_space, "standard")


# ------------------------------------------------------------------ second pass (new inputs)
@pytest.mark.parametrize("name,kw", [
    ("hard", {"samples": 10 ** 12}), ("insane", {"bid_samples": 10 ** 9}),
    ("hard", {"inference_factor": 10 ** 6}), ("hard", {"infer_bids": "yes"}),
    ("hard", {"verify": 1}), ("hard", {"blind_nil_deficit": "x"}), ("hard", {"bid_window": True}),
    ("hard", {"endgame_tricks": False}), ("easy", {"careless": True}),
    ("easy", {"careless": "0.5"}), ("medium", {"cover_nil": "x"}), ("medium", {"duck": None}),
    ("medium", {"blind_nil_deficit": 1.5}), ("medium", {"blind_nil_deficit": True}),
])
def test_bot_options_are_checked_by_type_and_size(name, kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        make_bot(name, seed=0, **kw)


def test_bot_options_in_range_still_build():
    assert make_bot("easy", careless=np.float64(0.5)).careless == 0.5
    assert make_bot("medium", blind_nil_deficit=None).blind_nil_deficit is None
    assert make_bot("hard", samples=3, infer_bids=np.bool_(True)).infer_bids is True


def test_vector_reset_with_a_deal_of_odd_objects_is_a_value_error():
    env = SpadesVectorEnv(2, seed=0, backend="torch")
    env.reset()
    for holder in (np.array([[None] * 52] * 2, dtype=object), [["a"] * 52] * 2, "deal"):
        with pytest.raises(ValueError, match="holder"):
            env.reset(holder=holder, dealer=[0, 0])


def test_env_space_and_history_encoder_check_their_arguments():
    from spades_env.spades_v1 import HISTORY_SIZE, encode_history, observation_space
    for bad in ("yes", 1, None):
        _value_error(observation_space, history=bad)
    v = SpadesGame(seed=0).view(1)
    _value_error(encode_history, None)
    _value_error(encode_history, v, np.zeros(3))
    _value_error(encode_history, v, np.zeros(HISTORY_SIZE, np.float64))
    assert encode_history(v, np.ones(HISTORY_SIZE, np.float32)).sum() == 0  # nothing played yet


def test_score_records_that_outgrow_memory_are_refused_before_the_step(monkeypatch):
    """A game running past 8 hands doubles the score-record table; when that does not fit, the
    hand's last step is refused with the memory needed, and nothing changes."""
    import spades_env.vector as vec
    env = SpadesVectorEnv(2, seed=3, backend="torch", max_hands=None,
                          rules=Rules(target_score=10 ** 6))
    env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(8 * 56 + 55):                      # 8 hands recorded, the 9th one's last card
        env.step(env.sample_actions(gen))
    assert env._hist.shape[1] == 8 and env.hand_step == 55
    monkeypatch.setattr(vec, "available_memory", lambda device: (1000, "a test budget"))
    before = env.state_dict()
    with pytest.raises(ValueError, match=r"score records of 2 games need .* 16 hands"):
        env.step(env.sample_actions(torch.Generator().manual_seed(1)))
    after = env.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in env._STATE)
    monkeypatch.undo()
    env.step(env.sample_actions(gen))
    assert env._hist.shape[1] == 16 and int(env._hand_count.max()) == 9


def test_rules_integer_switches_are_bounded():
    """Rules accepted integers beyond int64, which the native kernel wrapped silently."""
    from spades_env import Rules
    from spades_env.rules import RULES_INT_MAX
    for kw in ({"target_score": 2 ** 63}, {"bag_limit": 2 ** 63}, {"nil_bonus": RULES_INT_MAX + 1},
               {"loss_threshold": -2 ** 63 - 5}):
        with pytest.raises(ValueError, match="must be at (most|least)"):
            Rules(**kw)
    assert Rules(target_score=RULES_INT_MAX, loss_threshold=-RULES_INT_MAX).target_score == 10 ** 6


def test_make_bot_rejects_bad_options_and_missing_checkpoint_with_value_error():
    import pytest
    from spades_env.bots import make_bot
    with pytest.raises(ValueError, match="bad option for bot 'random'"):
        make_bot("random", samples=5)
    with pytest.raises(ValueError, match="bad option for bot 'easy'"):
        make_bot("easy", samples=5)
    with pytest.raises(ValueError, match="no checkpoint file"):
        make_bot("checkpoint:/nonexistent/agent.pt")
