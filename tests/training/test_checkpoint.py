"""Checkpoint files: atomic writes, weights_only loads, clean errors on bad files, CheckpointBot;
the model shape, weights and tensors checked before anything is built or copied, integrity
(CRC), foreign and special files, failed writes, stale temp files and file modes, and commands
that would write over their own input."""

import math
import os
import resource
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
import torch

from spades_env import SpadesGame
from spades_env.bots import make_bot
from spades_env.training.checkpoint import build_agent, load_checkpoint, save_checkpoint
from spades_env.agents.model import Agent
from spades_env.bots.checkpoint_bot import CheckpointBot
import spades_env.fileio as fio
from spades_env.training import config as cfg
from spades_env.training.ppo_selfplay import train
from tests.helpers import ROOT, _main, _one_line_error
from tests.training._runs import QUIET, SHIPPED, _tiny


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


def test_torch_threads_restores_the_count_even_after_an_error():
    """``torch_threads``, the block the checkpoint and expert bots score under: the count inside,
    the old one after (also when the block raises); ``None`` leaves it alone."""
    from spades_env.agents.model import torch_threads
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with torch_threads(1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError, match="inside"):
            with torch_threads(1):
                raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
        with torch_threads(None):
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(old)


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
    assert st["trunk.0.weight"] == ((4096, 711), torch.float32)
    with torch.device("meta"):
        ref = Agent(hidden=[8], head_hidden=4)
    assert ref.trunk[0].weight.is_meta


def _shipped():
    d = load_checkpoint(SHIPPED)
    return {k: v for k, v in d.items() if k not in ("format", "version")}


def test_shipped_checkpoint_still_loads_and_plays():
    bot = make_bot(f"checkpoint:{SHIPPED}")
    g = SpadesGame(seed=0)
    a = bot.act(g.view(g.current_player))
    assert a in g.view(g.current_player).legal_actions


@pytest.mark.parametrize("shape,match", [
    ({"hidden": [-1], "head_hidden": 8}, "hidden"),
    ({"head_hidden": 8}, "hidden"),
    ({"hidden": 5, "head_hidden": 8}, "hidden"),
    ({"hidden": "abc", "head_hidden": 8}, "hidden"),
    ({"hidden": [64], "head_hidden": 0}, "head_hidden"),
    ({"hidden": [12000, 12000], "head_hidden": 8}, "parameters"),
    ({"hidden": [64], "head_hidden": 8, "evil": 1}, "evil"),
    ([64, 8], "model_shape"),
])
def test_checkpoint_model_shape_is_checked_before_anything_is_built(tmp_path, shape, match):
    p = str(tmp_path / "a.pt")
    save_checkpoint(p, {**_shipped(), "model_shape": shape})
    with pytest.raises(ValueError, match=match) as e:
        make_bot("checkpoint:" + p)
    assert "a.pt" in str(e.value)


def test_huge_model_shape_without_weights_is_refused_at_once(tmp_path):
    """A 12 KB file asking for 8000x8000 layers used to initialise them (seconds; minutes for
    20000) before finding no weights; the shapes are now compared on the meta device."""
    p = str(tmp_path / "huge.pt")
    save_checkpoint(p, {**_shipped(), "model": {}, "model_shape": {"hidden": [8000, 8000],
                                                                   "head_hidden": 8}})
    t = time.time()
    with pytest.raises(ValueError, match="do not match"):
        make_bot("checkpoint:" + p)
    assert time.time() - t < 2.0


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_weights_are_refused(tmp_path, bad):
    d = _shipped()
    d["model"] = dict(d["model"])
    k = sorted(d["model"])[1]
    w = d["model"][k].clone()
    w.view(-1)[3] = bad
    d["model"][k] = w
    p = str(tmp_path / "nan.pt")
    save_checkpoint(p, d)
    with pytest.raises(ValueError, match="NaN or infinite"):
        make_bot("checkpoint:" + p)


def test_weights_of_another_dtype_are_refused(tmp_path):
    d = _shipped()
    d["model"] = {k: v.double() for k, v in d["model"].items()}
    p = str(tmp_path / "f64.pt")
    save_checkpoint(p, d)
    with pytest.raises(ValueError, match="f64.pt.*float64"):
        load_checkpoint(p)


