"""The pool of the play app's CPU-heavy routes (the replays, the upload, the hint): ``HeavyWork``
runs them on threads of its own, one request at a time per client, with at most
``HEAVY_PER_CLIENT`` in flight per client (429 with ``Retry-After`` beyond: ``Busy``) and
``HEAVY_QUEUED`` from all clients together (503), so one client's burst never holds another
client's requests.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

from .session import Refused

__all__ = ["HEAVY_WORKERS", "HEAVY_PER_CLIENT", "HEAVY_QUEUED", "SWITCH_INTERVAL", "Busy",
           "HeavyWork"]

HEAVY_WORKERS = 2
"""Threads of the pool that runs the replay routes, the upload and the hint (``HeavyWork``);
a client runs one request at a time, so one is always free for another client."""
HEAVY_PER_CLIENT = 4
"""Most of those requests one client (its player cookie, else its address) has in flight, one
running and the others waiting their turn; one more is answered 429 with ``Retry-After``."""
HEAVY_QUEUED = 16
"""Most of those requests in flight from all clients together (503 with ``Retry-After``)."""
SWITCH_INTERVAL = 0.001
"""The interpreter's thread switch interval (s) once heavy work runs (``sys.setswitchinterval``,
process-wide, never raised): how long the event loop may wait for a heavy thread's turn."""


class Busy(Refused):
    """A request refused for now (429: the client's limit; 503: the server's), with the seconds
    to wait in ``Retry-After``."""

    def __init__(self, status: int, message: str, retry_after: int = 1):
        super().__init__(status, message)
        self.headers = {"Retry-After": str(retry_after)}


class HeavyWork:
    """The pool of the CPU-heavy routes (replays, uploads, hints): ``workers`` threads of its
    own, so the event loop and FastAPI's shared pool stay free for every other request.

    A client (``client_key_of``) runs one request at a time, its others wait their turn in order
    (a waiting request costs nothing; one whose client went away is dropped unrun), and it may
    have at most ``per_client`` in flight, running or waiting: one more is refused at once
    (429); all clients together at most ``most`` (503). With more workers than one, a client's
    burst never takes every thread (nor, under the GIL, more than one thread's share of the
    interpreter), so another client's request starts at once. Starting the pool lowers the
    interpreter's switch interval to ``SWITCH_INTERVAL``. A request given a ``key`` (the replay
    routes: method, path and query) while the same client's request of that key is in flight
    shares its work and answer, and takes no place of its own (the page asks for a hand again
    while it is coming, once per slider step).
    """

    def __init__(self, workers: int = HEAVY_WORKERS, per_client: int = HEAVY_PER_CLIENT,
                 most: int = HEAVY_QUEUED):
        self.workers = workers
        self.pool: ThreadPoolExecutor | None = None  # started at first use, again after close
        self.per_client = per_client
        self.most = most
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}  # client -> requests running or waiting
        self._waiting: dict[str, deque] = {}  # client (while one of its requests runs) -> jobs
        self._same: dict[tuple, Future] = {}  # (client, key) -> its request in flight

    def refusal(self, client: str, key=None) -> "Busy | None":
        """The ``Busy`` a new request of ``client`` (of ``key``) would get now, or None."""
        if key is not None and (client, key) in self._same:
            return None  # shares the one in flight
        if self._in_flight.get(client, 0) >= self.per_client:
            return Busy(429, f"too many replay, upload or hint requests at once: at most "
                             f"{self.per_client} per client; try again in a second")
        if sum(self._in_flight.values()) >= self.most:
            return Busy(503, "the server is busy with replays; try again in a second")
        return None

    def _submit(self, client: str, job) -> None:
        """Run ``job`` (under ``_lock``), the client's only running request."""
        if self.pool is None:
            # a heavy thread holds the interpreter lock for its whole time slice: at 1 ms
            # instead of 5, the event loop (every other request) waits 1 ms for it each time
            sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
            self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="spades-play-heavy")
        self.pool.submit(self._work, client, *job)

    def _work(self, client: str, fut: Future, fn, args, key=None) -> None:
        result = error = None
        run = fut.set_running_or_notify_cancel()  # False: its client went away meanwhile
        try:
            if run:
                try:
                    result = fn(*args)
                except BaseException as e:  # noqa: BLE001 - handed to the awaiting route
                    error = e
        finally:
            with self._lock:  # its place is free before its answer is handed on
                if key is not None and self._same.get((client, key)) is fut:
                    del self._same[(client, key)]
                n = self._in_flight.get(client, 0) - 1
                if n > 0:
                    self._in_flight[client] = n
                else:
                    self._in_flight.pop(client, None)
                waiting = self._waiting.get(client)
                if waiting:
                    try:
                        self._submit(client, waiting.popleft())
                    except RuntimeError:  # the pool was closed: the rest is not run
                        self._waiting.pop(client, None)
                else:
                    self._waiting.pop(client, None)
        if run:
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)

    async def run(self, client: str, fn, *args, key=None):
        """``fn(*args)`` in the pool, for ``client``, after its earlier requests; the result.
        With ``key``: the answer of the client's request of ``key`` in flight, when there is one.

        Raises:
            Busy: 429 when ``client`` has ``per_client`` requests in flight, 503 when all
                clients together have ``most``.
        """
        fut: Future = Future()
        job = (fut, fn, args, key)
        with self._lock:
            shared = None if key is None else self._same.get((client, key))
            if shared is None:
                busy = self.refusal(client)
                if busy is not None:
                    raise busy
                if key is not None:
                    self._same[(client, key)] = fut
        if shared is not None:
            try:  # the first asker's going away must not cancel it for this one, nor this for it
                return await asyncio.shield(asyncio.wrap_future(shared))
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not shared.cancelled() or getattr(task, "cancelling", lambda: 1)():
                    raise
            return await self.run(client, fn, *args, key=key)  # it was dropped unrun
        with self._lock:
            self._in_flight[client] = self._in_flight.get(client, 0) + 1
            if client in self._waiting:
                self._waiting[client].append(job)
            else:
                self._waiting[client] = deque()
                try:
                    self._submit(client, job)
                except BaseException:
                    if key is not None and self._same.get((client, key)) is fut:
                        del self._same[(client, key)]
                    self._in_flight[client] -= 1
                    if not self._in_flight[client]:
                        self._in_flight.pop(client)
                    self._waiting.pop(client, None)
                    raise
        return await asyncio.wrap_future(fut)

    def close(self) -> None:
        """Stop the pool (work not started is dropped); the next request starts a new one."""
        with self._lock:
            pool, self.pool = self.pool, None
            for client, waiting in self._waiting.items():
                for fut, *_rest in waiting:
                    fut.cancel()
            self._waiting.clear()
            self._same.clear()
            self._in_flight.clear()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

