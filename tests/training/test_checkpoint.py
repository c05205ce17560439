"""Checkpoint files: atomic writes, weights_only loads, clean errors on bad files, CheckpointBot."""

import os

import numpy as np
import pytest
import torch

from spades_env import SpadesGame
from spades_env.bots import make_bot
from spades_env.training.checkpoint import build_agent, load_checkpoint, save_checkpoint
from spades_env.agents.model import Agent
from spades_env.bots.checkpoint_bot import CheckpointBot


def _payload(agent):
    return {"config": {"name": "t"}, "model": agent.state_dict(),
            "model_shape": {"hidden": agent.hidden, "head_hidden": agent.head_hidden},
            "progress": {"iteration": 0}, "eval": []}


@pytest.fixture()
def ckpt(tmp_path):
    torch.manual_seed(0)
    agent = Agent(hidden=[32], head_hidden=16)
    path = tmp_path / "a.pt"
    save_checkpoint(str(path), _payload(agent))
    return str(path), agent


def test_roundtrip_and_atomic_write(ckpt, tmp_path):
    path, agent = ckpt
    assert os.listdir(tmp_path) == ["a.pt"]  # no temp file left behind
    data = load_checkpoint(path)
    b = build_agent(data)
    for k, v in agent.state_dict().items():
        assert torch.equal(v, b.state_dict()[k])


def test_corrupt_files_fail_cleanly(ckpt, tmp_path):
    path, _ = ckpt
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(np.random.default_rng(0).bytes(5000))
    with pytest.raises(ValueError, match="garbage.pt"):
        load_checkpoint(str(garbage))
    truncated = tmp_path / "trunc.pt"
    truncated.write_bytes(open(path, "rb").read()[:300])
    with pytest.raises(ValueError, match="trunc.pt"):
        load_checkpoint(str(truncated))
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError):
        load_checkpoint(str(empty))
    with pytest.raises(FileNotFoundError):
        load_checkpoint(str(tmp_path / "missing.pt"))


def test_foreign_torch_file_is_rejected(tmp_path):
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {"w": torch.zeros(3)}}, foreign)
    with pytest.raises(ValueError, match="not a spades_env PPO checkpoint"):
        load_checkpoint(str(foreign))
    torch.save({"format": "spades_env.ppo_checkpoint", "version": 99}, foreign)
    with pytest.raises(ValueError, match="version 99"):
        load_checkpoint(str(foreign))


def test_pickled_code_is_refused(tmp_path):
    # weights_only=True: a file that would run code on load is refused, not executed.
    evil = tmp_path / "evil.pt"
    torch.save({"format": "spades_env.ppo_checkpoint", "version": 1, "x": Agent}, evil)
    with pytest.raises(ValueError, match="evil.pt"):
        load_checkpoint(str(evil))


def test_wrong_shape_weights_fail_cleanly(ckpt, tmp_path):
    path, agent = ckpt
    data = load_checkpoint(path)
    data["model_shape"] = {"hidden": [64], "head_hidden": 16}
    with pytest.raises(ValueError, match="do not match"):
        build_agent(data)


def test_make_bot_checkpoint_plays_only_legal_actions(ckpt):
    path, _ = ckpt
    bot = make_bot(f"checkpoint:{path}", seed=1)
    assert isinstance(bot, CheckpointBot)
    sampler = CheckpointBot(path, seed=2, greedy=False)
    g = SpadesGame(seed=5)
    n = 0
    while not g.hand_results:
        v = g.view(g.current_player)
        a = (bot if g.current_player % 2 == 0 else sampler).act(v)
        assert a in v.legal_actions
        g.apply(a)
        n += 1
    assert n == 56


def test_make_bot_bad_checkpoint(tmp_path):
    with pytest.raises(ValueError, match="no checkpoint file"):
        make_bot(f"checkpoint:{tmp_path / 'nope.pt'}")
    bad = tmp_path / "bad.pt"
    bad.write_text("not a checkpoint")
    with pytest.raises(ValueError):
        make_bot(f"checkpoint:{bad}")


def test_export_strips_training_state(ckpt, tmp_path):
    from spades_env.training.export import export_checkpoint
    path, agent = ckpt
    data = load_checkpoint(path)
    data["optimizer"] = {"state": {}, "param_groups": []}
    data["rng"] = {"torch": torch.get_rng_state()}
    full = tmp_path / "full.pt"
    save_checkpoint(str(full), {k: v for k, v in data.items() if k not in ("format", "version")})
    out = tmp_path / "shipped" / "agent.pt"
    export_checkpoint(str(full), str(out), note="test")
    small = load_checkpoint(str(out))
    assert "optimizer" not in small and "rng" not in small and small["note"] == "test"
    b = build_agent(small)
    for k, v in agent.state_dict().items():
        assert torch.equal(v, b.state_dict()[k])


def test_resume_refuses_a_stripped_or_bad_checkpoint(ckpt, tmp_path):
    from spades_env.training.config import from_dict
    from spades_env.training.ppo_selfplay import train
    path, _ = ckpt
    args = from_dict({"runs_dir": str(tmp_path / "r"), "checkpoint_dir": str(tmp_path / "c")})
    with pytest.raises(ValueError, match="cannot be resumed"):
        train(args, resume=path)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match="bad.pt"):
        train(args, resume=str(bad))


