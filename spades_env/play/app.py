"""The play app's HTTP routes (FastAPI): thin wrappers that parse a request, call the session and
answer with the player's view. See docs/play.md for the API table.

``create_app(db_path, ...)`` builds the app; ``spades play`` serves it with uvicorn.
Every game belongs to the browser that started it (an HttpOnly, SameSite=Strict cookie holds a
random player id); a game id (``secrets.token_urlsafe``, 144 bits) of another player answers 404,
like an unknown one. Request bodies are limited in size (``MAX_BODY``; ``MAX_UPLOAD`` for a game
record sent to the replay view), announced or chunked (``BodyLimit``: 413 before the route runs),
and validated strictly; a request without a usable Host header is refused (``HostCheck``); a
refusal is an HTTP error whose JSON ``detail`` says what was wrong, and leaves the game unchanged.

Replays are served hand by hand (``replay.ReplayGame``): every answer is about the size of what
the page shows, and a game is indexed once, so a request replays a bounded number of moves.
CPU-heavy work never runs on the event loop: the light routes are plain functions (FastAPI runs
them in its thread pool); the replay routes, the upload and the hint run in a small pool of their
own (``HeavyWork``), with at most ``HEAVY_PER_CLIENT`` requests in flight per client (429 with
``Retry-After`` beyond), so one client's burst never holds another client's requests. A record
is read by one reader (``replay.read_records``) and refused by one error path
(``record_refusal``: 422, or 413 past a size limit), the same on every route.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import sqlite3
import sys
import threading
import urllib.parse
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from typing import Any

import numpy as np
from fastapi import Body, Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

from . import replay
from .analysis import Analyst, default_checkpoint
from ..rules import PRESETS, Rules
from .session import (
    HUMAN_SEAT, LEVELS, LINEUPS, PANEL_FIELDS, TARGETS, BotPool, GameSession, Refused,
    checkpoint_lineup, rules_info, stats_summary, warm_views,
)
from .store import Store

__all__ = ["create_app", "MAX_BODY", "MAX_UPLOAD", "COOKIE", "LOCAL_HOSTS", "UPLOADS_KEPT",
           "UPLOADS_RECEIVING",
           "HEAVY_WORKERS", "HEAVY_PER_CLIENT", "HEAVY_QUEUED", "SWITCH_INTERVAL", "ANALYSES_KEPT",
           "HeavyWork",
           "record_refusal"]

MAX_BODY = 4096
"""Largest request body (bytes) of every route but the record upload."""
MAX_UPLOAD = 8 * 1024 * 1024
"""Largest game record file (bytes) the replay view accepts by upload (its moves are bounded
too: ``replay.MAX_UPLOAD_MOVES``)."""
UPLOADS_RECEIVING = 4 * MAX_UPLOAD
"""Most bytes of upload bodies being received at once, all clients together (``BodyLimit``;
past it, 503 with ``Retry-After``): a body is read whole before the route runs."""
UPLOADS_KEPT = 8
"""Uploaded record files kept in memory (the newest) for their replays, hand by hand."""
COOKIE = "spades_player"
CACHE_GAMES = 32
"""Games kept loaded in memory (the store stays the truth; a stale copy is reloaded)."""
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
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
ANALYSES_KEPT = 256
"""Replay analyses kept (the newest), by replay and move: asking again costs nothing."""
_PLAYER_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")
_STATIC = resources.files("spades_env.play") / "static"


class BodyLimit:
    """ASGI middleware: refuse (413) a request body over its limit, whether announced by
    Content-Length or streamed in chunks. The body is read here, within the limit, and handed on
    whole, so the app never sees a body that was cut."""

    def __init__(self, app, limit: int, upload_limit: int, upload_path: str):
        self.app = app
        self.limit = limit
        self.upload_limit = upload_limit
        self.upload_path = upload_path
        self.receiving = 0  # bytes of upload bodies being read now (``UPLOADS_RECEIVING``)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        upload = scope["path"] == self.upload_path
        limit = self.upload_limit if upload else self.limit
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    n = int(v)
                except ValueError:
                    return await _send_error(send, 400, "bad Content-Length header")
                if n > limit:
                    if upload:
                        return await self._too_large(scope, send, n)
                    return await _send_error(send, 413, f"request body too large: {n} bytes, "
                                                        f"the limit is {limit}")
        if scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        chunks, seen = [], 0
        try:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    return
                body = msg.get("body", b"")
                seen += len(body)
                if seen > limit:
                    if upload:
                        return await self._too_large(scope, send, None)
                    return await _send_error(send, 413, f"request body too large: more than "
                                                        f"{limit} bytes, the limit is {limit}")
                if upload:
                    if self.receiving + len(body) > UPLOADS_RECEIVING:
                        return await _send_error(
                            send, 503, "the server is receiving too many uploads at once; try "
                                       "again in a second", [(b"retry-after", b"1")])
                    self.receiving += len(body)
                chunks.append(body)
                if not msg.get("more_body", False):
                    break
        finally:
            if upload:
                self.receiving -= sum(len(c) for c in chunks)
        whole = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return whole
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope, send, n: int | None) -> None:
        """413 for an upload over its limit, naming the file (``X-File-Name``)."""
        name = upload_name(dict(scope.get("headers", ())).get(b"x-file-name", b"").decode(
            "latin-1"))
        size = "more than the limit" if n is None else f"{n / 2 ** 20:.1f} MiB"
        limit = f"{self.upload_limit / 2 ** 20:g} MiB"
        msg = f"{name} is too large to open: {size}; the limit is {limit}"
        body = json.dumps({"detail": msg, "summary": msg}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def upload_name(header: str) -> str:
    """The file name of an upload's ``X-File-Name`` header (URL-encoded by the page), printable
    and at most 120 characters; ``the uploaded file`` without one."""
    name = urllib.parse.unquote(header)[:120].strip()
    return "".join(ch for ch in name if ch.isprintable()) or "the uploaded file"


class HostCheck:
    """ASGI middleware: refuse (400) a request whose Host header is missing, empty or not one of
    ``allowed`` (``"*"``: any non-empty host). With ``canonical`` set, the page (``GET /``)
    asked for under another local name is redirected there, so that ``localhost`` and
    ``127.0.0.1`` share one cookie and therefore the same saved games."""

    def __init__(self, app, allowed, canonical: str | None = None):
        self.app = app
        self.any = "*" in allowed
        self.allowed = {h.lower() for h in allowed}
        self.canonical = canonical

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        hosts = [v for k, v in scope.get("headers", ()) if k == b"host"]
        raw = hosts[0].decode("latin-1").strip() if len(hosts) == 1 else ""
        if not raw:
            return await _send_error(send, 400, "missing or empty Host header" if len(hosts) < 2
                                     else "more than one Host header")
        m = _HOST_RE.fullmatch(raw)
        if m is None:
            return await _send_error(send, 400, f"invalid Host header {raw[:80]!r}")
        host = m.group("host").lower()
        if not self.any and host not in self.allowed:
            return await _send_error(send, 400, f"Host {host[:80]!r} is not served here; open "
                                                f"the page as http://localhost:PORT/")
        if (self.canonical and host != self.canonical and scope["type"] == "http"
                and scope["method"] == "GET" and scope["path"] == "/"):
            port = f":{m.group('port')}" if m.group("port") else ""
            qs = scope.get("query_string", b"").decode("latin-1")
            url = f"http://{self.canonical}{port}/" + (f"?{qs}" if qs else "")
            await send({"type": "http.response.start", "status": 307,
                        "headers": [(b"location", url.encode("latin-1")),
                                    (b"content-length", b"0")]})
            return await send({"type": "http.response.body", "body": b""})
        return await self.app(scope, receive, send)


_HOST_RE = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?")


async def _send_error(send, status: int, detail: str, headers=()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------------- request bodies
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewGameIn(_Strict):
    difficulty: StrictStr
    target: StrictInt = 500
    blind_nil: StrictBool = False
    rules: dict[str, Any] | StrictStr | None = None  # a rules mapping (``Rules.parse``)


class RulesIn(_Strict):
    rules: dict[str, Any] | StrictStr


def parse_rules(spec) -> Rules:
    """A request's rules mapping as ``Rules`` (``Rules.parse``: a preset and fields); the
    engine's one-line reason as a 422 when it refuses them."""
    try:
        return Rules.parse(spec)
    except (ValueError, TypeError) as e:
        raise Refused(422, " ".join(str(e).split())) from None


