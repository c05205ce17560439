"""Training config: YAML mirrors the dataclass, unknown keys are rejected, the CLI overrides; every
field has its row of checks, and hostile values and bad config files are refused from every
source (YAML aliases, a field set twice and base-60 numbers included)."""

import argparse
import ast
import dataclasses
import glob
import inspect
import math
import os
import time

import pytest
import yaml

from spades_env.training import config as cfg
from spades_env.training.config import Args
from tests.helpers import _main, _one_line_error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cli(argv):
    p = argparse.ArgumentParser()
    cfg.add_cli(p)
    return cfg.args_from_cli(p.parse_args(argv))


def test_unknown_key_in_yaml_is_rejected(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nlearning_rate: 0.1\n")
    with pytest.raises(ValueError, match="learning_rate") as e:
        cfg.load_yaml(str(path))
    assert "bad.yaml" in str(e.value) and "known keys" in str(e.value)


def test_unknown_key_in_dict_and_wrong_types_are_rejected():
    with pytest.raises(ValueError, match="nmu_envs"):
        cfg.from_dict({"nmu_envs": 4})
    with pytest.raises(ValueError, match="num_envs"):
        cfg.from_dict({"num_envs": "many"})
    with pytest.raises(ValueError, match="anneal_lr"):
        cfg.from_dict({"anneal_lr": 1})
    with pytest.raises(ValueError, match="opponent_share"):
        cfg.from_dict({"opponent_share": 1.5})
    with pytest.raises(ValueError, match="preset"):
        cfg.from_dict({"rules": "chess"})
    with pytest.raises(ValueError, match="mapping"):
        cfg.from_dict([1, 2])


def test_cli_overrides_every_way(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: fromfile\nnum_envs: 3\nlr: 0.5\n")
    a = _cli(["--config", str(path), "--lr", "1e-4", "--set", "num_envs=8",
              "--set", "eval_opponents=[random, easy]", "--anneal_lr", "false"])
    assert a.name == "fromfile"          # from the file
    assert a.lr == pytest.approx(1e-4)   # --lr beats the file
    assert isinstance(a.lr, float)
    assert a.num_envs == 8               # --set beats the file
    assert a.eval_opponents == ["random", "easy"]
    assert a.anneal_lr is False
    assert a.gamma == Args().gamma       # untouched default
    # --set wins over --<field> when both are given
    assert _cli(["--num_envs", "5", "--set", "num_envs=7"]).num_envs == 7


def test_cli_unknown_override_is_an_error():
    with pytest.raises(ValueError, match="bogus"):
        _cli(["--set", "bogus=1"])
    with pytest.raises(ValueError, match="name=value"):
        _cli(["--set", "lr"])
    with pytest.raises(SystemExit):  # argparse: no such option
        _cli(["--bogus", "1"])


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml"))))
def test_shipped_configs_load(path):
    a = cfg.load_yaml(path)
    assert a.name == os.path.splitext(os.path.basename(path))[0]


def test_default_yaml_mirrors_every_field():
    with open(os.path.join(ROOT, "configs", "default.yaml")) as f:
        keys = set(yaml.safe_load(f))
    assert keys == {f for f in cfg._FIELDS}


def test_smoke_and_gpu_configs_exist_with_expected_sizes():
    smoke = cfg.load_yaml(os.path.join(ROOT, "configs", "smoke.yaml"))
    gpu = cfg.load_yaml(os.path.join(ROOT, "configs", "gpu.yaml"))
    assert smoke.total_decisions <= 20_000 and smoke.progress is False
    assert gpu.device.startswith("cuda") and gpu.num_envs * gpu.num_steps >= 100_000


def test_every_field_has_a_docstring():
    tree = ast.parse(inspect.getsource(Args))
    body = tree.body[0].body
    documented = set()
    for i, node in enumerate(body[:-1]):
        nxt = body[i + 1]
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) \
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            documented.add(node.target.id)
    assert documented == set(cfg._FIELDS)


def test_pool_search_samples_checked_and_given_to_the_search_bots_of_the_pool():
    from spades_env.bots.heuristic import MediumBot
    from spades_env.bots.pimc import HardBot
    from spades_env.training.opponents import Opponents

    for bad, why in (([30], "one number"), ([0, 24], "too small"), ([30, 24, 1], "more than 2"),
                     ([30, 200_000], "too large")):
        with pytest.raises(ValueError, match=why):
            cfg.validate(Args(pool_search_samples=bad))
    cfg.validate(Args(pool_search_samples=[30, 24]))
    # a hard bot of the pool takes the given deals per card and per bid; medium takes no option
    opp = Opponents(Args(pool_bots=["hard", "medium"], pool_search_samples=[30, 24]), 4)
    opp.reseed_bots(seed=1, iteration=0)
    hard, medium = opp.bots
    assert isinstance(hard, HardBot) and isinstance(medium, MediumBot)
    assert (hard.samples, hard.bid_samples) == (30, 24)
    # empty: the level's own numbers (docs/bots.md: hard draws 100 deals per card, 48 per bid)
    opp = Opponents(Args(pool_bots=["hard"]), 4)
    opp.reseed_bots(seed=1, iteration=0)
    assert (opp.bots[0].samples, opp.bots[0].bid_samples) == (100, 48)


def test_set_takes_a_field_in_either_spelling_like_the_options():
    # the flags took --total-decisions and --total_decisions, --set only total_decisions=
    assert _cli(["--set", "total-decisions=700"]).total_decisions == 700
    assert _cli(["--set", "total_decisions=701"]).total_decisions == 701
    a = _cli(["--set", "gae-lambda=0.9", "--set", "eval-opponents=[random]"])
    assert (a.gae_lambda, a.eval_opponents) == (0.9, ["random"])
    assert _cli(["--set", "total-decisions=5", "--set", "total_decisions=6"]).total_decisions == 6
    with pytest.raises(ValueError, match=r"unknown config key\(s\) \['total-decisionz'\]"):
        _cli(["--set", "total-decisionz=700"])
    with pytest.raises(ValueError, match="bad config: total_decisions must be an integer in "
                                         r"\[1, 10000000000000\], got 0 \(is too small\)"):
        _cli(["--set", "total-decisions=0"])
    # YAML keys stay the fields' own names
    with pytest.raises(ValueError, match="total-decisions"):
        cfg.from_dict({"total-decisions": 700})


def test_options_are_never_abbreviated(capsys):
    # --gae matched --gae-lambda and --gae_lambda (the same field): "ambiguous option"; a prefix
    # would also change meaning whenever a field is added, so only whole names are taken
    assert _cli(["--gae-lambda", "0.9"]).gae_lambda == 0.9
    assert _cli(["--gae_lambda", "0.8"]).gae_lambda == 0.8
    assert _cli(["--gae-lambda=0.7"]).gae_lambda == 0.7
    for short in (["--gae", "0.9"], ["--total", "5"], ["--seed=3", "--conf", "x.yaml"]):
        with pytest.raises(SystemExit):
            _cli(short)
        assert "unrecognized arguments: " + short[-2] in capsys.readouterr().err
    # spades train's own parser (built in training/train.py around add_cli) refuses them too
    from spades_env.training.train import main
    with pytest.raises(SystemExit) as e:
        main(["--gae", "0.9", "--fields"])
    assert e.value.code == 2 and "unrecognized arguments: --gae 0.9" in capsys.readouterr().err
    assert main(["--gae-lambda", "0.9", "--fields"]) == 0
    assert "| gae_lambda | float | a finite number in [0, 1] |" in capsys.readouterr().out


def test_each_field_is_declared_once_with_its_check():
    # FIELD_CHECKS is read from the fields themselves, in their order, not kept as a second list
    import dataclasses
    fields = dataclasses.fields(Args)
    assert list(cfg.FIELD_CHECKS) == [f.name for f in fields]
    assert all(cfg.FIELD_CHECKS[f.name] is f.metadata["check"] for f in fields)
    row = cfg.FIELD_CHECKS["gae_lambda"]
    assert (row.kind, row.lo, row.hi, row.resume) == ("float", 0.0, 1.0, "fixed")
    assert cfg.FIELD_CHECKS["total_decisions"].resume == "free"
    assert Args().hidden == [512, 256] and Args().hidden is not Args().hidden  # a fresh list each


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


def test_a_config_that_sets_a_field_twice_is_refused(tmp_path):
    from spades_env.training.config import apply_overrides, Args, load_yaml
    p = tmp_path / "dup.yaml"
    p.write_text("name: dup\nlr: 0.0001\ntotal_decisions: 1000\nlr: 0.5\n")
    with pytest.raises(ValueError, match=f"^{p}: field 'lr' is set twice \\(lines 2 and 4\\)$"):
        load_yaml(str(p))
    with pytest.raises(ValueError, match="field 'a' is set twice"):
        apply_overrides(Args(), ["eval_opponents={a: 1, a: 2}"])


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path):
    from spades_env.training.config import Args, apply_overrides, load_yaml
    items = ["&b0 [random, random]"] + [f"&b{i} [*b{i-1}, *b{i-1}]" for i in range(1, 28)]
    p = tmp_path / "bomb.yaml"
    p.write_text("name: bomb\neval_opponents: [" + ", ".join(items) + "]\n")
    t = time.time()
    with pytest.raises(ValueError, match=r"aliases \(\*b0\) are not allowed in a config"):
        load_yaml(str(p))
    with pytest.raises(ValueError, match=r"aliases \(\*x\) are not allowed"):
        apply_overrides(Args(), ["pool_bots=[&x [random], *x]"])
    assert time.time() - t < 2


