"""Worker processes that never outlive the command that started them.

Every command that plays or labels in parallel (``spades arena --workers N``,
``training.labelling``'s label workers, ``training.teacher_records``, the benchmarks) takes its
processes from ``worker_pool``, which holds one rule for all of them: **the workers end with the
command**, whatever ends it.

- While the pool is open, SIGTERM (what ``kill``, ``timeout``, systemd, CI runners and job
  schedulers send) raises ``Terminated`` (a ``SystemExit`` with status 143) in the main thread, so
  the ``with`` block unwinds as it does for Ctrl-C (SIGINT: ``KeyboardInterrupt``). A SIGTERM
  handler the program installed itself is left in place (it decides what SIGTERM does).
- Leaving the block ends the workers: on an exception (SIGTERM, Ctrl-C, a failed task) they are
  terminated at once and queued work is dropped; a ``multiprocessing`` pool is always terminated
  (as ``Pool.__exit__`` does), an executor left normally cancels queued calls and waits for the
  running ones. Signals are ignored while the workers are being stopped, so a second Ctrl-C cannot
  leave them half-stopped.
- Workers ignore SIGINT (Ctrl-C in a terminal reaches the whole process group; the main process
  alone handles it and stops them), and each exits by itself within a second when its parent is
  gone, even after a SIGKILL that no handler sees.

Workers start with the ``spawn`` method (``fork`` is unsafe with torch's threads), so a script
using this must guard its entry point with ``if __name__ == "__main__":`` and the task functions
must be importable.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

__all__ = ["worker_pool", "Terminated", "TERMINATED_STATUS"]

TERMINATED_STATUS = 128 + signal.SIGTERM
"""the exit status of a command ended by SIGTERM (143, as a shell reports a signalled process)."""

_WATCH_SECONDS = 0.5  # how often a worker checks that its parent is alive


class Terminated(SystemExit):
    """SIGTERM arrived while a ``worker_pool`` was open: a ``SystemExit`` with status 143."""

    def __init__(self) -> None:
        super().__init__(TERMINATED_STATUS)


def _raise_terminated(signum, frame):
    raise Terminated()


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(_WATCH_SECONDS)
        if os.getppid() != parent:  # re-parented: the command is gone
            os._exit(1)


def _init_worker(parent: int, initializer, initargs) -> None:
    """Runs first in every worker: ignore Ctrl-C, exit when ``parent`` is gone, then the caller's
    own initializer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch",
                     daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def _signals_ignored():
    """SIGINT and SIGTERM ignored inside the block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def _stop_processes(procs, grace: float = 5.0) -> None:
    """Terminate ``procs`` (``multiprocessing`` processes), wait for them, kill what remains."""
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(1.0)


@contextlib.contextmanager
def worker_pool(processes: int, *, executor: bool = False, initializer=None, initargs=()):
    """A ``spawn`` pool of ``processes`` workers that end with the ``with`` block (module
    docstring): ``multiprocessing.pool.Pool`` by default, ``concurrent.futures.
    ProcessPoolExecutor`` with ``executor=True``. ``initializer(*initargs)`` runs in each worker.

    Raises:
        ValueError: ``processes`` not a positive int, or ``initializer`` not callable.
        Terminated: SIGTERM arrived inside the block (after the workers were stopped).
    """
    import multiprocessing

    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be a positive int, got {processes!r}")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable or None, got {initializer!r}")
    ctx = multiprocessing.get_context("spawn")
    init_args = (os.getpid(), initializer, tuple(initargs))
    main_thread = threading.current_thread() is threading.main_thread()
    old_term = signal.getsignal(signal.SIGTERM) if main_thread else None
    ours = main_thread and old_term in (signal.SIG_DFL, None)
    if ours:
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        if executor:
            from concurrent.futures import ProcessPoolExecutor
            pool = ProcessPoolExecutor(max_workers=processes, mp_context=ctx,
                                       initializer=_init_worker, initargs=init_args)
            try:
                yield pool
            except BaseException:
                with _signals_ignored():
                    procs = list((getattr(pool, "_processes", None) or {}).values())
                    pool.shutdown(wait=False, cancel_futures=True)
                    _stop_processes(procs)
                raise
            with _signals_ignored():
                pool.shutdown(wait=True, cancel_futures=True)
        else:
            pool = ctx.Pool(processes, initializer=_init_worker, initargs=init_args)
            try:
                yield pool
            finally:
                with _signals_ignored():
                    procs = list(getattr(pool, "_pool", None) or [])
                    pool.terminate()
                    pool.join()
                    _stop_processes(procs)
    finally:
        if ours:
            signal.signal(signal.SIGTERM, old_term if old_term is not None else signal.SIG_DFL)


def _run_background(parent: int, target, args) -> None:
    """A ``background_process``'s body: the workers' rules (``_init_worker``), then
    ``target(*args)``."""
    _init_worker(parent, None, ())
    target(*args)


class BackgroundProcess:
    """One ``spawn`` process running ``target(*args)`` beside the command, under the workers'
    rules (module docstring: it ignores Ctrl-C and exits within a second when its parent is
    gone, even after a SIGKILL). ``stop`` ends it (SIGTERM, then SIGKILL after ``grace``
    seconds); use it as a context manager so that it ends with the block whatever ends the
    block. ``target`` must be importable (spawn).

    Raises:
        ValueError: ``target`` not callable.
    """

    def __init__(self, target, args=(), name: str = "spades-background"):
        import multiprocessing
        if not callable(target):
            raise ValueError(f"target must be callable, got {target!r}")
        ctx = multiprocessing.get_context("spawn")
        self.process = ctx.Process(target=_run_background, args=(os.getpid(), target,
                                                                  tuple(args)),
                                   name=name, daemon=True)
        self.process.start()

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.is_alive()

    def stop(self, grace: float = 5.0) -> int | None:
        """End the process (if it still runs) and wait for it; returns its exit code (``None``
        if it could not be reaped)."""
        with _signals_ignored():
            _stop_processes([self.process], grace)
        return self.process.exitcode

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ += ["BackgroundProcess"]