def test_a_checkpoint_config_that_is_not_a_mapping_fails_cleanly(tmp_path, capsys):
    p = str(tmp_path / "cfg.pt")
    save_checkpoint(p, {**_shipped(), "config": "garbage"})
    with pytest.raises(ValueError, match="config"):
        load_checkpoint(p)
    r = _main("spades_env.training.evaluate", p, "--vs", "random", "--games", "2", capsys=capsys)
    assert "cfg.pt" in _one_line_error(r)


def test_expanded_tensors_are_refused_before_anything_copies_them(tmp_path):
    d = _shipped()
    d["eval"] = [{"rows": [], "x": torch.zeros(1, dtype=torch.int64).expand(200_000_000, 4)}]
    p = str(tmp_path / "bomb.pt")
    save_checkpoint(p, d)
    assert os.path.getsize(p) < 10 * 2**20
    with pytest.raises(ValueError, match="bomb.pt.*storage"):
        load_checkpoint(p)


def test_checkpoint_sharing_one_list_2_ways_40_deep_is_refused_at_once(tmp_path, tiny):
    """A 3 KB pickle whose memo shares one list two ways at each of 40 levels is 2**40 paths:
    check_tensors stops at MAX_NODES values walked and names the file."""
    from spades_env.agents.checkpoint import load_checkpoint
    data = torch.load(tiny, weights_only=True)
    x = []
    for _ in range(40):
        x = [x, x]
    data["eval"] = x
    p = tmp_path / "bomb.pt"
    torch.save(data, str(p))
    t = time.time()
    with pytest.raises(ValueError, match=r"bomb\.pt: corrupt checkpoint: more than 200000 values"):
        load_checkpoint(str(p))
    assert time.time() - t < 5


