"""The play app's HTTP routes (FastAPI): thin wrappers that parse a request, call the session and
answer with the player's view. See docs/play.md for the API table.

``create_app(db_path, ...)`` builds the app; ``python -m spades_env.play`` serves it with uvicorn.
Every game belongs to the browser that started it (an HttpOnly, SameSite=Strict cookie holds a
random player id); a game id (``secrets.token_urlsafe``, 144 bits) of another player answers 404,
like an unknown one. Request bodies are limited in size (``MAX_BODY``; ``MAX_UPLOAD`` for a game
record sent to the replay view) and validated strictly; a refusal is an HTTP error whose JSON
``detail`` says what was wrong, and leaves the game unchanged.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import threading
from collections import OrderedDict
from importlib import resources

import numpy as np
from fastapi import Body, Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr
from starlette.middleware.trustedhost import TrustedHostMiddleware

from . import replay
from .session import (
    LEVELS, LINEUPS, TARGETS, BotPool, GameSession, Refused, checkpoint_lineup, stats_summary,
)
from .store import Store

__all__ = ["create_app", "MAX_BODY", "MAX_UPLOAD", "COOKIE", "LOCAL_HOSTS"]

MAX_BODY = 4096
"""Largest request body (bytes) of every route but the record upload."""
MAX_UPLOAD = 8 * 1024 * 1024
"""Largest game record (bytes) the replay view accepts by upload."""
COOKIE = "spades_player"
CACHE_GAMES = 32
"""Games kept loaded in memory (the store stays the truth; a stale copy is reloaded)."""
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
_PLAYER_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")
_STATIC = resources.files("spades_env.play") / "static"


class _TooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: refuse (413) a request body over its limit, by header or as it streams."""

    def __init__(self, app, limit: int, upload_limit: int, upload_path: str):
        self.app = app
        self.limit = limit
        self.upload_limit = upload_limit
        self.upload_path = upload_path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.upload_limit if scope["path"] == self.upload_path else self.limit
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    n = int(v)
                except ValueError:
                    return await _send_error(send, 400, "bad Content-Length header")
                if n > limit:
                    return await _send_error(send, 413, f"request body too large: {n} bytes, "
                                                        f"the limit is {limit}")
        seen = 0

        async def limited():
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise _TooLarge()
            return msg

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _send_error(send, 413, f"request body too large: the limit is {limit} bytes")


