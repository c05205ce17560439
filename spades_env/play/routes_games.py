"""The play app's game routes: the page's set-up (``/api/config``, a new game, loading the bots
ahead, checking a rules mapping) and the player's games (listing, resuming, discarding, moves,
bot moves, the next hand, the hint, the statistics), with their request bodies, validated
strictly (``extra="forbid"``, strict types).
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import Body, Depends, FastAPI, Request
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

from ..rules import PRESETS, Rules
from .context import AppContext, client_key, player_id
from .rules_text import PANEL_FIELDS, rules_info, stats_summary
from .session import HUMAN_SEAT, TARGETS, GameSession, Refused, warm_views

__all__ = ["NewGameIn", "RulesIn", "ActionIn", "SeqIn", "WarmIn", "parse_rules",
           "add_setup_routes", "add_game_routes", "add_move_routes"]


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


def _label(level: str) -> str:
    return "agent" if level.startswith("checkpoint:") else level


def add_setup_routes(app: FastAPI, ctx: AppContext) -> None:
    """``GET /api/config``, ``POST /api/games`` (a new game), ``POST /api/warm`` and
    ``POST /api/rules``."""
    table, levels, analyst = ctx.table, ctx.levels, ctx.analyst

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
        return _new_game(ctx, body, player)

    @app.post("/api/warm")
    def warm(body: WarmIn, player: str = Depends(player_id)):
        """Start loading what a difficulty (``difficulty``) or a game (``game``: its line-up)
        needs, and the hint's agent and search with ``hints``; answer how far that is:
        ``{"ready", "done", "total", "items": [{"key", "label", "state", "seconds"}]}``
        (``BotPool.status``). The page asks when a difficulty is chosen, and waits for
        ``ready`` (showing the items) before the first bot move of a game."""
        return _warm(ctx, body, player)

    @app.post("/api/rules")
    def check_rules(body: RulesIn, player: str = Depends(player_id)):
        """The rules a mapping makes (``rules_info``: spec, line, items, fields), or the
        engine's reason (422) when it refuses them; nothing is stored."""
        return rules_info(parse_rules(body.rules))


def _new_game(ctx: AppContext, body: NewGameIn, player: str) -> dict:
    levels, table, seeds = ctx.levels, ctx.table, ctx.seeds
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
    ctx.bots.warm(table[body.difficulty].values())  # (already warm: nothing to do)
    with ctx.lock:
        s = GameSession.create(ctx.store, ctx.bots, player, body.difficulty,
                               table[body.difficulty],
                               seed=None if seeds is None else int(seeds.integers(2 ** 63)),
                               rules=rules)
        return ctx.view(s, player)


def _warm(ctx: AppContext, body: WarmIn, player: str) -> dict:
    if (body.difficulty is None) == (body.game is None):
        raise Refused(422, "give either difficulty or game")
    if body.game is not None:
        with ctx.lock:
            levels = list(ctx.load(body.game, player).row.lineup.values())
    elif body.difficulty in ctx.levels:
        levels = list(ctx.table[body.difficulty].values())
    else:
        raise Refused(422, f"unknown difficulty {body.difficulty!r}; choose one of {ctx.levels}")
    levels = list(dict.fromkeys(levels))
    ctx.bots.warm(levels)
    items = [ctx.bots.status(lv) for lv in levels]
    analyst = ctx.analyst
    if body.hints and hasattr(analyst, "warm"):  # (a test's stand-in may not warm)
        analyst.warm(warm_views())
        items.append(analyst.status())
    done = sum(it["state"] in ("ready", "failed") for it in items)
    return {"ready": done == len(items), "done": done, "total": len(items), "items": items}


def add_game_routes(app: FastAPI, ctx: AppContext) -> None:
    """The player's games: ``GET /api/games`` (to continue), ``GET /api/games/active``,
    ``GET /api/games/{id}``, ``DELETE /api/games/{id}``."""
    store, lock, load, view = ctx.store, ctx.lock, ctx.load, ctx.view

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
            ctx.cache.pop(game_id, None)
        return {"discarded": game_id}


def add_move_routes(app: FastAPI, ctx: AppContext) -> None:
    """The moves of a game: ``POST /api/games/{id}/action`` (the player's), ``.../advance`` (a
    bot's), ``.../next`` (the next hand), ``GET .../hint``; and ``GET /api/stats``."""
    mutate = ctx.mutate

    @app.post("/api/games/{game_id}/action")
    def action(game_id: str, body: ActionIn, player: str = Depends(player_id)):
        return mutate(game_id, player, lambda s: s.human_action(body.action, body.seq))

    @app.post("/api/games/{game_id}/advance")
    def advance(game_id: str, body: SeqIn | None = Body(None), player: str = Depends(player_id)):
        with ctx.lock:
            lineup = set(ctx.load(game_id, player).row.lineup.values())
        for level in lineup:  # a level still loading is waited for here, not under the lock
            try:
                ctx.bots.get(level)
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
        return await ctx.heavy.run(client_key(request), _hint, ctx, game_id, player)

    @app.get("/api/stats")
    def stats(player: str = Depends(player_id)):
        return {"stats": [stats_summary(r) for r in ctx.store.stats(player)]}


def _hint(ctx: AppContext, game_id: str, player: str) -> dict:
    with ctx.lock:
        s = ctx.load(game_id, player)
        g = s.game
        if g.is_over or s.pending_table or g.current_player != HUMAN_SEAT:
            raise Refused(409, "a hint is given on your turn only")
        v = g.view(HUMAN_SEAT)
        seq, key = len(g.moves), (s.row.seed % 2 ** 63, len(g.moves), 7)
    return {"seq": seq, "analysis": ctx.analyst.analyse(v, key)}
