"""Regressions found by a new user trying to break the project (each fails without its fix)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import spades_env as se
from spades_env import SpadesGame, SpadesSingleAgentEnv, spades_v1
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
    env = spades_v1.env()
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
    from spades_env import spades_v1
    for bad in ("no", 1, None):
        with pytest.raises(ValueError, match="history must be True or False"):
            spades_v1.env(history=bad)
    assert spades_v1.env(history=False).observation_space("player_0")["observation"].shape == (679,)


def test_vector_env_bad_device_is_a_value_error():
    """Regression: SpadesVectorEnv(device="tpu") leaked torch's RuntimeError."""
    with pytest.raises(ValueError, match="device must be a torch device"):
        SpadesVectorEnv(2, device="tpu")
    with pytest.raises(ValueError, match="device must be"):
        SpadesVectorEnv(2, device=3.5)


# ---- the native (C kernel) vector backend, found by a user trying to break it -----------------

def test_vector_out_of_phase_ids_refused_even_without_validation():
    """validate=False once let a native env write outside its buffers (id 2**40: segfault; a
    bid id during play removed a card from another game). The kernel checks every id against the
    phase now: a ValueError naming the game, and nothing changed. (The torch path is memory-safe
    by torch's own index checks; with validate=False its state after an illegal id is undefined,
    as documented.)"""
    env = SpadesVectorEnv(4, seed=3, backend="native", validate=False)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        env.step(env.sample_actions(gen))
    before = env.state_dict()
    for bad in (2 ** 40, -1, 68, 100000, 64):  # 64: a bid id while cards are played
        a = env.sample_actions(gen)
        a[1] = bad
        with pytest.raises(ValueError, match="illegal action"):
            env.step(a)
        after = env.state_dict()
        for k, v in before.items():
            if isinstance(v, torch.Tensor):
                assert torch.equal(v, after[k]), (bad, k)
    a = env.sample_actions(gen)
    a[3] = 64
    with pytest.raises(ValueError, match="illegal action 64 in env 3"):
        env.step(a)


