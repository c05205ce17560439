"""Load the C kernel: the fused step of the batched engine (``SpadesVectorEnv(backend="native")``)
and the PIMC bots' play-outs and exact endgame solver (``bots.solver.playouts``,
``bots.solver.solve_many``).

The kernel (``spades_env/_native/vector_kernel.c``, ``playout.c`` and ``rules.c``) is plain C
with no Python or torch headers, built when the package is built (``setup.py``: ``pip install``,
``python -m build``, ``pip install -e .``) into the extension module ``spades_env._kernel``, with
OpenMP where the compiler has it (``SpadesVectorEnv(threads=...)``), and loaded from the installed
package with ``ctypes``. Nothing is compiled at run time and nothing is written anywhere.

A loaded library must export every kernel symbol, have the ``sp_env`` size of the ``SpEnv``
mirror, and have been built from the sources beside it (``source_digest``: an in-place build left
stale by an edit of ``_native/`` is refused, not run). When the extension is missing (a checkout
used without ``pip install -e .``, or a build without a C compiler) or refused,
``load_kernel()`` raises ``NativeUnavailable`` with the reason and how to build it;
``SpadesVectorEnv(backend="auto")`` then falls back to the torch path, the bots to the Python
play-outs and solver (the same results, slower), and ``backend="native"`` raises it.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import importlib.util
import os
import re
import sys
import threading
import weakref

__all__ = ["NativeUnavailable", "load_kernel", "SpEnv", "SpRules", "SpDeck", "c_rules", "c_deck",
           "rules_c_fields", "kernel_path", "source_digest"]

_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")
_MODULE = "spades_env._kernel"  # the extension module that is the kernel (setup.py)
_HOW = ("build it with `pip install -e .` in a checkout (CONTRIBUTING.md), or install a wheel: "
        "`pip install spades_env`")
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
    """The kernel's OpenMP runtime (libgomp: the system's in a checkout build, where it is torch's
    own when torch is loaded, the wheel's bundled copy otherwise) has a thread pool that is gone
    in a forked child: a parallel region there would wait forever. So a child
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
    """The C kernel is not there (the package was built without it) or cannot be loaded."""


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


def source_digest(folder: str = _DIR) -> str:
    """SHA-256 of the kernel's sources (``*.c`` and ``*.h`` of ``folder`` by name, line ends as
    LF): what ``setup.py`` compiles into the library (``sp_source_digest``)."""
    h = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(folder, "*.[ch]")), key=os.path.basename):
        with open(path, "rb") as f:
            data = f.read().replace(b"\r\n", b"\n")
        h.update(os.path.basename(path).encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def kernel_path() -> str | None:
    """The file of the built kernel (``spades_env/_kernel.*.so``, ``.pyd`` on Windows), None when
    the package was not built (a checkout without ``pip install -e .``)."""
    try:
        spec = importlib.util.find_spec(_MODULE)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin else None


_SYMBOLS = ("sp_step", "sp_render", "sp_sync_rows", "sp_start_hands", "sp_end_hands", "sp_check",
            "sp_sample", "sp_step_render", "sp_openmp", "sp_playouts", "sp_solve",
            "sp_sample_deals", "sp_env_size", "sp_source_digest")


def _open(path: str):
    """``ctypes.CDLL`` of ``path``, checked for every kernel symbol, for its ``sp_env`` size
    against the ``SpEnv`` mirror read from the source, and for the digest of its sources."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise NativeUnavailable(f"the C kernel {path} does not load: {e}; {_HOW}") from None
    missing = [s for s in _SYMBOLS if not hasattr(lib, s)]
    if missing:
        raise NativeUnavailable(f"{path} is not a spades_env kernel: it lacks the symbol(s) "
                                f"{', '.join(missing)}")
    lib.sp_env_size.restype = ctypes.c_int64
    lib.sp_env_size.argtypes = []
    lib.sp_source_digest.restype = ctypes.c_char_p
    lib.sp_source_digest.argtypes = []
    built, here = lib.sp_source_digest().decode("ascii", "replace"), source_digest()
    if built != here or lib.sp_env_size() != ctypes.sizeof(SpEnv):
        raise NativeUnavailable(f"the C kernel {path} was built from other sources than "
                                f"{_DIR} (edited since the build?); {_HOW}")
    return lib


def load_kernel():
    """The loaded kernel (``ctypes.CDLL`` with its functions typed), the extension module
    ``spades_env._kernel`` built with the package. Thread-safe; the result (or the failure) is
    remembered for the process.

    Raises:
        NativeUnavailable: the package was built without the kernel (a checkout without ``pip
            install -e .``), or the library does not load, lacks the kernel's symbols or was
            built from other sources.
    """
    global _kernel, _error
    with _lock:
        if _kernel is not None:
            return _kernel
        if _error is not None:
            raise NativeUnavailable(_error)
        path = kernel_path()
        try:
            if path is None:
                raise NativeUnavailable(f"the C kernel is not built ({_MODULE} is missing); "
                                        f"{_HOW}")
            lib = _open(path)
        except NativeUnavailable as e:
            _error = str(e)
            raise
        p = ctypes.POINTER(SpEnv)
        lib.sp_step.argtypes = [p, ctypes.c_void_p, ctypes.c_int64]
        lib.sp_step.restype = ctypes.c_int64
        lib.sp_render.argtypes = [p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        lib.sp_render.restype = None
        lib.sp_sync_rows.argtypes = [p, ctypes.c_int64]
        lib.sp_sync_rows.restype = None
        vp = ctypes.c_void_p
        lib.sp_start_hands.argtypes = [p, vp, vp]
        lib.sp_start_hands.restype = None
        lib.sp_end_hands.argtypes = [p, vp, vp, ctypes.c_int64, vp, vp, vp, vp, vp]
        lib.sp_end_hands.restype = ctypes.c_int64
        lib.sp_check.argtypes = [p, vp]
        lib.sp_check.restype = ctypes.c_int64
        lib.sp_sample.argtypes = [p, vp, vp]
        lib.sp_sample.restype = None
        lib.sp_step_render.argtypes = [p, vp, ctypes.c_int64, vp, vp, vp, vp, vp, vp,
                                            ctypes.c_int64]
        lib.sp_step_render.restype = ctypes.c_int64
        lib.sp_openmp.argtypes = []
        lib.sp_openmp.restype = ctypes.c_int
        i64 = ctypes.c_int64
        lib.sp_playouts.argtypes = [ctypes.POINTER(SpDeck), i64, vp, vp, vp, vp, i64, i64, vp, i64,
                                    i64, i64, i64, vp]
        lib.sp_playouts.restype = ctypes.c_int64
        lib.sp_solve.argtypes = [ctypes.POINTER(SpDeck), i64, vp, vp, vp, i64, i64, i64, i64, i64,
                                 i64, vp, vp, vp]
        lib.sp_solve.restype = ctypes.c_int64
        lib.sp_sample_deals.argtypes = [ctypes.POINTER(SpDeck), vp, ctypes.c_uint64, i64, vp, vp,
                                        vp, i64, ctypes.c_uint64, vp, vp]
        lib.sp_sample_deals.restype = ctypes.c_int64
        _kernel = lib
        return lib