class ActionIn(_Strict):
    action: StrictInt
    seq: StrictInt | None = None


class SeqIn(_Strict):
    seq: StrictInt | None = None


class WarmIn(_Strict):
    difficulty: StrictStr | None = None
    game: StrictStr | None = None
    hints: StrictBool = True


class Busy(Refused):
    """A request refused for now (429: the client's limit; 503: the server's), with the seconds
    to wait in ``Retry-After``."""

    def __init__(self, status: int, message: str, retry_after: int = 1):
        super().__init__(status, message)
        self.headers = {"Retry-After": str(retry_after)}


class HeavyWork:
    """The pool of the CPU-heavy routes (replays, uploads, hints): ``workers`` threads of its
    own, so the event loop and FastAPI's shared pool stay free for every other request.

    A client (``_client_key``) runs one request at a time, its others wait their turn in order
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


def _client_key(cookie: str | None, address: str | None) -> str:
    """Who a request is from, for ``HeavyWork``'s limit: its player cookie, else (no usable
    cookie: every such request would get a new player id) its address."""
    if cookie and _PLAYER_RE.fullmatch(cookie):
        return "player:" + cookie
    return "addr:" + (address or "?")


def _is_heavy(method: str, path: str) -> bool:
    """A request of a ``HeavyWork`` route: a replay's summary, hand or analysis, the upload, a
    hint."""
    if path.startswith("/api/watch/"):
        return not path.endswith("/record")
    return method == "GET" and path.startswith("/api/games/") and path.endswith("/hint")


class HeavyGate:
    """ASGI middleware: a request of a heavy route from a client already at its ``HeavyWork``
    limit is answered here (429 or 503, ``Retry-After``), before routing and before an upload's
    body is read, so a client's flood of refused requests costs the server little. The route
    still admits each request itself (``HeavyWork.run``); this is only the cheap early answer."""

    def __init__(self, app, heavy: HeavyWork):
        self.app = app
        self.heavy = heavy

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and _is_heavy(scope["method"], scope["path"]):
            cookie = None
            for k, v in scope.get("headers", ()):
                if k == b"cookie":
                    for part in v.decode("latin-1").split(";"):
                        name, _, value = part.strip().partition("=")
                        if name == COOKIE:
                            cookie = value
            client = scope.get("client")
            who = _client_key(cookie, client[0] if client else None)
            busy = self.heavy.refusal(who, _same_key(who, scope))
            if busy is not None:
                return await _send_error(send, busy.status, busy.message,
                                         [(b"retry-after", b"1")])
        return await self.app(scope, receive, send)


def _same_key(client: str, scope) -> tuple | None:
    """The key under which a client's identical requests share one answer (``HeavyWork.run``):
    a replay GET of a client with a player cookie (one without may be anyone)."""
    if scope["method"] != "GET" or not client.startswith("player:"):
        return None
    return (scope["path"], scope.get("query_string", b""))


def record_refusal(e: ValueError) -> Refused:
    """The one answer to a record (or a game of it) the replay view refuses, on every route:
    413 past a size limit (``replay.TooLarge``), else 422, with the reason (``detail``) and a
    line for the player (``summary``: ``replay.refusal_summary``)."""
    large = isinstance(e, replay.TooLarge)
    out = Refused(413 if large else 422, str(e))
    out.extra = {"summary": replay.refusal_summary(str(e), too_large=large)}
    return out


class _JSON(JSONResponse):
    """Every JSON answer, in ASCII: a string that is not valid Unicode (a lone surrogate, from a
    player name in a record, a teacher's name, a record file's name that is not UTF-8) is sent
    as its ``\\uXXXX`` escape instead of failing the answer with 500."""

    def render(self, content) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {e.get('msg', 'invalid')}")
    return "bad request: " + "; ".join(parts)


def create_app(db_path: str, checkpoint: str | None = None, lineups: dict | None = None,
               records=(), allowed_hosts=None, seed: int | None = None,
               analysis_checkpoint: str | None = "default", canonical_host: str | None = None,
               analyst: Analyst | None = None) -> FastAPI:
    """Build the play app.

    Args:
        db_path: the SQLite file of saved games and statistics (created when missing).
        checkpoint: a training checkpoint; adds the difficulty ``checkpoint`` (the agent as both
            opponents, a ``hard`` partner).
        lineups: difficulty -> ``{"partner": bot, "opponents": bot}`` overriding ``LINEUPS``
            (tests use fast bots this way).
        records: game record files shown in the replay view (``replay.load_record_file``).
        allowed_hosts: Host headers accepted (default: localhost names and ``testserver``);
            ``["*"]`` accepts any non-empty one.
        seed: makes the games reproducible (tests, demos): the k-th new game of this app gets
            the k-th seed drawn from ``np.random.default_rng(seed)``; default: a random seed.
        analysis_checkpoint: the checkpoint whose probabilities the hint and the replay analysis
            show; ``"default"``: ``checkpoint`` when given, else the shipped agent of a source
            checkout (``analysis.default_checkpoint``); None: probabilities off.
        canonical_host: redirect the page asked for under another local name to this host
            (the command line sets ``localhost``), so every local name sees the same games.
        analyst: an ``analysis.Analyst`` to use instead (tests).
    Raises:
        ValueError: an unusable database or record file (the message names the file).
    """
    store = Store(db_path)
    table = dict(LINEUPS)
    if lineups:
        table.update(lineups)
    levels = list(table)
    if checkpoint is not None:
        table["checkpoint"] = checkpoint_lineup(checkpoint)
        levels.append("checkpoint")
    levels_of = levels
    sources = [replay.load_record_file(p) for p in records]
    bots = BotPool()
    seeds = None if seed is None else np.random.default_rng(seed)
    lock = threading.Lock()  # one move at a time: moves of a game are strictly ordered
    if analyst is None:
        if analysis_checkpoint == "default":
            analysis_checkpoint = checkpoint or default_checkpoint()
        analyst = Analyst(analysis_checkpoint)
    uploads: OrderedDict[str, tuple[str, replay.RecordSource]] = OrderedDict()  # token -> ...
    heavy = HeavyWork()
    analyses: OrderedDict[tuple, dict] = OrderedDict()  # (kind, ref, game, move) -> answer
    analyses_lock = threading.Lock()

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        heavy.close()

    app = FastAPI(title="spades_env play", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan, default_response_class=_JSON)
    app.state.store = store
    app.state.bots = bots
    app.state.lineups = table
    app.state.analyst = analyst
    app.state.heavy = heavy
    app.state.sources = sources
    app.add_middleware(BodyLimit, limit=MAX_BODY, upload_limit=MAX_UPLOAD,
                       upload_path="/api/watch/upload")
    app.add_middleware(HeavyGate, heavy=heavy)
    app.add_middleware(HostCheck, allowed=list(allowed_hosts or (*LOCAL_HOSTS, "testserver")),
                       canonical=canonical_host)

    @app.exception_handler(Refused)
    async def _refused(request: Request, exc: Refused):
        return _JSON({"detail": exc.message, **getattr(exc, "extra", {})}, status_code=exc.status,
                     headers=getattr(exc, "headers", None))

    @app.exception_handler(replay.RecordError)
    async def _record(request: Request, exc: replay.RecordError):
        return await _refused(request, record_refusal(exc))

    @app.exception_handler(sqlite3.Error)
    async def _database(request: Request, exc: sqlite3.Error):
        return _JSON({"detail": f"the database {store.path} failed ({exc}); nothing was "
                                       f"changed"}, status_code=503)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return _JSON({"detail": _validation_message(exc)}, status_code=422)

    async def player_id(request: Request, response: Response) -> str:
        # async: no blocking work, so no trip through the thread pool for every request
        pid = request.cookies.get(COOKIE)
        if not pid or not _PLAYER_RE.fullmatch(pid):
            pid = secrets.token_urlsafe(24)
            response.set_cookie(COOKIE, pid, max_age=10 * 365 * 86400, httponly=True,
                                samesite="strict", path="/")
        return pid

    def client_key(request: Request) -> str:
        return _client_key(request.cookies.get(COOKIE),
                           request.client.host if request.client else None)

    cache: OrderedDict[str, GameSession] = OrderedDict()  # sessions by game id, newest last

    def load(game_id: str, player: str) -> GameSession:
        """The player's game: the cached session when it is current (same move count and hand
        tables closed as stored), else loaded from the store (``SpadesGame.from_json`` replays
        and checks the whole move log)."""
        version = store.game_version(game_id, player) if len(game_id) <= 64 else None
        if version is None:
            raise Refused(404, "unknown game id")
        s = cache.get(game_id)
        if s is None or (s.row.moves, s.row.hands_acked) != version or s.row.player != player:
            row = store.load_game(game_id, player)
            if row is None:
                raise Refused(404, "unknown game id")
            s = GameSession(row, store, bots)
        cache[game_id] = s
        cache.move_to_end(game_id)
        while len(cache) > CACHE_GAMES:
            cache.popitem(last=False)
        return s

    def mutate(game_id: str, player: str, fn) -> dict:
        """Load the game, run ``fn(session)`` (one move or a closed hand table), answer the new
        view. A failure drops the cached copy, so the next request reloads the stored state."""
        with lock:
            s = load(game_id, player)
            try:
                fn(s)
            except BaseException:
                cache.pop(game_id, None)
                raise
            return view(s, player)

    def view(s: GameSession, player: str) -> dict:
        return s.public_view(store.stats(player) if s.game.is_over else None)

    # ------------------------------------------------------------------ pages
    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(str(_STATIC / "index.html"), headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=str(_STATIC)), name="static")

    # ------------------------------------------------------------------ games
    @app.get("/api/config")
    async def config(player: str = Depends(player_id)):
        return {"levels": [{"key": k, **{r: _label(v) for r, v in table[k].items()}}
                           for k in levels],
                "targets": list(TARGETS), "blind_nil_option": True,
                "presets": {k: r.to_dict() for k, r in PRESETS.items()},
                "rule_fields": list(PANEL_FIELDS),
                "analysis": {"checkpoint": analyst.checkpoint and os.path.basename(
                    analyst.checkpoint), "search": analyst.search}}

    @app.post("/api/games", status_code=201)
    def new_game(body: NewGameIn, player: str = Depends(player_id)):
        if body.difficulty not in levels:
            raise Refused(422, f"unknown difficulty {body.difficulty!r}; choose one of {levels}")
        if body.rules is not None:
            given = body.model_fields_set & {"target", "blind_nil"}
            if given:
                raise Refused(422, f"give {' and '.join(sorted(given))} inside rules "
                                   f"(target_score, blind_nil), not beside it")
            rules = parse_rules(body.rules)
        else:
            if body.target not in TARGETS:
                raise Refused(422, f"game length must be one of {list(TARGETS)} points, got "
                                   f"{body.target}")
            rules = Rules(target_score=body.target, blind_nil=body.blind_nil)
        bots.warm(table[body.difficulty].values())  # (already warm: nothing to do)
        with lock:
            s = GameSession.create(store, bots, player, body.difficulty, table[body.difficulty],
                                   seed=None if seeds is None else int(seeds.integers(2 ** 63)),
                                   rules=rules)
            return view(s, player)

    @app.post("/api/warm")
    def warm(body: WarmIn, player: str = Depends(player_id)):
        """Start loading what a difficulty (``difficulty``) or a game (``game``: its line-up)
        needs, and the hint's agent and search with ``hints``; answer how far that is:
        ``{"ready", "done", "total", "items": [{"key", "label", "state", "seconds"}]}``
        (``BotPool.status``). The page asks when a difficulty is chosen, and waits for
        ``ready`` (showing the items) before the first bot move of a game."""
        if (body.difficulty is None) == (body.game is None):
            raise Refused(422, "give either difficulty or game")
        if body.game is not None:
            with lock:
                levels = list(load(body.game, player).row.lineup.values())
        elif body.difficulty in levels_of:
            levels = list(table[body.difficulty].values())
        else:
            raise Refused(422, f"unknown difficulty {body.difficulty!r}; choose one of {levels_of}")
        levels = list(dict.fromkeys(levels))
        bots.warm(levels)
        items = [bots.status(lv) for lv in levels]
        if body.hints and hasattr(analyst, "warm"):  # (a test's stand-in may not warm)
            analyst.warm(warm_views())
            items.append(analyst.status())
        done = sum(it["state"] in ("ready", "failed") for it in items)
        return {"ready": done == len(items), "done": done, "total": len(items), "items": items}

    @app.post("/api/rules")
    def check_rules(body: RulesIn, player: str = Depends(player_id)):
        """The rules a mapping makes (``rules_info``: spec, line, items, fields), or the
        engine's reason (422) when it refuses them; nothing is stored."""
        return rules_info(parse_rules(body.rules))

    @app.get("/api/games")
    def unfinished(player: str = Depends(player_id)):
        """The player's games to continue, newest first; a damaged one is listed with the reason
        (it can be discarded)."""
        out = []
        with lock:
            for row in store.unfinished_games(player):
                try:
                    out.append(load(row.id, player).summary())
                except Refused as e:
                    out.append({"id": row.id, "difficulty": row.difficulty,
                                "target": row.target, "rules": row.rules, "hand_number": None,
                                "updated": row.updated, "teams": None, "damaged": e.message})
        return {"games": out}

    @app.get("/api/games/active")
    def active(player: str = Depends(player_id)):
        row = store.latest_game(player)
        if row is None:
            return {"game": None}
        with lock:
            try:
                return {"game": view(load(row.id, player), player)}
            except Refused as e:
                if e.status != 500:
                    raise
                return {"game": None, "damaged": {"id": row.id, "detail": e.message}}

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str, player: str = Depends(player_id)):
        with lock:
            return view(load(game_id, player), player)

    @app.delete("/api/games/{game_id}")
    def discard(game_id: str, player: str = Depends(player_id)):
        with lock:
            if len(game_id) > 64 or not store.delete_game(game_id, player):
                raise Refused(404, "unknown game id")
            cache.pop(game_id, None)
        return {"discarded": game_id}

    @app.post("/api/games/{game_id}/action")
    def action(game_id: str, body: ActionIn, player: str = Depends(player_id)):
        return mutate(game_id, player, lambda s: s.human_action(body.action, body.seq))

    @app.post("/api/games/{game_id}/advance")
    def advance(game_id: str, body: SeqIn | None = Body(None), player: str = Depends(player_id)):
        with lock:
            lineup = set(load(game_id, player).row.lineup.values())
        for level in lineup:  # a level still loading is waited for here, not under the lock
            try:
                bots.get(level)
            except ValueError:
                pass  # the move answers 503 with the reason
        return mutate(game_id, player, lambda s: s.advance(body.seq if body else None))

    @app.post("/api/games/{game_id}/next")
    def next_hand(game_id: str, player: str = Depends(player_id)):
        return mutate(game_id, player, lambda s: s.next_hand())

    @app.get("/api/games/{game_id}/hint")
    async def hint(game_id: str, request: Request, player: str = Depends(player_id)):
        """What the checkpoint and the search bot think of the player's decision, from the
        player's own view only (``game.view(2)``); only on the player's turn."""
        return await heavy.run(client_key(request), _hint, game_id, player)

    def _hint(game_id: str, player: str) -> dict:
        with lock:
            s = load(game_id, player)
            g = s.game
            if g.is_over or s.pending_table or g.current_player != HUMAN_SEAT:
                raise Refused(409, "a hint is given on your turn only")
            v = g.view(HUMAN_SEAT)
            seq, key = len(g.moves), (s.row.seed % 2 ** 63, len(g.moves), 7)
        return {"seq": seq, "analysis": analyst.analyse(v, key)}

    @app.get("/api/stats")
    def stats(player: str = Depends(player_id)):
        return {"stats": [stats_summary(r) for r in store.stats(player)]}

    # ------------------------------------------------------------------ replays (all hands)
    @app.get("/api/watch")
    def watch_list(player: str = Depends(player_id)):
        games = []
        for row in store.list_games(player, finished=True):
            try:  # the listing reads the totals only; opening a replay checks the whole state
                st = json.loads(row.state)
                games.append({"key": f"game/{row.id}", "difficulty": row.difficulty,
                              "target": row.target, "rules": _rules_line(row.rules),
                              "hands": int(st["hand_number"]),
                              "scores": [int(x) for x in st["scores"]],
                              "winner": st["winner"], "updated": row.updated})
            except (ValueError, KeyError, TypeError):
                continue
        return {"games": games,
                "records": [{"key": f"file/{i}", "name": src.name, "kind": src.kind,
                             "games": src.count, "refused": len(src.refused)}
                            for i, src in enumerate(sources)]}

    def finished(game_id: str, player: str) -> GameSession:
        s = load(game_id, player)
        if not s.game.is_over:
            raise Refused(409, "this game is not finished: its replay shows all four hands, so "
                               "it opens once the game is over")
        return s

    def replay_game(kind: str, ref: str, game: int, player: str) -> replay.ReplayGame:
        """The replay behind a watch key: ``game/ID``, ``file/N?game=K`` or
        ``upload/TOKEN?game=K``."""
        if kind == "game":
            with lock:
                s = finished(ref, player)
                rg = s.__dict__.get("_replay")
                if rg is None:
                    rg = s.__dict__["_replay"] = replay.ReplayGame.of_game(
                        s.game, replay.seat_labels(s.row.lineup),
                        title=f"{s.row.difficulty}, {s._rules_info()['line']}")
            return rg
        if kind == "file":
            if not re.fullmatch(r"[0-9]{1,9}", ref) or not int(ref) < len(sources):
                raise Refused(404, f"no record file {ref}")
            return sources[int(ref)].game(game)
        if kind == "upload":
            with lock:
                entry = uploads.get(ref)
                if entry is None or entry[0] != player:
                    raise Refused(404, "unknown upload: it is kept for the newest "
                                       f"{UPLOADS_KEPT} uploads only; open the file again")
                uploads.move_to_end(ref)
            return entry[1].game(game)
        raise Refused(404, f"no replay source {kind!r}")

    def _summary(rg: replay.ReplayGame) -> dict:
        try:
            out = rg.summary()
        except ValueError as e:
            raise record_refusal(e) from None
        out["hand"] = 0
        out.update(_page(rg, 0))
        return out

    def _page(rg: replay.ReplayGame, hand: int) -> dict:
        try:
            return rg.hand_frames(hand)
        except IndexError as e:
            raise Refused(404, str(e)) from None
        except ValueError as e:
            raise record_refusal(e) from None

    @app.get("/api/watch/game/{game_id}/record")
    def game_record(game_id: str, player: str = Depends(player_id)):
        with lock:
            s = finished(game_id, player)
        rec = replay.game_record(s.game, replay.seat_labels(s.row.lineup))
        return _JSON(rec, headers={
            "Content-Disposition": f'attachment; filename="spades-{game_id[:8]}.json"'})

    @app.get("/api/watch/{kind}/{ref}")
    async def watch_summary(kind: str, ref: str, request: Request, game: int = 0,
                            player: str = Depends(player_id)):
        """The replay's summary (players, hands, frame count) and the frames of its first hand."""
        who = client_key(request)
        return await heavy.run(who, lambda: _summary(replay_game(kind, ref, game, player)),
                               key=_same_key(who, request.scope))

    @app.get("/api/watch/{kind}/{ref}/hand/{hand}")
    async def watch_hand(kind: str, ref: str, hand: int, request: Request, game: int = 0,
                         player: str = Depends(player_id)):
        """The frames of one hand of the replay."""
        who = client_key(request)
        return await heavy.run(who, lambda: _page(replay_game(kind, ref, game, player), hand),
                               key=_same_key(who, request.scope))

    @app.get("/api/watch/{kind}/{ref}/analysis")
    async def watch_analysis(kind: str, ref: str, move: int, request: Request, game: int = 0,
                             player: str = Depends(player_id)):
        """The decision of move ``move`` (0-based) seen from the acting seat's view: the
        checkpoint's probabilities and the search bot's card values, the move played marked."""
        who = client_key(request)
        return await heavy.run(who, _analysis, kind, ref, move, game, player,
                               key=_same_key(who, request.scope))

    def _analysis(kind: str, ref: str, move: int, game: int, player: str) -> dict:
        rg = replay_game(kind, ref, game, player)  # checks the player may see it
        key = (kind, ref, game, move)
        with analyses_lock:
            out = analyses.get(key)
            if out is not None:
                analyses.move_to_end(key)
                return out
        try:
            total = rg.hands()[-1]["end"]
            if not 0 <= move < total:
                raise Refused(404, f"no move {move}: the replay has {total}")
            g = rg.state_at(move)
            seat = g.current_player
            out = {"move": move, "seat": seat, "player": rg.players[seat],
                   "analysis": analyst.analyse(g.view(seat), (move, 11),
                                               played=rg.moves[move])}
        except ValueError as e:
            raise record_refusal(e) from None
        with analyses_lock:
            analyses[key] = out
            while len(analyses) > ANALYSES_KEPT:
                analyses.popitem(last=False)
        return out

    @app.post("/api/watch/upload")
    async def watch_upload(request: Request, player: str = Depends(player_id)):
        raw = await request.body()
        name = upload_name(request.headers.get("x-file-name", ""))
        return await heavy.run(client_key(request), _upload, raw, name, player)

    def _upload(raw: bytes, name: str, player: str) -> dict:
        """Read and check an uploaded record file (``replay.read_records``, as ``--records``
        does, with the upload's limits; in ``HeavyWork``'s pool), keep it for its replays, answer
        the list of its games and the first game's summary."""
        try:
            src = replay.read_records(raw, name, upload=True)
        except ValueError as e:
            raise record_refusal(e) from None
        token = secrets.token_urlsafe(12)
        with lock:
            uploads[token] = (player, src)
            while len(uploads) > UPLOADS_KEPT:
                uploads.popitem(last=False)
        first = min(i for i in range(src.count) if i not in src.refused)
        out = _summary(src.game(first))
        out["upload"] = token
        out["key"] = f"upload/{token}"
        out["game"] = first
        out["games"] = [{"index": i, "title": src.title(i), "moves": src.moves(i),
                         "refused": src.refused.get(i), "problem": src.problem(i)}
                        for i in range(min(src.count, 500))]
        out["refused_count"] = len(src.refused)
        out["game_count"] = src.count
        return out

    return app


def _rules_line(spec: str) -> str:
    """The compact rules line of a stored ``Rules.spec()`` text (the text itself if it does not
    read)."""
    try:
        return rules_info(Rules.parse(spec))["line"]
    except ValueError:
        return spec


def _label(level: str) -> str:
    return "agent" if level.startswith("checkpoint:") else level


def default_db_path() -> str:
    """``play.sqlite3`` in the user's data folder (``platformdirs.user_data_dir("spades_env")``)."""
    import platformdirs
    return os.path.join(platformdirs.user_data_dir("spades_env", appauthor=False), "play.sqlite3")
