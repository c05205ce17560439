"""Folder locks: a folder shared with other runs or users, locked for one writer.

- ``lock_folder(folder)``: creates the folder if missing and locks it (``fcntl.flock`` on a lock
  file whose text says who holds it); never through a symbolic link, owned by this user, not
  writable by others (``folder_problem`` says why a folder must not be used). ``FolderInUse`` when
  another process holds it.
- While a lock is held, ``fileio.write_atomic`` writes through the locked folder's own descriptor
  (``held_folder_fd``) and checks first that the path still leads to it (``check_locked``;
  ``FolderReplaced`` when it was moved or replaced).
"""

from __future__ import annotations

import errno
import os
import stat
import time
import weakref

__all__ = ["lock_folder", "folder_problem", "FolderLock", "FolderInUse", "FolderReplaced",
           "locked_identity", "check_locked", "held_folder_fd"]

class FolderInUse(ValueError):
    """``lock_folder``: another process holds the folder's lock; ``holder`` is its text (``pid N
    on HOST since ...``)."""

    def __init__(self, folder: str, holder: str):
        super().__init__(f"{folder} is in use by {holder}")
        self.folder, self.holder = folder, holder


class FolderReplaced(ValueError):
    """``check_locked``: a folder this process locked was moved, removed or replaced (by another
    folder or a symbolic link) since; nothing more is written there."""


_locked: dict[str, tuple[int, int]] = {}  # absolute path -> (st_dev, st_ino) of held locks
_lock_fds: "weakref.WeakValueDictionary[str, FolderLock]" = weakref.WeakValueDictionary()
"""absolute path -> the held lock, whose folder descriptor ``write_atomic`` writes through."""


def locked_identity(folder: str) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of ``folder`` as recorded when this process locked it
    (``lock_folder``), or None when this process holds no lock on that path."""
    return _locked.get(os.path.abspath(folder))


def held_folder_fd(folder: str) -> int | None:
    """The descriptor of the absolute path ``folder`` as this process locked it (``lock_folder``),
    or None when it holds no lock there; the caller duplicates it, never closes it."""
    lock = _lock_fds.get(folder)
    return lock._dfd if lock is not None else None


def check_locked(path: str, identity: tuple[int, int] | None = None) -> None:
    """Before writing ``path``: when its folder is one this process locked (``lock_folder``; or
    ``identity``, the ``(st_dev, st_ino)`` given by ``locked_identity`` in the process that
    locked it), check that the path still leads to that very folder: not a symbolic link
    (never followed), same device and inode. Other folders are not checked.

    Raises:
        FolderReplaced (a ``ValueError``): naming the folder and what became of it.
    """
    folder = os.path.dirname(os.path.abspath(path))
    want = identity if identity is not None else _locked.get(folder)
    if want is None:
        return
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError as e:
        why = f"it is gone ({e.strerror or e})"
    else:
        if stat.S_ISLNK(st.st_mode):
            why = "it is now a symbolic link (not followed)"
        elif (st.st_dev, st.st_ino) != tuple(want):
            why = "it is now another folder"
        else:
            return
    raise FolderReplaced(f"{folder} is no longer the folder this run locked: {why}; it was "
                         f"moved or replaced while the run held it, so nothing more is written "
                         f"there")


class FolderLock:
    """A held ``lock_folder`` lock: ``release()`` (idempotent) removes the lock file and frees
    the lock; a killed process's lock is freed by the kernel (the next run takes it)."""

    def __init__(self, folder: str, name: str, fd: int | None, dfd: int | None,
                 identity: tuple[int, int] | None = None):
        self.folder, self.name, self._fd, self._dfd = folder, name, fd, dfd
        self.identity = identity  # (st_dev, st_ino) of the folder locked (``check_locked``)
        if identity is not None:
            _locked[os.path.abspath(folder)] = identity
        if dfd is not None:
            _lock_fds[os.path.abspath(folder)] = self

    @property
    def held(self) -> bool:
        """True until ``release``."""
        return self._fd is not None or self._dfd is not None

    def release(self) -> None:
        """Remove the lock file (only if it is still this lock's file) and release the lock."""
        fd, dfd, self._fd, self._dfd = self._fd, self._dfd, None, None
        key = os.path.abspath(self.folder)
        if self.identity is not None and _locked.get(key) == self.identity:
            del _locked[key]
        if _lock_fds.get(key) is self:
            del _lock_fds[key]
        if fd is not None and dfd is not None:
            try:  # unlinked while still held: a run that opened it meanwhile re-checks
                if os.path.samestat(os.fstat(fd), os.stat(self.name, dir_fd=dfd,
                                                          follow_symlinks=False)):
                    os.unlink(self.name, dir_fd=dfd)
            except OSError:
                pass
        for d in (fd, dfd):
            if d is not None:
                try:
                    os.close(d)  # closing the descriptor releases the flock
                except OSError:
                    pass

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 - at interpreter exit the module globals may be gone
            pass

    def __repr__(self) -> str:
        return f"FolderLock({self.folder!r}, held={self.held})"


