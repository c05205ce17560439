"""The native kernel's cache (``spades_env.native``): a library is loaded only from a private
folder of this user and only when it matches the digest recorded when it was built; a library
without the kernel's symbols falls back (``auto``) or raises ``NativeUnavailable`` (``native``).

Each test plants a library whose constructor creates a marker file (what an attacker's library
would do on load) and checks that the marker never appears. Found by a break-it review: with a
read-only home the kernel came from ``$TMPDIR/spades_env-<uid>/`` under a predictable name, and a
library another user planted there ran inside ``SpadesVectorEnv()``.
"""

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

from spades_env import native
from spades_env.vector import SpadesVectorEnv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cc(tmp_path, name: str, body: str) -> str:
    src = tmp_path / f"{name}.c"
    src.write_text(body)
    out = tmp_path / f"{name}.so"
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", str(out), str(src)],
                   check=True)
    return str(out)


def _evil(tmp_path, marker) -> str:
    """A library whose constructor creates ``marker`` (and that has none of the kernel's
    symbols)."""
    return _cc(tmp_path, "evil", '#include <fcntl.h>\n#include <unistd.h>\n'
               '__attribute__((constructor)) static void pwn(void) {\n'
               f'  int fd = open("{marker}", O_CREAT | O_WRONLY, 0644); if (fd >= 0) close(fd);\n'
               '}\n')


def _plant(lib: str, path: str, digest: bool) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copy(lib, path)
    if digest:  # an attacker who can write the folder can write a matching digest file too
        with open(lib, "rb") as f:
            d = hashlib.sha256(f.read()).hexdigest()
        with open(path + ".sha256", "w") as f:
            f.write(d + "\n")


@pytest.fixture()
def fresh(monkeypatch, tmp_path):
    """A process state as if the kernel was never loaded, a temp dir of the test's own."""
    monkeypatch.setattr(native, "_kernel", None)
    monkeypatch.setattr(native, "_error", None)
    monkeypatch.setattr(native, "_tmp_folder", None, raising=False)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read $TMPDIR
    return tmpdir


def _kernel_file_name(tmp_path) -> str:
    """The kernel's file name (a hash of source, compiler, flags, platform), asked of a usable
    private cache folder."""
    old = os.environ.get("SPADES_ENV_CACHE")
    os.environ["SPADES_ENV_CACHE"] = str(tmp_path / "probe_cache")
    try:
        return os.path.basename(native.kernel_path())
    finally:
        if old is None:
            del os.environ["SPADES_ENV_CACHE"]
        else:
            os.environ["SPADES_ENV_CACHE"] = old


def test_unwritable_cache_never_uses_a_predictable_shared_folder(fresh, monkeypatch, tmp_path):
    marker = tmp_path / "ran"
    evil = _evil(tmp_path, marker)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("SPADES_ENV_CACHE", str(blocker / "cache"))  # cannot be created
    name = _kernel_file_name(tmp_path)
    # the folder the old code used: $TMPDIR/spades_env-<uid>/, world-writable, with a digest
    old = os.path.join(str(fresh), f"spades_env-{os.getuid()}", name)
    _plant(evil, old, digest=True)
    os.chmod(os.path.dirname(old), 0o777)
    env = SpadesVectorEnv(2, seed=1)
    assert env.backend == "native"
    assert not marker.exists()
    # the private build folder of this process is gone once the kernel is loaded
    assert native._tmp_folder is None
    assert os.listdir(fresh) == [f"spades_env-{os.getuid()}"]


def test_two_processes_get_different_unpredictable_build_folders(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    env = dict(os.environ, SPADES_ENV_CACHE=str(blocker / "cache"), TMPDIR=str(tmp_path))
    code = ("import os, stat; from spades_env import native; p = native.kernel_path(); "
            "d = os.path.dirname(p); st = os.stat(d); "
            "print(d, oct(stat.S_IMODE(st.st_mode)), st.st_uid == os.getuid())")
    outs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           check=True, cwd=ROOT).stdout.split() for _ in range(2)]
    assert outs[0][0] != outs[1][0]                      # not a predictable name
    assert outs[0][1] == "0o700" and outs[0][2] == "True"  # private
    assert not os.path.exists(outs[0][0])                # removed when the process ended


