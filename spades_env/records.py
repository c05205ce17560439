"""Game and hand records: the formats the arena, the play app and training exchange.

- **Game record** (JSON, ``RECORD_FORMAT``): one whole game, ``SpadesGame.to_dict()`` plus the four
  players' names by seat. The arena writes them (``--records FILE.jsonl``), the play app's watch
  view replays them (``spades_env.play.replay``).
- **Hand records** (``.npz``, ``HAND_FORMAT``): a deal's seed and the moves of one hand, compact.

Training writes these files (``python -m training.teacher_records``: a teacher bot's hands, replayed
for behaviour cloning); the play app's watch view reads them (``spades_env.play.replay``). Only the
reader and the format live here, so the library needs nothing from ``training`` to open one.

Record of one hand (all from the standard rules preset):

| field   | dtype       | meaning                                                          |
|---------|-------------|------------------------------------------------------------------|
| seed    | int64       | ``SpadesGame(rules, seed=seed)``: the deal and the dealer          |
| scores  | int16 [2]   | team totals before the hand (a random mid-game position or 0-0)  |
| bags    | int8 [2]    | team bag counts before the hand                                  |
| moves   | uint8 [56]  | the action ids in order: 4 bids, then 52 cards                   |

A file also holds ``format`` (``HAND_FORMAT``), ``version`` (``HAND_VERSION``), ``teacher`` (the bot's name)
and ``rules`` (the preset's name).
"""

from __future__ import annotations

import json
import os
import tempfile

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .engine import SpadesGame

HAND_FORMAT = "spades_env.teacher_records"
HAND_VERSION = 1
RECORD_FORMAT = "spades_env.game_record"
RECORD_VERSION = 1
MOVES_PER_HAND = 56  # 4 bids + 52 cards (the standard preset has no Blind Nil)


def load_hand_records(path: str) -> dict:
    """Read a records file; returns the four arrays plus ``teacher`` and ``rules`` (str).

    Raises:
        ValueError: missing, foreign or corrupt file, or arrays of inconsistent shapes, naming
            ``path``.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - zip/npz/OS errors of any kind
        raise ValueError(f"{path}: not a readable teacher-records file ({type(e).__name__}: "
                         f"{e})") from None
    if str(d.get("format", "")) != HAND_FORMAT or int(d.get("version", -1)) != HAND_VERSION:
        raise ValueError(f"{path}: not a {HAND_FORMAT} file of version {HAND_VERSION}")
    n = len(d.get("seed", ()))
    want = {"seed": ((n,), np.int64), "scores": ((n, 2), np.int16), "bags": ((n, 2), np.int8),
            "moves": ((n, MOVES_PER_HAND), np.uint8)}
    for k, (shape, dt) in want.items():
        if k not in d or d[k].shape != shape or d[k].dtype != dt:
            raise ValueError(f"{path}: field {k!r} missing or not {dt.__name__}{list(shape)}")
    return {"seed": d["seed"], "scores": d["scores"], "bags": d["bags"], "moves": d["moves"],
            "teacher": str(d["teacher"]), "rules": str(d["rules"])}


DEFAULT_PLAYERS = ("North", "East", "South", "West")


def _players(p, name: str) -> list[str]:
    if not isinstance(p, list) or len(p) != 4 or not all(isinstance(x, str) for x in p):
        raise ValueError(f"{name}: players must be a list of 4 names (by seat)")
    return [x[:40] for x in p]


def game_record(game: SpadesGame, players=DEFAULT_PLAYERS) -> dict:
    """A game record (JSON-ready dict) of ``game`` with the 4 player names by seat."""
    players = _players(list(players), "players")
    return {"format": RECORD_FORMAT, "version": RECORD_VERSION, "players": players,
            "game": game.to_dict()}


def write_game_record(path: str, game: SpadesGame, players=DEFAULT_PLAYERS) -> None:
    """Write ``game_record(game, players)`` to ``path`` atomically (a temp file in the same
    folder, then ``os.replace``). Raises ``OSError`` naming the path when it cannot be written."""
    data = json.dumps(game_record(game, players)).encode()
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".record-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


__all__ = ["DEFAULT_PLAYERS", "RECORD_FORMAT", "RECORD_VERSION", "game_record", "write_game_record", "HAND_FORMAT",
           "HAND_VERSION", "MOVES_PER_HAND", "load_hand_records"]
