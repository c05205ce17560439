"""Atomic file writes, output-target checks and a command's standard output, shared by the
arena, the play app and the training tools (the checked readers of untrusted files are
``spades_env.readers``, folder locks ``spades_env.locks``).

- ``write_atomic(path, data)``: the bytes land at ``path`` completely or not at all. On Linux the
  data goes first into an unnamed file (``O_TMPFILE``) in the target folder, which the kernel frees
  if the process is killed, and is given a name only once it is complete and flushed; elsewhere a
  hidden temp file named after the writing process (``<prefix><pid>_<random><suffix>``) is used,
  and temp files of dead processes are removed by the next write to the folder
  (``clean_stale_temps``). Either way the file is created with mode ``0o666`` less the umask (like
  any file the user makes) and renamed over ``path`` with ``os.replace``. Into a folder this
  process locked (``locks.lock_folder``) it writes through the lock's own descriptor, after
  checking that the path still leads there (``locks.check_locked``).
- ``check_output_file(path)``: before any long work, make sure ``path`` can be written: not a
  folder, not a name ending in a separator, an existing folder we can create files in (probed by
  creating and removing a temp file, which also catches read-only file systems).
- ``check_outputs_apart(outputs, inputs)`` (and ``check_not_input``): before any work, refuse an
  output that is, holds or lies inside a file or folder the command reads (any spelling, symbolic
  or hard link), with one line naming both.
- ``files_in(folder, prefix, suffix)``: the entries ``PREFIX*SUFFIX`` of a folder, sorted by name.
- ``quiet_broken_pipe``: a command's standard output whose reader has gone (``spades arena ... |
  head -1``) drops the rest of the text instead of raising ``BrokenPipeError``; the work goes on.

Errors: ``write_atomic`` raises ``WriteError`` (an ``OSError``) whose message names the path and
the reason ("No space left on device", "File too large", "Is a directory"...);
``check_output_file`` raises ``ValueError`` with such a message.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
import time

from .locks import check_locked, held_folder_fd

__all__ = ["write_atomic", "check_output_file", "clean_stale_temps", "WriteError",
           "STALE_SECONDS", "check_not_input", "check_outputs_apart", "files_in",
           "quiet_broken_pipe"]


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


def clean_stale_temps(folder: str, prefix: str, suffix: str, dir_fd: int | None = None) \
        -> list[str]:
    """Remove temp files ``<prefix>...<suffix>`` in ``folder`` left by killed writers.

    A file is stale when it was not modified for ``STALE_SECONDS`` and the process whose id is in
    its name (``<prefix><pid>_...``) no longer exists; a name without a process id (older versions)
    only needs the age. Files that cannot be removed are left alone. Returns the removed names.
    With ``dir_fd`` (a descriptor of ``folder``) the folder is read and changed through it.
    """
    removed = []
    try:
        entries = os.listdir(folder if dir_fd is None else dir_fd)
    except OSError:
        return removed
    now = time.time()
    for name in entries:
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        full = name if dir_fd is not None else os.path.join(folder, name)
        try:
            st = os.stat(full, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or now - st.st_mtime < STALE_SECONDS:
            continue
        head = name[len(prefix):].split("_", 1)[0]
        if head.isdigit() and "_" in name[len(prefix):] and _pid_alive(int(head)):
            continue
        try:
            os.unlink(full, dir_fd=dir_fd)
            removed.append(name)
        except OSError:
            pass
    return removed


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while len(view):
        n = os.write(fd, view)
        view = view[n:]


def _named_temp(dfd: int, prefix: str, suffix: str) -> tuple[int, str]:
    for _ in range(100):
        tmp = f"{prefix}{os.getpid()}_{secrets.token_hex(6)}{suffix}"
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0),
                         0o666, dir_fd=dfd)
            return fd, tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not find a free temp file name")


def _unnamed_temp(dfd: int) -> int | None:
    """An ``O_TMPFILE`` descriptor in the folder open as ``dfd`` (Linux, supporting file systems),
    else None."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(".", flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o666, dir_fd=dfd)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # the file system (or an old kernel) has no O_TMPFILE: use a named temp
        raise


_tmpfile_ok = True  # set False once naming an O_TMPFILE file failed in this process


