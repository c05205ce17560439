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
    env = _env_after(6, backend)                     # d17: a bid marked legal in the play
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


# ------------------------------------------------------------------ batch size and memory
def test_the_package_keeps_the_modules_import_paths():
    """What ``spades_env.vector`` offered as one module still imports from the package: the very
    objects of the modules that hold them now."""
    import spades_env.vector as vec
    from spades_env.vector import layout, results
    assert vec.FinalResults is results.FinalResults
    for name in ("HAND_STEPS", "ROW", "MAX_HANDS_LIMIT", "bytes_per_game", "available_memory"):
        assert getattr(vec, name) is getattr(layout, name), name
    assert (vec.OBS_SIZE, vec.HAND_STEPS, vec.ROW) == (679, 56, 680)  # 679 padded to 8 bytes
    assert vec.__all__ == ["SpadesVectorEnv", "FinalResults", "HAND_STEPS", "OBS_SIZE"]


def test_bytes_per_game_is_what_each_extra_game_allocates():
    from spades_env.observation import OBS_SIZE
    outputs = 4 * OBS_SIZE + 68 + 8 + 16 + 3        # one step's obs, mask, seat, rewards, flags
    for backend in BACKENDS:
        m = [SpadesVectorEnv(n, backend=backend).memory_bytes() for n in (50, 150)]
        assert (m[1] - m[0]) // 100 == bytes_per_game(True) - outputs


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
    """d19: under ``ulimit -v`` the refusal names the limit instead of torch running out."""
    import subprocess
    import sys
    child = ("import resource\n"
             "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
             "from spades_env.vector import SpadesVectorEnv\n"
             "try:\n    SpadesVectorEnv(2_000_000)\nexcept ValueError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                       timeout=300)
    assert "num_envs=2000000 needs" in r.stdout, r.stdout + r.stderr[-2000:]