def test_a_shared_nested_value_is_refused_without_expanding_it():
    """A checkpoint's pickled config can hold a list shared 2**30 times: the error must not
    render it (nor must to_dict ever see it)."""
    from spades_env.training.config import from_dict
    x = ["random", "random"]
    for _ in range(30):
        x = [x, x]
    t = time.time()
    for field in ("eval_opponents", "hidden", "pool_bots"):
        with pytest.raises(ValueError) as e:
            from_dict({field: x})
        assert len(str(e.value)) < 300 and field in str(e.value)
    assert time.time() - t < 2


def test_yaml_base_60_numbers_are_strings_the_field_check_refuses(tmp_path):
    from spades_env.training.config import load_yaml, parse_value, safe_yaml
    assert safe_yaml("a: 1:30\nb: 1:30.5\nc: 190\nd: 1.5") == {"a": "1:30", "b": "1:30.5",
                                                               "c": 190, "d": 1.5}
    p = tmp_path / "c.yaml"
    p.write_text("num_envs: 1:30\n")
    with pytest.raises(ValueError, match=r"c\.yaml: config field 'num_envs' must be an integer, "
                                         r"got '1:30'"):
        load_yaml(str(p))
    assert parse_value("1:30") == "1:30"  # --set num_envs=1:30 is refused by the same check
