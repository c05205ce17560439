"""The C kernel is built with the package (``setup.py``) and loaded from it (``spades_env.native``):
no compiler and no cache folder at run time; a missing, foreign or stale library is refused with
the reason and how to build it, and ``backend="auto"`` and the bots fall back to their Python and
torch paths. The fallbacks for what a platform may lack are each run by simulating its absence:
no OpenMP (a serial build), no ``fcntl`` (``locks.lock_folder``), no ``/proc``
(``fileio.write_atomic``, ``vector.layout.available_memory``).
"""

import ctypes.util
import os
import shutil
import subprocess
import sys

import pytest
import torch

import spades_env
from spades_env import fileio, locks, native
from spades_env.bots import solver
from spades_env.vector import SpadesVectorEnv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture()
def fresh(monkeypatch):
    """``native`` and the solver as if nothing were loaded yet in this process."""
    monkeypatch.setattr(native, "_kernel", None)
    monkeypatch.setattr(native, "_error", None)
    monkeypatch.setattr(solver, "_kernel", None)


def _steps(env, n=40, seed=1):
    gen = torch.Generator().manual_seed(seed)
    obs, mask, seat = env.reset()
    out = [obs.clone()]
    for _ in range(n):
        obs, mask, seat, rew, done, *_ = env.step(env.sample_actions(gen))
        out += [obs.clone(), rew.clone()]
    return out


def test_the_kernel_is_built_and_loaded_from_the_package():
    """``make test`` (``pip install -e .``) builds the kernel: here it must be there, not skipped."""
    path = native.kernel_path()
    assert path is not None, "the C kernel is not built: pip install -e . (CONTRIBUTING.md)"
    assert os.path.dirname(path) == os.path.dirname(spades_env.__file__)
    assert os.path.basename(path).startswith("_kernel.")
    lib = native.load_kernel()
    assert lib.sp_source_digest().decode() == native.source_digest()
    assert len(native.source_digest()) == 64
    assert SpadesVectorEnv(2).backend == "native" and solver.native_playouts()


def test_no_compiler_and_no_cache_folder_at_run_time(tmp_path):
    """With no compiler on ``PATH``, ``CC`` naming nothing and an empty home, the engine and the
    play-outs run natively and nothing is written under the home or the temp folder."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {"PATH": os.path.dirname(sys.executable), "HOME": str(home), "TMPDIR": str(tmp),
           "CC": str(tmp_path / "no-such-cc"), "PYTHONPATH": ROOT, "PYTHONDONTWRITEBYTECODE": "1"}
    code = ("import shutil; assert shutil.which('cc') is None and shutil.which('gcc') is None\n"
            "from spades_env.vector import SpadesVectorEnv; from spades_env.bots import solver\n"
            "e = SpadesVectorEnv(8, seed=1); e.reset(); e.step(e.sample_actions())\n"
            "print(e.backend, solver.native_playouts())")
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["native", "True"]
    assert [p for p in home.rglob("*")] == [] and [p for p in tmp.rglob("*")] == []


def test_a_missing_kernel_raises_with_how_to_build_it_and_auto_falls_back(fresh, monkeypatch):
    monkeypatch.setattr(native, "kernel_path", lambda: None)
    with pytest.raises(native.NativeUnavailable, match=r"not built .*pip install -e \."):
        SpadesVectorEnv(2, backend="native")
    with pytest.raises(native.NativeUnavailable, match="not built"):  # remembered
        native.load_kernel()
    env = SpadesVectorEnv(2, seed=3)
    assert env.backend == "torch" and env.threads == 1
    obs, mask, seat = env.reset()
    assert mask[:, 52:66].all()  # the bidding mask: it still works on the torch path
    assert solver.native_playouts() is False  # the Python play-outs
    ref = SpadesVectorEnv(16, seed=5, backend="torch")
    assert all(torch.equal(a, b) for a, b in zip(_steps(SpadesVectorEnv(16, seed=5)), _steps(ref)))


def test_a_library_without_the_kernel_symbols_is_refused(fresh, monkeypatch):
    libc = ctypes.util.find_library("c")
    if libc is None:
        pytest.skip("no C library to load")
    monkeypatch.setattr(native, "kernel_path", lambda: libc)
    with pytest.raises(native.NativeUnavailable, match="lacks the symbol.*sp_step"):
        native.load_kernel()
    assert SpadesVectorEnv(2).backend == "torch"


def test_a_kernel_built_from_other_sources_is_refused(fresh, monkeypatch):
    """An in-place build left behind by an edit of ``_native/`` is never run."""
    monkeypatch.setattr(native, "source_digest", lambda folder=native._DIR: "0" * 64)
    with pytest.raises(native.NativeUnavailable,
                       match=r"built from other sources.*pip install -e \."):
        native.load_kernel()


def _build_kernel(tmp_path, **env) -> str:
    """``setup.py build_ext`` into ``tmp_path`` (the checkout is not touched); the library's
    path. Skips without a C compiler."""
    if shutil.which(os.environ.get("CC") or "cc") is None:
        pytest.skip("no C compiler")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib",
                        str(tmp_path / "lib"), "--build-temp", str(tmp_path / "tmp")],
                       cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    (lib,) = (tmp_path / "lib" / "spades_env").glob("_kernel.*")
    return str(lib), r.stdout


@pytest.mark.slow
def test_without_openmp_the_kernel_is_serial_with_the_same_results(fresh, monkeypatch, tmp_path):
    """No OpenMP (simulated: ``SPADES_ENV_OPENMP=0``, what a compiler without it gets): the build
    says so, ``threads`` falls back to 1 and the games are the threaded kernel's."""
    threaded = _steps(SpadesVectorEnv(64, seed=7, threads=2, adapt_threads=False))
    path, out = _build_kernel(tmp_path, SPADES_ENV_OPENMP="0")
    assert "OpenMP off" in out
    monkeypatch.setattr(native, "kernel_path", lambda: path)
    monkeypatch.setattr(native, "_kernel", None)
    assert native.load_kernel().sp_openmp() == 0
    env = SpadesVectorEnv(64, seed=7, threads=2, adapt_threads=False)
    assert env.backend == "native" and env.threads == 1
    assert all(torch.equal(a, b) for a, b in zip(_steps(env), threaded))


