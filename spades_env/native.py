"""Build and load the C kernel: the fused step of the batched engine
(``SpadesVectorEnv(backend="native")``) and the PIMC bots' play-outs (``bots.solver.playouts``).

The kernel (``spades_env/_native/vector_kernel.c`` and ``playout.c``, one library) is plain C with
no Python or torch headers. It is compiled at first use with the system C compiler (``$CC``, else
``cc``; with OpenMP when the compiler has it, for ``SpadesVectorEnv(threads=...)``) and loaded
with ``ctypes``.

Where, and what is loaded (a library's constructor runs as soon as it is loaded, so a library
another user could place must never be loaded):

- the cache folder is ``$SPADES_ENV_CACHE``, else ``$XDG_CACHE_HOME/spades_env``, else
  ``~/.cache/spades_env``; it is created with mode 0700 and used only while it belongs to this
  user and no other user can write it (an own folder readable by others is tightened to 0700; one
  owned by someone else or writable by others is refused with a ``RuntimeWarning``);
- when that folder cannot be used (refused, or a read-only home), the kernel is built in a fresh
  private folder of this process (``tempfile.mkdtemp``: unpredictable name, mode 0700), removed
  once the kernel is loaded: never in a shared folder under a predictable name;
- the library's name comes from a hash of the source, the flags and the platform; its SHA-256 is
  recorded next to it (``<name>.sha256``) when it is built and checked before every load, on the
  very file descriptor that is then loaded (``/proc/self/fd``); a library that is missing, not a
  private file of this user, or does not match its digest is built again, never loaded;
- a loaded library must export every kernel symbol, else ``NativeUnavailable``.

When no compiler is found, the build fails or the library does not load, ``load_kernel()`` raises
``NativeUnavailable`` with the reason; ``SpadesVectorEnv(backend="auto")`` then falls back to the
torch path and ``backend="native"`` raises it.
"""

from __future__ import annotations

import atexit
import ctypes
import errno
import hashlib
import hmac
import os
import platform
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import warnings
import weakref

from .fileio import clean_stale_temps, write_atomic

__all__ = ["NativeUnavailable", "load_kernel", "SpEnv", "SpRules", "SpDeck", "c_rules", "c_deck",
           "rules_c_fields", "kernel_path"]

_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")
# compiled together into one library: the batched engine's step and the PIMC bots' play-outs
_SRCS = (os.path.join(_DIR, "vector_kernel.c"), os.path.join(_DIR, "playout.c"),
         os.path.join(_DIR, "rules.c"))
# the card-play rules both include: part of the kernel's identity (its cache name) too
_HEADERS = (os.path.join(_DIR, "rules.h"),)
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


# A probe times the two settings on 8 consecutive calls in Thue-Morse order (A B B A B A A B):
# each side gets one call of every position in a 4-call trick, so the tricks' uneven work
# (a completed trick every 4th step) cannot favour either side.
_PROBE = (0, 1, 1, 0, 1, 0, 0, 1)


