"""Differential tests: the batched engine (spades_env.vector) against the scalar engine.

Every game of a ``SpadesVectorEnv`` is mirrored by a scalar ``SpadesGame`` started from the same
deal (``SpadesGame.from_deal``); both take the same random legal actions. At every step the acting
seat, the legal mask (``game.legal_mask()``), the observation
(``observation.encode(game.view(seat))``) and the rewards must be equal; at every hand end the
score tables, totals, bags and winner must be equal. At a hand end the scalar engine deals its own
next hand from its own RNG, so the mirror is restarted from the vector env's next deal with the
*scalar* engine's running scores, bags and dealer (so any scoring difference would still show up).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spades_env import Rules, SpadesGame
from spades_env.cards import NUM_ACTIONS
from spades_env.observation import OBS_SIZE, OFFSETS, encode
from spades_env.vector import HAND_STEPS, SpadesVectorEnv


def _random_actions(mask: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A uniformly random legal action per row of ``mask``."""
    r = torch.rand(mask.shape, generator=gen)
    return torch.where(mask, r + 1.0, torch.zeros_like(r)).argmax(1)


def _mirror(env: SpadesVectorEnv, i: int, scores, bags, dealer, hand_results) -> SpadesGame:
    """Scalar game on env i's current deal, with the scalar side's own running totals."""
    hands = env.get_game(i).hands  # the deal only
    g = SpadesGame.from_deal(hands, dealer, scores, bags, env.rules, seed=0)
    g.hand_results = list(hand_results)
    g.hand_number = len(hand_results)
    return g


