"""The ``spades`` command (``spades_env.cli``): dispatch, errors, Ctrl-C at any point, kebab-case
flags."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from spades_env import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(*argv, **kw):
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, **kw)


def test_every_command_runs_its_modules_main_with_the_rest_of_the_line(monkeypatch):
    seen = {}
    for name, (module, _) in cli.COMMANDS.items():
        mod = __import__(module, fromlist=["main"])
        monkeypatch.setattr(mod, "main", lambda argv, name=name: seen.setdefault(name, argv) and 7)
    for name in cli.COMMANDS:
        assert cli.main([name, "--x", "1"]) == 7
    assert seen == {name: ["--x", "1"] for name in cli.COMMANDS}
    assert set(cli.COMMANDS) == {"train", "eval", "arena", "play", "distill", "teacher-records",
                                 "export", "plot"}


def test_usage_unknown_command_and_version(capsys):
    assert cli.main([]) == 2  # no command: usage on stderr, as argparse does
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: spades COMMAND") and "teacher-records" in err
    assert cli.main(["--help"]) == 0
    assert cli.main(["evl"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "error: unknown command 'evl'; did you mean 'eval'? (commands: train, eval, arena, play, "
        "distill, teacher-records, export, plot)"]
    import spades_env
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"spades_env {spades_env.__version__}\n"


def test_each_parser_names_itself_spades_command(capsys):
    for name in ("train", "eval", "arena", "distill", "teacher-records", "export", "plot", "play"):
        with pytest.raises(SystemExit) as e:
            cli.main([name, "--help"])
        assert e.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: spades {name} "), name


def test_ctrl_c_while_the_command_imports_torch_is_one_line():
    """SIGINT lands while ``import torch`` is under way (made slow here): one line, exit 130."""
    code = textwrap.dedent("""
        import importlib.abc, sys, time
        class SlowTorch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "torch":
                    print("importing torch", flush=True)
                    time.sleep(60)
        sys.meta_path.insert(0, SlowTorch())
        from spades_env.cli import main
        sys.exit(main(["teacher-records", "--help"]))
    """)
    p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline() == "importing torch\n"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert err == "interrupted: spades teacher-records\n"


def test_a_missing_extra_is_one_error_line():
    code = textwrap.dedent("""
        import importlib.abc, sys
        class NoTorch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "torch":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, NoTorch())
        from spades_env.cli import main
        sys.exit(main(["train", "--config", "configs/smoke.yaml"]))
    """)
    r = _run("-c", code)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: spades train: training needs torch, which is not installed: pip install "
        "'spades_env[train]' (torch, tensorboard, pyyaml, matplotlib)"]


def test_config_fields_take_kebab_case_and_snake_case_flags():
    import argparse

    from spades_env.training.config import add_cli, args_from_cli
    p = argparse.ArgumentParser()
    add_cli(p)
    assert args_from_cli(p.parse_args(["--total-decisions", "1234"])).total_decisions == 1234
    assert args_from_cli(p.parse_args(["--total_decisions", "4321"])).total_decisions == 4321
    assert args_from_cli(p.parse_args(["--eval-every", "3"])).eval_every == 3


def test_python_m_spades_env_is_the_spades_command():
    r = _run("-m", "spades_env", "export", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: spades export ")
    assert r.stderr == ""
