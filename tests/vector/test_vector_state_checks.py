"""The batched engine refuses states the rules cannot reach and batches that do not fit in memory."""

from __future__ import annotations

import copy

import pytest
import torch

from spades_env import Rules
from spades_env.observation import OFFSETS
from spades_env.vector import HAND_STEPS, SpadesVectorEnv, bytes_per_game

BACKENDS = ("torch", "native")


def _env_after(steps, backend="torch", n=3, seed=0, **kw) -> SpadesVectorEnv:
    env = SpadesVectorEnv(n, seed=seed, backend=backend, **kw)
    env.reset()
    for _ in range(steps):
        env.step(env.sample_actions())
    return env


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(a[k], b[k]) for k in SpadesVectorEnv._STATE) and a["t"] == b["t"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mask_that_contradicts_the_phase_is_refused_and_nothing_changes(backend):
    env = _env_after(6, backend)                     # a bid marked legal in the play
    before = env.state_dict()
    sd = copy.deepcopy(before)
    sd["_mask"][:, 60] = True
    with pytest.raises(ValueError, match="_mask does not follow"):
        env.load_state_dict(sd)
    assert _same(env.state_dict(), before)
    with pytest.raises(ValueError, match="illegal action 60"):   # and the env still refuses it
        env.step(torch.full((3,), 60))
    assert _same(env.state_dict(), before)


def _flip(name, index):
    def edit(sd):
        v = sd[name]
        if v.dtype == torch.bool:
            v[index] = ~v[index]
        elif v.dtype == torch.float32:
            v[index] += 0.5
        elif name in ("_cur", "_leader", "_led"):
            v[index] = (v[index] + 1) % 4
        else:
            v[index] = 1 - v[index] if v.dtype == torch.uint8 else v[index] + 1
    return edit


PLAY = OFFSETS["played"][0]
CORRUPTIONS = {
    "obs: a card shown played": (_flip("_obs4", (1, PLAY + 7)), "_obs4"),
    "obs: phase": (_flip("_obs4", (0, OFFSETS["phase"][0])), "_obs4"),
    "side: score feature": (_flip("_side", (2, 1, 0)), "_side"),
    "mask: an extra card": (_flip("_mask", (0, 5)), "_mask|_hands"),
    "hands": (_flip("_hands", (1, 60)), "_hands|_mask"),
    "voids": (_flip("_voids", (2, 3)), "_voids"),
    "broken": (_flip("_broken", (0,)), "_broken"),
    "seat to act": (_flip("_cur", (1,)), "_cur"),
    "leader": (_flip("_leader", (2,)), "_leader"),
    "bids": (_flip("_bids", (0, 2)), "_bids"),
    "tricks": (_flip("_tricks", (0, 1)), "_tricks"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("what", sorted(CORRUPTIONS))
def test_every_derived_tensor_must_follow_from_the_deal_and_the_log(backend, what):
    env = _env_after(HAND_STEPS + 13, backend)       # second hand, third trick under way
    before = env.state_dict()
    sd = copy.deepcopy(before)
    edit, match = CORRUPTIONS[what]
    edit(sd)
    with pytest.raises(ValueError, match=match):
        env.load_state_dict(sd)
    assert _same(env.state_dict(), before)


def test_the_deal_the_action_log_and_the_score_records_are_checked():
    env = _env_after(2 * HAND_STEPS + 9, n=2, seed=4)
    base = env.state_dict()

    def refused(edit, match):
        sd = copy.deepcopy(base)
        edit(sd)
        with pytest.raises(ValueError, match=match):
            env.load_state_dict(sd)
        assert _same(env.state_dict(), base)

    def give_away(sd):                                # seat of card 0 changes: 14 and 12 cards
        sd["_owner"][0, 0] = (sd["_owner"][0, 0] + 1) % 4
    refused(give_away, "13 each")

    def illegal_lead(sd):                             # the first lead replaced by a bid id
        sd["_actions"][1, 4] = 60
    refused(illegal_lead, "not legal at hand step 4")

    def record(field, delta):
        def edit(sd):
            sd["_hist"][0, 1, field] += delta
        return edit
    refused(record(0, 1), "score record 1")           # dealer does not rotate
    refused(record(5, 1), "score record 1")           # tricks no longer make 13
    refused(record(9 + 6, 10), "score record 1")      # hand points are not the scoring

    def totals(sd):
        sd["_scores"][1, 0] += 10
    refused(totals, "totals or bags")

    def dealer(sd):
        sd["_dealer"][0] = (sd["_dealer"][0] + 1) % 4
    refused(dealer, "dealer|_obs4")


def test_a_game_past_its_hand_cap_is_refused():
    env = _env_after(HAND_STEPS + 3, n=2, max_hands=3)
    sd = env.state_dict()
    sd["_hand_count"][0] = 3
    with pytest.raises(ValueError, match="max_hands"):
        env.load_state_dict(sd)


@pytest.mark.parametrize("steps", [0, 3, 4, 5, 17, HAND_STEPS - 1, HAND_STEPS, 3 * HAND_STEPS + 30])
def test_states_the_rules_reach_load_on_either_backend_and_play_on_identically(steps):
    src = _env_after(steps, "native", n=4, seed=9, rules=Rules(target_score=150))
    sd = src.state_dict()
    gen = torch.Generator().manual_seed(1)
    outs = []
    for backend in BACKENDS:
        dst = SpadesVectorEnv(4, seed=0, backend=backend, rules=Rules(target_score=150))
        dst.load_state_dict(copy.deepcopy(sd))
        g = torch.Generator().manual_seed(1)
        stream = []
        for _ in range(HAND_STEPS + 5):
            a = dst.sample_actions(g)
            obs, mask, seat, rew, done, _ = dst.step(a)
            stream.append((obs, mask, seat, rew))
        outs.append(stream)
    del gen
    for x, y in zip(*outs):
        assert all(torch.equal(p, q) for p, q in zip(x, y))


def test_an_env_before_its_first_reset_saves_and_loads():
    env = SpadesVectorEnv(2, backend="torch")
    env.load_state_dict(SpadesVectorEnv(2, backend="torch").state_dict())
    with pytest.raises(RuntimeError):
        env.step([52, 52])


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


# ------------------------------------------------------------------ batch size and memory
def test_the_package_keeps_the_modules_import_paths():
    """What ``spades_env.vector`` offered as one module still imports from the package: the very
    objects of the modules that hold them now."""
    import spades_env.vector as vec
    from spades_env.vector import layout, results
    assert vec.FinalResults is results.FinalResults
    for name in ("HAND_STEPS", "ROW", "MAX_HANDS_LIMIT", "bytes_per_game", "available_memory"):
        assert getattr(vec, name) is getattr(layout, name), name
    assert (vec.OBS_SIZE, vec.HAND_STEPS, vec.ROW) == (711, 56, 712)  # 711 padded to 8 bytes
    assert vec.__all__ == ["SpadesVectorEnv", "FinalResults", "HAND_STEPS", "OBS_SIZE",
                           "COMPACT_SIZE", "OBS_FORMATS"]


def test_bytes_per_game_is_what_each_extra_game_allocates():
    from spades_env.observation import OBS_SIZE
    outputs = 4 * OBS_SIZE + 68 + 8 + 16 + 3        # one step's obs, mask, seat, rewards, flags
    for backend in BACKENDS:
        m = [SpadesVectorEnv(n, backend=backend).memory_bytes() for n in (50, 150)]
        assert (m[1] - m[0]) // 100 == bytes_per_game(True) - outputs
    # compact outputs: 120 bytes per observation instead of 4 * 711, in the reused buffer too
    compact_outputs = 120 + 68 + 8 + 16 + 3
    assert bytes_per_game(True, obs_format="compact") == bytes_per_game(True) - outputs \
        + compact_outputs
    for backend in BACKENDS:
        m = [SpadesVectorEnv(n, backend=backend, obs_format="compact").memory_bytes()
             for n in (50, 150)]
        assert (m[1] - m[0]) // 100 == bytes_per_game(True, obs_format="compact") \
            - compact_outputs


def test_a_batch_that_does_not_fit_is_refused_before_allocating(monkeypatch):
    import spades_env.vector as vec
    per = bytes_per_game(True)
    monkeypatch.setattr(vec, "available_memory", lambda device: (100 * per, "a test budget"))
    with pytest.raises(ValueError, match=r"num_envs=101 needs .* \(%d bytes per game\).*a test "
                       r"budget.*at most about 100 games" % per):
        SpadesVectorEnv(101, backend="torch")
    assert SpadesVectorEnv(100, backend="torch").num_envs == 100


def test_a_billion_games_is_a_value_error_naming_num_envs():
    with pytest.raises(ValueError, match=r"num_envs=1000000000 needs about \d+\.\d\d GiB"):
        SpadesVectorEnv(10 ** 9)
    with pytest.raises(ValueError, match="num_envs"):
        SpadesVectorEnv(10 ** 30)


@pytest.mark.slow
def test_the_address_space_limit_counts(tmp_path):
    """Under ``ulimit -v`` the refusal names the limit instead of torch running out."""
    import subprocess
    import sys
    child = ("import resource\n"
             "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
             "from spades_env.vector import SpadesVectorEnv\n"
             "try:\n    SpadesVectorEnv(2_000_000)\nexcept ValueError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                       timeout=300)
    assert "num_envs=2000000 needs" in r.stdout, r.stdout + r.stderr[-2000:]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_state_saved_before_a_rule_switch_existed_loads_with_it_off(backend):
    """A state of 0.6.0 has no ``failed_nil_tricks_count`` in its rules: it is the default (off),
    so it loads into an env with the standard rules and is refused by one with the switch on."""
    env = SpadesVectorEnv(8, seed=2, backend=backend)
    gen = torch.Generator().manual_seed(0)
    env.reset()
    for _ in range(70):
        env.step(env.sample_actions(gen))
    d = env.state_dict()
    del d["rules"]["failed_nil_tricks_count"]
    fresh = SpadesVectorEnv(8, seed=9, backend=backend)
    fresh.load_state_dict(copy.deepcopy(d))
    assert fresh.get_game(3).to_dict() == env.get_game(3).to_dict()
    on = SpadesVectorEnv(8, backend=backend, rules=Rules(failed_nil_tricks_count=True))
    with pytest.raises(ValueError, match="other rules"):
        on.load_state_dict(copy.deepcopy(d))
    d["rules"]["failed_nil_tricks_count"] = "no"
    with pytest.raises(ValueError, match="other rules"):
        fresh.load_state_dict(d)
