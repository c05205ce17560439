"""Training config: YAML mirrors the dataclass, unknown keys are rejected, the CLI overrides."""

import argparse
import ast
import glob
import inspect
import os

import pytest
import yaml

from spades_env.training import config as cfg
from spades_env.training.config import Args

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
