"""Build and load the fused C kernel of the batched engine (``SpadesVectorEnv(backend="native")``).

The kernel (``spades_env/_native/vector_kernel.c``) is plain C with no Python or torch headers. It
is compiled at first use with the system C compiler (``$CC``, else ``cc``; with OpenMP when the
compiler has it, for ``SpadesVectorEnv(threads=...)``) into a per-user cache
folder (``$SPADES_ENV_CACHE``, else ``$XDG_CACHE_HOME/spades_env``, else ``~/.cache/spades_env``;
a per-user folder in the temp dir when that one is not writable)
under a name made from a hash of the source, the flags and the platform, written atomically (a
temporary file renamed into place), and loaded with ``ctypes``. When no compiler is found or the
build fails, ``load_kernel()`` raises ``NativeUnavailable`` with the compiler's message, and the
engine's ``backend="auto"`` falls back to the torch path.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref

__all__ = ["NativeUnavailable", "load_kernel", "SpEnv", "kernel_path"]

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native", "vector_kernel.c")
_FLAGS = ["-O3", "-std=c99", "-shared", "-fPIC", "-fno-fast-math", "-Wno-unknown-pragmas"]
_OPENMP = ["-fopenmp"]  # tried first; without it the kernel is built serial
_lock = threading.Lock()
_kernel = None
_error: str | None = None
_omp_used = False  # a kernel with threads > 1 was set up in this process
_omp_unsafe = False  # this process was forked after that: OpenMP would hang here
_envs: "weakref.WeakSet" = weakref.WeakSet()  # native envs alive in this process


def note_openmp_use() -> None:
    """Record that a multi-threaded kernel was set up (see ``openmp_unsafe``)."""
    global _omp_used
    _omp_used = True


def openmp_unsafe() -> bool:
    """True in a process forked after this one's parent used OpenMP threads: libgomp's thread pool
    does not survive ``fork``, so kernels here run serial (``threads`` becomes 1)."""
    return _omp_unsafe


def track(env) -> None:
    """Remember a native env so that a fork can make it serial in the child."""
    _envs.add(env)


def _after_fork_in_child() -> None:
    """The kernel's OpenMP runtime is torch's own libgomp (same soname, already loaded), whose
    thread pool is gone in a forked child: a parallel region there would wait forever. So a child
    forked after a multi-threaded kernel ran uses one thread, in the kernel and in torch (as
    torch's DataLoader workers do)."""
    global _omp_unsafe
    if _omp_used:
        _omp_unsafe = True
        for env in list(_envs):
            env._serial_after_fork()
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class NativeUnavailable(RuntimeError):
    """The C kernel could not be built or loaded (no compiler, or a build error)."""


class SpEnv(ctypes.Structure):
    """ctypes mirror of ``struct sp_env`` in ``vector_kernel.c`` (same field order)."""

    _fields_ = [(name, ctypes.c_int64) for name in (
        "n", "row", "obs_size", "flb", "o_phase", "o_hand", "o_played", "o_trick", "o_led",
        "o_bids", "o_won", "o_voids", "o_broken", "o_tn", "o_to_act", "o_side")] + \
        [(name, ctypes.c_void_p) for name in (
            "cur", "actions", "bids", "trick_obs", "leader", "led", "trick", "tricks", "obs4",
            "hands", "voids", "broken", "mask", "side")] + \
        [(name, ctypes.c_int64) for name in (
            "o_looked", "o_dealer", "target", "bag_limit", "bag_penalty", "nil_bonus", "has_loss",
            "loss_threshold", "hands_per_episode", "max_hands", "reward_game")] + \
        [(name, ctypes.c_void_p) for name in ("owner", "dealer", "scores", "bags", "hand_count")] + \
        [("target_feature", ctypes.c_float), ("threads", ctypes.c_int32)]


def _cache_dir() -> str:
    d = os.environ.get("SPADES_ENV_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "spades_env")
    return d


def _writable(d: str) -> bool:
    try:
        os.makedirs(d, exist_ok=True)
        return os.access(d, os.W_OK)
    except OSError:
        return False


def kernel_path(cc: str | None = None) -> str:
    """Where the compiled kernel for this source, compiler, flags and platform lives."""
    cc = cc or os.environ.get("CC") or "cc"
    with open(_SRC, "rb") as f:
        h = hashlib.sha256(f.read())
    h.update(" ".join([cc, *_FLAGS, *_OPENMP, platform.machine(), platform.system(),
                       sys.implementation.cache_tag or ""]).encode())
    folder = _cache_dir()
    if not _writable(folder):  # e.g. a read-only home: a per-user folder in the temp dir
        folder = os.path.join(tempfile.gettempdir(), f"spades_env-{os.getuid()}")
    return os.path.join(folder, f"vector_kernel-{h.hexdigest()[:16]}.so")


def _build(path: str, cc: str) -> None:
    cmd = shlex.split(cc)  # $CC may carry arguments ("ccache gcc")
    exe = shutil.which(cmd[0]) if cmd else None
    if exe is None:
        raise NativeUnavailable(f"no C compiler: {cc!r} not found (set $CC)")
    cmd[0] = exe
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".build-", suffix=".so")
    os.close(fd)
    try:
        r = subprocess.run([*cmd, *_FLAGS, *_OPENMP, "-o", tmp, _SRC], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:  # no OpenMP here: a serial build
            r = subprocess.run([*cmd, *_FLAGS, "-o", tmp, _SRC], capture_output=True, text=True,
                               timeout=120)
        if r.returncode != 0:
            out = (r.stderr or r.stdout).strip()[:2000] or "(no output)"
            raise NativeUnavailable(f"building the C kernel failed ({cc}, exit status "
                                    f"{r.returncode}): {out}")
        os.replace(tmp, path)
    except (OSError, subprocess.SubprocessError) as e:
        raise NativeUnavailable(f"building the C kernel failed: {e}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_kernel():
    """The loaded kernel (``ctypes.CDLL`` with ``sp_step`` and ``sp_render`` typed), built first
    if needed. Thread-safe; the result (or the failure) is remembered for the process.

    Raises:
        NativeUnavailable: no C compiler, a failed build, or a library that does not load.
    """
    global _kernel, _error
    with _lock:
        if _kernel is not None:
            return _kernel
        if _error is not None:
            raise NativeUnavailable(_error)
        cc = os.environ.get("CC") or "cc"
        path = kernel_path(cc)
        try:
            if not os.path.exists(path):
                _build(path, cc)
            try:
                lib = ctypes.CDLL(path)
            except OSError:  # a broken cached file: build it again once
                _build(path, cc)
                lib = ctypes.CDLL(path)
        except (NativeUnavailable, OSError) as e:
            _error = str(e)
            raise NativeUnavailable(_error) from None
        p = ctypes.POINTER(SpEnv)
        lib.sp_step.argtypes = [p, ctypes.c_void_p, ctypes.c_int64]
        lib.sp_step.restype = ctypes.c_int64
        lib.sp_render.argtypes = [p, ctypes.c_void_p, ctypes.c_void_p]
        lib.sp_render.restype = None
        vp = ctypes.c_void_p
        lib.sp_start_hands.argtypes = [p, vp, vp]
        lib.sp_start_hands.restype = None
        lib.sp_end_hands.argtypes = [p, vp, vp, ctypes.c_int64, vp, vp, vp, vp, vp]
        lib.sp_end_hands.restype = ctypes.c_int64
        lib.sp_check.argtypes = [p, vp]
        lib.sp_check.restype = ctypes.c_int64
        lib.sp_sample.argtypes = [p, vp, vp]
        lib.sp_sample.restype = None
        lib.sp_step_render.argtypes = [p, vp, ctypes.c_int64, vp, vp, vp, vp, vp, vp]
        lib.sp_step_render.restype = ctypes.c_int64
        lib.sp_openmp.argtypes = []
        lib.sp_openmp.restype = ctypes.c_int
        _kernel = lib
        return lib