def _link_unnamed(fd: int, dfd: int, prefix: str, suffix: str) -> str:
    """Give the ``O_TMPFILE`` file ``fd`` a hidden name in the folder open as ``dfd`` (linkat
    through /proc: a ``src_dir_fd`` makes Python call ``linkat`` with ``AT_SYMLINK_FOLLOW``)."""
    for _ in range(100):
        cand = f"{prefix}{os.getpid()}_{secrets.token_hex(6)}{suffix}"
        try:
            os.link(f"/proc/self/fd/{fd}", cand, src_dir_fd=dfd, dst_dir_fd=dfd,
                    follow_symlinks=True)
            return cand
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not find a free temp file name")


def _write_temp(dfd: int, data, prefix: str, suffix: str) -> str:
    """Write ``data`` into a complete, flushed hidden temp file in the folder open as ``dfd``;
    return its name (relative to ``dfd``)."""
    global _tmpfile_ok
    fd = _unnamed_temp(dfd) if _tmpfile_ok else None
    if fd is not None:
        try:
            _write_all(fd, data)
            os.fsync(fd)
            try:
                return _link_unnamed(fd, dfd, prefix, suffix)
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                    raise
                _tmpfile_ok = False  # no linkat through /proc here: named temp files from now on
        finally:
            os.close(fd)
    fd, tmp = _named_temp(dfd, prefix, suffix)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise
    os.close(fd)
    return tmp


def _open_folder(folder: str) -> int:
    """A descriptor of ``folder`` to write in: a duplicate of the held lock's descriptor when this
    process locked it (``lock_folder``), so a folder renamed away and replaced between the check
    and the rename is never written (the write lands in the locked folder itself), else the
    folder opened now."""
    dfd = held_folder_fd(folder)
    if dfd is not None:
        return os.dup(dfd)
    return os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                   | getattr(os, "O_CLOEXEC", 0))