class ThreadChooser:
    """Which thread count the kernel's next call uses, ``threads`` or 1: whichever ran faster
    when last timed side by side (``SpadesVectorEnv(threads=T)``, ``adapt_threads=True``).

    OpenMP threads wait for each other at the end of every loop over the games: on an idle
    machine ``threads`` cores finish a step sooner, but with busy processes beside it a thread
    that waits for a core that is not its own holds up the step by a whole time slice (a 2-core
    machine with one busy process ran ``threads=2`` at 0.4x, at worst 1/80, of ``threads=1``).

    So the chooser times both: a probe of 8 calls (4 each, interleaved, see ``_PROBE``), then the
    faster setting runs for ``period`` seconds of calls before the next probe. ``period`` doubles
    (``MIN_PERIOD`` up to ``MAX_PERIOD``) while the same setting keeps winning, and is at least
    ``1 / PROBE_SHARE`` times what the slower setting cost in the probe, so probing takes at most
    about ``PROBE_SHARE`` of the time however slow the loser is. A probe stops as soon as the
    setting being tried has used more than twice the time the current one needs for its 4 calls (a
    very slow setting costs one call; so does the current one once it is beaten that clearly).

    A load that arrives between probes is noticed without waiting for the period: while more
    than one thread runs, a probe starts early when one call takes ``JUMP`` times its probe's
    mean, or when the mean of the last ``WINDOW`` calls is ``DRIFT`` times it (a busy neighbour
    typically makes 2-thread calls 1.3-3x slower, not 8x), once the run since the probe has
    lasted ``1 / DRIFT_SHARE`` times the loser's probe time (so even a noisy machine that
    trips the test every window spends at most ``DRIFT_SHARE`` of its time probing).
    Use: ``n = chooser.next()`` before a call, ``chooser.record(seconds)`` after it; the setting
    that runs between probes is ``chooser.best``.
    """

    MIN_PERIOD, MAX_PERIOD = 0.02, 2.0  # seconds of calls between probes
    PROBE_SHARE = 0.05
    JUMP = 8.0
    WINDOW, DRIFT, DRIFT_SHARE = 16, 1.4, 0.2  # calls, slowdown, largest share of probes
    LONGEST = 60.0  # the longest wait for a probe, whatever the loser cost

    def __init__(self, threads: int):
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 2:
            raise ValueError(f"threads must be an int >= 2 to choose from, got {threads!r}")
        self.threads = threads
        self.best = threads  # the setting that runs between probes
        self.period = self.MIN_PERIOD
        self._probing = True
        self._left = 0.0  # seconds of calls of best before the next probe
        self._typical = 0.0  # best's mean call in the last probe
        self._ran = self._loser = 0.0  # seconds run since the probe; the loser's probe time
        self._start_probe()

    def _start_probe(self) -> None:
        self._probing, self._i = True, 0
        self._sums, self._counts = [0.0, 0.0], [0, 0]  # [best, the other]
        self._win, self._win_n = 0.0, 0  # the current window of WINDOW calls

    def _setting(self, side: int) -> int:
        return self.best if side == 0 else (1 if self.best != 1 else self.threads)

    def next(self) -> int:
        """The thread count for the next call."""
        return self._setting(_PROBE[self._i]) if self._probing else self.best

    def record(self, seconds: float) -> None:
        """The time the call made with ``next()``'s count took."""
        if not self._probing:
            self._left -= seconds
            self._ran += seconds
            drift = False
            if self.best != 1:
                self._win += seconds
                self._win_n += 1
                if self._win_n == self.WINDOW:
                    drift = (self._win > self.DRIFT * self.WINDOW * self._typical
                             and self._ran * self.DRIFT_SHARE >= self._loser)
                    self._win, self._win_n = 0.0, 0
            if self._left <= 0 or drift or (self.best != 1
                                            and seconds > self.JUMP * self._typical):
                self._start_probe()
            return
        side = _PROBE[self._i]
        self._sums[side] += seconds
        self._counts[side] += 1
        self._i += 1
        half = len(_PROBE) // 2
        mean = [s / c if c else 0.0 for s, c in zip(self._sums, self._counts)]
        # either side stops the probe once it has used more than twice what the other needs for
        # 4 calls (twice: the other's mean may not include its call of a trick's costly step)
        hopeless = side == 1 and self._sums[1] > 2 * mean[0] * half
        beaten = side == 0 and self._counts[1] > 0 and self._sums[0] > 2 * mean[1] * half
        if not (hopeless or beaten) and self._i < len(_PROBE):
            return
        if beaten or (not hopeless and mean[1] < mean[0]):  # the other setting wins
            loser = self._sums[0]
            self.best, self._typical = self._setting(1), mean[1]
            self.period = self.MIN_PERIOD
        else:
            loser = self._sums[1]
            self._typical = mean[0]
            self.period = min(2 * self.period, self.MAX_PERIOD)
        self._left = min(max(self.period, loser / self.PROBE_SHARE), self.LONGEST)
        self._loser, self._ran = loser, 0.0
        self._probing = False


