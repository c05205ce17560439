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
    from spades_env.training.ppo_selfplay import Opponents

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
