"""Resuming a training run: the fields that may change are overridden (and said aloud), the others
are refused by name, from ``train`` and from the command line; every section of the checkpoint
resumed from is checked before anything is written."""

import copy
import dataclasses
import math
import os

import pytest
import torch

from spades_env.training import config as cfg
from spades_env.training.checkpoint import load_checkpoint, save_checkpoint
from spades_env.training.ppo_selfplay import train
from tests.helpers import _main, _one_line_error
from tests.training._runs import QUIET, _tiny


def _files(root):
    out = set()
    for d, _, names in os.walk(root):
        out |= {os.path.relpath(os.path.join(d, n), root) for n in names}
    return out


@pytest.mark.slow  # three training runs
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


@pytest.mark.slow  # two training runs
def test_resume_cli_overrides(tmp_path, capsys):
    a = train(_tiny(tmp_path), **QUIET)
    r = _main("spades_env.training.train", "--resume", a["checkpoint"], "--total_decisions", "500",
              capsys=capsys)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "override total_decisions 300 -> 500" in r.stdout
    assert load_checkpoint(a["checkpoint"])["progress"]["decisions"] >= 500
    r = _main("spades_env.training.train", "--resume", a["checkpoint"], "--hidden", "[64]", capsys=capsys)
    assert "cannot change hidden" in _one_line_error(r)


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