def test_without_fcntl_a_folder_is_checked_but_not_locked(monkeypatch, tmp_path):
    """No ``fcntl`` (Windows; simulated: the import fails): ``lock_folder`` still refuses an
    unsafe folder, and locks nothing (a second lock on the same folder is granted)."""
    monkeypatch.setitem(sys.modules, "fcntl", None)
    folder = tmp_path / "run"
    a = locks.lock_folder(str(folder))
    b = locks.lock_folder(str(folder))
    assert a.held is False and b.held is False and not (folder / ".lock").exists()
    a.release()
    b.release()
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    os.chmod(open_folder, 0o777)
    with pytest.raises(ValueError, match="written by every user"):
        locks.lock_folder(str(open_folder))


def test_without_proc_writes_use_named_temp_files(monkeypatch, tmp_path):
    """No ``/proc`` (macOS, Windows; simulated): ``write_atomic`` writes through a named temp
    file instead of an ``O_TMPFILE`` one, and leaves only the file."""
    real_isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: False if str(p).startswith("/proc")
                        else real_isdir(p))
    named = []
    real_named = fileio._named_temp
    monkeypatch.setattr(fileio, "_named_temp", lambda *a: named.append(a) or real_named(*a))
    fileio.write_atomic(str(tmp_path / "out.bin"), b"spades" * 1000)
    assert (tmp_path / "out.bin").read_bytes() == b"spades" * 1000
    assert len(named) == 1 and os.listdir(tmp_path) == ["out.bin"]


def test_without_proc_the_memory_budget_comes_from_sysconf(monkeypatch):
    """No ``/proc/meminfo`` (simulated): the CPU budget is the physical memory (at most)."""
    import builtins

    from spades_env.vector import layout
    real_open = builtins.open

    def no_proc(path, *a, **k):
        if str(path).startswith("/proc"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", no_proc)
    budget, source = layout.available_memory(torch.device("cpu"))
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < budget <= phys
    assert source == "physical memory" or source.startswith("what the ")


def test_the_deal_breaks_equal_draws_by_card_id_as_a_stable_sort_does():
    """sp_start_hands deals card perm[k] to seat (first + k) % 4, perm the stable argsort of the
    52 floats: floats with ties (rare in torch.rand, so forced here) take the slow exact path."""
    import numpy as np

    from spades_env.vector import SpadesVectorEnv
    env = SpadesVectorEnv(3, seed=0, backend="native", threads=1)
    env.reset()
    rng = np.random.default_rng(4)
    u = rng.random((3, 52)).astype(np.float32)
    u[1, ::3] = 0.5    # game 1: 18 equal floats
    u[2] = 0.25        # game 2: all equal: the deal is by card id
    env._kernel.sp_start_hands(env._spenv_ref, torch.from_numpy(u).data_ptr(), None)
    first = (env._dealer + 1) % 4
    for i in range(3):
        perm = np.argsort(u[i], kind="stable")
        want = np.empty(52, dtype=np.int64)
        want[perm] = (int(first[i]) + np.arange(52)) % 4
        assert env._owner[i].tolist() == want.tolist(), i
