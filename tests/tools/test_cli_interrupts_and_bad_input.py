"""The ``spades`` command and the ``python -m`` forms under careless use: Ctrl-C at any
moment of start-up, closed pipes, missing extras, the play server's address, the train interrupt
message, empty values, the command's own options and stale names. Many were found by break-it
reviews; each failed on the code before its fix."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from spades_env import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
SPADES = os.path.join(BIN, "spades")
PY = sys.executable
TRAIN_EXTRA = "pip install 'spades_env[train]' (torch, tensorboard, pyyaml, matplotlib)"
PLAY_EXTRA = "pip install 'spades_env[play]' (fastapi, uvicorn, platformdirs)"

needs_scripts = pytest.mark.skipif(not os.path.isfile(SPADES),
                                   reason="the console script is not installed beside python")

# A sitecustomize for the child processes: SPADES_TEST_HIDE=a,b makes those packages missing
# (ModuleNotFoundError, as when not installed); SPADES_TEST_SLOW=name makes its import wait (after
# printing "importing NAME" on stdout), so a test can send Ctrl-C while it is under way.
SITECUSTOMIZE = '''
import importlib.abc, os, sys, time
_HIDE = set(filter(None, os.environ.get("SPADES_TEST_HIDE", "").split(",")))
_SLOW = os.environ.get("SPADES_TEST_SLOW")
class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _HIDE:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name == _SLOW:
            sys.stdout.write(f"importing {name}\\n")
            sys.stdout.flush()
            time.sleep(120)
if _HIDE or _SLOW:
    sys.meta_path.insert(0, _Finder())
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return str(folder)


def _env(site, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPADES_TEST_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _run(argv, site=None, **extra):
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=_env(site, **extra) if site else None)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A small checkpoint with two evaluation points (plays, plots, cannot be resumed)."""
    from spades_env.agents.model import Agent
    from spades_env.training.checkpoint import save_checkpoint
    torch.manual_seed(0)
    agent = Agent(hidden=[32], head_hidden=16)
    path = tmp_path_factory.mktemp("ck") / "tiny.pt"
    ev = [{"decisions": d, "seconds": 60.0 * k, "rows": [
        {"opponent": "random", "diff": 10.0 * k, "diff_lo": 5.0 * k, "diff_hi": 15.0 * k}]}
        for k, d in enumerate((0, 1000))]
    save_checkpoint(str(path), {"config": {"name": "t"}, "model": agent.state_dict(),
                                "model_shape": {"hidden": [32], "head_hidden": 16},
                                "progress": {"iteration": 0}, "eval": ev})
    return str(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ============================================================ 1. Ctrl-C while spades_env imports
START_FORMS = {
    "spades": [SPADES, "--help"],
    "python -m spades_env": [PY, "-m", "spades_env", "--help"],
    "python -m spades_env.training.export": [PY, "-m", "spades_env.training.export", "--help"],
}


def _interrupt_when_importing(argv, site, module, **extra):
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=_env(site, SPADES_TEST_SLOW=module, **extra))
    try:
        assert p.stdout.readline() == f"importing {module}\n"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        p.kill()
    return p.returncode, out, err


@needs_scripts
@pytest.mark.parametrize("form", list(START_FORMS))
def test_ctrl_c_while_import_spades_env_loads_gymnasium_is_one_line(form, site):
    """``import spades_env`` (numpy, Gymnasium: the first ~0.3-0.9 s) of every command form."""
    code, out, err = _interrupt_when_importing(START_FORMS[form], site, "gymnasium")
    assert (code, err, out) == (130, "interrupted\n", "")


def test_a_library_import_keeps_pythons_keyboardinterrupt(site):
    code, _, err = _interrupt_when_importing([PY, "-c", "import spades_env"], site, "gymnasium")
    assert code == -signal.SIGINT and err.rstrip().endswith("KeyboardInterrupt")


def test_started_as_command_reads_the_interpreters_command_line():
    import spades_env
    cases = {("py", "-m", "spades_env", "train"): True, ("py", "-mspades_env.arena"): True,
             ("py", "-X", "importtime", "-m", "spades_env.training.train"): True,
             ("py", "/venv/bin/spades", "arena"): True,
             ("py", "-m", "training.train"): False,  # the 0.7 alias, removed in 0.9.0
             ("py", "-B", "/venv/bin/spades-play"): False,  # the 0.7 script, removed in 0.9.0
             ("py", "-m", "pytest", "-m", "spades_env"): False,
             ("py", "tool.py", "-m", "spades_env"): False,
             ("py", "-c", "from multiprocessing.spawn import spawn_main", "/bin/spades"): False,
             ("py",): False, ("py", "/venv/bin/pytest"): False}
    assert {argv: spades_env._started_as_command(list(argv)) for argv in cases} == cases