def _play_and_compare(env: SpadesVectorEnv, hands: int, seed: int, check_get_game=()):
    """Run ``hands`` hands of random play in ``env`` and its scalar mirrors, comparing everything.

    Returns a dict of counts (games ended by a win, truncated, hands crossed) for coverage checks.
    """
    n = env.num_envs
    gen = torch.Generator().manual_seed(seed)
    obs, mask, seat = env.reset()
    games = [_mirror(env, i, (0, 0), (0, 0), int(env.dealer[i]), []) for i in range(n)]
    stats = {"target_reached": 0, "won": 0, "hands_per_episode_ends": 0, "truncated": 0,
             "multi_hand_games": 0, "steps": 0}
    exp_obs = np.zeros((n, OBS_SIZE), dtype=np.float32)
    exp_mask = np.zeros((n, NUM_ACTIONS), dtype=bool)
    for step in range(hands * HAND_STEPS):
        o_np, m_np, s_np = obs.numpy(), mask.numpy(), seat.numpy()
        assert obs.dtype == torch.float32 and obs.shape == (n, OBS_SIZE)
        assert mask.dtype == torch.bool and mask.shape == (n, NUM_ACTIONS)
        exp_mask[:] = False
        for i, g in enumerate(games):
            p = g.current_player
            assert s_np[i] == p, f"step {step} env {i}: seat {s_np[i]} != {p}"
            exp_mask[i, g.legal_actions()] = True
            encode(g.view(p), exp_obs[i])
        if not np.array_equal(m_np, exp_mask):
            i = int(np.flatnonzero((m_np != exp_mask).any(1))[0])
            raise AssertionError(f"step {step} env {i}: mask differs")
        if not np.array_equal(o_np, exp_obs):
            i = int(np.flatnonzero((o_np != exp_obs).any(1))[0])
            bad = np.flatnonzero(o_np[i] != exp_obs[i])
            names = [k for k, (a, b) in OFFSETS.items() if any(a <= x < b for x in bad)]
            raise AssertionError(f"step {step} env {i}: obs differs in {names}")
        if step % 97 == 13:
            for i in check_get_game:
                for other in range(4):  # every seat's observation, acting or not
                    assert np.array_equal(env.observe(i, other), encode(games[i].view(other)))
                ref, got = games[i].to_dict(), env.get_game(i).to_dict()
                for k in ("phase", "dealer", "current_player", "hands", "bids", "tricks_won",
                          "trick", "trick_leader", "spades_broken", "played", "voids",
                          "trick_number", "scores", "bags", "hand_results", "hand_number"):
                    assert got[k] == ref[k], f"get_game({i}).{k} differs at step {step}"
        actions = _random_actions(mask, gen)
        obs, mask, seat, rew, dones, info = env.step(actions)
        stats["steps"] += 1
        rew_np, done_np = rew.numpy(), dones.numpy()
        hand_end = (step + 1) % HAND_STEPS == 0
        if not hand_end:
            assert not rew_np.any() and not done_np.any()
        else:
            hand_pts = info["hand_points"].tolist()
            term, trunc = info["terminated"].tolist(), info["truncated"].tolist()
            fin_scores, fin_bags = info["final_scores"].tolist(), info["final_bags"].tolist()
            finals = {r["env"]: r for r in info["final"].results()} if info["final"] else {}
            dealers = env.dealer.tolist()
        for i, a in enumerate(actions.tolist()):
            g = games[i]
            g.apply(a)
            if not hand_end:
                continue
            assert len(g.hand_results) == g.hand_number and g.hand_number >= 1
            hr = g.hand_results[-1]
            pts = (hr.teams[0].hand_points, hr.teams[1].hand_points)
            assert tuple(hand_pts[i]) == pts
            hpe = env.hands_per_episode is not None and g.hand_number >= env.hands_per_episode
            terminated = g.winner is not None or hpe  # as spades_v1: a hands_per_episode end
            truncated = (not terminated and env.max_hands is not None  # terminates; max_hands
                         and g.hand_number >= env.max_hands)  # truncates
            if env.reward == "hand":
                d = np.float32((pts[0] - pts[1]) / 100.0)
                expect = np.array([d, -d, d, -d], dtype=np.float32)
            elif g.winner is not None:
                w = 1.0 if g.winner == 0 else -1.0
                expect = np.array([w, -w, w, -w], dtype=np.float32)
            elif hpe:
                w = float(np.sign(g.scores[0] - g.scores[1]))
                expect = np.array([w, -w, w, -w], dtype=np.float32)
            else:
                expect = np.zeros(4, dtype=np.float32)
            assert np.array_equal(rew_np[i], expect), f"env {i}: rewards {rew_np[i]} != {expect}"
            ended = terminated or truncated
            assert bool(done_np[i]) == ended, f"env {i}: done flag"
            assert term[i] == terminated and trunc[i] == truncated
            assert fin_scores[i] == g.scores and fin_bags[i] == g.bags
            if ended:
                final = finals[i]
                assert final["scores"] == g.scores and final["bags"] == g.bags
                assert final["winner"] == g.winner
                assert final["truncated"] == truncated
                assert final["hand_results"] == g.hand_results
                if g.winner is not None:
                    stats["won"] += 1
                    stats["target_reached"] += max(g.scores) >= env.rules.target_score
                elif truncated:
                    stats["truncated"] += 1
                else:
                    stats["hands_per_episode_ends"] += 1
                if g.hand_number > 1:
                    stats["multi_hand_games"] += 1
                games[i] = _mirror(env, i, (0, 0), (0, 0), dealers[i], [])
            else:
                assert dealers[i] == g.dealer  # passed left after the hand
                games[i] = _mirror(env, i, g.scores, g.bags, g.dealer, g.hand_results)
    return stats


