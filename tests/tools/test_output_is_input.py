"""No command writes over what it reads: every output that is, holds or lies inside a file or
folder the command reads (a ``checkpoint:PATH`` bot, ``--from``, ``--config``, label folders,
records), under any spelling (``./x``, a symbolic or a hard link), is refused before any work with
one ``error:`` line naming both, and the input is left byte for byte as it was."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from spades_env import fileio
from spades_env.cli import main as spades

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED = os.path.join(ROOT, "checkpoints", "shipped", "agent.pt")


@pytest.fixture
def ck(tmp_path):
    """A copy of the shipped network in its own folder ``tmp/in/agent.pt``."""
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "agent.pt"
    shutil.copyfile(SHIPPED, path)
    return path


def _refused(capsys, argv, *named, seconds=20.0):
    """Run ``spades ARGV``: exit 2 within ``seconds`` and one error line naming each of
    ``named``; returns the line."""
    t = time.time()
    assert spades(argv) == 2
    took = time.time() - t
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    for n in named:
        assert str(n) in err[0], (n, err[0])
    assert took < seconds, f"refused only after {took:.1f}s: work was done first"
    return err[0]


# --------------------------------------------------------------------------- the one check
def test_check_outputs_apart_finds_every_overlap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.pt").write_bytes(b"x")
    os.symlink(tmp_path / "d" / "x.pt", tmp_path / "soft.pt")
    os.link(tmp_path / "d" / "x.pt", tmp_path / "hard.pt")
    os.symlink(tmp_path / "d", tmp_path / "dlink")
    read = {"--from": "d/x.pt"}
    for out in ("d/x.pt", "./d/x.pt", "d/../d/x.pt", str(tmp_path / "d" / "x.pt"), "soft.pt",
                "hard.pt", "dlink/x.pt"):
        with pytest.raises(ValueError, match=r"the input d/x\.pt read by --from \(the same file\)"):
            fileio.check_outputs_apart({"--out": out}, read)
    for folder in ("d", "./d/", "dlink", str(tmp_path)):  # a folder holding the input
        with pytest.raises(ValueError, match=r"--labels .*: it is a folder holding the input "
                                             r"d/x\.pt read by --from"):
            fileio.check_outputs_apart({"--labels": folder}, read)
    with pytest.raises(ValueError, match=r"--out d/new\.pt: it lies inside the folder of the "
                                         r"input \./d read by --also-labels d"):
        fileio.check_outputs_apart({"--out": "d/new.pt"}, [("--also-labels d", "./d")])
    fileio.check_outputs_apart({"--out": "new.pt", "--labels": "new_labels", "--json": None},
                               {"--from": "d/x.pt", "--also-labels": "dlink"})  # apart: fine


def test_bot_files_name_what_a_bot_reads():
    from spades_env.agents import SHIPPED_CHECKPOINT
    from spades_env.bots import bot_files, bot_inputs
    assert bot_files("checkpoint:a/b.pt") == ["a/b.pt"]
    assert bot_files("expert") == [str(SHIPPED_CHECKPOINT)]
    assert bot_files("hard") == bot_files("checkpoint:") == bot_files(3) == []
    assert bot_inputs("--vs", ["random", "checkpoint:x.pt"]) == [("--vs checkpoint:x.pt", "x.pt")]


# --------------------------------------------------------------------------- spades arena
@pytest.mark.parametrize("option", ["--out", "--records"])
@pytest.mark.parametrize("spelling", ["same", "dot", "symlink", "hardlink"])
def test_arena_refuses_an_output_that_is_a_checkpoint_it_plays(ck, tmp_path, monkeypatch,
                                                              capsys, option, spelling):
    if option == "--records":  # a checkpoint named .jsonl, so that only the overlap is wrong
        os.rename(ck, ck.with_suffix(".jsonl"))
        ck = ck.with_suffix(".jsonl")
    before = ck.read_bytes()
    monkeypatch.chdir(tmp_path)
    out = {"same": str(ck), "dot": f"./in/../in/{ck.name}"}.get(spelling, str(tmp_path / "o"))
    if option == "--records" and spelling in ("symlink", "hardlink"):
        out += ".jsonl"
    if spelling == "symlink":
        os.symlink(ck, out)
    elif spelling == "hardlink":
        os.link(ck, out)
    line = _refused(capsys, ["arena", "--team0", "random", "--team1", f"checkpoint:in/{ck.name}",
                             "--hands", "1", "--quiet", option, out],
                    f"{option} {out}", f"--team1 checkpoint:in/{ck.name}", "would be lost")
    assert "(the same file)" in line
    assert ck.read_bytes() == before


# --------------------------------------------------------------------------- spades train
@pytest.mark.parametrize("what", ["--config", "--init-from"])
def test_train_refuses_a_run_folder_holding_what_it_reads(ck, tmp_path, capsys, what):
    pytest.importorskip("tensorboard")
    run = tmp_path / "cks" / "nano"
    run.mkdir(parents=True)
    config = run / "c.yaml"
    shutil.copyfile(os.path.join(ROOT, "configs", "smoke.yaml"), config)
    given = config
    extra = []
    if what == "--init-from":  # the warm-start network, in the folder the run will write
        given = run / "warm.pt"
        shutil.copyfile(os.path.join(ROOT, "checkpoints", "shipped", "warmstart.pt"), given)
        extra = ["--init-from", str(given)]
        config = tmp_path / "c.yaml"  # the shipped network's own shape
        shutil.copyfile(os.path.join(ROOT, "checkpoints", "shipped", "config.yaml"), config)
    before = given.read_bytes()
    _refused(capsys, ["train", "--config", str(config), "--checkpoint-dir", str(tmp_path / "cks"),
                      "--runs-dir", str(tmp_path / "runs"), "--name", "nano",
                      "--total-decisions", "100", *extra],
             f"the checkpoint folder {run}: it is a folder holding the input", str(given), what,
             seconds=60)
    assert given.read_bytes() == before
    assert not {"latest.pt", "best.pt", "warmstart.pt"} & set(os.listdir(run))  # no work


def test_train_refuses_a_run_folder_holding_a_vs_opponent(ck, tmp_path, capsys, monkeypatch):
    # --vs (0.8.0: --evaluate) checkpoint:X was not an input: with --overwrite the run removed X (best.pt of
    # the earlier run), trained, then evaluated against its own new best.pt under that name
    pytest.importorskip("tensorboard")
    monkeypatch.chdir(tmp_path)  # short names: the message names the option in full
    run = tmp_path / "cks" / "nano"
    run.mkdir(parents=True)
    best = run / "best.pt"
    shutil.copyfile(ck, best)
    before = best.read_bytes()
    _refused(capsys, ["train", "--config", os.path.join(ROOT, "configs", "smoke.yaml"),
                      "--checkpoint-dir", "cks", "--runs-dir", "runs", "--name", "nano",
                      "--total-decisions", "100", "--overwrite", "--vs",
                      "checkpoint:cks/nano/best.pt"],
             "--overwrite would remove cks/nano/best.pt: it is the input read by --vs "
             "checkpoint:cks/nano/best.pt (the same file)", seconds=60)
    assert best.read_bytes() == before
    assert not {"latest.pt", "warmstart.pt"} & set(os.listdir(run))  # no work


# --------------------------------------------------------------------------- spades distill
def _distill(src, out, *extra):
    return ["distill", str(src), "--out", str(out), "--minutes", "0.05", "--chunks",
            "1", "--chunk-hands", "1", "--samples", "1", "--workers", "1", "--epochs", "1",
            *map(str, extra)]


def test_distill_refuses_a_label_folder_holding_its_source(ck, tmp_path, capsys):
    before = ck.read_bytes()
    _refused(capsys, _distill(ck, tmp_path / "o.pt", "--labels", ck.parent),
             f"--labels {ck.parent}: it is a folder holding the input {ck} read by the "
             f"checkpoint argument")
    assert ck.read_bytes() == before and sorted(os.listdir(ck.parent)) == ["agent.pt"]
    assert not (tmp_path / "o.pt").exists()


def test_distill_refuses_an_out_that_is_its_source_by_a_hard_link(ck, tmp_path, capsys):
    before = ck.read_bytes()
    os.link(ck, tmp_path / "hard.pt")
    _refused(capsys, _distill(ck, tmp_path / "hard.pt"), f"--out {tmp_path / 'hard.pt'}",
             f"the input {ck} read by the checkpoint argument (the same file)")
    assert ck.read_bytes() == before


def test_distill_refuses_an_output_inside_an_also_labels_folder(ck, tmp_path, capsys):
    old = tmp_path / "old_labels"
    old.mkdir()
    (old / "chunk_00000.npz").write_bytes(b"refused before it is read")
    _refused(capsys, _distill(ck, old / "o.pt", "--also-labels", old),
             f"--out {old / 'o.pt'}: it lies inside the folder of the input {old} read by "
             f"--also-labels")
    _refused(capsys, _distill(ck, tmp_path / "o.pt", "--labels", old, "--also-labels", old),
             f"--labels {old}: it is the input {old} read by --also-labels (the same folder)")
    assert sorted(os.listdir(old)) == ["chunk_00000.npz"]
    assert (old / "chunk_00000.npz").read_bytes() == b"refused before it is read"


# --------------------------------------------------------------------------- spades teacher-records
def test_teacher_records_refuses_a_folder_holding_its_teacher(ck, tmp_path, capsys):
    before = ck.read_bytes()
    _refused(capsys, ["teacher-records", "--teacher", f"checkpoint:{ck}", "--chunks", "1",
                      "--chunk-hands", "1", "--workers", "1", "--out", str(ck.parent)],
             f"--out {ck.parent}: it is a folder holding the input", str(ck), "--teacher")
    assert ck.read_bytes() == before and sorted(os.listdir(ck.parent)) == ["agent.pt"]


def test_teacher_records_refuses_a_merge_inside_its_folder(tmp_path, capsys):
    folder = tmp_path / "recs"
    folder.mkdir()
    (folder / "chunk_00000.npz").write_bytes(b"refused before it is read")
    _refused(capsys, ["teacher-records", "--out", str(folder), "--merge",
                      str(folder / "all.npz")],
             f"--merge {folder / 'all.npz'}: it lies inside the folder of the input {folder} "
             f"read by --out")
    assert sorted(os.listdir(folder)) == ["chunk_00000.npz"]


# --------------------------------------------------------------------------- export, plot
def test_export_and_plot_refuse_their_checkpoint_by_any_spelling(ck, tmp_path, monkeypatch,
                                                                 capsys):
    before = ck.read_bytes()
    monkeypatch.chdir(ck.parent)
    os.symlink(ck, tmp_path / "soft.pt")
    _refused(capsys, ["export", "agent.pt", "--out", "./agent.pt"], "--out ./agent.pt",
             "the input agent.pt (the same file)")
    _refused(capsys, ["plot", str(tmp_path / "soft.pt"), "--out", "agent.pt"], "--out agent.pt",
             f"the input {tmp_path / 'soft.pt'}")
    assert ck.read_bytes() == before


# --------------------------------------------------------------------------- spades play
@pytest.mark.parametrize("what", ["--checkpoint", "--records"])
def test_play_refuses_a_store_that_is_a_file_it_reads(ck, tmp_path, monkeypatch, capsys, what):
    pytest.importorskip("uvicorn")
    pytest.importorskip("fastapi")
    from spades_env.play import cli as play_cli

    def served(*a, **k):  # the app must not get as far as listening
        raise AssertionError("the app was started")

    monkeypatch.setattr(play_cli, "listen", served)
    given = ck
    if what == "--records":
        given = tmp_path / "games.jsonl"
        given.write_text("")
    before = given.read_bytes()
    os.symlink(given, tmp_path / "store.sqlite3")
    store = tmp_path / "store.sqlite3"
    _refused(capsys, ["play", "--no-browser", "--db", str(store), what, str(given)],
             f"--db {store}", f"the input {given} read by {what} (the same file)")
    assert given.read_bytes() == before