def test_vector_native_under_float64_default_dtype():
    """torch.set_default_dtype(float64) made the native kernel read float64 memory as float32
    (illegal sampled ids, other deals, float64 rewards)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        envs = [SpadesVectorEnv(16, seed=2, backend=b) for b in ("native", "torch")]
        outs = [e.reset() for e in envs]
        for _ in range(60):
            assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
            acts = [e.sample_actions(torch.Generator().manual_seed(1)) for e in envs]
            assert torch.equal(acts[0], acts[1])
            assert outs[0][1].gather(1, acts[0][:, None]).all()
            outs = [e.step(a) for e, a in zip(envs, acts)]
            assert outs[0][3].dtype == torch.float32 and outs[1][3].dtype == torch.float32
    finally:
        torch.set_default_dtype(old)


def test_vector_corrupt_state_dict_values_are_refused():
    """A state with a short score history, an out-of-range hand count or seat crashed the
    native kernel (glibc abort / segfault); every index-like value is range-checked now."""
    env = SpadesVectorEnv(4, seed=1)
    env.reset()
    for _ in range(70):
        env.step(env.sample_actions())
    good = env.state_dict()
    cases = {
        "_hist": good["_hist"][:1],
        "_cur": torch.full_like(good["_cur"], 1000),
        "_hand_count": torch.full_like(good["_hand_count"], -50),
        "_trick_obs": torch.full_like(good["_trick_obs"], 10 ** 6),
    }
    for k, v in cases.items():
        bad = dict(good, **{k: v})
        with pytest.raises(ValueError, match="corrupt vector-env state"):
            env.load_state_dict(bad)
    bad = dict(good, _hist=good["_hist"].float())
    with pytest.raises(ValueError, match="_hist"):
        env.load_state_dict(bad)
    bad = dict(good, t=True)
    with pytest.raises(ValueError, match="hand step t must be an int"):
        env.load_state_dict(bad)
    env.load_state_dict(good)  # and the good one still loads
    env.step(env.sample_actions())


@pytest.mark.parametrize("backend", ["native", "torch"])
def test_vector_env_pickles_and_deep_copies(backend):
    """A native env could not be deep-copied or pickled (ctypes pointers), and a copy's views of
    its buffers came loose from them; copies are independent and continue exactly (observe()
    too, which reads through those views)."""
    import copy
    import pickle
    env = SpadesVectorEnv(8, seed=1, copy=False, backend=backend)
    env.reset()
    for _ in range(20):
        env.step(env.sample_actions(torch.Generator().manual_seed(3)))
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    assert all(t.backend == backend and t._obs4.data_ptr() != env._obs4.data_ptr() for t in twins)
    for _ in range(80):
        acts = env.sample_actions(torch.Generator().manual_seed(5))
        outs = [e.step(acts) for e in (env, *twins)]
        for o in outs[1:]:
            assert torch.equal(o[0], outs[0][0]) and torch.equal(o[2], outs[0][2])
        for t in twins:
            assert np.array_equal(t.observe(2, 1), env.observe(2, 1))
    twins[0].step(twins[0].sample_actions())  # moving a copy leaves the original alone
    assert twins[0].hand_step != env.hand_step


def test_vector_copy_false_seat_is_fresh_and_threads_bounded():
    """copy=False reused the seat tensor on the native backend only; seat is fresh on both now.
    threads is bounded (threads=2000 made libgomp exit the process)."""
    for backend in ("native", "torch"):
        env = SpadesVectorEnv(4, seed=0, copy=False, backend=backend)
        obs, mask, seat = env.reset()
        prev = seat
        keep = seat.clone()
        obs2, mask2, seat2, *_ = env.step(env.sample_actions())
        assert torch.equal(prev, keep) and seat2 is not prev
        assert obs2 is obs and mask2 is mask  # the documented reused buffers
    for bad in (0, 257, 2000, True):
        with pytest.raises(ValueError, match="threads"):
            SpadesVectorEnv(2, threads=bad)


def test_rules_integer_switches_are_bounded():
    """Rules accepted integers beyond int64, which the native kernel wrapped silently."""
    from spades_env import Rules
    from spades_env.rules import RULES_INT_MAX
    for kw in ({"target_score": 2 ** 63}, {"bag_limit": 2 ** 63}, {"nil_bonus": RULES_INT_MAX + 1},
               {"loss_threshold": -2 ** 63 - 5}):
        with pytest.raises(ValueError, match="must be at (most|least)"):
            Rules(**kw)
    assert Rules(target_score=RULES_INT_MAX, loss_threshold=-RULES_INT_MAX).target_score == 10 ** 6


def test_vector_observe_and_given_deal_argument_types():
    """observe() accepted seat=True / 1.7 / "0"; reset() truncated float holder values."""
    env = SpadesVectorEnv(2, seed=0)
    env.reset()
    for bad in (True, 1.7, "0", 4):
        with pytest.raises(ValueError, match="seat must be an int"):
            env.observe(0, bad)
    with pytest.raises(ValueError, match="env index"):
        env.observe(1.0, 0)
    holder = torch.arange(52).repeat(2, 1) % 4
    with pytest.raises(ValueError, match="integer seats"):
        env.reset(holder=holder.double() + 0.4, dealer=torch.zeros(2))
    obs, mask, seat = env.reset(holder=holder, dealer=torch.zeros(2, dtype=torch.long))
    assert seat.tolist() == [1, 1] and env.observe(0, 1).shape == (679,)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_after_a_multithreaded_kernel_does_not_hang():
    """A child forked after the kernel ran with threads=2 hung in its next OpenMP region (the
    kernel shares torch's libgomp, whose thread pool does not survive fork). Such a child now
    runs serial, in the kernel and in torch."""
    import time
    env = SpadesVectorEnv(64, seed=0, threads=2)
    env.reset()
    for _ in range(20):
        env.step(env.sample_actions())
    pid = os.fork()
    if pid == 0:  # child: a big torch op and both envs must finish
        code = 1
        try:
            other = SpadesVectorEnv(256, seed=1, threads=2)
            other.reset()
            torch.rand(300, 300) @ torch.rand(300, 300)
            for _ in range(60):
                env.step(env.sample_actions())
                other.step(other.sample_actions())
            code = 0 if env.threads == other.threads == torch.get_num_threads() == 1 else 2
        finally:
            os._exit(code)
    deadline = time.time() + 60
    status = None
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    assert os.waitstatus_to_exitcode(status) == 0
    if env.threads == 2:  # the parent keeps its threads
        env.step(env.sample_actions())


def test_vector_score_records_do_not_wrap():
    """Score records were int32: with large switches and no hand cap the totals wrapped after a
    few hundred hands (a total of -2.2e9 reported as +2.1e9). They are int64 now (here: a game
    restored after 166 hands whose totals are just past the int32 range plays one more hand), and
    an old int32 history still loads (widened). The restored state is one the rules reach (every
    score record is the scoring of its bids and tricks)."""
    from spades_env import Rules, score_hand
    # team 0 bids Nil twice and seat 0 takes all 13 tricks: -1e6 + 1e6 (the Nils) and 13 bags at
    # a bag limit of 1: -13e6 a hand; team 1 is set on 6: -60
    rules = Rules(bag_limit=1, bag_penalty=10 ** 6, nil_bonus=10 ** 6)
    bids, tricks, hands = [0, 3, 0, 3], [13, 0, 0, 0], 166
    for backend in ("native", "torch"):
        env = SpadesVectorEnv(8, seed=0, max_hands=None, rules=rules, backend=backend)
        env.reset()
        state = env.state_dict()
        SpadesVectorEnv(8, seed=0, max_hands=None, rules=rules, backend=backend).load_state_dict(
            {**state, "_hist": state["_hist"].to(torch.int32)})  # a version-1.1 state
        hist = torch.zeros((8, 256, 27), dtype=torch.int64)
        totals, bags = [0, 0], [0, 0]
        for h in range(hands):
            t0, t1 = score_hand(bids, tricks, bags, rules, scores_before=totals)
            dealer = (state["_dealer"] - hands + h) % 4
            team = [[t.contract, t.contract_points, -1 if t.made is None else int(t.made), t.bags,
                     t.nil_points, t.bag_penalty, t.hand_points, t.total, t.bags_after]
                    for t in (t0, t1)]
            hist[:, h, 0] = dealer
            hist[:, h, 1:] = torch.tensor(bids + tricks + team[0] + team[1])
            totals, bags = [t0.total, t1.total], [t0.bags_after, t1.bags_after]
        assert totals[0] < -2 ** 31
        state.update(_hist=hist, _hand_count=torch.full((8,), hands),
                     _scores=torch.tensor([totals] * 8), _bags=torch.tensor([bags] * 8))
        side = state["_side"].clone()  # the score features of every observer (mine, theirs)
        for o in range(4):
            mine, theirs = totals[o & 1], totals[1 - (o & 1)]
            side[:, o, 0] = torch.tensor(mine, dtype=torch.float64).div(500).float()
            side[:, o, 1] = torch.tensor(theirs, dtype=torch.float64).div(500).float()
        state["_side"] = side
        env.load_state_dict(state)
        gen = torch.Generator().manual_seed(0)
        for _ in range(56):
            obs, mask, seat, rew, done, info = env.step(env.sample_actions(gen))
        assert not done.any() and env._hist.dtype == torch.int64
        for i in range(8):
            hr = env.get_game(i).hand_results[-1]
            pts = info["hand_points"][i].tolist()
            assert [hr.teams[0].total, hr.teams[1].total] == env.scores[i].tolist()
            assert env.scores[i].tolist() == [totals[0] + pts[0], totals[1] + pts[1]]


def test_vector_actions_of_odd_types_are_refused_clearly():
    env = SpadesVectorEnv(2, seed=0)
    env.reset()
    for bad in ([2 ** 64, 2 ** 64], torch.tensor([52 + 1j, 53]),
                np.array([2 ** 64 - 1, 52], dtype=np.uint64)):
        with pytest.raises(ValueError, match="actions must be integer action ids"):
            env.step(bad)


def test_unpickling_an_auto_env_without_a_compiler_falls_back_to_torch(monkeypatch):
    """A pickled backend="auto" env raised NativeUnavailable where the kernel cannot be built;
    it now continues on the torch path (same state, same results). threads is read-only."""
    import pickle
    from spades_env import native
    env = SpadesVectorEnv(16, seed=4)
    assert env.backend == "native"
    env.reset()
    for _ in range(30):
        env.step(env.sample_actions(torch.Generator().manual_seed(1)))
    blob = pickle.dumps(env)
    monkeypatch.setattr(native, "_kernel", None)
    monkeypatch.setattr(native, "_error", "no C compiler (test)")
    twin = pickle.loads(blob)
    assert twin.backend == "torch" and twin.threads == 1
    for _ in range(60):
        acts = env.sample_actions(torch.Generator().manual_seed(2))
        a, b = env.step(acts), twin.step(acts)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and torch.equal(a[3], b[3])
    with pytest.raises(AttributeError):
        env.threads = 5