BACKENDS = ("torch", "native")


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_parity_short_games_1000(backend):
    """1000 games with a low target and a loss threshold: games end (wins on both the target and
    the loss side), cross hands, are truncated at 3 hands, and are reset inside the batch; 4 hands
    of steps in all. Both backends: torch ops and the fused C kernel."""
    env = SpadesVectorEnv(1000, seed=11, rules=Rules(target_score=100, loss_threshold=-250),
                          max_hands=3, backend=backend)
    assert env.backend == backend
    stats = _play_and_compare(env, hands=4, seed=5, check_get_game=(0, 1, 999))
    assert stats["steps"] == 4 * HAND_STEPS
    assert stats["won"] >= 1000  # on average every game of the batch ended at least once
    assert stats["target_reached"] >= 10  # some wins on the target side, the rest on the loss side
    assert stats["truncated"] >= 1  # and some games cut by max_hands
    assert stats["multi_hand_games"] >= 500


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_parity_default_rules_capped_and_game_reward(backend):
    """Default rules (target 500) capped at 2 hands (truncations, reward 0), rewards ``"game"``;
    single-hand episodes (terminated, reward = sign of the score difference) with
    ``forced_spade_lead_breaks`` on, under both reward modes."""
    env = SpadesVectorEnv(100, seed=3, rules=Rules(), max_hands=2, reward="game", backend=backend)
    stats = _play_and_compare(env, hands=4, seed=1, check_get_game=(7,))
    assert stats["truncated"] == 200  # 100 games x 2 episodes of 2 hands, nobody reaches 500
    for reward in ("game", "hand"):
        env = SpadesVectorEnv(100, seed=4, rules=Rules(forced_spade_lead_breaks=True),
                              hands_per_episode=1, reward=reward, backend=backend)
        stats = _play_and_compare(env, hands=2, seed=2)
        assert stats["hands_per_episode_ends"] == 200 and stats["truncated"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_parity_long_games_grow_the_score_history(backend):
    """10-hand games (default rules, max_hands=10): the per-hand score history outgrows its first
    capacity (8 hands) and every game's 10 score tables still match the scalar engine's."""
    env = SpadesVectorEnv(8, seed=8, rules=Rules(), max_hands=10, backend=backend)
    stats = _play_and_compare(env, hands=10, seed=3, check_get_game=(2,))
    assert stats["truncated"] + stats["won"] == 8 and env._hist.shape[1] >= 10


def test_seeding_same_seed_same_games():
    """Same seed -> same deals, dealers and observations; another seed -> other deals."""
    outs = []
    for seed in (7, 7, 8):
        env = SpadesVectorEnv(16, seed=seed, rules=Rules(target_score=100, loss_threshold=-100))
        gen = torch.Generator().manual_seed(0)
        obs, mask, seat = env.reset()
        trace = [obs.clone()]
        for _ in range(2 * HAND_STEPS):
            obs, mask, seat, *_ = env.step(_random_actions(mask, gen))
            trace.append(obs.clone())
        outs.append(torch.stack(trace))
    assert torch.equal(outs[0], outs[1])
    assert not torch.equal(outs[0], outs[2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_illegal_action_raises_and_leaves_state_unchanged(backend):
    env = SpadesVectorEnv(4, seed=0, backend=backend)
    obs, mask, seat = env.reset()
    before = env.state_dict()
    acts = torch.full((4,), 52 + 3)
    acts[2] = 5  # a card during the bidding
    with pytest.raises(ValueError, match="env 2.*bidding phase"):
        env.step(acts)
    for bad in (99, -1):  # outside the action space
        acts = torch.full((4,), 52 + 3)
        acts[1] = bad
        with pytest.raises(ValueError, match=f"illegal action {bad} in env 1"):
            env.step(acts)
    after = env.state_dict()
    for k, v in before.items():
        if isinstance(v, torch.Tensor):
            assert torch.equal(v, after[k]), k
    with pytest.raises(ValueError, match="shape"):
        env.step(torch.full((3,), 52))
    with pytest.raises(ValueError, match="integer"):
        env.step(torch.full((4,), 52.0))
    for _ in range(4):
        obs, mask, seat, *_ = env.step(torch.full((4,), 52 + 3))
    # the leader of the first trick may not lead a spade while holding another suit
    hand0 = env.get_game(0).hands[int(seat[0])]
    spade = next(c for c in range(39, 52) if hand0 >> c & 1) if hand0 >> 39 else None
    if spade is not None:
        acts = mask.float().argmax(1)
        acts[0] = spade
        with pytest.raises(ValueError, match="spades are not broken"):
            env.step(acts)


def test_bad_arguments():
    with pytest.raises(ValueError, match="Blind Nil"):
        SpadesVectorEnv(2, rules=Rules(blind_nil=True))
    with pytest.raises(ValueError, match="num_envs"):
        SpadesVectorEnv(0)
    with pytest.raises(ValueError, match="reward"):
        SpadesVectorEnv(2, reward="win")
    with pytest.raises(ValueError, match="max_hands"):
        SpadesVectorEnv(2, max_hands=0)
    with pytest.raises(RuntimeError, match="reset"):
        SpadesVectorEnv(2).step(torch.zeros(2, dtype=torch.long))


def test_state_dict_round_trip_continues_identically():
    rules = Rules(target_score=100, loss_threshold=-100)
    env = SpadesVectorEnv(8, seed=2, rules=rules)
    gen = torch.Generator().manual_seed(3)
    obs, mask, seat = env.reset()
    for _ in range(70):
        obs, mask, seat, *_ = env.step(_random_actions(mask, gen))
    saved = env.state_dict()
    gstate = gen.get_state()
    tail_a = []
    for _ in range(100):
        obs, mask, seat, rew, done, _ = env.step(_random_actions(mask, gen))
        tail_a.append((obs, rew, done))
    env2 = SpadesVectorEnv(8, seed=99, rules=rules)
    env2.load_state_dict(saved)
    gen.set_state(gstate)
    obs, mask, seat = env2.current()
    for k in range(100):
        obs, mask, seat, rew, done, _ = env2.step(_random_actions(mask, gen))
        assert torch.equal(obs, tail_a[k][0]) and torch.equal(rew, tail_a[k][1])
        assert torch.equal(done, tail_a[k][2])
    with pytest.raises(ValueError, match="envs"):
        SpadesVectorEnv(4, rules=rules).load_state_dict(saved)
    with pytest.raises(ValueError, match="not a spades_env.vector"):
        env2.load_state_dict({"format": "x"})


def _suit_deal(n: int):
    """Each seat dealt one whole suit: spades -> seat 0, hearts -> 1, diamonds -> 2, clubs -> 3."""
    holder = torch.tensor([3 - c // 13 for c in range(52)]).repeat(n, 1)
    return holder, torch.full((n,), 3)  # dealer 3: seat 0 bids first and leads


def test_scripted_hand_one_suit_each():
    """Hand-checked (docs/rules.md): seat 0 holds all 13 spades and bids 13, seats 1 and 2 bid Nil,
    seat 3 bids 2. Seat 0 must lead spades (it holds nothing else), the others cannot follow and
    may play any card; seat 0 takes all 13 tricks. Team 0: 10*13 + 100 (seat 2's Nil) = 230;
    team 1: 100 (seat 1's Nil) - 10*2 (seat 3 set) = 80. Target 200: team 0 wins."""
    o = OFFSETS
    for rules, reward in ((Rules(), "hand"),
                          (Rules(target_score=200, forced_spade_lead_breaks=True), "game")):
        env = SpadesVectorEnv(2, seed=0, rules=rules, reward=reward)
        holder, dealer = _suit_deal(2)
        obs, mask, seat = env.reset(holder=holder, dealer=dealer)
        assert seat.tolist() == [0, 0] and mask[:, 52:66].all() and mask.sum().item() == 28
        for bid, s in ((13, 0), (0, 1), (0, 2), (2, 3)):
            assert seat.tolist() == [s, s]
            obs, mask, seat, rew, done, info = env.step(torch.full((2,), 52 + bid))
        spades = list(range(51, 38, -1))
        for trick in range(13):
            assert seat.tolist() == [0, 0]
            assert torch.equal(mask[0].nonzero()[:, 0], torch.arange(39, 52 - trick))
            obs, mask, seat, rew, done, info = env.step(torch.full((2,), spades[trick]))
            if trick == 0:  # seat 1 to act: void in spades, so any heart
                assert seat.tolist() == [1, 1]
                assert torch.equal(mask[0].nonzero()[:, 0], torch.arange(26, 39))
                assert obs[0, o["spades_broken"][0]] == (1.0 if rules.forced_spade_lead_breaks
                                                         else 0.0)
            for s, base in ((1, 26), (2, 13), (3, 0)):
                card = base + 12 - trick  # each discards its highest card
                obs, mask, seat, rew, done, info = env.step(torch.full((2,), card))
                if trick == 0 and s == 1:  # seat 2's view: seat 1 (relative 3) void in spades
                    assert obs[0, o["voids"][0] + 4 * 3 + 3] == 1.0
                    assert obs[0, o["trick"][0] + 52 * 2 + 51] == 1.0  # partner led the AS
                    assert obs[0, o["trick"][0] + 52 * 3 + 38] == 1.0  # right played the AH
                    assert obs[0, o["led_suit"][0] + 3] == 1.0
        hr = info["final"].results()[0]["hand_results"][0] if reward == "game" else \
            next(iter(info["hands"]))[1]
        t0, t1 = hr.teams
        assert hr.tricks == (13, 0, 0, 0) and hr.bids == (13, 0, 0, 2)
        assert (t0.contract, t0.contract_points, t0.made, t0.nil_points, t0.hand_points) == \
            (13, 130, True, 100, 230)
        assert (t1.contract, t1.contract_points, t1.made, t1.nil_points, t1.hand_points) == \
            (2, -20, False, 100, 80)
        assert info["hand_points"].tolist() == [[230, 80], [230, 80]]
        if reward == "hand":
            assert rew.tolist() == [[1.5, -1.5, 1.5, -1.5]] * 2 and not done.any()
            assert env.scores.tolist() == [[230, 80]] * 2
            assert env.dealer.tolist() == [0, 0]  # the deal passed left
        else:
            assert rew.tolist() == [[1.0, -1.0, 1.0, -1.0]] * 2 and done.all()
            assert info["winner"].tolist() == [0, 0] and info["terminated"].all()
            assert env.scores.tolist() == [[0, 0]] * 2  # reset for the next game


def test_reset_with_bad_deal_raises():
    env = SpadesVectorEnv(2, seed=0)
    holder, dealer = _suit_deal(2)
    holder[1, 0] = 0  # seat 0 gets 14 cards, seat 3 gets 12
    with pytest.raises(ValueError, match="env 1 has \\[14, 13, 13, 12\\]"):
        env.reset(holder=holder, dealer=dealer)
    with pytest.raises(ValueError, match="both"):
        env.reset(holder=holder)


def test_get_game_cache_follows_moves_and_survives_a_mutating_caller():
    env = SpadesVectorEnv(3, seed=5)
    gen = torch.Generator().manual_seed(0)
    obs, mask, seat = env.reset()
    g = env.get_game(1)
    for _ in range(10):
        obs, mask, seat, *_ = env.step(_random_actions(mask, gen))
    g2 = env.get_game(1)
    assert len(g.moves) == 0 and len(g2.moves) == 10  # a game of its own each call
    g2.apply(g2.legal_actions()[0])  # a caller playing ahead on the returned game
    g3 = env.get_game(1)
    assert g3 is not g2 and len(g3.moves) == 10 and g3.current_player == int(seat[1])
    assert np.array_equal(encode(g3.view(int(seat[1]))), obs[1].numpy())


def test_backends_give_identical_streams():
    """The fused C kernel and the torch ops produce the same observations, masks, seats and
    rewards step for step from the same seed and actions (copy=False buffers included, and the
    kernel's loops split over 2 OpenMP threads)."""
    envs = [SpadesVectorEnv(64, seed=12, rules=Rules(target_score=150), backend=b, copy=c,
                            threads=th)
            for b, c, th in (("torch", True, 1), ("native", True, 1), ("native", False, 1),
                             ("native", False, 2))]
    outs = [e.reset() for e in envs]
    gen = torch.Generator().manual_seed(4)
    for _ in range(3 * HAND_STEPS):
        for o in outs[1:]:
            for x, y in zip(outs[0][:3], o[:3]):
                assert torch.equal(x, y)
        acts = _random_actions(outs[0][1], gen)
        outs = [e.step(acts) for e in envs]
        for o in outs[1:]:
            assert torch.equal(o[3], outs[0][3]) and torch.equal(o[4], outs[0][4])


def test_backend_choice_and_errors(monkeypatch):
    from spades_env import native
    with pytest.raises(ValueError, match="backend must be"):
        SpadesVectorEnv(2, backend="c++")
    with pytest.raises(ValueError, match="CPU only"):
        SpadesVectorEnv(2, device="cuda", backend="native")
    with pytest.raises(ValueError, match="threads"):
        SpadesVectorEnv(2, threads=0)
    assert SpadesVectorEnv(2, backend="torch").backend == "torch"
    # no kernel built (tests/vector/test_native_kernel.py has the other refusals): "native"
    # raises with the reason, "auto" falls back to torch
    monkeypatch.setattr(native, "kernel_path", lambda: None)
    monkeypatch.setattr(native, "_kernel", None)
    monkeypatch.setattr(native, "_error", None)
    with pytest.raises(native.NativeUnavailable, match="not built"):
        SpadesVectorEnv(2, backend="native")
    env = SpadesVectorEnv(2, seed=3)
    assert env.backend == "torch"
    obs, mask, seat = env.reset()
    assert mask[:, 52:66].all()  # the bidding mask: it still works on the torch path


@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_actions_legal_uniform_and_backend_independent(backend):
    """``sample_actions`` returns a legal id in every game; on a 14-bid mask each bid comes up about
    1/14 of the time; both backends give the same ids for the same generator state."""
    env = SpadesVectorEnv(2000, seed=6, backend=backend)
    obs, mask, seat = env.reset()
    a = env.sample_actions(torch.Generator().manual_seed(1))
    assert a.dtype == torch.int64 and mask.gather(1, a[:, None]).all()
    counts = torch.bincount(a - 52, minlength=14).float()
    assert counts.shape == (14,) and (counts > 2000 / 14 * 0.6).all()  # ~143 each
    ref = SpadesVectorEnv(2000, seed=6, backend="torch")
    ref.reset()
    assert torch.equal(ref.sample_actions(torch.Generator().manual_seed(1)), a)
    for _ in range(30):  # into the card play
        obs, mask, seat, *_ = env.step(env.sample_actions())
        assert mask.gather(1, env.sample_actions()[:, None]).all()
    with pytest.raises(RuntimeError, match="reset"):
        SpadesVectorEnv(2, backend=backend).sample_actions()


def test_openmp_build_when_the_compiler_has_it(tmp_path):
    """The kernel is built with OpenMP whenever ``cc -fopenmp`` works (so ``threads`` is honoured),
    not silently serial because of an error in the OpenMP build (setup.py's probe)."""
    import shutil
    import subprocess
    from spades_env import native
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "t.c"
    src.write_text("#include <omp.h>\nint f(void) { return omp_get_max_threads(); }\n")
    ok = subprocess.run([cc, "-fopenmp", "-shared", "-fPIC", "-o", str(tmp_path / "t.so"),
                         str(src)], capture_output=True).returncode == 0
    assert bool(native.load_kernel().sp_openmp()) == ok
    assert SpadesVectorEnv(4, threads=2).threads == (2 if ok else 1)


def test_native_deal_matches_stable_argsort_with_ties():
    """The kernel deals card c to seat (first + rank of u[c]) % 4 with ties broken by card id:
    the same deal as the torch path's stable argsort, even for equal floats (rare from
    torch.rand, forced here, and at 0.0)."""
    env = SpadesVectorEnv(64, seed=0, backend="native")
    env.reset()
    u = torch.rand((64, 52), generator=torch.Generator().manual_seed(2))
    u[:, 10] = u[:, 3]
    u[:, 40] = u[:, 3]
    u[:, 0] = 0.0
    u[:, 51] = 0.0
    u[5] = 0.5  # a whole row tied: dealt in card order
    env._kernel.sp_start_hands(env._spenv_ref, u.data_ptr(), None)
    first = (env.dealer + 1) & 3
    perm = u.argsort(dim=1, stable=True)
    want = torch.empty((64, 52), dtype=torch.int64)
    want.scatter_(1, perm, (first[:, None] + torch.arange(52)[None, :]) & 3)
    assert torch.equal(env._owner, want)
    assert env._owner[5].tolist() == [(int(first[5]) + c) % 4 for c in range(52)]
    assert (env._hands.view(64, 4, 52).sum(2) == 13).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_parity_failed_nil_tricks_count(backend):
    """``Rules(failed_nil_tricks_count=True)``: random bids include Nils that fail beside a
    contract, and every score table still matches the scalar engine's (torch and C kernel)."""
    env = SpadesVectorEnv(200, seed=21, rules=Rules(failed_nil_tricks_count=True), max_hands=2,
                          backend=backend)
    stats = _play_and_compare(env, hands=2, seed=9, check_get_game=(0,))
    assert stats["truncated"] == 200



@pytest.mark.parametrize("backend", BACKENDS)
def test_parity_bags_score_points(backend):
    """``Rules(bags_score_points=False)`` (docs/rules.md, House rules): made contracts score no
    point for their overtricks, which still trip the bag penalty (a small ``bag_limit`` so that
    they do); every score table matches the scalar engine's (torch and C kernel)."""
    env = SpadesVectorEnv(200, seed=25, rules=Rules(bags_score_points=False, bag_limit=3),
                          max_hands=2, backend=backend)
    stats = _play_and_compare(env, hands=2, seed=11, check_get_game=(0,))
    assert stats["truncated"] == 200

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


@pytest.mark.parametrize("backend", ["torch", "native"])
def test_info_hands_start_bags_are_the_bags_before_each_hand(backend):
    """``info["hands"]`` gives ``(env, HandResult, start bags)``: the start bags of every hand
    are the previous hand's bags after it (0, 0 for a game's first), with a small bag limit so
    that penalties are crossed."""
    rules = Rules(bag_limit=3, bag_penalty=30)
    env = SpadesVectorEnv(16, seed=4, rules=rules, backend=backend)
    gen = torch.Generator().manual_seed(1)
    env.reset()
    last = {}  # env -> bags after its previous hand (None: a new game starts)
    checked = crossed = 0
    for _ in range(56 * 6):
        _obs, _mask, _seat, _rew, _done, info = env.step(env.sample_actions(gen))
        for i, h, start in info.get("hands", []):
            want = (0, 0) if h.hand_number == 0 else last[i]
            assert start == want, (i, h.hand_number)
            last[i] = tuple(t.bags_after for t in h.teams)
            checked += 1
            crossed += any(t.bag_penalty for t in h.teams)
    assert checked >= 16 * 5 and crossed > 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rules", [
    Rules(min_team_bid=4, bid_total_not_13=True), Rules(suicide=True, min_team_bid=4),
    Rules(mirror=True), Rules(whiz=True), Rules(spades_lead_any_time=True),
    Rules(big_bid_double=7, moon_wins=True), Rules(two_of_clubs_leads=True),
    Rules.preset("joker_joker_deuce_deuce"), Rules(jokers=True, mirror=True),
    Rules(jokers=True, whiz=True, spades_lead_any_time=True)],
    ids=["board4-not13", "suicide", "mirror", "whiz", "spades-any-time", "big-bids-moon",
         "2C-leads", "jokers", "jokers-mirror", "jokers-whiz-any-time"])
def test_parity_house_bidding_rules(backend, rules):
    """The house rules of bidding and leading (docs/rules.md, House rules) in the batched engine: at every step
    the masks (so the legal bids, which ``rules.legal_bids`` decides in the engine), the
    observations and the score tables equal the scalar engine's, on both backends."""
    env = SpadesVectorEnv(64, seed=23, rules=rules, max_hands=2, backend=backend)
    stats = _play_and_compare(env, hands=2, seed=13, check_get_game=(0,))
    assert stats["truncated"] == 64
