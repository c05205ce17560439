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

This module builds the app from its parts, and names them all (re-exported): ``middleware``
(``BodyLimit``, ``HostCheck``, ``HeavyGate``), ``heavy`` (``HeavyWork``), ``context`` (what the
routes share: ``AppContext``), and the route groups ``routes_games`` (set-up, games, moves, the
hint) and ``routes_replay`` (replays, uploads).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from importlib import resources

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from . import replay
from .analysis import Analyst, default_checkpoint
from .context import AppContext, AsciiJSON
from .heavy import (  # noqa: F401 - re-exported: the app's names
    HEAVY_PER_CLIENT, HEAVY_QUEUED, HEAVY_WORKERS, SWITCH_INTERVAL, Busy, HeavyWork,
)
from .middleware import (  # noqa: F401 - re-exported: the app's names
    COOKIE, LOCAL_HOSTS, MAX_BODY, MAX_UPLOAD, UPLOADS_RECEIVING, BodyLimit, HeavyGate, HostCheck,
    upload_name,
)
from .routes_games import (  # noqa: F401 - re-exported: the app's names
    ActionIn, NewGameIn, RulesIn, SeqIn, WarmIn, add_game_routes, add_move_routes,
    add_setup_routes, parse_rules,
)
from .routes_replay import (  # noqa: F401 - re-exported: the app's names
    ANALYSES_KEPT, UPLOADS_KEPT, add_replay_routes, add_upload_route, record_refusal,
)
from .session import LINEUPS, BotPool, Refused, checkpoint_lineup
from .store import Store

__all__ = ["create_app", "MAX_BODY", "MAX_UPLOAD", "COOKIE", "LOCAL_HOSTS", "UPLOADS_KEPT",
           "UPLOADS_RECEIVING",
           "HEAVY_WORKERS", "HEAVY_PER_CLIENT", "HEAVY_QUEUED", "SWITCH_INTERVAL", "ANALYSES_KEPT",
           "HeavyWork",
           "record_refusal"]

_STATIC = resources.files("spades_env.play") / "static"


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
    ctx = _context(db_path, checkpoint, lineups, records, seed, analysis_checkpoint, analyst)
    heavy = ctx.heavy

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        heavy.close()

    app = FastAPI(title="spades_env play", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan, default_response_class=AsciiJSON)
    app.state.store = ctx.store
    app.state.bots = ctx.bots
    app.state.lineups = ctx.table
    app.state.analyst = ctx.analyst
    app.state.heavy = heavy
    app.state.sources = ctx.sources
    app.add_middleware(BodyLimit, limit=MAX_BODY, upload_limit=MAX_UPLOAD,
                       upload_path="/api/watch/upload")
    app.add_middleware(HeavyGate, heavy=heavy)
    app.add_middleware(HostCheck, allowed=list(allowed_hosts or (*LOCAL_HOSTS, "testserver")),
                       canonical=canonical_host)
    _add_error_handlers(app, ctx.store)

    # ------------------------------------------------------------------ pages
    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(str(_STATIC / "index.html"), headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=str(_STATIC)), name="static")

    # ------------------------------------------------------------------ the API, in this order
    add_setup_routes(app, ctx)  # config, a new game, warm, rules
    add_game_routes(app, ctx)  # the player's games (/api/games/active before /api/games/{id})
    add_move_routes(app, ctx)  # moves, the hint, the statistics
    add_replay_routes(app, ctx)  # replays (all hands)
    add_upload_route(app, ctx)  # a record file to replay
    return app


def _context(db_path: str, checkpoint: str | None, lineups: dict | None, records, seed,
             analysis_checkpoint: str | None, analyst: Analyst | None) -> AppContext:
    """The app's shared state (``create_app``'s arguments of the same names)."""
    store = Store(db_path)
    table = dict(LINEUPS)
    if lineups:
        table.update(lineups)
    levels = list(table)
    if checkpoint is not None:
        table["checkpoint"] = checkpoint_lineup(checkpoint)
        levels.append("checkpoint")
    sources = [replay.load_record_file(p) for p in records]
    bots = BotPool()
    seeds = None if seed is None else np.random.default_rng(seed)
    if analyst is None:
        if analysis_checkpoint == "default":
            analysis_checkpoint = checkpoint or default_checkpoint()
        analyst = Analyst(analysis_checkpoint)
    return AppContext(store, bots, table, levels, sources, seeds, analyst, HeavyWork())


def _add_error_handlers(app: FastAPI, store: Store) -> None:
    """A refusal (``Refused``: its status and ``detail``), a refused record
    (``record_refusal``), a failed database (503) and a request that does not validate (422)
    answer JSON."""

    @app.exception_handler(Refused)
    async def _refused(request: Request, exc: Refused):
        return AsciiJSON({"detail": exc.message, **getattr(exc, "extra", {})},
                         status_code=exc.status, headers=getattr(exc, "headers", None))

    @app.exception_handler(replay.RecordError)
    async def _record(request: Request, exc: replay.RecordError):
        return await _refused(request, record_refusal(exc))

    @app.exception_handler(sqlite3.Error)
    async def _database(request: Request, exc: sqlite3.Error):
        return AsciiJSON({"detail": f"the database {store.path} failed ({exc}); nothing was "
                                    f"changed"}, status_code=503)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return AsciiJSON({"detail": _validation_message(exc)}, status_code=422)


def default_db_path() -> str:
    """``play.sqlite3`` in the user's data folder (``platformdirs.user_data_dir("spades_env")``)."""
    import platformdirs
    return os.path.join(platformdirs.user_data_dir("spades_env", appauthor=False), "play.sqlite3")
