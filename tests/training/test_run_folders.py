"""Run folders of training (``spades_env.training.checkpoint.open_run``): a second run with a name
in use takes a new folder (``NAME-2``), ``--overwrite`` replaces the earlier run but never a file
the run reads, a folder held by a live run or planted as a symbolic link is never written, a
resumed copy never replaces the run's own checkpoint, and the final checkpoint is written before
the final evaluation."""

import os
import subprocess
import sys
import threading

import pytest

from spades_env.training.checkpoint import load_checkpoint
from spades_env.training.ppo_selfplay import train
from tests.training._runs import QUIET, _tiny


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


def test_the_final_checkpoint_is_written_before_the_final_evaluation(tmp_path, monkeypatch):
    import spades_env.training.run_log as run_log

    def broken_eval(*a, **k):
        raise RuntimeError("evaluation failed")
    monkeypatch.setattr(run_log, "run_eval", broken_eval)
    args = _tiny(tmp_path, save_every=1000, final_eval_deals=4)
    with pytest.raises(RuntimeError, match="evaluation failed"):
        train(args, **QUIET)
    from spades_env.training.checkpoint import held_runs
    assert held_runs() == []  # an error unlocks the run's folders (it once stayed held)
    d = load_checkpoint(str(tmp_path / "ck" / "tiny" / "latest.pt"))
    assert d["progress"]["decisions"] >= 300 and d["progress"]["iteration"] == 4
    assert d["progress"]["stop_reason"] == "total_decisions"


def test_open_run_skips_a_planted_run_folder_and_leaves_the_target_alone(tmp_path):
    from spades_env.training.checkpoint import open_run
    from spades_env.training.config import from_dict
    shared = tmp_path / "shared"
    planted = shared / "nano"
    planted.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, planted / ".lock")
    args = from_dict({"name": "nano", "bc_teacher": "", "checkpoint_dir": str(shared),
                      "runs_dir": str(tmp_path / "runs"), "pool_bots": ["random"],
                      "eval_opponents": ["random"]})
    notes = []
    run = open_run(args, log=notes.append)
    try:
        assert run.ckpt_dir == str(shared / "nano-2")
        assert "symbolic link" in notes[0] and "nano-2" in notes[0]
    finally:
        run.close()
    assert victim.read_text() == "keep me\n" and os.path.islink(planted / ".lock")
    with pytest.raises(ValueError, match="symbolic link"):
        open_run(args, overwrite=True, log=notes.append)


def test_open_run_never_writes_through_a_planted_tensorboard_folder(tmp_path):
    from spades_env.training.checkpoint import open_run
    from spades_env.training.config import from_dict
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "runs").mkdir()
    os.symlink(elsewhere, tmp_path / "runs" / "nano")
    args = from_dict({"name": "nano", "bc_teacher": "", "checkpoint_dir": str(tmp_path / "ck"),
                      "runs_dir": str(tmp_path / "runs"), "pool_bots": ["random"],
                      "eval_opponents": ["random"]})
    notes = []
    run = open_run(args, log=notes.append)
    try:
        assert run.run_dir == str(tmp_path / "runs" / "nano-2")
        assert "is a symbolic link" in notes[0]
    finally:
        run.close()
    assert os.listdir(elsewhere) == []
    with pytest.raises(ValueError, match="refused: .*is a symbolic link"):
        open_run(args, overwrite=True, log=notes.append)


def test_overwrite_never_removes_a_file_the_run_reads(tiny, tmp_path):
    import shutil

    from spades_env.training.checkpoint import open_run
    from spades_env.training.config import from_dict
    ck = tmp_path / "ck" / "nano"
    ck.mkdir(parents=True)
    shutil.copy(tiny, ck / "latest.pt")
    before = (ck / "latest.pt").read_bytes()
    args = from_dict({"name": "nano", "bc_teacher": "", "checkpoint_dir": str(tmp_path / "ck"),
                      "runs_dir": str(tmp_path / "runs"), "pool_bots": ["random"],
                      "eval_opponents": ["random", f"checkpoint:{ck / 'latest.pt'}"]})
    with pytest.raises(ValueError, match=f"--overwrite would remove {ck / 'latest.pt'}: it is "
                                         f"the input"):
        open_run(args, overwrite=True, log=lambda m: None)
    assert (ck / "latest.pt").read_bytes() == before


def test_stop_after_iterations_reports_the_iteration_its_checkpoint_holds(tmp_path):
    """``stop_after_iterations`` stops as a killed run would (no final save): the result names the
    iteration of the last periodic save, the one ``latest.pt`` holds and a resume starts from."""
    k = train(_tiny(tmp_path, stop_after_iterations=2, save_every=3), **QUIET)
    assert (k["iterations"], k["stop_reason"]) == (2, "stop_after_iterations")
    assert k["saved_iteration"] == load_checkpoint(k["checkpoint"])["progress"]["iteration"] == 0
    k = train(_tiny(tmp_path, stop_after_iterations=4, save_every=3), resume=k["checkpoint"],
              **QUIET)
    assert k["iterations"] == 4
    assert k["saved_iteration"] == load_checkpoint(k["checkpoint"])["progress"]["iteration"] == 3
