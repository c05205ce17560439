"""Hardening, round 3: files and folders shared with other users or runs, readers of archives and
records that trusted their input, command lines and values checked late, and what was still open
from the round before. Each test failed on the code before the fix."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
import torch

from spades_env import SpadesGame
from spades_env.agents.model import Agent
import spades_env.fileio as fio
import spades_env.records as records
from spades_env.training.checkpoint import save_checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A small stripped checkpoint (plays, cannot be resumed)."""
    torch.manual_seed(0)
    agent = Agent(hidden=[32], head_hidden=16)
    path = tmp_path_factory.mktemp("r3") / "tiny.pt"
    save_checkpoint(str(path), {"config": {"name": "t"}, "model": agent.state_dict(),
                                "model_shape": {"hidden": [32], "head_hidden": 16},
                                "progress": {"iteration": 0}, "eval": []})
    return str(path)


def _teacher_fields(n=2, **over):
    d = {"format": np.array("spades_env.teacher_records"), "version": np.array(1),
         "teacher": np.array("random"), "rules": np.array("standard"),
         "seed": np.arange(n, dtype=np.int64), "scores": np.zeros((n, 2), np.int16),
         "bags": np.zeros((n, 2), np.int8), "moves": np.zeros((n, 56), np.uint8)}
    d.update(over)
    return {k: v for k, v in d.items() if v is not None}


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


# ============================================================================ 1. shared folders
def test_a_planted_lock_symlink_is_never_followed_truncated_or_removed(tmp_path):
    victim = tmp_path / "notes.txt"
    victim.write_text("two days of notes\n")
    folder = tmp_path / "run"
    folder.mkdir()
    os.symlink(victim, folder / ".lock")
    with pytest.raises(ValueError, match=r"\.lock is a symbolic link"):
        fio.lock_folder(str(folder))
    assert victim.read_text() == "two days of notes\n"
    assert os.path.islink(folder / ".lock")


def test_a_run_folder_that_is_a_symlink_or_writable_by_all_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / "run")
    with pytest.raises(ValueError, match="is a symbolic link"):
        fio.lock_folder(str(tmp_path / "run"))
    assert os.listdir(elsewhere) == []
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    os.chmod(open_folder, 0o777)
    with pytest.raises(ValueError, match="can be written by every user"):
        fio.lock_folder(str(open_folder))
    assert os.listdir(open_folder) == []