async def _send_error(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------------- request bodies
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewGameIn(_Strict):
    difficulty: StrictStr
    target: StrictInt = 500
    blind_nil: StrictBool = False


class ActionIn(_Strict):
    action: StrictInt
    seq: StrictInt | None = None


class SeqIn(_Strict):
    seq: StrictInt | None = None


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {e.get('msg', 'invalid')}")
    return "bad request: " + "; ".join(parts)


def create_app(db_path: str, checkpoint: str | None = None, lineups: dict | None = None,
               records=(), allowed_hosts=None, seed: int | None = None) -> FastAPI:
    """Build the play app.

    Args:
        db_path: the SQLite file of saved games and statistics (created when missing).
        checkpoint: a training checkpoint; adds the difficulty ``checkpoint`` (the agent as both
            opponents, a ``hard`` partner).
        lineups: difficulty -> ``{"partner": bot, "opponents": bot}`` overriding ``LINEUPS``
            (tests use fast bots this way).
        records: game record files shown in the replay view (``replay.load_record_file``).
        allowed_hosts: Host headers accepted (default: localhost names and ``testserver``);
            ``["*"]`` accepts any.
        seed: makes the games reproducible (tests, demos): the k-th new game of this app gets
            the k-th seed drawn from ``np.random.default_rng(seed)``; default: a random seed.
    Raises:
        ValueError: an unusable database or record file (the message names the file).
    """
    store = Store(db_path)
    table = dict(LINEUPS)
    if lineups:
        table.update(lineups)
    levels = list(LEVELS)
    if checkpoint is not None:
        table["checkpoint"] = checkpoint_lineup(checkpoint)
        levels.append("checkpoint")
    sources = [replay.load_record_file(p) for p in records]
    bots = BotPool()
    seeds = None if seed is None else np.random.default_rng(seed)
    lock = threading.Lock()  # one move at a time: moves of a game are strictly ordered

    app = FastAPI(title="spades_env play", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store
    app.state.bots = bots
    app.state.lineups = table
    app.add_middleware(TrustedHostMiddleware,
                       allowed_hosts=list(allowed_hosts or (*LOCAL_HOSTS, "testserver")))
    app.add_middleware(BodyLimit, limit=MAX_BODY, upload_limit=MAX_UPLOAD,
                       upload_path="/api/watch/upload")

    @app.exception_handler(Refused)
    async def _refused(request: Request, exc: Refused):
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @app.exception_handler(sqlite3.Error)
    async def _database(request: Request, exc: sqlite3.Error):
        return JSONResponse({"detail": f"the database {store.path} failed ({exc}); nothing was "
                                       f"changed"}, status_code=503)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return JSONResponse({"detail": _validation_message(exc)}, status_code=422)

    def player_id(request: Request, response: Response) -> str:
        pid = request.cookies.get(COOKIE)
        if not pid or not _PLAYER_RE.fullmatch(pid):
            pid = secrets.token_urlsafe(24)
            response.set_cookie(COOKIE, pid, max_age=10 * 365 * 86400, httponly=True,
                                samesite="strict", path="/")
        return pid

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
    def config(player: str = Depends(player_id)):
        return {"levels": [{"key": k, **{r: _label(v) for r, v in table[k].items()}}
                           for k in levels],
                "targets": list(TARGETS), "blind_nil_option": True}

    @app.post("/api/games", status_code=201)
    def new_game(body: NewGameIn, player: str = Depends(player_id)):
        if body.difficulty not in levels:
            raise Refused(422, f"unknown difficulty {body.difficulty!r}; choose one of {levels}")
        if body.target not in TARGETS:
            raise Refused(422, f"game length must be one of {list(TARGETS)} points, got "
                               f"{body.target}")
        with lock:
            s = GameSession.create(store, bots, player, body.difficulty, table[body.difficulty],
                                   body.target, body.blind_nil,
                                   seed=None if seeds is None else int(seeds.integers(2 ** 63)))
            return view(s, player)

    @app.get("/api/games/active")
    def active(player: str = Depends(player_id)):
        row = store.latest_game(player)
        if row is None:
            return {"game": None}
        with lock:
            return {"game": view(load(row.id, player), player)}

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str, player: str = Depends(player_id)):
        with lock:
            return view(load(game_id, player), player)

    @app.post("/api/games/{game_id}/action")
    def action(game_id: str, body: ActionIn, player: str = Depends(player_id)):
        return mutate(game_id, player, lambda s: s.human_action(body.action, body.seq))

    @app.post("/api/games/{game_id}/advance")
    def advance(game_id: str, body: SeqIn | None = Body(None), player: str = Depends(player_id)):
        return mutate(game_id, player, lambda s: s.advance(body.seq if body else None))

    @app.post("/api/games/{game_id}/next")
    def next_hand(game_id: str, player: str = Depends(player_id)):
        return mutate(game_id, player, lambda s: s.next_hand())

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
                              "target": row.target, "hands": int(st["hand_number"]),
                              "scores": [int(x) for x in st["scores"]],
                              "winner": st["winner"], "updated": row.updated})
            except (ValueError, KeyError, TypeError):
                continue
        return {"games": games,
                "records": [{"key": f"file/{i}", "name": src.name, "kind": src.kind,
                             "games": src.count} for i, src in enumerate(sources)]}

    def finished(game_id: str, player: str) -> GameSession:
        s = load(game_id, player)
        if not s.game.is_over:
            raise Refused(409, "this game is not finished: its replay shows all four hands, so "
                               "it opens once the game is over")
        return s

    @app.get("/api/watch/game/{game_id}")
    def watch_game(game_id: str, player: str = Depends(player_id)):
        with lock:
            s = finished(game_id, player)
        return replay.frames_from_game(s.game, replay.seat_labels(s.row.lineup),
                                       title=f"{s.row.difficulty}, {s.row.target} points")

    @app.get("/api/watch/game/{game_id}/record")
    def game_record(game_id: str, player: str = Depends(player_id)):
        with lock:
            s = finished(game_id, player)
        rec = replay.game_record(s.game, replay.seat_labels(s.row.lineup))
        return JSONResponse(rec, headers={
            "Content-Disposition": f'attachment; filename="spades-{game_id[:8]}.json"'})

    @app.get("/api/watch/file/{index}")
    def watch_file(index: int, game: int = 0, player: str = Depends(player_id)):
        if not 0 <= index < len(sources):
            raise Refused(404, f"no record file {index}")
        try:
            return sources[index].frames(game)
        except ValueError as e:
            raise Refused(422, str(e)) from None

    @app.post("/api/watch/upload")
    async def watch_upload(request: Request, player: str = Depends(player_id)):
        raw = await request.body()
        try:
            return replay.frames_from_json_text(raw, "the uploaded file")
        except ValueError as e:
            raise Refused(422, str(e)) from None

    return app


def _label(level: str) -> str:
    return "agent" if level.startswith("checkpoint:") else level


def default_db_path() -> str:
    """``play.sqlite3`` in the user's data folder (``platformdirs.user_data_dir("spades_env")``)."""
    import platformdirs
    return os.path.join(platformdirs.user_data_dir("spades_env", appauthor=False), "play.sqlite3")