# ============================================================ 2-3. Ctrl-C of the play server and arena
@pytest.mark.slow
@needs_scripts
def test_ctrl_c_stops_the_play_server_with_one_line(tmp_path):
    port = _free_port()
    p = subprocess.Popen([SPADES, "play", "--no-browser", "--port", str(port), "--db",
                          str(tmp_path / "play.sqlite3")], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        lines = [p.stderr.readline()]
        while "Ctrl-C stops" not in lines[-1]:
            assert lines[-1], lines
            lines.append(p.stderr.readline())
        _wait_for_server(port)
        p.send_signal(signal.SIGINT)
        rest = p.stderr.read()
        p.wait(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130
    assert rest == "interrupted: spades play\n"
    assert lines[:-1] == []


@needs_scripts
def test_arena_ctrl_c_while_importing_scipy_is_one_line(site):
    code, out, err = _interrupt_when_importing(
        [SPADES, "arena", "--team0", "random", "--team1", "random", "--games", "2",
         "--quiet"], site, "scipy")
    assert code == 130 and out == ""
    assert err.splitlines()[-1].startswith("interrupted") and "Traceback" not in err


@pytest.mark.parametrize("module", ["spades_env.training.evaluate",
                                    "spades_env.training.teacher_records",
                                    "spades_env.training.distill"])
def test_python_m_trainer_modules_ctrl_c_while_importing_torch_is_one_line(module, site):
    """The trainer's modules import torch at their top, after ``import spades_env``: the
    process's exception hook (``spades_env._command_excepthook``) answers Ctrl-C there too."""
    code, out, err = _interrupt_when_importing([PY, "-m", module, "--help"], site, "torch")
    # Python ends an uncaught Ctrl-C by SIGINT: a shell reads exit status 130
    assert (code, err, out) == (-signal.SIGINT, "interrupted\n", "")


def test_command_excepthook_is_quiet_only_for_ctrl_c_and_closed_pipes(capsys):
    import spades_env
    seen = []
    hook = functools.partial(spades_env._command_excepthook,
                             _default=lambda *a: seen.append(a[0]))
    hook(KeyboardInterrupt, KeyboardInterrupt(), None)
    assert capsys.readouterr().err == "interrupted\n"
    hook(ValueError, ValueError("x"), None)
    assert seen == [ValueError]


def _wait_for_server(port: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                return  # the server answers
        except ConnectionRefusedError:  # bound, not listening yet
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.1)


# ============================================================ 4. closed pipes
def _closed_stdout(argv, **kw):
    """Run ``argv`` with a standard output whose reader has already gone (``| true``)."""
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, **kw)
    p.stdout.close()
    err = p.stderr.read()
    p.wait(timeout=300)
    return p.returncode, err


ARENA = ["--team0", "random", "--team1", "random", "--games", "2", "--quiet"]


@needs_scripts
def test_usage_to_a_closed_pipe_is_dropped():
    assert _closed_stdout([SPADES, "--help"]) == (0, "")


@needs_scripts
def test_arena_to_a_closed_pipe_still_writes_its_json(tmp_path):
    out = tmp_path / "match.json"
    code, err = _closed_stdout([SPADES, "arena", *ARENA, "--out", str(out)])
    assert (code, err) == (0, "")
    assert json.loads(out.read_text())["games"] == 2


@needs_scripts
def test_eval_export_and_plot_to_a_closed_pipe_finish(tiny, tmp_path):
    assert _closed_stdout([SPADES, "eval", tiny, "--vs", "random", "--hands", "2"]) == (0, "")
    assert _closed_stdout([SPADES, "export", tiny, "--out", str(tmp_path / "x.pt")]) == (0, "")
    assert (tmp_path / "x.pt").stat().st_size > 0
    assert _closed_stdout([SPADES, "plot", tiny, "--out", str(tmp_path / "c.png")]) == (0, "")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_train_to_a_closed_pipe_goes_on_training(tmp_path):
    """``spades train | head -1``: the pipe closes, the run must not stop (it was exit 2)."""
    done = tmp_path / "done"
    code = textwrap.dedent(f"""
        import sys
        import spades_env.training.ppo_selfplay as ppo
        from spades_env.cli import main
        def train(args, resume=None, overwrite=False, log=print, **kw):
            for i in range(5000):
                print("progress line", i)
            open({str(done)!r}, "w").write("finished")
            return {{"checkpoint": "c.pt", "iterations": 1, "decisions": 2, "seconds": 3.0}}
        ppo.train = train
        sys.exit(main(["train", "--config", "configs/smoke.yaml"]))
    """)
    assert _closed_stdout([PY, "-c", code]) == (0, "")
    assert done.read_text() == "finished"


# ============================================================ 5. missing extras
@needs_scripts
def test_play_checkpoint_without_torch_is_one_line(tiny, site, tmp_path):
    r = _run([SPADES, "play", "--checkpoint", tiny, "--no-browser", "--db",
              str(tmp_path / "p.sqlite3")], site, SPADES_TEST_HIDE="torch")
    assert (r.returncode, r.stderr) == (2, (
        f"error: --checkpoint {tiny}: bot 'checkpoint:{tiny}' needs PyTorch, which is not "
        f"installed: pip install 'spades_env[torch]' (or torch>=2.2)\n"))


@needs_scripts
def test_play_without_platformdirs_is_one_line(site):
    r = _run([SPADES, "play", "--no-browser"], site, SPADES_TEST_HIDE="platformdirs")
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == f"error: spades play needs platformdirs, which is not " \
                                        f"installed: {PLAY_EXTRA}"
    assert "Traceback" not in r.stderr


@needs_scripts
def test_train_without_tensorboard_is_one_line_before_any_work(site, tmp_path):
    r = _run([SPADES, "train", "--config", "configs/smoke.yaml", "--checkpoint-dir",
              str(tmp_path / "c"), "--runs-dir", str(tmp_path / "r")], site,
             SPADES_TEST_HIDE="tensorboard")
    assert (r.returncode, r.stderr, r.stdout) == (
        2, f"error: spades train needs tensorboard, which is not installed: {TRAIN_EXTRA}\n", "")
    assert os.listdir(tmp_path) == []


@needs_scripts
def test_plot_without_matplotlib_names_the_extra(tiny, site, tmp_path):
    r = _run([SPADES, "plot", tiny, "--out", str(tmp_path / "c.png")], site,
             SPADES_TEST_HIDE="matplotlib")
    assert (r.returncode, r.stderr) == (
        2, f"error: spades plot needs matplotlib, which is not installed: {TRAIN_EXTRA}\n")


def test_missing_extra_names_the_package_and_its_extra():
    assert cli.missing_extra(ModuleNotFoundError("x", name="yaml.constructor")) == (
        f"needs pyyaml, which is not installed: {TRAIN_EXTRA}")
    assert cli.missing_extra(ModuleNotFoundError("x", name="uvicorn")) == (
        f"needs uvicorn, which is not installed: {PLAY_EXTRA}")
    assert cli.missing_extra(ModuleNotFoundError("x", name="numpy")) is None


# ============================================================ 6. train's interrupt message
@pytest.mark.parametrize("written", ["nothing", "folder", "latest"])
def test_train_interrupt_says_which_checkpoint_exists(written, tmp_path, monkeypatch, capsys):
    import spades_env.training.ppo_selfplay as ppo
    from spades_env.training import train as train_cli
    from spades_env.training.checkpoint import held_runs, open_run

    def interrupted_train(args, resume=None, overwrite=False, log=print, inputs=()):
        if written != "nothing":
            run = open_run(args, resume, overwrite=overwrite, log=log, inputs=inputs)
            if written == "latest":
                with open(os.path.join(run.ckpt_dir, "latest.pt"), "wb") as f:
                    f.write(b"saved")
        raise KeyboardInterrupt
    monkeypatch.setattr(ppo, "train", interrupted_train)
    ckpt = tmp_path / "c"
    assert train_cli.main(["--config", "configs/smoke.yaml", "--checkpoint-dir", str(ckpt),
                           "--runs-dir", str(tmp_path / "r")]) == 130
    latest = ckpt / "smoke" / "latest.pt"
    assert capsys.readouterr().err == {
        "nothing": "interrupted: spades train, before the run started (nothing was written)\n",
        "folder": f"interrupted: no checkpoint was written yet (in {ckpt / 'smoke'})\n",
        "latest": f"interrupted: the latest checkpoint is {latest} (its last periodic save); "
                  f"continue with spades train --resume {latest}\n"}[written]
    assert held_runs() == []  # the run's lock is released


# ============================================================ 7. the play server's address
@pytest.mark.parametrize("host, reason", [("127.0.0.1", "Address already in use"),
                                          ("192.0.2.1", "Cannot assign requested address")])
def test_play_address_that_cannot_be_used_is_one_line(host, reason, tmp_path, capsys):
    from spades_env.play import cli as play_cli
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = play_cli.main(["--host", host, "--port", str(port), "--no-browser", "--db",
                              str(tmp_path / "p.sqlite3")])
    assert (code, capsys.readouterr().err) == (
        2, f"error: cannot listen on {host}:{port}: {reason}\n")


def test_play_host_that_does_not_resolve_is_one_line(tmp_path, capsys):
    from spades_env.play import cli as play_cli
    code = play_cli.main(["--host", "no-such-host.invalid", "--port", "8000", "--no-browser",
                          "--db", str(tmp_path / "p.sqlite3")])
    err = capsys.readouterr().err
    assert code == 2 and re.fullmatch(r"error: cannot listen on no-such-host\.invalid:8000: "
                                      r"[^\n]+\n", err), err


# ============================================================ 8. eval's games, names, empties
def _must_not_train(*args, **kwargs):
    raise AssertionError("training started")


def test_eval_table_with_one_duplicate_pair_says_there_is_no_interval():
    from spades_env.arena import play_match
    from spades_env.training.evaluate import format_arena_table
    r = play_match("random", "random", games=2, seed=1, progress=False)
    row = format_arena_table([("random", r)]).splitlines()[-1]
    assert "nan" not in row
    assert row.split(" | ")[4] == "none (1 duplicate pair; the interval needs 2)"


@pytest.mark.parametrize("argv, message", [
    (["--games", "3"], "--games must be an even number >= 2 (full games come in duplicate pairs), "
                       "got 3"),
    (["--games", "0"], "--games must be an even number >= 2 (full games come in duplicate pairs), "
                       "got 0"),
    (["--games", "4", "--hands", "10"], "give --games (full games) or --hands (single hands), "
                                        "not both")])
def test_eval_refuses_odd_games_and_games_with_hands(argv, message, tmp_path, capsys):
    from spades_env.training.evaluate import main
    assert main([str(tmp_path / "none.pt"), *argv]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"


def test_train_refuses_an_odd_evaluate_games_before_training(monkeypatch, capsys):
    import spades_env.training.ppo_selfplay as ppo
    from spades_env.training.train import main
    monkeypatch.setattr(ppo, "train", _must_not_train)
    with pytest.raises(SystemExit) as e:
        main(["--config", "configs/smoke.yaml", "--vs", "easy", "--games", "3"])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "spades train: error: --games must be an even number >= 2 (full games come in "
        "duplicate pairs), got 3")


def test_export_help_describes_the_command_in_whole_sentences(capsys):
    with pytest.raises(SystemExit):
        cli.main(["export", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("Strip a training checkpoint to what playing needs (weights, network shape, config, "
            "progress, evaluation results) and write it atomically. The result can be played "
            "and evaluated, not resumed.") in text


def test_a_huge_bot_name_is_cut_in_the_message(tiny, capsys):
    name = "x" * 100_000
    unknown = (f"unknown bot {'x' * 80!r}... (100000 characters); choose one of ['random', "
               f"'easy', 'medium', 'hard', 'insane', 'expert'] or 'checkpoint:PATH'")
    assert cli.main(["arena", "--team0", name, "--team1", "easy", "--games", "2"]) == 2
    assert capsys.readouterr().err == f"error: {unknown}\n"
    assert cli.main(["eval", tiny, "--vs", name, "--hands", "2"]) == 2
    assert capsys.readouterr().err == (f"error: --vs {'x' * 80!r}... (100000 characters): "
                                       f"{unknown}\n")


@pytest.mark.parametrize("argv, message", [
    (["arena", "--team0", "easy", "--team1", "easy", "--out", ""],
     "error: spades arena: an empty value after '--out' (give a value, or leave the option "
     "out)"),
    (["arena", "--team0", "easy", "--team1", "easy", "--out="],
     "error: spades arena: --out= has an empty value (give a value, or leave the option out)"),
    (["export", "a.pt", ""],
     "error: spades export: an empty argument (a file name or a value needs at least one "
     "character)"),
    (["train", "--config", ""],
     "error: spades train: an empty value after '--config' (give a value, or leave the option "
     "out)")])
def test_the_command_refuses_empty_values(argv, message, monkeypatch, capsys):
    import spades_env.training.ppo_selfplay as ppo
    monkeypatch.setattr(ppo, "train", _must_not_train)  # `--config ""` once trained the defaults
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == message + "\n"


@pytest.mark.parametrize("argv, message", [
    (["--config", ""], "--config: an empty value"),
    (["--resume", ""], "--resume: an empty value"),
    (["--config", "configs/smoke.yaml", "--lr", ""], "--lr: an empty value"),
    (["--config", "configs/smoke.yaml", "--set", "lr="], "--set lr=: an empty value (write "
                                                          "NAME=VALUE)")])
def test_train_refuses_empty_values_before_any_work(argv, message, monkeypatch, capsys):
    """``--config ""`` trained from the defaults, ``--resume ""`` started afresh, and ``--lr ""``
    said "got None"."""
    import spades_env.training.ppo_selfplay as ppo
    from spades_env.training.train import main
    monkeypatch.setattr(ppo, "train", _must_not_train)
    assert main(argv) == 2
    assert capsys.readouterr().err == f"error: {message} (give a value, or leave the option out)\n"


def test_arena_and_play_refuse_empty_file_names(capsys, tmp_path, monkeypatch):
    import uvicorn

    from spades_env import arena
    from spades_env.play import cli as play_cli

    def must_not_serve(*args, **kwargs):  # an empty --db or --host was once served
        raise AssertionError("the server started")
    monkeypatch.setattr(uvicorn.Server, "run", must_not_serve)
    assert arena.main(["--team0", "easy", "--team1", "easy", "--games", "2", "--out", "",
                       "--quiet"]) == 2
    assert capsys.readouterr() == ("", "error: --out: '' is not a file name\n")
    for option in ("--db", "--host", "--checkpoint"):
        assert play_cli.main([option, "", "--no-browser"]) == 2
        assert capsys.readouterr().err == (f"error: {option}: an empty value (give a value, or "
                                           f"leave the option out)\n")


def test_spades_alone_is_usage_on_stderr_with_status_2(capsys):
    assert cli.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == cli.usage() + "\nerror: give a command\n"
    assert cli.main(["help"]) == 0 and capsys.readouterr().out == cli.usage() + "\n"


@pytest.mark.parametrize("argv", [["-h", "train"], ["help", "train"], ["--help", "train"]])
def test_help_of_a_command_is_that_commands_help(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("usage: spades train ")


def test_version_and_help_refuse_extra_words(capsys):
    assert cli.main(["--version", "extra"]) == 2
    assert capsys.readouterr() == ("", "error: --version takes no arguments, got 'extra'\n")
    assert cli.main(["help", "train", "eval"]) == 2
    assert capsys.readouterr().err == ("error: help takes one command name, got 'train' 'eval' "
                                       "(commands: train, eval, arena, play, distill, "
                                       "teacher-records, export, plot)\n")


def test_export_and_plot_refuse_a_missing_folder_as_arena_does(tiny, tmp_path, capsys):
    from spades_env.training.export import main as export
    from spades_env.training.plot import main as plot
    missing = tmp_path / "no" / "such"
    assert export([tiny, "--out", str(missing / "x.pt")]) == 2
    assert capsys.readouterr().err == (f"error: --out {missing / 'x.pt'}: no such folder "
                                       f"{missing}\n")
    assert plot([tiny, "--out", str(missing / "c.png")]) == 2
    assert capsys.readouterr().err == (f"error: --out {missing / 'c.png'}: no such folder "
                                       f"{missing}\n")
    assert not (tmp_path / "no").exists()


# ============================================================ 9. stale names
def test_user_facing_texts_name_the_modules_where_they_are_now():
    stale = re.compile(r"(?<![\w.])training\.(config\.Args|ppo_selfplay\.train)")
    for rel in ("configs/default.yaml", "spades_env/agents/checkpoint.py",
                "spades_env/training/train.py"):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            assert not stale.search(f.read()), rel
    for rel in ("spades_env/play/cli.py", "spades_env/play/__init__.py"):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        assert "``spades play`` / ``spades play``" not in text, rel
        assert "(or ``spades play``)" not in text, rel