@pytest.mark.skipif(not IS_ROOT, reason="needs root to give a folder to another uid")
def test_a_folder_of_another_user_is_refused(tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir()
    os.chown(folder, 1234, 1234)
    with pytest.raises(ValueError, match="belongs to uid 1234"):
        fio.lock_folder(str(folder))


def test_a_folder_made_under_umask_0_is_not_refused(tmp_path):
    old = os.umask(0)
    try:
        fio.lock_folder(str(tmp_path / "new")).release()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o775


def test_a_held_folder_is_refused_with_its_holder_then_free_again(tmp_path):
    lock = fio.lock_folder(str(tmp_path / "f"))
    text = (tmp_path / "f" / ".lock").read_text()
    assert text.startswith(f"pid {os.getpid()} on ")
    with pytest.raises(fio.FolderInUse, match=f"in use by pid {os.getpid()}"):
        fio.lock_folder(str(tmp_path / "f"))
    lock.release()
    assert not os.path.exists(tmp_path / "f" / ".lock")
    fio.lock_folder(str(tmp_path / "f")).release()


def test_a_file_system_without_locks_is_an_os_error_not_a_busy_folder(tmp_path, monkeypatch):
    import errno
    import fcntl

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(OSError, match=r"cannot lock .*\.lock: No locks available") as e:
        fio.lock_folder(str(tmp_path / "f"))
    assert not isinstance(e.value, ValueError)


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


def test_a_label_folder_is_held_by_one_labelling_run(tmp_path):
    from spades_env.training.distill import lock_labels
    lock = lock_labels(str(tmp_path / "labels"))
    try:
        with pytest.raises(ValueError, match="is in use by another labelling run"):
            lock_labels(str(tmp_path / "labels"))
    finally:
        lock.release()
    lock_labels(str(tmp_path / "labels")).release()


def test_distill_uses_only_chunks_of_its_own_network(tiny, tmp_path, monkeypatch):
    """A chunk written into the label folder by a run of another network (the race of two runs
    on one folder) is refused when the labels are read, not trained on."""
    import spades_env.training.distill as D
    other = tmp_path / "other.pt"
    torch.manual_seed(1)
    save_checkpoint(str(other), {"config": {"name": "o"},
                                 "model": Agent(hidden=[32], head_hidden=16).state_dict(),
                                 "model_shape": {"hidden": [32], "head_hidden": 16},
                                 "progress": {"iteration": 0}, "eval": []})
    folder = tmp_path / "labels"
    rec = D.label_chunk(str(other), 1, seed=1, chunk=0, samples=2)
    D.save_labels(str(folder / "chunk_00000.npz"), rec, str(other), 2, 1, 0,
                  D.file_sha256(str(other)))
    monkeypatch.setattr(D, "produce_labels", lambda *a, **k: [str(folder / "chunk_00000.npz")])
    with pytest.raises(ValueError, match=r"belongs to another labelling run: checkpoint \(SHA"):
        D.distill_checkpoint(tiny, str(tmp_path / "out.pt"), labels=str(folder), chunks=1,
                             chunk_hands=1, samples=2, seed=1, bid_deals=0, epochs=1, log=None)
    assert not os.path.exists(tmp_path / "out.pt")


def test_distill_checks_its_label_folder_before_any_labelling(tiny, tmp_path, monkeypatch):
    import spades_env.training.distill as D
    monkeypatch.setattr(D, "produce_labels", lambda *a, **k: pytest.fail("labelled first"))
    os.symlink(tmp_path, tmp_path / "labels")
    with pytest.raises(ValueError, match="label folder: .*symbolic link"):
        D.distill_checkpoint(tiny, str(tmp_path / "out.pt"), labels=str(tmp_path / "labels"),
                             log=None)


def test_distill_reads_also_labels_before_any_labelling(tiny, tmp_path, monkeypatch):
    import spades_env.training.distill as D
    monkeypatch.setattr(D, "produce_labels", lambda *a, **k: pytest.fail("labelled first"))
    earlier = tmp_path / "round [1]"         # a glob-like name is a plain name
    earlier.mkdir()
    os.mkfifo(earlier / "chunk_00000.npz")
    with pytest.raises(ValueError, match=r"chunk_00000.npz: not a regular file \(a FIFO\)"):
        D.distill_checkpoint(tiny, str(tmp_path / "out.pt"), also_labels=[str(earlier)],
                             log=None)


@pytest.mark.slow
@pytest.mark.skipif(not IS_ROOT, reason="chattr +i needs root")
def test_distill_refuses_an_unwritable_label_folder_at_once(tiny, tmp_path):
    labels = tmp_path / "labels"
    labels.mkdir()
    if subprocess.run(["chattr", "+i", str(labels)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i not supported here")
    try:
        t = time.time()
        r = _run("-m", "spades_env.training.distill", "--from", tiny, "--out", str(tmp_path / "o.pt"),
                 "--labels", str(labels), "--chunks", "1", "--chunk-hands", "5", "--workers", "1")
        took = time.time() - t
    finally:
        subprocess.run(["chattr", "-i", str(labels)])
    assert r.returncode == 2
    assert f"label folder {labels}" in r.stderr and "chunk_00000" not in r.stderr
    assert took < 60


def test_no_command_writes_over_its_own_input(tiny, tmp_path):
    from spades_env.training.export import main as export_main
    before = open(tiny, "rb").read()
    assert export_main([tiny, tiny]) == 2
    os.link(tiny, tmp_path / "hard.pt")       # the same file under another name
    assert export_main([tiny, str(tmp_path / "hard.pt")]) == 2
    os.symlink(tiny, tmp_path / "soft.pt")
    assert export_main([str(tmp_path / "soft.pt"), tiny]) == 2
    assert open(tiny, "rb").read() == before
    with pytest.raises(ValueError, match="is the input"):
        fio.check_not_input(str(tmp_path / "hard.pt"), [tiny])
    assert fio.check_not_input(str(tmp_path / "new.pt"), [tiny]) == str(tmp_path / "new.pt")


def test_export_in_place_message(tiny, capsys):
    from spades_env.training.export import main as export_main
    assert export_main([tiny, tiny]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: destination {tiny}: it is the input {tiny} (the same file)")


# ============================================================================ 2. checked readers
def _zip(path, members: dict):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def _npy(a) -> bytes:
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def test_npz_with_an_unknown_member_is_refused_before_it_is_inflated(tmp_path):
    p = tmp_path / "bomb.npz"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for k, v in _teacher_fields().items():
            z.writestr(k + ".npy", _npy(v))
        with z.open("junk.npy", "w", force_zip64=True) as f:
            h = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                h, {"descr": "|u1", "fortran_order": False, "shape": (64 << 20,)})
            f.write(h.getvalue())
            for _ in range(4):
                f.write(bytes(16 << 20))
    assert os.path.getsize(p) < 1 << 20
    t = time.time()
    with pytest.raises(ValueError, match=f"{p}: not a teacher-records file: unknown field 'junk'"):
        records.load_hand_records(str(p))
    assert time.time() - t < 1.0


def test_npz_sizes_are_bounded_from_the_directory(tmp_path):
    p = tmp_path / "big.npz"
    np.savez(p, **_teacher_fields(n=1000))
    with pytest.raises(ValueError, match="declare .* bytes uncompressed; a x holds at most 1000"):
        fio.read_npz(str(p), "x", lambda h: ({}, {}), max_bytes=1000)
    # a header that declares more data than the member holds
    good = _npy(np.zeros(10, np.int64))
    forged = good.replace(b"(10,)", b"(99,)")
    _zip(tmp_path / "forged.npz", {"seed.npy": forged})
    with pytest.raises(ValueError, match="field 'seed' declares 792 bytes of data, the member "
                                         "holds 80"):
        fio.read_npz(str(tmp_path / "forged.npz"), "x",
                     lambda h: ({}, {"seed": ((99,), np.int64)}))
    # object arrays are never unpickled
    h = io.BytesIO()
    np.lib.format.write_array_header_1_0(h, {"descr": "|O", "fortran_order": False,
                                             "shape": (2,)})
    _zip(tmp_path / "obj.npz", {"seed.npy": h.getvalue() + bytes(16)})
    with pytest.raises(ValueError, match="field 'seed' holds Python objects"):
        fio.read_npz(str(tmp_path / "obj.npz"), "x", lambda h: ({}, {}))
    # too many members: refused from the directory
    _zip(tmp_path / "many.npz", {f"f{i}.npy": b"" for i in range(fio.MAX_NPZ_MEMBERS + 1)})
    with pytest.raises(ValueError, match=f"{fio.MAX_NPZ_MEMBERS + 1} members; at most"):
        fio.read_npz(str(tmp_path / "many.npz"), "x", lambda h: ({}, {}))
    # members that are not .npy, or named twice
    _zip(tmp_path / "odd.npz", {"notes.txt": b"hi"})
    with pytest.raises(ValueError, match="unexpected member 'notes.txt'"):
        fio.read_npz(str(tmp_path / "odd.npz"), "x", lambda h: ({}, {}))


def test_an_npz_with_a_huge_directory_is_refused_before_zipfile_reads_it(tmp_path, monkeypatch):
    # regression: the member count was checked after zipfile had parsed the whole central
    # directory (a million empty members: 10 s); now the end-of-directory record is read first,
    # also its zip64 form (more than 65,535 members)
    import zipfile
    for n in (fio.MAX_NPZ_MEMBERS + 1, 70_000):
        path = tmp_path / f"many{n}.npz"
        with zipfile.ZipFile(path, "w") as z:
            for i in range(n):
                z.writestr(f"f{i}.npy", b"")

        def parsed(*a, **k):
            raise AssertionError("zipfile parsed the directory")
        with monkeypatch.context() as m:
            m.setattr(zipfile, "ZipFile", parsed)
            with pytest.raises(ValueError, match=f"{n} members; at most {fio.MAX_NPZ_MEMBERS}") \
                    as e:
                fio.read_npz(str(path), "x", lambda h: ({}, {}))
        assert str(path) in str(e.value)


def test_the_npz_fields_are_checked_before_the_data_is_read(tmp_path):
    """A 'values' array declared for more hands than 'seed' says is refused from its header."""
    from spades_env.training.distill import load_labels
    n = 2
    fields = {"format": np.array("spades_env.pimc_labels"), "version": np.array(1),
              "seed": np.arange(n, dtype=np.int64), "scores": np.zeros((n, 2), np.int16),
              "bags": np.zeros((n, 2), np.int8), "moves": np.zeros((n, 56), np.uint8),
              "agent_team": np.zeros(n, np.int8),
              "values": np.full((n + 1, 56, 52), np.nan, np.float16)}
    np.savez(tmp_path / "l.npz", **fields)
    with pytest.raises(ValueError, match=r"l.npz: field 'values' missing or not float16\[2, 56, "
                                         r"52\]"):
        load_labels(str(tmp_path / "l.npz"))
    fields["values"] = np.full((n, 56, 52), np.nan, np.float16)
    fields["seed"] = np.arange(200_001, dtype=np.int64)
    np.savez(tmp_path / "m.npz", **fields)
    with pytest.raises(ValueError, match="field 'seed' declares 200001 records; at most 100000"):
        load_labels(str(tmp_path / "m.npz"))


@pytest.mark.parametrize("case,match", [
    ("no_teacher", "field 'teacher' missing"),
    ("no_rules", "field 'rules' missing"),
    ("version_pair", r"field 'version' must be a single value \(an integer\)"),
    ("version_text", r"field 'version' must be a single value \(an integer\)"),
    ("no_moves", r"field 'moves' missing or not uint8\[2, 56\]"),
    ("bad_move", "field 'moves' holds an action id >= 68"),
    ("negative_bags", "field 'bags' holds a negative bag count"),
    ("blind_nil_rules", "field 'rules': 'house' has Blind Nil"),
    ("unknown_rules", "field 'rules': unknown rules preset 'bogus'"),
])
def test_teacher_records_missing_or_odd_fields_are_value_errors_naming_the_file(tmp_path, case,
                                                                                match):
    over = {"no_teacher": {"teacher": None}, "no_rules": {"rules": None},
            "version_pair": {"version": np.array([1, 1])},
            "version_text": {"version": np.array("one")}, "no_moves": {"moves": None},
            "bad_move": {"moves": np.full((2, 56), 99, np.uint8)},
            "negative_bags": {"bags": np.full((2, 2), -1, np.int8)},
            "blind_nil_rules": {"rules": np.array("house")},
            "unknown_rules": {"rules": np.array("bogus")}}[case]
    p = tmp_path / f"{case}.npz"
    np.savez(p, **_teacher_fields(**over))
    with pytest.raises(ValueError, match=f"^{p}: {match}"):
        records.load_hand_records(str(p))


def test_the_shipped_records_still_load():
    r = records.load_hand_records(os.path.join(ROOT, "checkpoints", "records",
                                               "hard_records.npz"))
    assert r["teacher"] == "hard" and r["moves"].shape == (len(r["seed"]), 56)


def test_special_files_are_refused_without_blocking(tmp_path):
    from spades_env.training.config import load_yaml
    from spades_env.training.distill import load_labels
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    t = time.time()
    for fn in (records.load_hand_records, load_labels, load_yaml,
               records.read_game_record_file, fio.read_regular):
        with pytest.raises(ValueError, match=f"{fifo}: not a regular file \\(a FIFO\\)"):
            fn(str(fifo))
    with pytest.raises(ValueError, match=r"not a regular file \(a folder\)"):
        records.load_hand_records(str(tmp_path))
    with pytest.raises(ValueError, match="no such"):
        records.load_hand_records(str(tmp_path / "missing.npz"))
    assert time.time() - t < 5


def test_a_saved_game_naming_a_base_class_generator_is_a_value_error():
    base = json.loads(SpadesGame(seed=0).to_json())
    for name in ("BitGenerator", "SeedSequence", "Generator", "RandomState", "__class__"):
        for where in ("rng", "initial"):
            d = json.loads(json.dumps(base))
            (d["rng"] if where == "rng" else d["initial"]["rng"])["bit_generator"] = name
            with pytest.raises(ValueError, match=f"unknown bit generator '{name}'"):
                SpadesGame.from_json(json.dumps(d))
    d = json.loads(json.dumps(base))
    d["rng"]["bit_generator"] = "MT19937"      # a real generator with a foreign state
    with pytest.raises(ValueError, match="bad MT19937 rng state"):
        SpadesGame.from_json(json.dumps(d))


def test_a_deeply_nested_jsonl_line_is_a_value_error(tmp_path):
    p = tmp_path / "deep.jsonl"
    good = json.dumps({"format": "x"})
    p.write_text(good + "\n" + "[" * 200_000 + "]" * 200_000 + "\n")
    with pytest.raises(ValueError, match=f"{p}: line 2: invalid JSON \\(nested too deeply\\)"):
        records.read_game_record_file(str(p))
    pytest.importorskip("fastapi")
    from spades_env.play.replay import load_record_file
    with pytest.raises(ValueError, match="line 2: invalid JSON"):
        load_record_file(str(p))


def test_a_game_record_is_written_atomically_and_read_back(tmp_path):
    g = SpadesGame(seed=1)
    records.write_game_record(str(tmp_path / "a.json"), g, ["A", "B", "C", "D"])
    [(d, where)] = records.read_game_record_file(str(tmp_path / "a.json"))
    assert d["players"] == ["A", "B", "C", "D"] and SpadesGame.from_dict(d["game"]).hands == g.hands
    (tmp_path / "b.json").mkdir()
    with pytest.raises(OSError, match=f"could not write {tmp_path / 'b.json'}: Is a directory"):
        records.write_game_record(str(tmp_path / "b.json"), g)
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]


def test_folder_names_are_never_glob_patterns(tmp_path):
    from spades_env.training.teacher_records import merge_folder, save_records
    folder = tmp_path / "run [1]?*"
    folder.mkdir()
    rec = {k: v for k, v in _teacher_fields().items() if k in ("seed", "scores", "bags", "moves")}
    save_records(str(folder / "chunk_00000.npz"), rec, "random")
    save_records(str(folder / "chunk_00001.npz"), rec, "random")
    (folder / "notes.txt").write_text("x")
    assert fio.files_in(str(folder), "chunk_", ".npz") == [str(folder / "chunk_00000.npz"),
                                                      str(folder / "chunk_00001.npz")]
    out = tmp_path / "merged.npz"
    assert merge_folder(str(folder), str(out)) == {"hands": 4, "chunks": 2}
    assert len(records.load_hand_records(str(out))["seed"]) == 4


@pytest.mark.slow
def test_plot_refuses_malformed_eval_entries(tiny, tmp_path):
    from spades_env.training.checkpoint import load_checkpoint
    base = {k: v for k, v in load_checkpoint(tiny).items() if k not in ("format", "version")}
    cases = {"no_decisions": ([{"rows": [{"opponent": "random", "diff": 1.0}]}],
                              "eval: entry 0: decisions must be an integer >= 0"),
             "row_not_mapping": ([{"decisions": 5, "rows": [5]}],
                                 "eval: entry 0: each row needs an opponent name"),
             "entry_not_mapping": ([7], "eval: entry 0 must be a mapping"),
             "nan_bound": ([{"decisions": 5, "rows": [{"opponent": "r", "diff": 1.0,
                                                        "diff_lo": float("nan")}]}],
                           "eval: entry 0: each row needs an opponent name and a finite diff")}
    for name, (ev, match) in cases.items():
        p = str(tmp_path / f"{name}.pt")
        save_checkpoint(p, {**base, "eval": ev})
        r = _run("-m", "spades_env.training.plot", p, str(tmp_path / "c.png"))
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith(f"error: {p}: {match}"), r.stderr
    assert not os.path.exists(tmp_path / "c.png")


# ============================================================================ 5. late checks
@pytest.mark.parametrize("args,match", [
    (["--workers", "0"], r"--workers must be an integer in \[1, 64\], got 0"),
    (["--teacher", "bogus"], "--teacher 'bogus': unknown bot 'bogus'"),
    (["--chunk-hands", "-1"], "--chunk-hands must be an integer"),
    (["--seed", "-1"], "--seed must be an integer"),
    (["--chunks", "0"], r"--chunks must be an integer in \[1, 100000\], got 0"),
    (["--random-start", "nan"], "--random-start must be a number in"),
])
def test_teacher_records_refuses_bad_options_before_any_work(tmp_path, capsys, args, match):
    from spades_env.training.teacher_records import main
    folder = tmp_path / "f"
    base = {"--teacher": "random", "--chunks": "1", "--chunk-hands": "1", "--workers": "1"}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    argv = [x for kv in base.items() for x in kv] + ["--folder", str(folder)]
    assert main(argv) == 2
    import re
    assert re.match(f"error: {match}", capsys.readouterr().err)
    assert not folder.exists()


def test_teacher_records_folder_and_merge_targets(tmp_path, capsys):
    from spades_env.training.teacher_records import main, save_records
    (tmp_path / "afile").write_text("x")
    assert main(["--teacher", "random", "--chunks", "1", "--folder", str(tmp_path / "afile")]) == 2
    assert "--folder" in capsys.readouterr().err
    good = tmp_path / "good"
    rec = {k: v for k, v in _teacher_fields().items() if k in ("seed", "scores", "bags", "moves")}
    save_records(str(good / "chunk_00000.npz"), rec, "random")
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    assert main(["--merge", str(outdir), "--folder", str(good)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["--merge", str(good / "chunk_00000.npz"), "--folder", str(good)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["afile", "good", "outdir"]
    assert sorted(os.listdir(good)) == ["chunk_00000.npz"]
    assert main(["--merge", str(tmp_path / "m.npz"), "--folder", str(tmp_path / "none")]) == 2
    assert "no chunks" in capsys.readouterr().err


@pytest.mark.slow
def test_teacher_records_ctrl_c_is_one_line_and_keeps_the_chunks(tmp_path):
    import signal
    p = subprocess.Popen(
        [sys.executable, "-m", "spades_env.training.teacher_records", "--teacher", "random", "--chunks",
         "1000", "--chunk-hands", "20", "--workers", "1", "--folder", str(tmp_path / "f")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = p.stdout.readline()        # a chunk is done
        assert "chunk_00000.npz" in first
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130 and "Traceback" not in err, err
    assert err.startswith(f"interrupted: the finished chunks are kept in {tmp_path / 'f'}")
    assert "chunk_00000.npz" in os.listdir(tmp_path / "f")
    assert ".lock" not in os.listdir(tmp_path / "f")


def test_teacher_records_refuses_a_chunk_of_another_teacher(tmp_path):
    from spades_env.training.teacher_records import _worker, save_records
    rec = {k: v for k, v in _teacher_fields().items() if k in ("seed", "scores", "bags", "moves")}
    save_records(str(tmp_path / "chunk_00000.npz"), rec, "random")
    with pytest.raises(ValueError, match="belongs to another run .teacher 'random'"):
        _worker(("easy", 2, 7, 0, 0.5, str(tmp_path)))


@pytest.mark.parametrize("device,match", [
    ("mps", "device must be cpu, cuda or cuda:N, got 'mps' .device type 'mps'"),
    ("meta", "device must be cpu, cuda or cuda:N, got 'meta'"),
    ("xpu", "device type 'xpu' is not supported"),
    ("bogus", "device must be a torch device: cpu, cuda or cuda:N, got 'bogus'"),
    (3.5, "device must be a torch device name such as 'cpu' or 'cuda', got float"),
    ("cpu:1", "the CPU device has no index 1"),
])
def test_one_device_check_everywhere(tmp_path, device, match):
    from spades_env.bots.checkpoint_bot import CheckpointBot
    from spades_env.devices import check_device
    from spades_env.vector import SpadesVectorEnv
    from spades_env.training.config import check_ready, from_dict
    with pytest.raises(ValueError, match=match):
        check_device(device)
    with pytest.raises(ValueError, match=match):
        SpadesVectorEnv(2, device=device)
    # the device is checked before the file: a missing file is not what is reported
    with pytest.raises(ValueError, match=match):
        CheckpointBot(str(tmp_path / "missing.pt"), device=device)
    from spades_env.agents.checkpoint import build_agent
    with pytest.raises(ValueError, match=match):
        build_agent({}, device)
    if isinstance(device, str):
        with pytest.raises(ValueError, match="bad config: device"):
            check_ready(from_dict({"device": device, "bc_teacher": ""}))


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
def test_cuda_without_cuda_is_refused_up_front(tiny):
    from spades_env.bots.checkpoint_bot import CheckpointBot
    from spades_env.vector import SpadesVectorEnv
    for dev in ("cuda", "cuda:7"):
        with pytest.raises(ValueError, match=f"device '{dev}': CUDA is not available"):
            SpadesVectorEnv(2, device=dev)
        with pytest.raises(ValueError, match=f"device '{dev}': CUDA is not available"):
            CheckpointBot(tiny, device=dev)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_index_beyond_the_devices_is_refused_up_front():
    from spades_env.devices import check_device
    from spades_env.vector import SpadesVectorEnv
    n = torch.cuda.device_count()
    with pytest.raises(ValueError, match=f"device 'cuda:{n}': this machine has {n} CUDA"):
        SpadesVectorEnv(2, device=f"cuda:{n}")
    assert check_device("cuda:0") == torch.device("cuda:0")


def test_a_config_that_sets_a_field_twice_is_refused(tmp_path):
    from spades_env.training.config import apply_overrides, Args, load_yaml
    p = tmp_path / "dup.yaml"
    p.write_text("name: dup\nlr: 0.0001\ntotal_decisions: 1000\nlr: 0.5\n")
    with pytest.raises(ValueError, match=f"^{p}: field 'lr' is set twice \\(lines 2 and 4\\)$"):
        load_yaml(str(p))
    with pytest.raises(ValueError, match="field 'a' is set twice"):
        apply_overrides(Args(), ["eval_opponents={a: 1, a: 2}"])


@pytest.mark.parametrize("fill", [0.0, np.nan, np.inf, -np.inf])
def test_decode_refuses_vectors_that_are_no_observation(fill):
    from spades_env.observation import OBS_SIZE, decode
    with pytest.raises(ValueError, match="not an observation"):
        decode(np.full(OBS_SIZE, fill))


def test_decode_still_reads_real_observations():
    from spades_env.observation import OBS_SIZE, decode, encode
    g = SpadesGame(seed=3)
    row = np.zeros(OBS_SIZE, np.float32)
    encode(g.view(g.current_player), row)
    d = decode(row)
    assert d["bids"] == [(None, False)] * 4 and len(d["hand"]) == 13


# ============================================================================ 6. still open
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


def test_step_before_reset_is_a_clear_error():
    from spades_env import spades_v1
    from spades_env.integrations import TurnCreditWrapper
    for env, who in ((spades_v1.raw_env(), "raw_env"),
                     (TurnCreditWrapper(spades_v1.env()), "TurnCreditWrapper")):
        with pytest.raises(spades_v1.ResetNeededError,
                           match=f"{who}: reset\\(\\) needs to be called before step\\(\\)") as e:
            env.step(55)
        assert isinstance(e.value, AssertionError) and isinstance(e.value, RuntimeError)


def test_scalar_batch_env_step_before_reset_is_the_vector_envs_error():
    from spades_env.vector import SpadesVectorEnv
    from spades_env.training.envs import ScalarBatchEnv
    for env in (ScalarBatchEnv(2, seed=0), SpadesVectorEnv(2, seed=0)):
        with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
            env.step(np.array([55, 55]))


@pytest.mark.parametrize("actions", [np.array([55.9, 55.2]), [55.0, 55.0], ["55", "55"],
                                     np.array([True, True]), torch.tensor([55.5, 55.5])])
def test_scalar_batch_env_refuses_non_integer_actions(actions):
    from spades_env.training.envs import ScalarBatchEnv
    env = ScalarBatchEnv(2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match="actions must be integer action ids"):
        env.step(actions)
    assert [g.moves for g in env.games] == [[], []]
    env.step(np.array([55, 55]))
    assert [g.moves for g in env.games] == [[55], [55]]


# ============================================================================ round 3, break-it 30
def test_checkpoint_sharing_one_list_2_ways_40_deep_is_refused_at_once(tmp_path, tiny):
    """A 3 KB pickle whose memo shares one list two ways at each of 40 levels is 2**40 paths:
    check_tensors stops at MAX_NODES values walked and names the file."""
    from spades_env.agents.checkpoint import load_checkpoint
    data = torch.load(tiny, weights_only=True)
    x = []
    for _ in range(40):
        x = [x, x]
    data["eval"] = x
    p = tmp_path / "bomb.pt"
    torch.save(data, str(p))
    t = time.time()
    with pytest.raises(ValueError, match=r"bomb\.pt: corrupt checkpoint: more than 200000 values"):
        load_checkpoint(str(p))
    assert time.time() - t < 5


def test_a_locked_run_folder_replaced_by_a_link_is_never_written_through(tmp_path):
    """A run locked its folder, which was then renamed away and replaced by a symbolic link to
    another run's folder: the next save stops with an error naming the folder, the other
    folder is untouched (checkpoints, curve.png and label chunks all go through write_atomic)."""
    run, victim = tmp_path / "run", tmp_path / "victim"
    victim.mkdir()
    (victim / "latest.pt").write_bytes(b"theirs")
    lock = fio.lock_folder(str(run))
    try:
        fio.write_atomic(str(run / "curve.png"), b"png")
        ident = fio.locked_identity(str(run))
        os.rename(run, tmp_path / "moved")
        os.symlink(victim, run)
        with pytest.raises(fio.FolderReplaced, match=r"run is no longer the folder this run "
                                                     r"locked: it is now a symbolic link"):
            save_checkpoint(str(run / "latest.pt"), {"eval": []})
        with pytest.raises(ValueError, match="it is now a symbolic link"):
            fio.write_atomic(str(run / "curve.png"), b"png")
        os.unlink(run)
        (tmp_path / "other").mkdir()
        os.rename(tmp_path / "other", run)
        with pytest.raises(fio.FolderReplaced, match="it is now another folder"):
            fio.check_locked(str(run / "chunk_00000.npz"), ident)  # as a labelling worker does
        assert sorted(os.listdir(victim)) == ["latest.pt"]
        assert (victim / "latest.pt").read_bytes() == b"theirs"
    finally:
        lock.release()
    assert fio.locked_identity(str(run)) is None


def test_a_locked_folder_swapped_between_the_check_and_the_rename_is_not_written(tmp_path,
                                                                                   monkeypatch):
    """The folder is renamed away and replaced by a link to another run's folder after
    write_atomic's first check, while the temp file is being written: every step goes through
    the locked folder's descriptor, so the file lands in the locked folder (wherever it went),
    the other folder is untouched, and the write then fails naming the folder."""
    run, victim = tmp_path / "run", tmp_path / "victim"
    victim.mkdir()
    (victim / "latest.pt").write_bytes(b"theirs")
    lock = fio.lock_folder(str(run))
    real_clean = fio.clean_stale_temps

    def swap_then_clean(*args, **kwargs):
        os.rename(run, tmp_path / "moved")
        os.symlink(victim, run)
        return real_clean(*args, **kwargs)

    monkeypatch.setattr(fio, "clean_stale_temps", swap_then_clean)
    try:
        with pytest.raises(fio.FolderReplaced, match="it is now a symbolic link"):
            fio.write_atomic(str(run / "latest.pt"), b"ours")
        assert sorted(os.listdir(victim)) == ["latest.pt"]
        assert (victim / "latest.pt").read_bytes() == b"theirs"
        assert (tmp_path / "moved" / "latest.pt").read_bytes() == b"ours"
        assert not [n for n in os.listdir(tmp_path / "moved") if n.startswith(".tmp_")]
    finally:
        lock.release()


def test_write_atomic_in_an_unlocked_folder_still_follows_a_linked_folder(tmp_path):
    """Only locked folders are pinned: a user's own output path through a symbolic link to a
    folder is written as before."""
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    fio.write_atomic(str(tmp_path / "link" / "out.json"), b"{}")
    assert (tmp_path / "real" / "out.json").read_bytes() == b"{}"
    with pytest.raises(fio.WriteError, match=r"could not write .*real: Is a directory"):
        fio.write_atomic(str(tmp_path / "real"), b"{}")


@pytest.mark.parametrize("field, value, message", [
    ("bags", np.full((2, 2), 50, np.int8), r"field 'bags' holds a bag count of 50; the rules' "
                                          r"bag_limit is 10"),
    ("bags", np.full((2, 2), 10, np.int8), r"field 'bags' holds a bag count of 10"),
    ("seed", np.array([3, -1], np.int64), r"field 'seed' holds a negative seed \(-1\)")])
def test_teacher_records_and_labels_refuse_bags_at_the_limit_and_negative_seeds(
        tmp_path, field, value, message):
    p = tmp_path / "r.npz"
    np.savez(p, **_teacher_fields(**{field: value}))
    with pytest.raises(ValueError, match=r"r\.npz: " + message):
        records.load_hand_records(str(p))
    d = {k: v for k, v in _teacher_fields(**{field: value}).items()
         if k in ("seed", "bags", "moves")}
    with pytest.raises(ValueError, match=r"labels\.npz: " + message):  # the label files' check
        records.check_hand_values(d, "labels.npz")


def test_parse_json_names_the_file_and_line_of_a_number_too_long():
    with pytest.raises(ValueError, match=r"^games\.jsonl: line 1: invalid JSON \(Exceeds the "
                                         r"limit \(4300 digits\)"):
        fio.parse_json('{"version": ' + "1" * 5000 + "}", "games.jsonl: line 1")


def test_parallel_env_misuse_gets_the_aec_envs_clear_errors():
    import warnings
    from spades_env import spades_v1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(spades_v1.ResetNeededError,
                           match=r"parallel_env\(\): reset\(\) needs to be called before step"):
            spades_v1.parallel_env().step({"player_0": 1})
        p = spades_v1.parallel_env()
        p.reset(seed=0)
        with pytest.raises(ValueError, match="the actions lack 'player_0', the agent to act"):
            p.step({})
        with pytest.raises(ValueError, match=r"unknown agents \['bob'\].*'player_0' is to act"):
            p.step({"bob": 1, "player_0": 56})
        with pytest.raises(ValueError, match=r"takes a dict of actions by agent \(with "
                                             r"'player_0', the agent to act\), got list"):
            p.step([56, 56, 56, 56])
        legal = np.flatnonzero(p.aec_env.observe("player_0")["action_mask"])
        obs, rew, term, trunc, info = p.step({"player_0": int(legal[0])})
        assert info["player_0"]["active_agent"] == "player_1"


def test_play_db_whose_folder_cannot_be_created_is_one_error_line(tmp_path):
    from spades_env.play.store import Store
    (tmp_path / "afile").write_text("")
    db = str(tmp_path / "afile" / "x.sqlite3")
    with pytest.raises(ValueError, match=r"x\.sqlite3: cannot create its folder .*afile: "):
        Store(db)
    r = _run("-m", "spades_env", "play", "--no-browser", "--port", "8131", "--db", db)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == [f"error: {db}: cannot create its folder "
                                             f"{tmp_path / 'afile'}: File exists"]


def test_distill_refuses_an_also_labels_folder_given_twice_or_its_own(tmp_path, tiny):
    from spades_env.training.distill import distill_checkpoint
    l1, own = tmp_path / "l1", tmp_path / "own"
    for f in (l1, own):
        f.mkdir()
        (f / "chunk_00000.npz").write_bytes(b"not read: refused before")
    os.symlink(l1, tmp_path / "alias")
    out = str(tmp_path / "out.pt")
    kw = dict(labels=str(own), minutes=0.1, chunks=1, chunk_hands=2, samples=2, workers=1)
    for twice, message in (
            ([str(l1), str(tmp_path / "alias")], r"alias' is the folder already given as "
                                                 r"--also-labels '.*l1'"),
            ([str(l1), f"{l1}/../l1"], r"l1/\.\./l1' is the folder already given"),
            ([str(own)], r"own' is this run's own --labels folder")):
        with pytest.raises(ValueError, match=message):
            distill_checkpoint(tiny, out, also_labels=twice, **kw)
    os.link(l1 / "chunk_00000.npz", tmp_path / "chunk_00000.npz")  # a chunk by another name
    with pytest.raises(ValueError, match=r"chunk_00000\.npz' is already read as '.*l1/chunk_"):
        distill_checkpoint(tiny, out, also_labels=[str(l1), str(tmp_path)], **kw)


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
