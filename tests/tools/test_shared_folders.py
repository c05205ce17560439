"""Folders shared with other users or runs (``spades_env.locks``; written by
``spades_env.fileio.write_atomic``): a folder's lock never follows a planted symbolic link, a folder that is a link, writable by every user or another user's is
refused, a held folder names its holder, a file system without locks is an ``OSError``, and a
locked folder replaced while in use is never written through."""

import os
import stat

import pytest

import spades_env.fileio as fio
import spades_env.locks as locks
from spades_env.training.checkpoint import save_checkpoint
from tests.helpers import IS_ROOT


def test_a_planted_lock_symlink_is_never_followed_truncated_or_removed(tmp_path):
    victim = tmp_path / "notes.txt"
    victim.write_text("two days of notes\n")
    folder = tmp_path / "run"
    folder.mkdir()
    os.symlink(victim, folder / ".lock")
    with pytest.raises(ValueError, match=r"\.lock is a symbolic link"):
        locks.lock_folder(str(folder))
    assert victim.read_text() == "two days of notes\n"
    assert os.path.islink(folder / ".lock")


def test_a_run_folder_that_is_a_symlink_or_writable_by_all_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / "run")
    with pytest.raises(ValueError, match="is a symbolic link"):
        locks.lock_folder(str(tmp_path / "run"))
    assert os.listdir(elsewhere) == []
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    os.chmod(open_folder, 0o777)
    with pytest.raises(ValueError, match="can be written by every user"):
        locks.lock_folder(str(open_folder))
    assert os.listdir(open_folder) == []


@pytest.mark.skipif(not IS_ROOT, reason="needs root to give a folder to another uid")
def test_a_folder_of_another_user_is_refused(tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir()
    os.chown(folder, 1234, 1234)
    with pytest.raises(ValueError, match="belongs to uid 1234"):
        locks.lock_folder(str(folder))


def test_a_folder_made_under_umask_0_is_not_refused(tmp_path):
    old = os.umask(0)
    try:
        locks.lock_folder(str(tmp_path / "new")).release()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o775


def test_a_held_folder_is_refused_with_its_holder_then_free_again(tmp_path):
    lock = locks.lock_folder(str(tmp_path / "f"))
    text = (tmp_path / "f" / ".lock").read_text()
    assert text.startswith(f"pid {os.getpid()} on ")
    with pytest.raises(locks.FolderInUse, match=f"in use by pid {os.getpid()}"):
        locks.lock_folder(str(tmp_path / "f"))
    lock.release()
    assert not os.path.exists(tmp_path / "f" / ".lock")
    locks.lock_folder(str(tmp_path / "f")).release()


def test_a_file_system_without_locks_is_an_os_error_not_a_busy_folder(tmp_path, monkeypatch):
    import errno
    import fcntl

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(OSError, match=r"cannot lock .*\.lock: No locks available") as e:
        locks.lock_folder(str(tmp_path / "f"))
    assert not isinstance(e.value, ValueError)


def test_a_locked_run_folder_replaced_by_a_link_is_never_written_through(tmp_path):
    """A run locked its folder, which was then renamed away and replaced by a symbolic link to
    another run's folder: the next save stops with an error naming the folder, the other
    folder is untouched (checkpoints, curve.png and label chunks all go through write_atomic)."""
    run, victim = tmp_path / "run", tmp_path / "victim"
    victim.mkdir()
    (victim / "latest.pt").write_bytes(b"theirs")
    lock = locks.lock_folder(str(run))
    try:
        fio.write_atomic(str(run / "curve.png"), b"png")
        ident = locks.locked_identity(str(run))
        os.rename(run, tmp_path / "moved")
        os.symlink(victim, run)
        with pytest.raises(locks.FolderReplaced, match=r"run is no longer the folder this run "
                                                     r"locked: it is now a symbolic link"):
            save_checkpoint(str(run / "latest.pt"), {"eval": []})
        with pytest.raises(ValueError, match="it is now a symbolic link"):
            fio.write_atomic(str(run / "curve.png"), b"png")
        os.unlink(run)
        (tmp_path / "other").mkdir()
        os.rename(tmp_path / "other", run)
        with pytest.raises(locks.FolderReplaced, match="it is now another folder"):
            locks.check_locked(str(run / "chunk_00000.npz"), ident)  # as a labelling worker does
        assert sorted(os.listdir(victim)) == ["latest.pt"]
        assert (victim / "latest.pt").read_bytes() == b"theirs"
    finally:
        lock.release()
    assert locks.locked_identity(str(run)) is None


def test_a_locked_folder_swapped_between_the_check_and_the_rename_is_not_written(tmp_path,
                                                                                   monkeypatch):
    """The folder is renamed away and replaced by a link to another run's folder after
    write_atomic's first check, while the temp file is being written: every step goes through
    the locked folder's descriptor, so the file lands in the locked folder (wherever it went),
    the other folder is untouched, and the write then fails naming the folder."""
    run, victim = tmp_path / "run", tmp_path / "victim"
    victim.mkdir()
    (victim / "latest.pt").write_bytes(b"theirs")
    lock = locks.lock_folder(str(run))
    real_clean = fio.clean_stale_temps

    def swap_then_clean(*args, **kwargs):
        os.rename(run, tmp_path / "moved")
        os.symlink(victim, run)
        return real_clean(*args, **kwargs)

    monkeypatch.setattr(fio, "clean_stale_temps", swap_then_clean)
    try:
        with pytest.raises(locks.FolderReplaced, match="it is now a symbolic link"):
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
