"""Atomic file writes, output-target checks, checked reads and folder locks, shared by the
arena, the play app and the training tools.

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
- ``check_outputs_apart(outputs, inputs)`` (and ``check_not_input``): before any work, refuse an
  output that is, holds or lies inside a file or folder the command reads (any spelling, symbolic
  or hard link), with one line naming both.

- ``open_regular`` / ``read_regular``: read only regular files (a FIFO, a device or a folder is
  refused without blocking); ``parse_json``: JSON text, every failure a ``ValueError``;
  ``read_npz``: the one reader of ``.npz`` archives of untrusted origin (members, sizes, dtypes
  and shapes checked from the archive's directory and the ``.npy`` headers before anything is
  inflated).
- ``lock_folder``: a folder shared with other runs or users, locked for one writer (never
  through a symlink, owned by this user, not writable by others).
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
import weakref

__all__ = ["write_atomic", "check_output_file", "clean_stale_temps", "WriteError",
           "STALE_SECONDS", "check_not_input", "check_outputs_apart", "files_in", "open_regular",
           "read_regular", "parse_json", "read_npz", "npz_rows", "TooManyRecords", "MAX_NPZ_BYTES",
           "MAX_NPZ_MEMBERS", "MAX_TEXT_BYTES", "lock_folder", "folder_problem", "FolderLock",
           "FolderInUse", "quiet_broken_pipe"]


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
    lock = _lock_fds.get(folder)
    dfd = lock._dfd if lock is not None else None
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


# ============================================================================= checked reads
MAX_NPZ_BYTES = 1 << 30
"""most bytes the members of one ``.npz`` archive may declare, in all, uncompressed
(``read_npz``): checked from the archive's directory before anything is inflated."""

MAX_NPZ_MEMBERS = 64
"""most members of one ``.npz`` archive (``read_npz``); the formats have about a dozen."""

MAX_TEXT_BYTES = 256 << 20
"""largest text file (JSON, JSON lines) ``read_regular`` reads by default."""


def open_regular(path: str, what: str = "file"):
    """Open ``path`` for reading (binary) only if it is a regular file.

    A FIFO, a socket, a device or a folder is refused without blocking: the name is checked with
    ``os.stat`` first, opened with ``O_NONBLOCK`` and checked again on the open descriptor.

    Returns:
        a binary file object (the caller closes it).
    Raises:
        ValueError: ``PATH: no such WHAT``, ``PATH: not a regular file (...)`` or ``PATH: cannot
            read the WHAT: REASON``.
    """
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path) or "\0" in os.fspath(path):
        raise ValueError(f"{what}: {path!r} is not a file name")

    def refuse(st):
        if stat.S_ISREG(st.st_mode):
            return None
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
        return ValueError(f"{path}: not a regular file ({kind}); the {what} must be a file")
    try:
        err = refuse(os.stat(path))
        if err is not None:
            raise err
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such {what}") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot read the {what}: {e.strerror or e}") from None
    try:
        err = refuse(os.fstat(fd))
    except OSError as e:
        err = ValueError(f"{path}: cannot read the {what}: {e.strerror or e}")
    if err is not None:
        os.close(fd)
        raise err
    return os.fdopen(fd, "rb")