@pytest.mark.parametrize("how", ["writable_by_others", "owned_by_another_user"])
def test_a_cache_folder_others_control_is_refused(fresh, monkeypatch, tmp_path, how):
    if how == "owned_by_another_user" and os.geteuid() != 0:
        pytest.skip("making a folder owned by another user needs root")
    marker = tmp_path / "ran"
    evil = _evil(tmp_path, marker)
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("SPADES_ENV_CACHE", str(cache))
    name = _kernel_file_name(tmp_path)  # the name the library would have in a usable cache
    _plant(evil, str(cache / name), digest=True)
    if how == "writable_by_others":
        os.chmod(cache, 0o777)
    else:
        os.chmod(cache, 0o755)
        for p in (cache, cache / name, cache / (name + ".sha256")):
            os.chown(p, 65534, 65534)
    with pytest.warns(RuntimeWarning, match="not using the kernel cache"):
        env = SpadesVectorEnv(2, seed=1)
    assert env.backend == "native"
    assert not marker.exists()


@pytest.mark.slow
def test_a_library_that_does_not_match_its_recorded_digest_is_rebuilt(fresh, monkeypatch,
                                                                        tmp_path):
    marker = tmp_path / "ran"
    evil = _evil(tmp_path, marker)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPADES_ENV_CACHE", str(cache))
    path = native.kernel_path()  # creates the private folder
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    _plant(evil, path, digest=False)            # no digest recorded: never loaded
    assert SpadesVectorEnv(2).backend == "native"
    assert not marker.exists()
    with open(path, "rb") as f:                 # rebuilt, and its digest recorded
        assert hashlib.sha256(f.read()).hexdigest() == open(path + ".sha256").read().strip()
    monkeypatch.setattr(native, "_kernel", None)
    _plant(evil, path, digest=False)            # the built kernel replaced, its digest kept
    assert SpadesVectorEnv(2).backend == "native"
    assert not marker.exists()


def test_an_own_cache_readable_by_others_is_tightened(fresh, monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    os.chmod(cache, 0o755)
    monkeypatch.setenv("SPADES_ENV_CACHE", str(cache))
    assert SpadesVectorEnv(2).backend == "native"
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert os.path.dirname(native.kernel_path()) == str(cache)


def test_a_library_without_the_kernel_symbols_falls_back_or_raises(fresh, monkeypatch, tmp_path):
    """A library that verifies but lacks ``sp_step``... (e.g. a broken ``$CC`` wrapper): ``auto``
    plays on the torch path, ``native`` raises the backend's own error; no AttributeError."""
    empty = _cc(tmp_path, "empty", "int not_the_kernel(void) { return 1; }\n")
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPADES_ENV_CACHE", str(cache))
    path = native.kernel_path()
    _plant(empty, path, digest=True)
    os.chmod(path, 0o600)
    with pytest.raises(native.NativeUnavailable, match="lacks the symbol"):
        SpadesVectorEnv(2, backend="native")
    env = SpadesVectorEnv(2, seed=2)
    assert env.backend == "torch"
    obs, mask, seat = env.reset()
    assert mask[:, 52:66].all()


def test_a_symlink_in_the_private_cache_is_not_followed(fresh, monkeypatch, tmp_path):
    marker = tmp_path / "ran"
    evil = _evil(tmp_path, marker)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPADES_ENV_CACHE", str(cache))
    path = native.kernel_path()
    _plant(evil, str(tmp_path / "elsewhere.so"), digest=True)
    os.symlink(tmp_path / "elsewhere.so", path)
    os.symlink(tmp_path / "elsewhere.so.sha256", path + ".sha256")
    assert SpadesVectorEnv(2).backend == "native"
    assert not marker.exists()
    assert not os.path.islink(path)  # replaced by a fresh build


def test_a_library_that_answers_to_the_name_is_passed_over(monkeypatch):
    """Two copies of ``native`` in one process (``benchmarks/bench_before_after.py`` loads an older
    version beside this one) each count their ``/proc/self/fd/./N`` names from 1, so the loader
    could hand this one the other's library by name, whose ``sp_env`` has another layout (it
    crashed the batched benchmark). ``_dlopen`` checks the symbols and ``sp_env_size`` against
    the mirror and takes the next name."""
    import ctypes
    try:
        native.load_kernel()
    except native.NativeUnavailable as e:
        pytest.skip(f"no C kernel here: {e}")
    real, names = ctypes.CDLL, []

    def cdll(name):
        names.append(name)
        if len(names) == 1:
            return object()  # the other copy's library: none of this build's symbols
        return real(name)

    path = native.kernel_path()
    fd = os.open(path, os.O_RDONLY)
    try:
        monkeypatch.setattr(native.ctypes, "CDLL", cdll)
        lib = native._dlopen(path, fd)
    finally:
        os.close(fd)
    assert len(names) == 2 and names[0] != names[1]
    assert lib.sp_env_size() == ctypes.sizeof(native.SpEnv)
