"""Regressions found by a new user trying to break the project (each fails without its fix)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spades_env as se
from spades_env import SpadesGame, SpadesSingleAgentEnv, spades_v0
from spades_env.arena import main as arena_main
from spades_env.vector import SpadesVectorEnv

# seat 0 all spades, seat 1 all hearts, seat 2 all diamonds, seat 3 all clubs
SUIT_HANDS = [[c for c in range(52) if c // 13 == s] for s in (3, 2, 1, 0)]


def _play_suit_hand(g: SpadesGame, bids) -> None:
    for b in bids:
        g.apply(se.bid_action(b))
    hn = g.hand_number
    while g.hand_number == hn and not g.is_over:
        g.apply(g.legal_actions()[0])


def test_game_set_up_mid_way_round_trips_json():
    # Hand 1 (dealer 3, bids 3 / Nil / Nil / Nil): seat 0 takes all 13 tricks.
    # Team 0: contract 3 made with 10 overtricks: 30 + 10 = 40, 10 bags -> -100 (0 left),
    # seat 2's Nil +100: hand 40. Team 1: two Nils made: +200.
    first = SpadesGame.from_deal(SUIT_HANDS, dealer=3)
    _play_suit_hand(first, (3, 0, 0, 0))
    assert first.scores == [40, 200] and first.bags == [0, 0]
    # Start hand 2 from a given deal carrying the earlier score table, as
    # SpadesVectorEnv.get_game does, then save and load it.
    g = SpadesGame.from_deal(SUIT_HANDS, dealer=0, scores=first.scores, bags=first.bags)
    g.hand_results = list(first.hand_results)
    g.hand_number = 1
    g.apply(se.bid_action(2))  # seat 1 bids first (left of dealer 0)
    g2 = SpadesGame.from_json(g.to_json())  # raised "does not replay" before the fix
    assert g2.to_dict() == g.to_dict()
    assert g2.hand_number == 1 and g2.hand_results[0].teams[1].hand_points == 200


def test_vector_get_game_after_two_hands_round_trips_json():
    env = SpadesVectorEnv(2, seed=1)
    obs, mask, seat = env.reset()
    for _ in range(2 * 56 + 5):  # two full hands, then 4 bids and the opening lead
        first_legal = mask.int().argmax(1)
        obs, mask, seat, rewards, dones, info = env.step(first_legal)
    g = env.get_game(0)
    assert g.hand_number == 2
    g2 = SpadesGame.from_json(g.to_json())
    assert g2.to_dict() == g.to_dict()


def test_vector_load_state_dict_corrupt_generator_leaves_state_unchanged():
    env = SpadesVectorEnv(3, seed=1)
    env.reset()
    saved = env.state_dict()
    env.step(env.current()[1].int().argmax(1))
    before = env.current()[0].clone()
    step_before = env.hand_step
    with pytest.raises(ValueError, match="corrupt"):
        env.load_state_dict(dict(saved, gen=torch.zeros(3, dtype=torch.uint8)))
    with pytest.raises(ValueError, match="corrupt"):
        env.load_state_dict({k: v for k, v in saved.items() if k != "started"})
    assert env.hand_step == step_before == 1
    assert torch.equal(env.current()[0], before)


def test_single_agent_accepts_zero_dim_int_array():
    # a 0-d int array is in Discrete(68) (what model.predict(obs) returns for one observation)
    env = SpadesSingleAgentEnv(seat=0, partner="random", opponents="random")
    env.reset(seed=0)
    assert env.action_space.contains(np.array(52))
    obs, reward, terminated, truncated, info = env.step(np.array(52))  # bid Nil
    assert not terminated and "illegal_action" not in info
    assert env.game.bids[0] == 0


def test_aec_env_accepts_zero_dim_int_array():
    env = spades_v0.env()
    env.reset(seed=1)
    agent = env.agent_selection
    seat = int(agent[-1])
    env.step(np.array(55))  # bid 3: in bounds and in the mask, so it must be played
    assert env.unwrapped.game.bids[seat] == 3
    assert not any(env.unwrapped.terminations.values())


def test_arena_cli_bad_json_folder_fails_before_playing(tmp_path, capsys):
    rc = arena_main(["--team0", "medium", "--team1", "easy", "--games", "2", "--no-progress",
                     "--json", str(tmp_path / "missing" / "out.json")])
    assert rc == 2
    captured = capsys.readouterr()
    assert "no such folder" in captured.err and "arena:" not in captured.out


def test_arena_cli_missing_checkpoint_is_a_clean_error(tmp_path, capsys):
    rc = arena_main(["--team0", f"checkpoint:{tmp_path / 'nope.pt'}", "--team1", "easy",
                     "--games", "2", "--no-progress"])
    assert rc == 2
    assert "no checkpoint" in capsys.readouterr().err


def test_bid_action_rejects_non_ints():
    assert se.bid_action(np.int64(3)) == 55 and type(se.bid_action(np.int64(3))) is int
    for bad in (3.0, True, None):
        with pytest.raises(ValueError):
            se.bid_action(bad)


def test_render_of_a_finished_game_names_the_last_hand():
    # From 480-0, the suit-split hand above gives team 0 +40: 520 wins after one hand.
    g = SpadesGame.from_deal(SUIT_HANDS, dealer=3, scores=(480, 0))
    _play_suit_hand(g, (3, 0, 0, 0))
    assert g.is_over and g.winner == 0 and g.scores == [520, 200]
    text = str(g)
    assert text.startswith("Hand 1, dealer: seat 3, phase: game over")  # was "Hand 2"
    assert "Trick 13: (hand over)" in text and "Trick 14" not in text


def test_arena_summary_percentage_matches_games_won():
    # target 100 with a hand cap of 1: a game ends after hand 1 only if a team reaches 100
    from spades_env.arena import play_match
    res = play_match("random", "random", games=20, seed=3, rules=se.Rules(target_score=100),
                     hand_cap=1)
    a, b = res.sides
    assert res.truncated > 0 and a.games_won + b.games_won + res.truncated == 20
    line = next(ln for ln in res.summary().splitlines() if ln.startswith("games won"))
    assert f"{a.games_won}/20 ({100 * a.games_won / 20:.1f}%)" in line
    assert f"{b.games_won}/20 ({100 * b.games_won / 20:.1f}%)" in line
    assert "win rate, draws as 1/2" in res.summary()


def test_card_helpers_reject_wrong_types_with_value_error():
    assert se.card_str(np.int64(51)) == "AS" and se.parse_cards(("AS", "10h")) == [51, 34]
    for bad in (True, None, 3.0):
        with pytest.raises(ValueError):
            se.card_str(bad)  # True gave "3C"; None and 3.0 a TypeError
    for bad in (None, 5):
        with pytest.raises(ValueError):
            se.parse_cards(bad)  # was TypeError


def test_make_bot_rejects_bad_options_and_missing_checkpoint_with_value_error():
    import pytest
    from spades_env.bots import make_bot
    with pytest.raises(ValueError, match="bad option for bot 'random'"):
        make_bot("random", samples=5)
    with pytest.raises(ValueError, match="bad option for bot 'easy'"):
        make_bot("easy", samples=5)
    with pytest.raises(ValueError, match="no checkpoint file"):
        make_bot("checkpoint:/nonexistent/agent.pt")


def test_env_history_must_be_a_bool():
    """Regression: env(history="no") was taken as truthy and silently grew the observation."""
    from spades_env import spades_v0
    for bad in ("no", 1, None):
        with pytest.raises(ValueError, match="history must be True or False"):
            spades_v0.env(history=bad)
    assert spades_v0.env(history=False).observation_space("player_0")["observation"].shape == (575,)


def test_vector_env_bad_device_is_a_value_error():
    """Regression: SpadesVectorEnv(device="tpu") leaked torch's RuntimeError."""
    with pytest.raises(ValueError, match="device must be a torch device"):
        SpadesVectorEnv(2, device="tpu")
    with pytest.raises(ValueError, match="device must be"):
        SpadesVectorEnv(2, device=3.5)