_C_TYPES = {"int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32, "float": ctypes.c_float,
            "uint64_t": ctypes.c_uint64, "int8_t": ctypes.c_int8}


def _read_source(name: str) -> str:
    """The text of ``_native/<name>``, comments removed."""
    with open(os.path.join(_DIR, name), encoding="utf-8") as f:
        text = f.read()
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def rules_c_fields() -> tuple:
    """The names of ``SP_RULES_FIELDS`` in ``_native/rules.h``: the C rules struct ``sp_rules``,
    one ``int64`` per name, in order (the one list of them; ``SpRules`` is built from it)."""
    text = _read_source("rules.h")
    m = re.search(r"#define SP_RULES_FIELDS\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    if m is None:
        raise RuntimeError("_native/rules.h has no SP_RULES_FIELDS list")
    return tuple(re.findall(r"X\((\w+)\)", m.group(1)))


def _struct_fields(source: str, name: str) -> list:
    """The ctypes fields of ``typedef struct { ... } name;`` in ``_native/<source>``: its
    declarations in order (``int64_t``, ``int32_t``, ``float``, ``uint64_t``, ``int8_t``, arrays
    ``x[N]`` of them, pointers, ``sp_rules``, ``sp_deck``)."""
    text = _read_source(source)
    m = re.search(r"typedef struct \{([^}]*)\}\s*" + name + r"\s*;", text)
    if m is None:
        raise RuntimeError(f"_native/{source} has no struct {name}")
    out = []
    body = re.sub(r"SP_RULES_FIELDS\(\w+\)", " ", m.group(1))  # sp_rules' list: rules_c_fields
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        ctype, rest = decl.split(None, 1)
        for var in rest.split(","):
            var = var.strip()
            if var.startswith("*"):
                out.append((var.lstrip("* "), ctypes.c_void_p))
                continue
            t = globals()["SpRules"] if ctype == "sp_rules" else \
                globals()["SpDeck"] if ctype == "sp_deck" else _C_TYPES[ctype]
            arr = re.fullmatch(r"(\w+)\[(\d+)\]", var)
            out.append((arr.group(1), t * int(arr.group(2))) if arr else (var, t))
    return out


class SpDeck(ctypes.Structure):
    """ctypes mirror of ``sp_deck`` (``_native/rules.h``: the tables of a ``rules.Deck``), read
    from that struct's declaration; fill it with ``c_deck``."""

    _fields_ = _struct_fields("rules.h", "sp_deck")


class SpRules(ctypes.Structure):
    """ctypes mirror of ``sp_rules`` (``_native/rules.h``), built from its field list
    (``rules_c_fields``) and the rest of its declaration (``deck``, an ``SpDeck``); fill it with
    ``c_rules``."""

    _fields_ = ([(name, ctypes.c_int64) for name in rules_c_fields()]
                + _struct_fields("rules.h", "sp_rules"))


_decks: dict = {}  # rules.Deck name -> its SpDeck (built once per deck)


def c_deck(deck) -> SpDeck:
    """A ``rules.Deck`` as the C struct ``sp_deck``: its suit masks, ``above`` masks, plain cards,
    suits, strengths, ranks and promoted trumps, copied from the Python tables (one SpDeck per
    deck, kept: read only by C)."""
    out = _decks.get(deck.name)
    if out is None:
        out = SpDeck(suit=(ctypes.c_uint64 * 4)(*deck.suit_masks),
                     above=(ctypes.c_uint64 * 52)(*deck.above), plain=deck.plain,
                     suit_of=(ctypes.c_int8 * 52)(*deck.suit_of),
                     strength=(ctypes.c_int8 * 52)(*deck.strength),
                     rank=(ctypes.c_int8 * 52)(*deck.rank),
                     top=(ctypes.c_int8 * 4)(*deck.top, *[0] * (4 - len(deck.top))),
                     ntop=len(deck.top))
        _decks[deck.name] = out
    return out


def c_rules(rules) -> SpRules:
    """A ``Rules`` as the C struct: each field of ``SP_RULES_FIELDS`` by name, a bool as 0/1, a
    ``None`` as 0; ``has_<field>`` is 1 when ``<field>`` is not None; ``deck`` the tables of
    ``rules.deck`` (``c_deck``).

    Raises:
        RuntimeError: a C field that names no field of ``Rules`` (the two lists disagree).
    """
    values = {}
    for name, _ in SpRules._fields_:
        if name == "deck":
            values[name] = c_deck(rules.deck)
        elif name.startswith("has_") and hasattr(rules, name[4:]):
            values[name] = int(getattr(rules, name[4:]) is not None)
        elif hasattr(rules, name):
            v = getattr(rules, name)
            values[name] = 0 if v is None else int(v)
        else:
            raise RuntimeError(f"_native/rules.h: SP_RULES_FIELDS names {name!r}, which is not a "
                               f"field of Rules")
    return SpRules(**values)


class SpEnv(ctypes.Structure):
    """ctypes mirror of ``sp_env`` in ``_native/vector_kernel.c``, read from that struct's
    declaration (the one list of its fields)."""

    _fields_ = _struct_fields("vector_kernel.c", "sp_env")


def _cache_dir() -> str:
    """The configured cache folder (it is used only if ``_private_problem`` finds it private)."""
    d = os.environ.get("SPADES_ENV_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "spades_env")
    return d


def _private_problem(d: str) -> tuple[str | None, bool]:
    """Make ``d`` (mode 0700) if missing and check that it is private: a folder owned by this
    user that no other user can write. A folder of ours that others can only read (made by an older
    version) is tightened to 0700. Returns ``(why not, security)``: ``(None, False)`` when
    usable; ``security`` is True when the refusal is a safety matter (foreign owner, writable by
    others) rather than a plain inability (read-only home)."""
    try:
        if not os.path.isdir(d):
            parent = os.path.dirname(os.path.abspath(d))
            os.makedirs(parent, exist_ok=True)
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
        st = os.stat(d)  # a symlinked cache is judged by its target
    except OSError as e:
        return f"cannot create {d}: {e.strerror or e}", False
    if not stat.S_ISDIR(st.st_mode):
        return f"{d} is not a folder", False
    if hasattr(os, "getuid"):
        if st.st_uid != os.getuid():
            return f"{d} belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})", True
        if st.st_mode & 0o022:
            return (f"{d} can be written by other users (mode {stat.S_IMODE(st.st_mode):o}); "
                    f"make it private with chmod 700"), True
        if st.st_mode & 0o077:
            try:
                os.chmod(d, 0o700)
            except OSError as e:
                return f"cannot make {d} private: {e.strerror or e}", False
    if not os.access(d, os.W_OK | os.X_OK):
        return f"{d} is not writable", False
    return None, False


_tmp_lock = threading.Lock()
_tmp_folder: str | None = None  # this process's private build folder (cache not usable)
_tmp_owner = 0


def _remove_tmp_folder() -> None:
    global _tmp_folder
    if _tmp_folder is not None and os.getpid() == _tmp_owner:
        shutil.rmtree(_tmp_folder, ignore_errors=True)
        _tmp_folder = None


def _process_folder() -> str:
    """A fresh private folder (``tempfile.mkdtemp``: unpredictable name, mode 0700) for this
    process only, removed when the kernel is loaded or the process ends."""
    global _tmp_folder, _tmp_owner
    with _tmp_lock:
        if _tmp_folder is None or _tmp_owner != os.getpid() or not os.path.isdir(_tmp_folder):
            _tmp_folder = tempfile.mkdtemp(prefix="spades_env-kernel-")
            _tmp_owner = os.getpid()
            atexit.register(_remove_tmp_folder)
        return _tmp_folder


_warned: set = set()


def _kernel_name(cc: str) -> str:
    h = hashlib.sha256()
    for src in (*_SRCS, *_HEADERS):
        with open(src, "rb") as f:
            h.update(f.read())
    h.update(" ".join([cc, *_FLAGS, *_OPENMP, platform.machine(), platform.system(),
                       sys.implementation.cache_tag or ""]).encode())
    return f"vector_kernel-{h.hexdigest()[:16]}.so"


def kernel_path(cc: str | None = None) -> str:
    """Where the compiled kernel for this source, compiler, flags and platform lives: the private
    cache folder (``$SPADES_ENV_CACHE``, else ``$XDG_CACHE_HOME/spades_env``, else
    ``~/.cache/spades_env``), or, when that folder cannot be made private and writable, a fresh
    private folder of this process in the temp dir (never a shared, predictable one)."""
    cc = cc or os.environ.get("CC") or "cc"
    folder = _cache_dir()
    why, security = _private_problem(folder)
    if why is not None:
        if security and folder not in _warned:
            _warned.add(folder)
            warnings.warn(f"spades_env: not using the kernel cache: {why}; building in a private "
                          f"temp folder instead", RuntimeWarning, stacklevel=2)
        folder = _process_folder()
    return os.path.join(folder, _kernel_name(cc))


def _digest_path(path: str) -> str:
    return path + ".sha256"


def _read_fd(fd: int, limit: int = 1 << 28) -> bytes:
    chunks, total = [], 0
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        total += len(b)
        if total > limit:
            raise OSError(errno.EFBIG, "file too large")
        chunks.append(b)


def _open_own(name: str, dfd: int | None, folder: str) -> int:
    """Open ``name`` in ``folder`` read-only without following a symlink; it must be a regular
    file of this user that no other user can write (else OSError)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = (os.open(name, flags, dir_fd=dfd) if dfd is not None
          else os.open(os.path.join(folder, name), flags))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022 or (
            hasattr(os, "getuid") and st.st_uid != os.getuid()):
        os.close(fd)
        raise OSError(errno.EPERM, "not a private file of this user")
    return fd


def _verified_fd(path: str) -> int | None:
    """An open descriptor of the library at ``path`` when its SHA-256 equals the digest recorded
    when it was built (``<path>.sha256``), both files being this user's and not writable by others;
    else None (missing, foreign, damaged or never recorded: it is then built again)."""
    folder, name = os.path.split(path)
    use_dirfd = os.open in os.supports_dir_fd
    try:
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if use_dirfd else None
    except OSError:
        return None
    try:
        try:
            dig = _open_own(name + ".sha256", dfd, folder)
            try:
                want = _read_fd(dig, 200).decode("ascii", "replace").strip()
            finally:
                os.close(dig)
            fd = _open_own(name, dfd, folder)
        except OSError:
            return None
        try:
            got = hashlib.sha256(_read_fd(fd)).hexdigest()
        except OSError:
            os.close(fd)
            return None
        if not hmac.compare_digest(got, want):
            os.close(fd)
            return None
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    finally:
        if dfd is not None:
            os.close(dfd)


def _build(path: str, cc: str) -> None:
    cmd = shlex.split(cc)  # $CC may carry arguments ("ccache gcc")
    exe = shutil.which(cmd[0]) if cmd else None
    if exe is None:
        raise NativeUnavailable(f"no C compiler: {cc!r} not found (set $CC)")
    cmd[0] = exe
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    clean_stale_temps(folder, ".build-", ".so")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".build-{os.getpid()}_", suffix=".so")
    os.close(fd)
    try:
        r = subprocess.run([*cmd, *_FLAGS, *_OPENMP, "-o", tmp, *_SRCS], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:  # no OpenMP here: a serial build
            r = subprocess.run([*cmd, *_FLAGS, "-o", tmp, *_SRCS], capture_output=True, text=True,
                               timeout=120)
        if r.returncode != 0:
            out = (r.stderr or r.stdout).strip()[:2000] or "(no output)"
            raise NativeUnavailable(f"building the C kernel failed ({cc}, exit status "
                                    f"{r.returncode}): {out}")
        with open(tmp, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        os.replace(tmp, path)
        write_atomic(_digest_path(path), (digest + "\n").encode(), prefix=".build-",
                     suffix=".so")
    except (OSError, subprocess.SubprocessError) as e:
        raise NativeUnavailable(f"building the C kernel failed: {e}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


_SYMBOLS = ("sp_step", "sp_render", "sp_start_hands", "sp_end_hands", "sp_check", "sp_sample",
            "sp_step_render", "sp_openmp", "sp_playouts", "sp_env_size")


_loads = 0  # dlopen calls so far: makes each /proc/self/fd name unique (see _dlopen)


def _dlopen(path: str, fd: int):
    """``ctypes.CDLL`` of the verified open file ``fd`` (through ``/proc/self/fd`` where it exists,
    so the bytes loaded are the bytes hashed), checked for every kernel symbol and for its
    ``sp_env`` size against the ``SpEnv`` mirror read from the source.

    The dynamic loader reuses an already loaded library whose name matches, so each call uses a
    name not used before (``/proc/self/fd/./N``, ``/proc/self/fd/././N``...): a descriptor number
    reused after an earlier load must not bring back that earlier library. Another copy of this
    module in the process (a reload, or an older version beside this one in
    ``benchmarks/bench_before_after.py``) counts names on its own, so a name may still bring back
    its library: one whose ``sp_env`` size is not this build's is passed over for the next name."""
    global _loads
    for _ in range(64):
        _loads += 1
        target = f"/proc/self/fd/{'./' * _loads}{fd}" if os.path.isdir("/proc/self/fd") else path
        lib = ctypes.CDLL(target)
        missing = [s for s in _SYMBOLS if not hasattr(lib, s)]
        if not missing:
            lib.sp_env_size.restype = ctypes.c_int64
            lib.sp_env_size.argtypes = []
            if lib.sp_env_size() == ctypes.sizeof(SpEnv):
                return lib
        if target == path:  # no /proc/self/fd: the name is the file's, nothing else to try
            break
    if missing:
        raise NativeUnavailable(f"{path} is not a spades_env kernel: it lacks the symbol(s) "
                                f"{', '.join(missing)}")
    raise NativeUnavailable(f"{path}: the loaded kernel's sp_env does not match its ctypes mirror "
                            f"(another build of the kernel is loaded under that name)")


def load_kernel():
    """The loaded kernel (``ctypes.CDLL`` with ``sp_step`` and ``sp_render`` typed), built first
    if needed. Thread-safe; the result (or the failure) is remembered for the process.

    The library is loaded only from a private folder (``kernel_path``) and only when its SHA-256
    matches the digest recorded when it was built; anything else there is built again first.

    Raises:
        NativeUnavailable: no C compiler, a failed build, a library that does not load or lacks
            the kernel's symbols.
    """
    global _kernel, _error
    with _lock:
        if _kernel is not None:
            return _kernel
        if _error is not None:
            raise NativeUnavailable(_error)
        cc = os.environ.get("CC") or "cc"
        try:
            path = kernel_path(cc)
            fd = _verified_fd(path)
            if fd is None:  # missing, foreign, damaged or unrecorded: build it (again)
                _build(path, cc)
                fd = _verified_fd(path)
                if fd is None:
                    raise NativeUnavailable(f"the kernel built at {path} does not verify "
                                            f"(changed while loading?)")
            try:
                try:
                    lib = _dlopen(path, fd)
                except OSError:  # a library this system cannot load: build it again once
                    os.close(fd)
                    fd = None
                    _build(path, cc)
                    fd = _verified_fd(path)
                    if fd is None:
                        raise NativeUnavailable(f"the kernel built at {path} does not verify")
                    lib = _dlopen(path, fd)
            finally:
                if fd is not None:
                    os.close(fd)
        except (NativeUnavailable, OSError) as e:
            _error = str(e)
            raise NativeUnavailable(_error) from None
        finally:
            _remove_tmp_folder()  # a per-process build folder is not needed once loaded
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
        i64 = ctypes.c_int64
        lib.sp_playouts.argtypes = [ctypes.POINTER(SpDeck), i64, vp, vp, vp, vp, i64, i64, vp, i64,
                                    i64, i64, i64, vp]
        lib.sp_playouts.restype = ctypes.c_int64
        _kernel = lib
        return lib
