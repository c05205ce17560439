"""What training checks before any work: bot names, devices and the TensorBoard folder are
refused (from ``train`` and from the command line, with one error line) before a run folder is
made or a game is played."""

import os

import pytest
import torch

from spades_env.training.ppo_selfplay import train
from tests.helpers import _main, _one_line_error
from tests.training._runs import QUIET, SHIPPED, _tiny


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
