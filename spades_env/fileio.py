"""Atomic file writes and output-target checks, shared by the arena and the training tools.

- ``write_atomic(path, data)``: the bytes land at ``path`` completely or not at all. On Linux the
  data goes first into an unnamed file (``O_TMPFILE``) in the target folder, which the kernel frees
  if the process is killed, and is given a name only once it is complete and flushed; elsewhere a
  hidden temp file named after the writing process (``<prefix><pid>_<random><suffix>``) is used,
  and temp files of dead processes are removed by the next write to the folder
  (``clean_stale_temps``). Either way the file is created with mode ``0o666`` less the umask (like
  any file the user makes) and renamed over ``path`` with ``os.replace``.
- ``check_output_file(path)``: before any long work, make sure ``path`` can be written: not a
  folder, not a name ending in a separator, an existing folder we can create files in (probed by
  creating and removing a temp file, which also catches read-only file systems).

Errors: ``write_atomic`` raises ``WriteError`` (an ``OSError``) whose message names the path and
the reason ("No space left on device", "File too large", "Is a directory"...);
``check_output_file`` raises ``ValueError`` with such a message.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import time

__all__ = ["write_atomic", "check_output_file", "clean_stale_temps", "WriteError",
           "STALE_SECONDS"]


class WriteError(OSError):
    """A failed write: ``errno`` is the system's reason, ``str()`` is ``could not write PATH:
    REASON`` (one line, for the user)."""

    def __str__(self) -> str:
        return str(self.strerror)

STALE_SECONDS = 60.0
"""a temp file untouched this long whose process is gone is stale (``clean_stale_temps``)."""


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # exists (another user's) or cannot tell: keep the file
    return True


def clean_stale_temps(folder: str, prefix: str, suffix: str) -> list[str]:
    """Remove temp files ``<prefix>...<suffix>`` in ``folder`` left by killed writers.

    A file is stale when it was not modified for ``STALE_SECONDS`` and the process whose id is in
    its name (``<prefix><pid>_...``) no longer exists; a name without a process id (older versions)
    only needs the age. Files that cannot be removed are left alone. Returns the removed names.
    """
    removed = []
    try:
        entries = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for name in entries:
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        full = os.path.join(folder, name)
        try:
            st = os.lstat(full)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or now - st.st_mtime < STALE_SECONDS:
            continue
        head = name[len(prefix):].split("_", 1)[0]
        if head.isdigit() and "_" in name[len(prefix):] and _pid_alive(int(head)):
            continue
        try:
            os.unlink(full)
            removed.append(name)
        except OSError:
            pass
    return removed


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while len(view):
        n = os.write(fd, view)
        view = view[n:]


def _named_temp(folder: str, prefix: str, suffix: str) -> tuple[int, str]:
    for _ in range(100):
        tmp = os.path.join(folder, f"{prefix}{os.getpid()}_{secrets.token_hex(6)}{suffix}")
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0),
                         0o666)
            return fd, tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not find a free temp file name", folder)


def _unnamed_temp(folder: str) -> int | None:
    """An ``O_TMPFILE`` descriptor in ``folder`` (Linux, supporting file systems), else None."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # the file system (or an old kernel) has no O_TMPFILE: use a named temp
        raise


_tmpfile_ok = True  # set False once naming an O_TMPFILE file failed in this process


def _link_unnamed(fd: int, folder: str, prefix: str, suffix: str) -> str:
    """Give the ``O_TMPFILE`` file ``fd`` a hidden name in ``folder`` (linkat through /proc: a
    ``src_dir_fd`` makes Python call ``linkat`` with ``AT_SYMLINK_FOLLOW``, not ``link``)."""
    dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for _ in range(100):
            cand = os.path.join(folder, f"{prefix}{os.getpid()}_{secrets.token_hex(6)}{suffix}")
            try:
                os.link(f"/proc/self/fd/{fd}", cand, src_dir_fd=dfd, follow_symlinks=True)
                return cand
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "could not find a free temp file name", folder)
    finally:
        os.close(dfd)


def _write_temp(folder: str, data, prefix: str, suffix: str) -> str:
    """Write ``data`` into a complete, flushed hidden temp file in ``folder``; return its name."""
    global _tmpfile_ok
    fd = _unnamed_temp(folder) if _tmpfile_ok else None
    if fd is not None:
        try:
            _write_all(fd, data)
            os.fsync(fd)
            try:
                return _link_unnamed(fd, folder, prefix, suffix)
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                    raise
                _tmpfile_ok = False  # no linkat through /proc here: named temp files from now on
        finally:
            os.close(fd)
    fd, tmp = _named_temp(folder, prefix, suffix)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    return tmp


def write_atomic(path: str, data, prefix: str = ".tmp_", suffix: str = ".tmp",
                 create_folder: bool = False) -> None:
    """Write the bytes ``data`` to ``path`` atomically (see the module docstring).

    Args:
        create_folder: create ``path``'s folder (and its parents) first if missing.
    Raises:
        WriteError (an ``OSError``): the folder is missing (or cannot be created) or not
            writable, ``path`` is a folder, the disk is full, a file-size limit... The message is
            ``could not write PATH: REASON``; nothing is left behind (no partial file, no temp
            file).
    """
    folder = os.path.dirname(os.path.abspath(path))
    if create_folder:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise WriteError(e.errno, f"could not write {path}: cannot create {folder}: "
                                      f"{e.strerror or e}") from None
    tmp = None
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        clean_stale_temps(folder, prefix, suffix)
        tmp = _write_temp(folder, data, prefix, suffix)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        reason = e.strerror or str(e)
        raise WriteError(e.errno, f"could not write {path}: {reason}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def check_output_file(path: str, what: str = "output file", create_folder: bool = False) -> str:
    """Check before any long work that ``path`` can be written by ``write_atomic``.

    Args:
        path: the file to be written (it may exist: it will be replaced).
        what: how to name it in messages (e.g. ``"--json"``).
        create_folder: create a missing parent folder (else a missing folder is an error).
    Returns:
        ``path``.
    Raises:
        ValueError: an empty name, a name ending in a path separator, an existing folder or
            non-regular file at ``path``, a missing folder, or a folder where no file can be
            created (permissions, read-only file system); the message names ``path``.
    """
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError(f"{what}: {path!r} is not a file name")
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise ValueError(f"{what} {path}: names a folder, not a file")
    if os.path.isdir(path):
        raise ValueError(f"{what} {path}: is a folder, not a file")
    if os.path.lexists(path) and not os.path.isfile(path):
        raise ValueError(f"{what} {path}: exists and is not a regular file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        if not create_folder:
            raise ValueError(f"{what} {path}: no such folder {folder}")
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise ValueError(f"{what} {path}: cannot create folder {folder}: "
                             f"{e.strerror or e}") from None
    try:  # the real test: can a file be created there (permissions, read-only mounts, /proc)?
        fd, tmp = _named_temp(folder, ".probe_", ".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise ValueError(f"{what} {path}: cannot write in {folder}: {e.strerror or e}") from None
    return path
