"""The checked readers of files of untrusted origin (saved games, records, labels, checkpoints'
metadata, the play app's uploads), shared by every module that reads such a file.

- ``open_regular`` / ``read_regular``: read only regular files (a FIFO, a device or a folder is
  refused without blocking), text bounded by ``MAX_TEXT_BYTES``.
- ``parse_json``: JSON text, every failure a ``ValueError`` naming where it came from.
- ``read_npz``: the one reader of ``.npz`` archives (members, sizes, dtypes and shapes checked
  from the archive's directory and the ``.npy`` headers before anything is inflated); ``npz_rows``
  the number of records a header declares, bounded (``TooManyRecords``).

Every failure is a ``ValueError`` whose message names the file and the reason.
"""

from __future__ import annotations

import os
import stat

__all__ = ["open_regular", "read_regular", "parse_json", "read_npz", "npz_rows", "TooManyRecords",
           "MAX_NPZ_BYTES", "MAX_NPZ_MEMBERS", "MAX_TEXT_BYTES"]

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
            infos = _npz_members(z, path, what, max_bytes)
            headers = _npz_headers(z, infos, path, what)
            scalars, arrays = layout(headers)
            _check_layout(headers, scalars, arrays, path, what)
            return _npz_arrays(z, infos, path, what)
    finally:
        f.close()


def _npz_members(z, path: str, what: str, max_bytes: int) -> dict:
    """``read_npz`` step 1 on the open archive ``z``: ``{name: ZipInfo}`` of its members, all
    ``NAME.npy`` (each name once), at most ``MAX_NPZ_MEMBERS`` of them declaring at most
    ``max_bytes`` in all."""
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
    return infos


def _npz_headers(z, infos: dict, path: str, what: str) -> dict:
    """``read_npz`` step 2: ``{name: (shape, dtype)}`` from each member's ``.npy`` header; no
    object dtype, and each declared data size exactly its member's size."""
    import numpy as np
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
    return headers


def _check_layout(headers: dict, scalars: dict, arrays: dict, path: str, what: str) -> None:
    """``read_npz`` step 3: the members' ``headers`` against the ``layout``'s ``scalars`` and
    ``arrays``: no unknown field, every required one present, each of its kind or shape."""
    import numpy as np
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


def _npz_arrays(z, infos: dict, path: str, what: str) -> dict:
    """``read_npz`` step 4: every member's data, read only now (``{name: ndarray}``)."""
    import numpy as np
    out = {}
    for name, info in infos.items():
        try:
            with z.open(info) as m:
                out[name] = np.lib.format.read_array(m, allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - a damaged member (CRC, truncation)
            raise ValueError(f"{path}: not a readable {what} (member {name!r}: "
                             f"{type(e).__name__}: {e})") from None
    return out


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