def _folder_problem(st, folder: str) -> str | None:
    """Why the folder with ``lstat`` result ``st`` must not be used, or None."""
    if stat.S_ISLNK(st.st_mode):
        return f"{folder} is a symbolic link; a run's folder must be a real folder (not followed)"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} exists and is not a folder"
    if hasattr(os, "getuid"):
        if st.st_uid != os.getuid():
            return f"{folder} belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})"
        if st.st_mode & 0o002:
            return (f"{folder} can be written by every user (mode {stat.S_IMODE(st.st_mode):o}); "
                    f"make it private with chmod o-w")
    return None


def folder_problem(folder: str) -> str | None:
    """Why the existing ``folder`` must not be written by a run (a symbolic link, not a folder,
    another user's, writable by every user), or None (also for a missing or unreachable folder,
    whose creation then reports the reason)."""
    try:
        st = os.lstat(folder)
    except OSError:  # missing, or unreachable: creating or writing it reports the reason
        return None
    return _folder_problem(st, folder)


def lock_folder(folder: str, name: str = ".lock") -> FolderLock:
    """Create ``folder`` if missing and lock it for this process (``fcntl.flock`` on
    ``folder/name``, whose text says who holds it).

    The folder must be safe to share a machine with: not a symbolic link (never followed), owned
    by this user, not writable by every user; the lock file is opened with ``O_NOFOLLOW`` (a
    planted link is never followed, truncated or removed) and must be a regular file of this
    user. Without ``fcntl`` (not POSIX) the checks are made and nothing is locked.

    The folder's device and inode are recorded: until ``release``, every ``write_atomic`` into it
    first checks (``check_locked``) that the path still leads to that folder, so a folder renamed
    away and replaced (by a symbolic link to another run's folder...) is never written.

    Returns:
        the held ``FolderLock``.
    Raises:
        FolderInUse (a ``ValueError``): another process holds the lock.
        ValueError: an unsafe folder or lock file (the message names it and why).
        OSError: the folder cannot be created or opened.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX (tests/vector/test_native_kernel.py simulates it)
        fcntl = None
    _create_checked(folder)
    if fcntl is None:
        return FolderLock(folder, name, None, None)
    dfd = _open_folder(folder)
    try:
        why = _folder_problem(os.fstat(dfd), folder)  # the folder opened is the one checked
        if why:
            raise ValueError(why)
        fd = _lock_file(fcntl, dfd, folder, name)
        _write_holder(fd)
        dst = os.fstat(dfd)
        return FolderLock(folder, name, fd, dfd, (dst.st_dev, dst.st_ino))
    except BaseException:
        os.close(dfd)
        raise


def _create_checked(folder: str) -> None:
    """``lock_folder``'s first step: create ``folder`` (and its parent) if missing and refuse it
    with a ``ValueError`` when unsafe (``_folder_problem``); ``OSError`` when it cannot be
    reached."""
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(folder, 0o775)  # never writable by all, even under umask 0
    except FileExistsError:
        pass
    try:
        st = os.lstat(folder)
    except OSError as e:
        raise OSError(e.errno, f"cannot use {folder}: {e.strerror or e}") from None
    why = _folder_problem(st, folder)
    if why:
        raise ValueError(why)


def _open_folder(folder: str) -> int:
    """A descriptor of ``folder`` itself, never through a symbolic link (``ValueError`` for a
    link or a non-folder)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(folder, flags)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ValueError(f"{folder} is a symbolic link or not a folder") from None
        raise


def _lock_file(fcntl, dfd: int, folder: str, name: str) -> int:
    """Open the lock file ``name`` in the folder open as ``dfd`` (never through a link; a regular
    file of this user) and lock it, retrying while its holder removes it; returns its descriptor.
    ``FolderInUse`` when another process holds it."""
    lock_path = os.path.join(folder, name)
    for _ in range(100):
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0),
                         0o644, dir_fd=dfd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ValueError(f"{lock_path} is a symbolic link (planted?): not followed; "
                                 f"remove it or use another folder") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (hasattr(os, "getuid")
                                            and st.st_uid != os.getuid()):
            os.close(fd)
            raise ValueError(f"{lock_path} is not a regular file of this user (uid "
                             f"{st.st_uid}); remove it or use another folder")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)  # no locks on this file system (ENOLCK...): say so
                raise OSError(e.errno, f"cannot lock {lock_path}: {e.strerror or e}") \
                    from None
            try:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
            except OSError:
                holder = ""
            os.close(fd)
            raise FolderInUse(folder, holder or "another process") from None
        try:  # the file may have been removed by the process that held it before us
            same = os.path.samestat(st, os.stat(name, dir_fd=dfd, follow_symlinks=False))
        except OSError:
            same = False
        if same:
            return fd
        os.close(fd)
    raise OSError(errno.EAGAIN,  # pragma: no cover
                  f"cannot lock {folder}: the lock file keeps changing")


def _write_holder(fd: int) -> None:
    """Write who holds the lock (``pid N on HOST since ...``) into the lock file ``fd``; best
    effort."""
    try:
        import socket
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since "
                      f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
    except OSError:
        pass
