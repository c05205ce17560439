"""Hardening of the training tools against hostile or careless input (found by a break-it review):
run folders (locked, never silently shared), checks before any work, resume overrides, the config
table, checkpoint metadata and integrity, and clean errors for every bad file or failed write.
"""

import copy
import dataclasses
import math
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import zipfile

import pytest
import torch

from spades_env import SpadesGame
from spades_env.bots import make_bot
from spades_env.training import config as cfg
from spades_env.training.checkpoint import load_checkpoint, save_checkpoint
from spades_env.training.ppo_selfplay import train

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED = os.path.join(ROOT, "checkpoints", "shipped", "agent.pt")
QUIET = dict(log=lambda *a: None)


def _tiny(tmp, **over) -> cfg.Args:
    """A run of about one second: 2 games, 4 PPO iterations, no warm start or evaluation."""
    d = dict(name="tiny", num_envs=2, num_steps=56, total_decisions=300, hidden=[16],
             head_hidden=8, bc_teacher="", opponent_share=0.5, pool_bots=["random"],
             pool_every=1, pool_size=2, save_every=1, eval_every=0, final_eval_deals=0,
             eval_opponents=["random"], progress=False, num_minibatches=2, update_epochs=1,
             random_start=0.0, seed=5, runs_dir=str(tmp / "runs"),
             checkpoint_dir=str(tmp / "ck"))
    d.update(over)
    return cfg.from_dict(d)


def _cli(module, *argv, **kw):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300, **kw)


class _Run:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _main(module, *argv, capsys):
    """Run ``module``'s ``main(argv)`` in this process (faster than a subprocess); argparse exits
    become return codes, any other exception propagates (a traceback: the test fails)."""
    import importlib
    main = importlib.import_module(module).main
    capsys.readouterr()
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return _Run(rc, out, err)


def _one_line_error(r):
    """Exit status 2 and an ``error:`` line, no traceback."""
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stderr.strip().splitlines()[-1].startswith("error:"), r.stderr
    return r.stderr.strip().splitlines()[-1]


def _files(root):
    out = set()
    for d, _, names in os.walk(root):
        out |= {os.path.relpath(os.path.join(d, n), root) for n in names}
    return out


# ============================================================================ kind 2: run folders
@pytest.mark.slow
def test_a_second_run_with_the_same_name_takes_a_new_folder(tmp_path):
    a = train(_tiny(tmp_path), **QUIET)
    first = open(a["checkpoint"], "rb").read()
    logs = []
    b = train(_tiny(tmp_path, seed=9), log=logs.append)
    assert open(a["checkpoint"], "rb").read() == first          # run 1 untouched
    assert b["checkpoint"] == str(tmp_path / "ck" / "tiny-2" / "latest.pt")
    assert load_checkpoint(b["checkpoint"])["config"]["name"] == "tiny-2"
    assert any("tiny-2" in m and "earlier run" in m for m in logs)  # said aloud
    assert len(os.listdir(tmp_path / "runs" / "tiny")) == 1       # TensorBoard files not mixed
    assert len([f for f in os.listdir(tmp_path / "runs" / "tiny-2") if "tfevents" in f]) == 1


def test_overwrite_replaces_the_earlier_run(tmp_path):
    train(_tiny(tmp_path), **QUIET)
    b = train(_tiny(tmp_path, seed=9), overwrite=True, **QUIET)
    assert b["checkpoint"] == str(tmp_path / "ck" / "tiny" / "latest.pt")
    assert load_checkpoint(b["checkpoint"])["config"]["seed"] == 9
    assert len([f for f in os.listdir(tmp_path / "runs" / "tiny") if "tfevents" in f]) == 1
    assert not os.path.exists(tmp_path / "ck" / "tiny-2")
    # a run that ended leaves no lock file behind
    assert not os.path.exists(tmp_path / "ck" / "tiny" / ".lock")


