"""The play app's replay routes (all four hands shown): the list of replays (finished games and
record files), a finished game's record file, a replay's summary and its hands' frames, the
analysis of one of its decisions, and the upload of a record file. Everything but the list and
the record file runs in the heavy pool (``HeavyWork``); a record is refused by one error path
(``record_refusal``: 422, or 413 past a size limit), the same on every route.
"""

from __future__ import annotations

import json
import re
import secrets

from fastapi import Depends, FastAPI, Request

from . import replay
from ..rules import Rules
from .context import AppContext, AsciiJSON, client_key, player_id
from .middleware import same_key, upload_name
from .rules_text import rules_info
from .session import GameSession, Refused

__all__ = ["UPLOADS_KEPT", "ANALYSES_KEPT", "record_refusal", "rules_line", "add_replay_routes",
           "add_upload_route"]

UPLOADS_KEPT = 8
"""Uploaded record files kept in memory (the newest) for their replays, hand by hand."""
ANALYSES_KEPT = 256
"""Replay analyses kept (the newest), by replay and move: asking again costs nothing."""


def record_refusal(e: ValueError) -> Refused:
    """The one answer to a record (or a game of it) the replay view refuses, on every route:
    413 past a size limit (``replay.TooLarge``), else 422, with the reason (``detail``) and a
    line for the player (``summary``: ``replay.refusal_summary``)."""
    large = isinstance(e, replay.TooLarge)
    out = Refused(413 if large else 422, str(e))
    out.extra = {"summary": replay.refusal_summary(str(e), too_large=large)}
    return out


def rules_line(spec: str) -> str:
    """The compact rules line of a stored ``Rules.spec()`` text (the text itself if it does not
    read)."""
    try:
        return rules_info(Rules.parse(spec))["line"]
    except ValueError:
        return spec


def add_replay_routes(app: FastAPI, ctx: AppContext) -> None:
    """``GET /api/watch`` (the list), ``GET /api/watch/game/{id}/record`` (a finished game's
    record file) and, for a watch key (``game/ID``, ``file/N``, ``upload/TOKEN``), its summary,
    a hand's frames and a decision's analysis."""

    @app.get("/api/watch")
    def watch_list(player: str = Depends(player_id)):
        return _watch_list(ctx, player)

    @app.get("/api/watch/game/{game_id}/record")
    def game_record(game_id: str, player: str = Depends(player_id)):
        with ctx.lock:
            s = _finished(ctx, game_id, player)
        rec = replay.game_record(s.game, replay.seat_labels(s.row.lineup))
        return AsciiJSON(rec, headers={
            "Content-Disposition": f'attachment; filename="spades-{game_id[:8]}.json"'})

    @app.get("/api/watch/{kind}/{ref}")
    async def watch_summary(kind: str, ref: str, request: Request, game: int = 0,
                            player: str = Depends(player_id)):
        """The replay's summary (players, hands, frame count) and the frames of its first hand."""
        who = client_key(request)
        return await ctx.heavy.run(
            who, lambda: _summary(_replay_game(ctx, kind, ref, game, player)),
            key=same_key(who, request.scope))

    @app.get("/api/watch/{kind}/{ref}/hand/{hand}")
    async def watch_hand(kind: str, ref: str, hand: int, request: Request, game: int = 0,
                         player: str = Depends(player_id)):
        """The frames of one hand of the replay."""
        who = client_key(request)
        return await ctx.heavy.run(
            who, lambda: _page(_replay_game(ctx, kind, ref, game, player), hand),
            key=same_key(who, request.scope))

    @app.get("/api/watch/{kind}/{ref}/analysis")
    async def watch_analysis(kind: str, ref: str, move: int, request: Request, game: int = 0,
                             player: str = Depends(player_id)):
        """The decision of move ``move`` (0-based) seen from the acting seat's view: the
        checkpoint's probabilities and the search bot's card values, the move played marked."""
        who = client_key(request)
        return await ctx.heavy.run(who, _analysis, ctx, kind, ref, move, game, player,
                                   key=same_key(who, request.scope))