@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_a_flipped_bit_in_the_weights_is_detected(tmp_path, where):
    with zipfile.ZipFile(SHIPPED) as z:
        recs = sorted((i for i in z.infolist() if i.file_size > 64), key=lambda i: i.file_size)
    raw = bytearray(open(SHIPPED, "rb").read())
    for k, rec in enumerate((recs[-1], recs[len(recs) // 2])):
        off = (rec.header_offset + 30 + len(rec.filename.encode()) + len(rec.extra)
               + int(rec.file_size * where))
        bad = bytearray(raw)
        bad[off] ^= 1 << (k + 3)
        p = tmp_path / f"flip{k}.pt"
        p.write_bytes(bytes(bad))
        with pytest.raises(ValueError, match=f"flip{k}.pt: corrupt checkpoint.*CRC"):
            load_checkpoint(str(p))
        with pytest.raises(ValueError, match="CRC"):
            make_bot(f"checkpoint:{p}")


FOREIGN = {
    "text.pt": b"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/bin/false\n",
    "short.pt": b"JmyfxM7",
    "nul.pt": b"\0" * 4096,
    "pickle.pt": b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01.",
    "json.pt": b'{"format": "spades_env.ppo_checkpoint", "version": 1}',
}


def _zip(path, members, method=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)


def test_foreign_and_corrupt_files_are_value_errors_naming_the_file(tmp_path, capsys):
    paths = []
    for name, data in FOREIGN.items():
        (tmp_path / name).write_bytes(data)
        paths.append(tmp_path / name)
    _zip(tmp_path / "emptyzip.pt", {})
    _zip(tmp_path / "junkzip.pt", {"archive/data.pkl": b"\x80\x02}q\x00.", "archive/x": b"zz"})
    _zip(tmp_path / "deflated.pt", {"archive/data.pkl": b"\0" * 100_000}, zipfile.ZIP_DEFLATED)
    torch.save({"format": "spades_env.ppo_checkpoint", "version": 1, "model": {},
                "model_shape": {}, "config": {}}, tmp_path / "noshape.pt")
    (tmp_path / "dir.pt").mkdir()
    raw = open(SHIPPED, "rb").read()
    (tmp_path / "truncated.pt").write_bytes(raw[: len(raw) // 2])
    paths += [tmp_path / n for n in ("emptyzip.pt", "junkzip.pt", "deflated.pt", "noshape.pt",
                                     "dir.pt", "truncated.pt")]
    for p in paths:
        with pytest.raises(ValueError) as e:
            load_checkpoint(str(p))
        assert p.name in str(e.value), (p.name, e.value)
        if p.name != "dir.pt":
            with pytest.raises(ValueError):
                make_bot(f"checkpoint:{p}")
    r = _main("spades_env.arena", "--team0", f"checkpoint:{tmp_path / 'text.pt'}", "--team1",
              "random", "--games", "2", "--no-progress", capsys=capsys)
    assert "text.pt" in _one_line_error(r)


def test_fifos_and_device_files_fail_at_once_instead_of_hanging(tmp_path):
    """A named pipe given as a config or checkpoint used to block forever in open()."""
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="pipe.yaml: .*not a regular file"):
        cfg.load_yaml(str(fifo))
    for p in (str(fifo), "/dev/zero", str(tmp_path)):
        with pytest.raises(ValueError, match="not a file"):
            load_checkpoint(p)
        with pytest.raises(ValueError):
            train(_tiny(tmp_path), resume=p, **QUIET)


def test_checkpoint_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        save_checkpoint(str(tmp_path / "a.pt"), {"model": {}, "model_shape": {}, "config": {}})
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "a.pt").st_mode & 0o777 == 0o640


@pytest.mark.slow
def test_stale_temp_files_of_killed_saves_are_removed(tmp_path, monkeypatch):
    import spades_env.fileio as fileio
    folder = tmp_path / "ck"
    folder.mkdir()
    child = ("import torch, sys; from spades_env.training.checkpoint import save_checkpoint; "
             "big = torch.randn(30_000_000); print('saving', flush=True); "
             f"save_checkpoint({str(folder / 'latest.pt')!r}, {{'model': {{}}, 'model_shape': {{}}, "
             "'config': {}, 'big': big})")
    p = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "saving"
    time.sleep(0.4)
    p.send_signal(signal.SIGKILL)  # killed in the middle of its save
    p.wait()
    old = time.time() - 3600
    for name in (".tmp_999999999_0a1b2c.pt", ".tmp_kxq81z0w.pt"):  # a dead writer, an old-style
        (folder / name).write_bytes(b"x" * 1000)
        os.utime(folder / name, (old, old))
    live = folder / f".tmp_{os.getpid()}_live.pt"  # a save in progress in a live process
    live.write_bytes(b"x")
    os.utime(live, (old, old))
    monkeypatch.setattr(fileio, "STALE_SECONDS", 0.0)
    save_checkpoint(str(folder / "other.pt"), {"model": {}, "model_shape": {}, "config": {}})
    assert sorted(f for f in os.listdir(folder) if f.startswith(".tmp_")) == [live.name]


def _cli(module, *argv, **kw):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300, **kw)


@pytest.mark.slow
def test_write_failures_are_one_clear_error(tmp_path, capsys):
    # a folder as the export target, a name ending in /, a full disk (a file-size limit here)
    for dst, why in ((str(tmp_path), "is a folder"), (str(tmp_path) + "/x/", "names a folder")):
        r = _main("spades_env.training.export", SHIPPED, dst, capsys=capsys)
        assert why in _one_line_error(r)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    r = _cli("spades_env.training.export", SHIPPED, str(tmp_path / "x.pt"), preexec_fn=limit)
    assert "File too large" in _one_line_error(r)
    assert os.listdir(tmp_path) == []  # no partial file, no temp file
    with pytest.raises(OSError, match="could not write .*Is a directory"):
        save_checkpoint(str(tmp_path), {"model": {}, "model_shape": {}, "config": {}})
    # a checkpoint folder that cannot be created: one line, exit status 2
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = _main("spades_env.training.train", "--config", os.path.join(ROOT, "configs", "smoke.yaml"),
              "--checkpoint_dir", str(blocker / "ck"), "--runs_dir", str(tmp_path / "runs"),
              capsys=capsys)
    assert "file" in _one_line_error(r)


def test_no_command_writes_over_its_own_input(tiny, tmp_path):
    from spades_env.training.export import main as export_main
    before = open(tiny, "rb").read()
    assert export_main([tiny, tiny]) == 2
    os.link(tiny, tmp_path / "hard.pt")       # the same file under another name
    assert export_main([tiny, str(tmp_path / "hard.pt")]) == 2
    os.symlink(tiny, tmp_path / "soft.pt")
    assert export_main([str(tmp_path / "soft.pt"), tiny]) == 2
    assert open(tiny, "rb").read() == before
    with pytest.raises(ValueError, match="is the input"):
        fio.check_not_input(str(tmp_path / "hard.pt"), [tiny])
    assert fio.check_not_input(str(tmp_path / "new.pt"), [tiny]) == str(tmp_path / "new.pt")


def test_export_in_place_message(tiny, capsys):
    from spades_env.training.export import main as export_main
    assert export_main([tiny, tiny]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: destination {tiny}: it is the input {tiny} (the same file)")
