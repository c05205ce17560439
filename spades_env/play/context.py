"""What the play app's routes share (``AppContext``): the store, the bots, the difficulties, the
record files, the analyst, the heavy pool, the one lock under which games are loaded and moved,
the games kept loaded, the uploads and the replay analyses kept; and the player of a request
(``player_id``: the cookie, set when missing), who it is from for the heavy pool
(``client_key``), and the JSON answer every route gives (``AsciiJSON``).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import OrderedDict

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from . import replay
from .analysis import Analyst
from .heavy import HeavyWork
from .middleware import COOKIE, PLAYER_RE, client_key_of
from .session import BotPool, GameSession, Refused
from .store import Store

__all__ = ["CACHE_GAMES", "AppContext", "AsciiJSON", "player_id", "client_key"]

CACHE_GAMES = 32
"""Games kept loaded in memory (the store stays the truth; a stale copy is reloaded)."""


class AsciiJSON(JSONResponse):
    """Every JSON answer, in ASCII: a string that is not valid Unicode (a lone surrogate, from a
    player name in a record, a teacher's name, a record file's name that is not UTF-8) is sent
    as its ``\\uXXXX`` escape instead of failing the answer with 500."""

    def render(self, content) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


async def player_id(request: Request, response: Response) -> str:
    """The request's player (the cookie ``COOKIE``); a new one, set as the cookie, when it has
    none usable."""
    # async: no blocking work, so no trip through the thread pool for every request
    pid = request.cookies.get(COOKIE)
    if not pid or not PLAYER_RE.fullmatch(pid):
        pid = secrets.token_urlsafe(24)
        response.set_cookie(COOKIE, pid, max_age=10 * 365 * 86400, httponly=True,
                            samesite="strict", path="/")
    return pid


def client_key(request: Request) -> str:
    """Who a request is from, for ``HeavyWork``'s limit (``middleware.client_key_of``)."""
    return client_key_of(request.cookies.get(COOKIE),
                         request.client.host if request.client else None)


class AppContext:
    """The state of one app, shared by its route groups.

    Args:
        store: the games and statistics.
        bots: the bots, loaded once.
        table: difficulty -> line-up (``{"partner": bot, "opponents": bot}``).
        levels: the difficulties offered, in order.
        sources: the record files of the replay view (``replay.RecordSource``).
        seeds: the generator of the new games' seeds, or None (random seeds).
        analyst: the hint's and the replay analysis' ``Analyst``.
        heavy: the pool of the heavy routes.
    """

    def __init__(self, store: Store, bots: BotPool, table: dict, levels: list, sources: list,
                 seeds, analyst: Analyst, heavy: HeavyWork):
        self.store = store
        self.bots = bots
        self.table = table
        self.levels = levels
        self.sources = sources
        self.seeds = seeds
        self.analyst = analyst
        self.heavy = heavy
        self.lock = threading.Lock()  # one move at a time: moves of a game are strictly ordered
        self.uploads: OrderedDict[str, tuple[str, replay.RecordSource]] = OrderedDict()  # token
        self.analyses: OrderedDict[tuple, dict] = OrderedDict()  # (kind, ref, game, move) -> answer
        self.analyses_lock = threading.Lock()
        self.cache: OrderedDict[str, GameSession] = OrderedDict()  # by game id, newest last

    def load(self, game_id: str, player: str) -> GameSession:
        """The player's game: the cached session when it is current (same move count and hand
        tables closed as stored), else loaded from the store (``SpadesGame.from_json`` replays
        and checks the whole move log). Called under ``lock``."""
        store, cache = self.store, self.cache
        version = store.game_version(game_id, player) if len(game_id) <= 64 else None
        if version is None:
            raise Refused(404, "unknown game id")
        s = cache.get(game_id)
        if s is None or (s.row.moves, s.row.hands_acked) != version or s.row.player != player:
            row = store.load_game(game_id, player)
            if row is None:
                raise Refused(404, "unknown game id")
            s = GameSession(row, store, self.bots)
        cache[game_id] = s
        cache.move_to_end(game_id)
        while len(cache) > CACHE_GAMES:
            cache.popitem(last=False)
        return s

    def mutate(self, game_id: str, player: str, fn) -> dict:
        """Load the game, run ``fn(session)`` (one move or a closed hand table), answer the new
        view. A failure drops the cached copy, so the next request reloads the stored state."""
        with self.lock:
            s = self.load(game_id, player)
            try:
                fn(s)
            except BaseException:
                self.cache.pop(game_id, None)
                raise
            return self.view(s, player)

    def view(self, s: GameSession, player: str) -> dict:
        """The player's view of the game, with the statistics once it is over."""
        return s.public_view(self.store.stats(player) if s.game.is_over else None)