def add_upload_route(app: FastAPI, ctx: AppContext) -> None:
    """``POST /api/watch/upload``: a record file to replay (its name in ``X-File-Name``)."""

    @app.post("/api/watch/upload")
    async def watch_upload(request: Request, player: str = Depends(player_id)):
        raw = await request.body()
        name = upload_name(request.headers.get("x-file-name", ""))
        return await ctx.heavy.run(client_key(request), _upload, ctx, raw, name, player)


def _watch_list(ctx: AppContext, player: str) -> dict:
    games = []
    for row in ctx.store.list_games(player, finished=True):
        try:  # the listing reads the totals only; opening a replay checks the whole state
            st = json.loads(row.state)
            games.append({"key": f"game/{row.id}", "difficulty": row.difficulty,
                          "target": row.target, "rules": rules_line(row.rules),
                          "hands": int(st["hand_number"]),
                          "scores": [int(x) for x in st["scores"]],
                          "winner": st["winner"], "updated": row.updated})
        except (ValueError, KeyError, TypeError):
            continue
    return {"games": games,
            "records": [{"key": f"file/{i}", "name": src.name, "kind": src.kind,
                         "games": src.count, "refused": len(src.refused)}
                        for i, src in enumerate(ctx.sources)]}


def _finished(ctx: AppContext, game_id: str, player: str) -> GameSession:
    s = ctx.load(game_id, player)
    if not s.game.is_over:
        raise Refused(409, "this game is not finished: its replay shows all four hands, so "
                           "it opens once the game is over")
    return s


def _replay_game(ctx: AppContext, kind: str, ref: str, game: int,
                 player: str) -> replay.ReplayGame:
    """The replay behind a watch key: ``game/ID``, ``file/N?game=K`` or
    ``upload/TOKEN?game=K``."""
    if kind == "game":
        with ctx.lock:
            s = _finished(ctx, ref, player)
            rg = s.__dict__.get("_replay")
            if rg is None:
                rg = s.__dict__["_replay"] = replay.ReplayGame.of_game(
                    s.game, replay.seat_labels(s.row.lineup),
                    title=f"{s.row.difficulty}, {s._rules_info()['line']}")
        return rg
    if kind == "file":
        if not re.fullmatch(r"[0-9]{1,9}", ref) or not int(ref) < len(ctx.sources):
            raise Refused(404, f"no record file {ref}")
        return ctx.sources[int(ref)].game(game)
    if kind == "upload":
        with ctx.lock:
            entry = ctx.uploads.get(ref)
            if entry is None or entry[0] != player:
                raise Refused(404, "unknown upload: it is kept for the newest "
                                   f"{UPLOADS_KEPT} uploads only; open the file again")
            ctx.uploads.move_to_end(ref)
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


def _analysis(ctx: AppContext, kind: str, ref: str, move: int, game: int, player: str) -> dict:
    rg = _replay_game(ctx, kind, ref, game, player)  # checks the player may see it
    key = (kind, ref, game, move)
    with ctx.analyses_lock:
        out = ctx.analyses.get(key)
        if out is not None:
            ctx.analyses.move_to_end(key)
            return out
    try:
        total = rg.hands()[-1]["end"]
        if not 0 <= move < total:
            raise Refused(404, f"no move {move}: the replay has {total}")
        g = rg.state_at(move)
        seat = g.current_player
        out = {"move": move, "seat": seat, "player": rg.players[seat],
               "analysis": ctx.analyst.analyse(g.view(seat), (move, 11),
                                               played=rg.moves[move])}
    except ValueError as e:
        raise record_refusal(e) from None
    with ctx.analyses_lock:
        ctx.analyses[key] = out
        while len(ctx.analyses) > ANALYSES_KEPT:
            ctx.analyses.popitem(last=False)
    return out


def _upload(ctx: AppContext, raw: bytes, name: str, player: str) -> dict:
    """Read and check an uploaded record file (``replay.read_records``, as ``--records``
    does, with the upload's limits; in ``HeavyWork``'s pool), keep it for its replays, answer
    the list of its games and the first game's summary."""
    try:
        src = replay.read_records(raw, name, upload=True)
    except ValueError as e:
        raise record_refusal(e) from None
    token = secrets.token_urlsafe(12)
    with ctx.lock:
        ctx.uploads[token] = (player, src)
        while len(ctx.uploads) > UPLOADS_KEPT:
            ctx.uploads.popitem(last=False)
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