def test_a_run_folder_in_use_by_another_process_is_never_written(tmp_path):
    """Two runs with one name at once: the second goes elsewhere (a fresh run) or is refused (a
    resume, or --overwrite); the folder held by the live run is not touched."""
    k = train(_tiny(tmp_path, stop_after_iterations=1), **QUIET)
    ck = tmp_path / "ck" / "tiny"
    before = open(k["checkpoint"], "rb").read()
    holder = subprocess.Popen(  # stands in for a live run: holds the run folder's lock
        [sys.executable, "-c", "import fcntl, os, sys, time; "
         f"fd = os.open({str(ck / '.lock')!r}, os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'pid 4242 test holder'); "
         "print('held', flush=True); time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match="in use"):
            train(_tiny(tmp_path), resume=k["checkpoint"], **QUIET)
        with pytest.raises(ValueError, match="in use"):
            train(_tiny(tmp_path), overwrite=True, **QUIET)
        b = train(_tiny(tmp_path), **QUIET)
        assert b["checkpoint"] == str(tmp_path / "ck" / "tiny-2" / "latest.pt")
        assert open(k["checkpoint"], "rb").read() == before
    finally:
        holder.kill()
        holder.wait()
    # lock released with the process: the run can be resumed in place now
    r = train(_tiny(tmp_path), resume=k["checkpoint"], **QUIET)
    assert r["checkpoint"] == k["checkpoint"] and r["decisions"] >= 300


def test_concurrent_threads_with_one_name_use_different_folders(tmp_path):
    outs, errors = [], []

    def run(seed):
        try:
            outs.append(train(_tiny(tmp_path, seed=seed), **QUIET)["checkpoint"])
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=run, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert set(outs) == {str(tmp_path / "ck" / n / "latest.pt") for n in ("tiny", "tiny-2")}
    assert {load_checkpoint(p)["config"]["seed"] for p in outs} == {1, 2}


def test_bot_names_and_devices_are_checked_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="eval_opponents"):
        _tiny(tmp_path, eval_opponents=["random", "medum"])
    with pytest.raises(ValueError, match="pool_bots"):
        _tiny(tmp_path, pool_bots=["hrad"])
    with pytest.raises(ValueError, match="bc_teacher"):
        _tiny(tmp_path, bc_teacher="meduim")
    missing = str(tmp_path / "nope.pt")
    for field in ("pool_bots", "eval_opponents"):
        args = _tiny(tmp_path, **{field: ["random", f"checkpoint:{missing}"]})
        with pytest.raises(ValueError, match=field):
            train(args, **QUIET)
    with pytest.raises(ValueError, match="bc_teacher"):
        train(_tiny(tmp_path, bc_teacher=f"checkpoint:{missing}", bc_hands=10), **QUIET)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            train(_tiny(tmp_path, device="cuda"), **QUIET)
    assert not os.path.exists(tmp_path / "ck") and not os.path.exists(tmp_path / "runs")


def test_cli_typo_in_a_bot_name_trains_nothing(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: t\nbc_teacher: ''\neval_opponents: [medum]\nruns_dir: {tmp_path}/r\n"
                    f"checkpoint_dir: {tmp_path}/c\n")
    r = _main("spades_env.training.train", "--config", str(path), capsys=capsys)
    assert "medum" in _one_line_error(r)
    assert not os.path.exists(tmp_path / "c") and not os.path.exists(tmp_path / "r")
    r = _main("spades_env.training.evaluate", SHIPPED, "--vs", "random", "medum", "--games", "2", "--quiet",
              capsys=capsys)
    assert "medum" in _one_line_error(r) and r.stdout == ""  # no match played first


def test_the_final_checkpoint_is_written_before_the_final_evaluation(tmp_path, monkeypatch):
    import spades_env.training.ppo_selfplay as ppo

    def broken_eval(*a, **k):
        raise RuntimeError("evaluation failed")
    monkeypatch.setattr(ppo, "run_eval", broken_eval)
    args = _tiny(tmp_path, save_every=1000, final_eval_deals=4)
    with pytest.raises(RuntimeError, match="evaluation failed"):
        train(args, **QUIET)
    d = load_checkpoint(str(tmp_path / "ck" / "tiny" / "latest.pt"))
    assert d["progress"]["decisions"] >= 300 and d["progress"]["iteration"] == 4
    assert d["progress"]["stop_reason"] == "total_decisions"


def test_resume_applies_safe_overrides_and_refuses_the_others_by_name(tmp_path):
    a = train(_tiny(tmp_path), **QUIET)
    assert a["iterations"] == 4
    logs = []
    longer = dataclasses.replace(_tiny(tmp_path), total_decisions=600)
    b = train(longer, resume=a["checkpoint"], log=logs.append)
    assert b["decisions"] >= 600 and b["iterations"] > 4
    assert load_checkpoint(b["checkpoint"])["config"]["total_decisions"] == 600
    assert any("override total_decisions 300 -> 600" in m for m in logs)
    for field, value in (("hidden", [32]), ("lr", 1e-5), ("num_envs", 3), ("seed", 6)):
        wrong = dataclasses.replace(_tiny(tmp_path), **{field: value})
        with pytest.raises(ValueError, match=f"cannot change {field}"):
            train(wrong, resume=b["checkpoint"], **QUIET)


def test_resume_cli_overrides(tmp_path, capsys):
    a = train(_tiny(tmp_path), **QUIET)
    r = _main("spades_env.training.train", "--resume", a["checkpoint"], "--total_decisions", "500",
              capsys=capsys)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "override total_decisions 300 -> 500" in r.stdout
    assert load_checkpoint(a["checkpoint"])["progress"]["decisions"] >= 500
    r = _main("spades_env.training.train", "--resume", a["checkpoint"], "--hidden", "[64]", capsys=capsys)
    assert "cannot change hidden" in _one_line_error(r)


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


# ============================================================================ kind 3: config table
def test_every_args_field_has_a_row_in_the_table():
    """A new ``Args`` field must get its type, range and resume policy in FIELD_CHECKS."""
    assert set(cfg.FIELD_CHECKS) == {f.name for f in dataclasses.fields(cfg.Args)}
    for name, row in cfg.FIELD_CHECKS.items():
        assert row.kind in ("int", "float", "bool", "str", "list[int]", "list[str]"), name
        assert row.resume in ("fixed", "free", "process"), name
        cfg.check_field(name, getattr(cfg.Args(), name))  # every default passes its own row
    table = cfg.field_table()
    assert all(f"| {n} |" in table for n in cfg.FIELD_CHECKS)
    assert "| max_grad_norm | float | a finite number in (0, 1000000000] |" in table


HOSTILE = [
    ("max_grad_norm", -1.0), ("max_grad_norm", 0.0), ("max_grad_norm", math.inf),
    ("lr", math.inf), ("lr", math.nan), ("lr", 0.0), ("lr", -1e-4), ("bc_lr", math.inf),
    ("clip_coef", -1.0), ("clip_coef", 0.0), ("vf_coef", math.nan), ("ent_coef", math.nan),
    ("ent_coef", -0.5), ("bc_value_coef", math.inf), ("ppo_teacher_coef", -1.0),
    ("gamma", 1.5), ("gae_lambda", -0.1), ("target_kl", math.nan), ("reward_scale", 0.0),
    ("random_start", math.nan), ("opponent_share", 2.0), ("max_minutes", -5.0),
    ("head_hidden", 0), ("head_hidden", -1), ("head_hidden", 10**9), ("head_hidden", True),
    ("hidden", [True]), ("hidden", [0]), ("hidden", [-3]), ("hidden", [1.5]), ("hidden", "abc"),
    ("hidden", 5), ("hidden", [64] * 17), ("hidden", [100_000]), ("hidden", [8000, 8000, 8000]),
    ("bc_batch", 0), ("num_minibatches", 0), ("update_epochs", 0), ("num_envs", 0),
    ("num_envs", 10**9), ("num_steps", -1), ("total_decisions", 0), ("seed", -1),
    ("seed", 2**64), ("save_every", 0), ("pool_every", 0), ("pool_size", -1),
    ("device", "bogus"), ("device", "cuda:x"), ("device", "mps"), ("device", 3),
    ("name", "../outside"), ("name", "a/b"), ("name", ""), ("name", ".hidden"), ("name", "x" * 200),
    ("runs_dir", ""), ("checkpoint_dir", "a\0b"),
    ("pool_bots", ["medum"]), ("pool_bots", "random"), ("pool_bots", [3]),
    ("eval_opponents", ["checkpoint:"]), ("eval_opponents", ["random"] * 33),
    ("bc_teacher", "hrad"), ("vector_env", "gpu"), ("rules", "chess"), ("anneal_lr", 1),
    ("progress", "yes"),
]


@pytest.mark.parametrize("field,value", HOSTILE, ids=[f"{f}={v!r}"[:40] for f, v in HOSTILE])
def test_hostile_config_values_are_refused_everywhere(tmp_path, field, value):
    with pytest.raises(ValueError, match=field):
        cfg.from_dict({field: value})
    # a config stored in a checkpoint goes through the same rows
    with pytest.raises(ValueError, match=field):
        cfg.resume_args({**cfg.to_dict(cfg.Args()), field: value}, cfg.Args(), "x.pt")
    with pytest.raises(ValueError, match=field):
        cfg.validate(dataclasses.replace(cfg.Args(), **{field: value}))


def test_hostile_values_from_yaml_and_the_command_line(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    for text, field in (("max_grad_norm: -1", "max_grad_norm"), ("lr: .inf", "lr"),
                        ("vf_coef: .nan", "vf_coef"), ("hidden: [64, 0]", "hidden"),
                        ("name: ../../etc", "name")):
        path.write_text(text + "\n")
        with pytest.raises(ValueError, match=field) as e:
            cfg.load_yaml(str(path))
        assert "c.yaml" in str(e.value)
    r = _main("spades_env.training.train", "--max_grad_norm", "-1", capsys=capsys)
    assert "max_grad_norm" in _one_line_error(r)
    r = _main("spades_env.training.train", "--set", "hidden=[64, true]", capsys=capsys)
    assert "hidden" in _one_line_error(r)


def _shipped():
    d = load_checkpoint(SHIPPED)
    return {k: v for k, v in d.items() if k not in ("format", "version")}


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


@pytest.fixture(scope="module")
def resumable(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resumable")
    k = train(_tiny(tmp, stop_after_iterations=2, pool_every=1), **QUIET)
    base = load_checkpoint(k["checkpoint"])
    return tmp, {k: v for k, v in base.items() if k not in ("format", "version")}


def _set(path, value):
    def f(d):
        obj = d
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value(obj[path[-1]]) if callable(value) else value
    return f


CORRUPT_STATES = {
    "pool_ctrl_unknown_player": ("pool", _set(["pool", "ctrl"], lambda t: torch.full_like(t, 7))),
    "pool_ctrl_bot_out_of_range": ("pool", _set(["pool", "ctrl"],
                                                lambda t: torch.full_like(t, -5))),
    "pool_ctrl_shape": ("pool", _set(["pool", "ctrl"], lambda t: torch.zeros(3, 4, dtype=t.dtype))),
    "pool_unknown_snapshot": ("pool", _set(["pool", "pool"], [1, 99])),
    "pool_next_id": ("pool", _set(["pool", "next_id"], 0)),
    "pool_agent_nan": ("pool", lambda d: [v.__setitem__(k, torch.full_like(t, math.nan))
                                          for v in d["pool"]["agents"].values()
                                          for k, t in list(v.items())[:1]]),
    "env_start_bags": ("env", _set(["env", "start_bags"], [[0]] * 2)),
    "env_games_garbage": ("env", _set(["env", "games"], ["{not json", "[]"])),
    "env_game_count": ("env", _set(["env", "games"], lambda g: g[:1])),
    "env_rng": ("env", _set(["env", "rng"], {"bit_generator": "MT19937"})),
    "progress_type": ("progress", _set(["progress", "iteration"], "x")),
    "progress_stage": ("progress", _set(["progress", "stage"], None)),
    "optimizer_shape": ("optimizer", lambda d: d["optimizer"]["state"][0].__setitem__(
        "exp_avg", torch.zeros(3))),
    "optimizer_params": ("optimizer", _set(["optimizer", "param_groups"],
                                           lambda g: [{**g[0], "params": [0, 1]}])),
    "optimizer_groups": ("optimizer", _set(["optimizer", "param_groups"], lambda g: [
        {**g[0], "params": g[0]["params"][:2]}, {**g[0], "params": g[0]["params"][2:]}])),
    "eval_rows": ("eval", _set(["eval"], [{"rows": [{"opponent": 3}]}])),
    "config_name_escapes": ("name", _set(["config", "name"], "../outside")),
    "config_lr_inf": ("lr", _set(["config", "lr"], math.inf)),
    "config_unknown_field": ("bogus", _set(["config", "bogus"], 1)),
}


@pytest.mark.parametrize("case", sorted(CORRUPT_STATES))
def test_every_resume_section_is_checked_before_anything_is_written(resumable, tmp_path, case):
    base_tmp, base = resumable
    section, edit = CORRUPT_STATES[case]
    d = copy.deepcopy(base)
    d["config"] = {**d["config"], "runs_dir": str(tmp_path / "runs"),
                   "checkpoint_dir": str(tmp_path / "ck")}
    edit(d)
    p = str(tmp_path / "crafted.pt")
    save_checkpoint(p, d)
    args = cfg.from_dict({k: v for k, v in base["config"].items()
                          if k not in ("name", "lr", "runs_dir", "checkpoint_dir")},
                         _tiny(tmp_path))
    before = _files(tmp_path)
    with pytest.raises(ValueError, match=section) as e:
        if case.startswith("config_"):
            cfg.resume_base(d["config"], p)  # what the command line does first
        train(args, resume=p, **QUIET)
    assert "crafted.pt" in str(e.value)
    assert _files(tmp_path) == before  # nothing written, nowhere
    assert not os.path.exists(tmp_path.parent / "outside")


# ============================================================================ kind 4: integrity
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


# ============================================================================ kind 5: bad files
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


def test_bad_config_files_are_value_errors_naming_the_file(tmp_path, capsys):
    cases = {"missing.yaml": None, "dir.yaml": "dir", "binary.yaml": b"\xff\xfe\x00garbage",
             "deep.yaml": ("[" * 5000 + "]" * 5000).encode(), "list.yaml": b"- 1\n- 2\n",
             "intkey.yaml": b"1: 2\n", "big.yaml": b"# x\n" * 300_000,
             "tabs.yaml": b"name: [unclosed\n"}
    for name, data in cases.items():
        p = tmp_path / name
        if data == "dir":
            p.mkdir()
        elif data is not None:
            p.write_bytes(data)
        with pytest.raises(ValueError) as e:
            cfg.load_yaml(str(p))
        assert name in str(e.value), (name, e.value)
    r = _main("spades_env.training.train", "--config", str(tmp_path / "missing.yaml"), capsys=capsys)
    assert "missing.yaml" in _one_line_error(r)
    r = _main("spades_env.training.train", "--lr", "[1,", capsys=capsys)
    _one_line_error(r)


def test_arena_json_target_is_checked_before_the_match(tmp_path, capsys):
    for target, why in ((str(tmp_path), "is a folder"), (str(tmp_path) + "/", "names a folder"),
                        ("/proc/spades_arena.json", "cannot write"),
                        (str(tmp_path / "no" / "x.json"), "no such folder")):
        t = time.time()
        r = _main("spades_env.arena", "--team0", "random", "--team1", "random", "--games",
                  "200", "--no-progress", "--json", target, capsys=capsys)
        assert why in _one_line_error(r) and r.stdout == ""  # refused before playing
        assert time.time() - t < 5


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_arena_json_file_mode_follows_the_umask(tmp_path, capsys, umask, mode):
    out = tmp_path / "r.json"
    old = os.umask(umask)
    try:
        r = _main("spades_env.arena", "--team0", "random", "--team1", "random", "--games", "2",
                  "--no-progress", "--json", str(out), capsys=capsys)
    finally:
        os.umask(old)
    assert r.returncode == 0, r.stderr
    assert os.stat(out).st_mode & 0o777 == mode
    assert os.listdir(tmp_path) == ["r.json"]


def test_checkpoint_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        save_checkpoint(str(tmp_path / "a.pt"), {"model": {}, "model_shape": {}, "config": {}})
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "a.pt").st_mode & 0o777 == 0o640


def test_shipped_checkpoint_still_loads_and_plays():
    bot = make_bot(f"checkpoint:{SHIPPED}")
    g = SpadesGame(seed=0)
    a = bot.act(g.view(g.current_player))
    assert a in g.view(g.current_player).legal_actions


# ============================================================================ a second break-it pass
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


def test_weights_of_another_dtype_are_refused(tmp_path):
    d = _shipped()
    d["model"] = {k: v.double() for k, v in d["model"].items()}
    p = str(tmp_path / "f64.pt")
    save_checkpoint(p, d)
    with pytest.raises(ValueError, match="f64.pt.*float64"):
        load_checkpoint(p)


def test_a_tensorboard_folder_that_cannot_be_written_is_one_error_before_any_work(tmp_path,
                                                                                   capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = tmp_path / "c.yaml"
    path.write_text(f"name: t\nbc_teacher: ''\nruns_dir: {blocker / 'runs'}\n"
                    f"checkpoint_dir: {tmp_path / 'ck'}\n")
    r = _main("spades_env.training.train", "--config", str(path), capsys=capsys)
    assert "runs" in _one_line_error(r)
    assert not os.path.exists(tmp_path / "ck" / "t" / "latest.pt")


def test_resuming_a_copy_never_overwrites_the_runs_own_checkpoint(tmp_path):
    """A copy of an older latest.pt resumed with the run's name must not replace the run's newer
    latest.pt: the resumed run goes to NAME-2 (or --overwrite)."""
    k = train(_tiny(tmp_path, stop_after_iterations=1), **QUIET)
    copy_path = str(tmp_path / "backup.pt")
    with open(k["checkpoint"], "rb") as f, open(copy_path, "wb") as g:
        g.write(f.read())
    a = train(_tiny(tmp_path), resume=k["checkpoint"], **QUIET)  # the run goes on in place
    newest = open(a["checkpoint"], "rb").read()
    b = train(_tiny(tmp_path), resume=copy_path, **QUIET)
    assert b["checkpoint"] == str(tmp_path / "ck" / "tiny-2" / "latest.pt")
    assert open(a["checkpoint"], "rb").read() == newest