@pytest.mark.parametrize("name", ["agent.pt", "agent_long.pt"])
def test_shipped_checkpoint_loads_and_plays_well(name):
    # checkpoints/shipped/agent.pt (and agent_long.pt, configs/long.yaml's own output) must stay
    # loadable by the current code and keep playing legal, strong moves (their arena figures are
    # in checkpoints/README.md).
    from spades_env.training.evaluate import NetPlayer, duplicate_match
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "checkpoints", "shipped", name)
    data = load_checkpoint(path)
    assert "optimizer" not in data and data["config"]["bc_teacher"] == "medium"
    assert os.path.getsize(path) < 8 * 2**20
    r = duplicate_match(NetPlayer(build_agent(data)), "random", deals=40, seed=2024)
    assert r["diff_lo"] > 120, r  # measured: +191 [+181, +202] over 100 deals


def test_build_agent_skips_the_initialisation_it_overwrites(ckpt):
    """Regression: build_agent ran the orthogonal initialisation (QR factorisations: 20 ms idle,
    up to 1.8 s on a busy machine, for a [512, 256] network) before loading the weights over it,
    once per bot and game in the arena. Now nothing is initialised and no random number is drawn; the weights are the file's."""
    path, agent = ckpt
    data = load_checkpoint(path)
    before = torch.get_rng_state()
    b = build_agent(data)
    assert torch.equal(torch.get_rng_state(), before)  # no draw from torch's global RNG
    for k, v in agent.state_dict().items():
        assert torch.equal(v, b.state_dict()[k])
    assert not b.training
    x = torch.rand(3, agent.obs_size)
    assert torch.equal(b.policy_logits(x), agent.eval().policy_logits(x))


def test_agent_init_false_allocates_without_drawing():
    torch.manual_seed(3)
    before = torch.get_rng_state()
    net = Agent(hidden=[16], head_hidden=8, init=False)
    assert torch.equal(torch.get_rng_state(), before)
    assert net.trunk[0].weight.shape == (16, net.obs_size)
    Agent(hidden=[16], head_hidden=8)  # the default still initialises, drawing numbers
    assert not torch.equal(torch.get_rng_state(), before)


def test_checkpoint_bot_decides_on_one_thread_and_restores_the_setting(ckpt, monkeypatch):
    """CheckpointBot(threads=1) (the default) runs each decision on one torch thread and puts the
    process's setting back; threads=None leaves torch's setting alone. Same probabilities."""
    path, _agent = ckpt
    seen = []
    real = torch.nn.Linear.forward

    def spy(self, x):
        seen.append(torch.get_num_threads())
        return real(self, x)

    g = SpadesGame(seed=4)
    view = g.view(g.current_player)
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        monkeypatch.setattr(torch.nn.Linear, "forward", spy)
        p1 = CheckpointBot(path).action_probs(view)
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2  # restored
        seen.clear()
        p2 = CheckpointBot(path, threads=None).action_probs(view)
        assert set(seen) == {2}
        np.testing.assert_allclose(p1, p2, rtol=1e-6, atol=1e-9)
    finally:
        torch.set_num_threads(old)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be an int in 1..1024 or None"):
            CheckpointBot(path, threads=bad)


def test_model_shape_may_not_name_init(ckpt, tmp_path):
    """Regression (found by a helper): ``init`` is an Agent argument but not part of a network's
    shape; a file whose model_shape has it was a TypeError, now the usual ValueError naming it."""
    path, _agent = ckpt
    data = torch.load(path, weights_only=True)
    data.pop("format"), data.pop("version")
    data["model_shape"] = {**data["model_shape"], "init": True}
    bad = tmp_path / "init.pt"
    save_checkpoint(str(bad), data)
    with pytest.raises(ValueError, match=r"model_shape has 'init', which the network does not "
                                         r"take \(it takes \['hidden', 'head_hidden', 'obs_size', "
                                         r"'critic_hidden'\]\)"):
        load_checkpoint(str(bad))
    with pytest.raises(ValueError, match="model_shape has 'init'"):
        make_bot(f"checkpoint:{bad}")


def test_expected_state_allocates_nothing(monkeypatch):
    """Regression (found by a helper): expected_state built real, uninitialised CPU tensors
    (skip_init's to_empty) instead of meta ones, so a huge claimed shape was allocated."""
    from spades_env.agents.checkpoint import expected_state

    def no_alloc(self, *a, **k):
        raise AssertionError("expected_state allocated real tensors (to_empty)")
    monkeypatch.setattr(torch.nn.Module, "to_empty", no_alloc)
    st = expected_state({"hidden": [4096, 4096], "head_hidden": 16})
    assert st["trunk.0.weight"] == ((4096, 679), torch.float32)
    with torch.device("meta"):
        ref = Agent(hidden=[8], head_hidden=4)
    assert ref.trunk[0].weight.is_meta