def read_regular(path: str, what: str = "file", max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (``open_regular``), at most ``max_bytes``.

    Raises:
        ValueError: not a regular file, unreadable, or larger than ``max_bytes`` (naming
            ``path``).
    """
    with open_regular(path, what) as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise ValueError(f"{path}: cannot read the {what}: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise ValueError(f"{path}: larger than {max_bytes} bytes: not a {what}")
    return data


def parse_json(text, where: str):
    """``json.loads(text)`` with every failure (invalid JSON or UTF-8, nesting too deep for the
    parser, an integer of more digits than Python converts) as
    ``ValueError: WHERE: invalid JSON (...)``."""
    import json
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{where}: invalid JSON (nested too deeply)") from None
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as e:
        raise ValueError(f"{where}: invalid JSON ({e})") from None
    except ValueError as e:  # a number too long to convert (sys.get_int_max_str_digits)
        raise ValueError(f"{where}: invalid JSON ({str(e)[:120]})") from None


def _npy_header(f):
    """``(shape, dtype, fortran_order)`` from the header of the ``.npy`` stream ``f``."""
    import numpy as np
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(f)
    raise ValueError(f"unsupported .npy version {version}")


def _zip_entry_count(f) -> int | None:
    """The member count a zip archive's end-of-central-directory record declares (the zip64
    record's when the classic one says 0xFFFF), read from the file's last 64 KiB before
    ``zipfile`` parses the whole directory (a million empty members cost it seconds); ``None``
    when no record is found (``zipfile`` then refuses the file)."""
    import struct
    size = f.seek(0, os.SEEK_END)
    tail = min(size, 65536 + 22)
    f.seek(size - tail)
    data = f.read(tail)
    f.seek(0)
    i = data.rfind(b"PK\x05\x06")
    if i < 0 or len(data) - i < 22:
        return None
    count = struct.unpack_from("<H", data, i + 10)[0]
    if count == 0xFFFF:  # zip64: the locator just before points at the zip64 record
        j = data.rfind(b"PK\x06\x06", 0, i)
        if j >= 0 and len(data) - j >= 56:
            count = struct.unpack_from("<Q", data, j + 32)[0]
    return int(count)


def read_npz(path: str, what: str, layout, max_bytes: int = MAX_NPZ_BYTES,
             data: bytes | None = None) -> dict:
    """Read an ``.npz`` archive of untrusted origin: every member checked before any is inflated.

    1. ``path`` must be a regular file (``open_regular``; with ``data`` given, the archive is
       those bytes and ``path`` only names it in messages) and a zip archive of at most
       ``MAX_NPZ_MEMBERS`` members, all ``NAME.npy``, each name once, declaring at most
       ``max_bytes`` in all;
    2. each member's ``.npy`` header is read (a few hundred bytes): no object dtype, and its
       declared data size must be exactly the member's size;
    3. ``layout(headers)`` (``headers``: ``{name: (shape, dtype)}``) returns ``(scalars,
       arrays)``: ``scalars`` maps a name to ``(kinds, required)`` (a 0-d value whose
       ``dtype.kind`` is in ``kinds``, e.g. ``"U"`` or ``"iu"``), ``arrays`` maps a name to
       ``(shape, dtype)`` (required, exactly that); a member named in neither is refused;
    4. only then is the data read.

    Returns:
        ``{name: ndarray}``.
    Raises:
        ValueError: ``PATH: not a readable WHAT (...)`` or ``PATH: field 'NAME' ...``: every
            failure names the file (and the field).
    """
    import zipfile

    import io

    import numpy as np
    f = open_regular(path, what) if data is None else io.BytesIO(bytes(data))
    try:
        members = _zip_entry_count(f)
        if members is not None and members > MAX_NPZ_MEMBERS:
            raise ValueError(f"{path}: not a readable {what} ({members} members; at most "
                             f"{MAX_NPZ_MEMBERS})")
        try:
            z = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            raise ValueError(f"{path}: not a readable {what} (not a .npz archive: {e})") from None
        with z:
            infos = {}
            total = 0
            if len(z.infolist()) > MAX_NPZ_MEMBERS:
                raise ValueError(f"{path}: not a readable {what} ({len(z.infolist())} members; "
                                 f"at most {MAX_NPZ_MEMBERS})")
            for info in z.infolist():
                name = info.filename
                if not name.endswith(".npy") or name[:-4] in infos or "/" in name:
                    raise ValueError(f"{path}: not a readable {what} (unexpected member "
                                     f"{name[:80]!r})")
                infos[name[:-4]] = info
                total += info.file_size
            if total > max_bytes:
                raise ValueError(f"{path}: its members declare {total} bytes uncompressed; a "
                                 f"{what} holds at most {max_bytes}")
            headers = {}
            for name, info in infos.items():
                try:
                    with z.open(info) as m:
                        shape, fortran, dtype = _npy_header(m)
                        used = m.tell()
                except Exception as e:  # noqa: BLE001 - zip/npy errors of any kind
                    raise ValueError(f"{path}: not a readable {what} (member {name!r}: "
                                     f"{type(e).__name__}: {e})") from None
                if dtype.hasobject:
                    raise ValueError(f"{path}: field {name!r} holds Python objects")
                size = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if used + size != info.file_size:
                    raise ValueError(f"{path}: field {name!r} declares {size} bytes of data, the "
                                     f"member holds {info.file_size - used}")
                headers[name] = (tuple(shape), dtype)
            scalars, arrays = layout(headers)
            for name in headers:
                if name not in scalars and name not in arrays:
                    raise ValueError(f"{path}: not a {what}: unknown field {name[:80]!r}")
            for name, (kinds, required) in scalars.items():
                if name not in headers:
                    if required:
                        raise ValueError(f"{path}: field {name!r} missing")
                    continue
                shape, dtype = headers[name]
                if shape != () or dtype.kind not in kinds:
                    want = "a string" if kinds == "U" else "an integer"
                    raise ValueError(f"{path}: field {name!r} must be a single value ({want})")
            for name, (shape, dtype) in arrays.items():
                got = headers.get(name)
                if got is None or got[0] != tuple(shape) or got[1] != np.dtype(dtype):
                    raise ValueError(f"{path}: field {name!r} missing or not "
                                     f"{np.dtype(dtype).name}{list(shape)}")
            out = {}
            for name, info in infos.items():
                try:
                    with z.open(info) as m:
                        out[name] = np.lib.format.read_array(m, allow_pickle=False)
                except Exception as e:  # noqa: BLE001 - a damaged member (CRC, truncation)
                    raise ValueError(f"{path}: not a readable {what} (member {name!r}: "
                                     f"{type(e).__name__}: {e})") from None
            return out
    finally:
        f.close()


class TooManyRecords(ValueError):
    """``npz_rows``: a file declares more records than its reader's limit."""


def npz_rows(headers: dict, name: str, where: str, most: int) -> int:
    """The length of the 1-d field ``name`` in ``read_npz`` headers (the number of records),
    at most ``most``; raises ValueError naming ``where`` and the field (``TooManyRecords`` past
    ``most``)."""
    got = headers.get(name)
    if got is None or len(got[0]) != 1:
        raise ValueError(f"{where}: field {name!r} missing or not a 1-d array")
    if got[0][0] > most:
        raise TooManyRecords(f"{where}: field {name!r} declares {got[0][0]} records; at most "
                             f"{most}")
    return int(got[0][0])


# ============================================================================= folder locks
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
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(folder, 0o775)  # never writable by all, even under umask 0
    except FileExistsError:
        pass
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        st = os.lstat(folder)
    except OSError as e:
        raise OSError(e.errno, f"cannot use {folder}: {e.strerror or e}") from None
    why = _folder_problem(st, folder)
    if why:
        raise ValueError(why)
    if fcntl is None:
        return FolderLock(folder, name, None, None)
    try:
        dfd = os.open(folder, flags)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ValueError(f"{folder} is a symbolic link or not a folder") from None
        raise
    try:
        why = _folder_problem(os.fstat(dfd), folder)  # the folder opened is the one checked
        if why:
            raise ValueError(why)
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
                break
            os.close(fd)
        else:  # pragma: no cover
            raise OSError(errno.EAGAIN, f"cannot lock {folder}: the lock file keeps changing")
        try:
            import socket
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since "
                          f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
        except OSError:
            pass
        dst = os.fstat(dfd)
        return FolderLock(folder, name, fd, dfd, (dst.st_dev, dst.st_ino))
    except BaseException:
        os.close(dfd)
        raise


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