def write_atomic(path: str, data, prefix: str = ".tmp_", suffix: str = ".tmp",
                 create_folder: bool = False) -> None:
    """Write the bytes ``data`` to ``path`` atomically (see the module docstring).

    Every step (temp file, rename) is made relative to one descriptor of the folder (``openat``,
    ``linkat``, ``renameat``), so the file lands in the folder that was checked even if the path
    is swapped meanwhile.

    Args:
        create_folder: create ``path``'s folder (and its parents) first if missing.
    Raises:
        WriteError (an ``OSError``): the folder is missing (or cannot be created) or not
            writable, ``path`` is a folder, the disk is full, a file-size limit... The message is
            ``could not write PATH: REASON``; nothing is left behind (no partial file, no temp
            file).
        FolderReplaced (a ``ValueError``): ``path``'s folder is one this process locked
            (``lock_folder``) and it was moved or replaced since (``check_locked``), checked
            before and after the write (after: the file is in the locked folder, wherever it
            went, never in what replaced it).
    """
    check_locked(path)
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    if create_folder:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise WriteError(e.errno, f"could not write {path}: cannot create {folder}: "
                                      f"{e.strerror or e}") from None
    tmp = dfd = None
    try:
        if not base or base in (".", ".."):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        dfd = _open_folder(folder)
        try:
            st = os.stat(base, dir_fd=dfd)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        clean_stale_temps(folder, prefix, suffix, dir_fd=dfd)
        tmp = _write_temp(dfd, data, prefix, suffix)
        os.replace(tmp, base, src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp = None
    except OSError as e:
        reason = e.strerror or str(e)
        raise WriteError(e.errno, f"could not write {path}: {reason}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
        if dfd is not None:
            os.close(dfd)
    check_locked(path)


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
        dfd = _open_folder(folder)
        try:
            fd, tmp = _named_temp(dfd, ".probe_", ".tmp")
            os.close(fd)
            os.unlink(tmp, dir_fd=dfd)
        finally:
            os.close(dfd)
    except OSError as e:
        raise ValueError(f"{what} {path}: cannot write in {folder}: {e.strerror or e}") from None
    return path


def check_not_input(path: str, inputs, what: str = "output file") -> str:
    """Refuse an output ``path`` that is one of the command's ``inputs`` (the same name after
    resolving links, or the same file by device and inode), a folder holding one, or a path
    inside one (``check_outputs_apart``): no command writes over its own input.

    Returns:
        ``path``.
    Raises:
        ValueError: ``WHAT PATH: it is the input INPUT (the same file), which would be lost;
            choose another name`` (or the folder forms of ``check_outputs_apart``).
    """
    check_outputs_apart([(what, path)], [("", src) for src in inputs])
    return path


def _lineage(path: str) -> list[tuple[str, tuple | None]]:
    """``path`` resolved (``realpath``) and each folder above it, with its ``(st_dev, st_ino)``
    (None where nothing exists): the same file or folder is found under any spelling, through
    symbolic links, hard links and bind mounts."""
    chain = []
    p = os.path.realpath(path)
    while True:
        try:
            st = os.stat(p)
            key = (st.st_dev, st.st_ino)
        except (OSError, ValueError):
            key = None
        chain.append((p, key))
        parent = os.path.dirname(p)
        if parent == p:
            return chain
        p = parent


def _same(a: tuple[str, tuple | None], b: tuple[str, tuple | None]) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


def _pairs(named) -> list[tuple[str, str]]:
    items = named.items() if hasattr(named, "items") else named
    return [(str(k), os.fspath(v)) for k, v in items if v is not None and os.fspath(v) != ""]


def check_outputs_apart(outputs, inputs) -> None:
    """Refuse, before any work, an output that is, holds or lies inside something the command
    reads.

    Args:
        outputs: ``{label: path}`` (or ``(label, path)`` pairs) of each file or folder written,
            e.g. ``{"--json": "x.json"}``; a None or empty path is skipped.
        inputs: ``{how: path}`` (or pairs) of each file or folder read; ``how`` says how it was
            named (``"--team0 checkpoint:x.pt"``; ``""``: nothing more than the path).
    Paths are compared resolved (``./x``, ``x``, symbolic links) and by device and inode (hard
    links, bind mounts), for every folder above them too.
    Raises:
        ValueError: one line naming both: ``LABEL PATH: it is the input INPUT read by HOW (the
            same file), which would be lost; choose another name``, ``... it is a folder holding
            the input ...`` or ``... it lies inside the folder of the input ...``.
    """
    ins = [(how, src, _lineage(src)) for how, src in _pairs(inputs)]
    for label, path in _pairs(outputs):
        out = _lineage(path)
        for how, src, chain in ins:
            named = f"the input {src}"  # the path once: "read by --team0 checkpoint:x.pt"
            if how:
                named = f"the input read by {how}" if src in how else f"{named} read by {how}"
            if _same(out[0], chain[0]):
                kind = "folder" if os.path.isdir(src) else "file"
                raise ValueError(f"{label} {path}: it is {named} (the same {kind}), which would "
                                 f"be lost; choose another name")
            if any(_same(out[0], up) for up in chain[1:]):
                raise ValueError(f"{label} {path}: it is a folder holding {named}, which could "
                                 f"be written over; choose another folder")
            if any(_same(chain[0], up) for up in out[1:]):
                raise ValueError(f"{label} {path}: it lies inside the folder of "
                                 f"{named}, which would be changed; choose a path outside it")


def files_in(folder: str, prefix: str, suffix: str) -> list[str]:
    """Paths of the entries ``PREFIX*SUFFIX`` of ``folder``, sorted by name, found by listing the
    folder: the folder's name is never used as a glob pattern (``[``, ``]``, ``?`` and ``*`` in
    it are plain characters). A missing or unreadable folder gives ``[]``."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in sorted(names)
            if n.startswith(prefix) and n.endswith(suffix) and len(n) >= len(prefix) + len(suffix)]


# ============================================================================ standard output
class _ClosedPipeSafe:
    """``sys.stdout`` as a command sees it inside ``quiet_broken_pipe``: the stream's own methods,
    except that once the reader is gone its writes are dropped."""

    def __init__(self, stream):
        self._stream = stream
        self.reader_gone = False

    def _drop(self) -> None:
        # Python's "Note on SIGPIPE": point the descriptor at devnull, so the text still buffered
        # (and every later flush, at exit too) goes there instead of raising again
        self.reader_gone = True
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
        except (AttributeError, OSError, ValueError):
            return  # not a descriptor (a captured stream): the writes are dropped here
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def write(self, text):
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def quiet_broken_pipe():
    """Run a command's block with a standard output that tolerates a reader who leaves early.

    ``spades arena ... | head -1`` closes the pipe after one line: inside the block the rest of
    the output is dropped (no ``BrokenPipeError``, no traceback) and the work goes on, so files
    are still written and the exit status is the command's. ``sys.stdout`` is restored (and
    flushed) when the block ends; nested blocks share the outer one's stream.
    """
    stream = sys.stdout
    if stream is None or isinstance(stream, _ClosedPipeSafe):
        yield
        return
    safe = _ClosedPipeSafe(stream)
    sys.stdout = safe
    try:
        yield
    finally:
        safe.flush()
        if sys.stdout is safe:
            sys.stdout = stream
