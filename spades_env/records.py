"""Game and hand records: the formats the arena, the play app and training exchange.

- **Game record** (JSON, ``RECORD_FORMAT``): one whole game, ``SpadesGame.to_dict()`` plus the four
  players' names by seat. The arena writes them (``--records FILE.jsonl``), the play app's watch
  view replays them (``spades_env.play.replay``).
- **Hand records** (``.npz``, ``HAND_FORMAT``): a deal's seed and the moves of one hand, compact.

Training writes these files (``spades teacher-records``: a teacher bot's hands, replayed
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

from typing import TYPE_CHECKING

import numpy as np

from .cards import NUM_ACTIONS
from .fileio import write_atomic
from .readers import TooManyRecords, npz_rows, parse_json, read_npz, read_regular
from .rules import Rules

if TYPE_CHECKING:
    from .engine import SpadesGame

HAND_FORMAT = "spades_env.teacher_records"
HAND_VERSION = 1
RECORD_FORMAT = "spades_env.game_record"
RECORD_VERSION = 1
MOVES_PER_HAND = 56  # 4 bids + 52 cards (the standard preset has no Blind Nil)


MAX_HAND_RECORDS = 10_000_000
"""most hands one records file may hold (``load_hand_records``; 70 bytes a hand)."""


def _hand_layout(path: str, most: int = MAX_HAND_RECORDS):
    def layout(headers):
        n = npz_rows(headers, "seed", path, most)
        scalars = {"format": ("U", True), "version": ("iu", True), "teacher": ("U", True),
                   "rules": ("U", True)}
        arrays = {"seed": ((n,), np.int64), "scores": ((n, 2), np.int16),
                  "bags": ((n, 2), np.int8), "moves": ((n, MOVES_PER_HAND), np.uint8)}
        return scalars, arrays
    return layout


def check_hand_values(d: dict, where: str, bag_limit: int = 10) -> None:
    """The values of checked hand arrays (``moves``, ``bags``, ``seed``; shapes and dtypes
    already right): every move an action id below ``NUM_ACTIONS``, every bag count in
    ``0..bag_limit-1`` (the rules' ``bag_limit``: reaching it resets the count), no negative seed.
    Shared by the teacher records and the PIMC label files (``training.labels``).

    Raises:
        ValueError: ``WHERE: field 'NAME' ...``.
    """
    if len(d["moves"]) and int(d["moves"].max()) >= NUM_ACTIONS:
        raise ValueError(f"{where}: field 'moves' holds an action id >= {NUM_ACTIONS}")
    if (d["bags"] < 0).any():
        raise ValueError(f"{where}: field 'bags' holds a negative bag count")
    if (d["bags"] >= bag_limit).any():
        raise ValueError(f"{where}: field 'bags' holds a bag count of {int(d['bags'].max())}; "
                         f"the rules' bag_limit is {bag_limit} (counts 0..{bag_limit - 1})")
    if "seed" in d and (d["seed"] < 0).any():
        raise ValueError(f"{where}: field 'seed' holds a negative seed ({int(d['seed'].min())})")


def load_hand_records(path: str, data: bytes | None = None,
                      max_hands: int = MAX_HAND_RECORDS) -> dict:
    """Read a records file (``spades_env.readers.read_npz``: only the known fields, sizes checked
    before anything is inflated, special files refused); returns the four arrays plus
    ``teacher`` and ``rules`` (str). With ``data``, the file's bytes are those (an upload) and
    ``path`` only names it; ``max_hands`` bounds the hands before any array is read.

    Raises:
        ValueError: missing, foreign or corrupt file, a missing field, a field of the wrong kind,
            dtype, shape or values (``check_hand_values``, a rules preset that is unknown or has
            Blind Nil), or an unknown field; the message names ``path``.
    """
    d = read_npz(path, "teacher-records file", _hand_layout(path, max_hands), data=data)
    if str(d["format"]) != HAND_FORMAT or int(d["version"]) != HAND_VERSION:
        raise ValueError(f"{path}: not a {HAND_FORMAT} file of version {HAND_VERSION}")
    try:
        rules = Rules.preset(str(d["rules"]))
    except ValueError as e:
        raise ValueError(f"{path}: field 'rules': {e}") from None
    check_hand_values(d, path, rules.bag_limit)
    if rules.has_exchanges:
        raise ValueError(f"{path}: field 'rules': {str(d['rules'])!r} exchanges cards after the "
                         f"bids; a hand record holds {MOVES_PER_HAND} moves (no exchange)")
    return {"seed": d["seed"], "scores": d["scores"], "bags": d["bags"], "moves": d["moves"],
            "teacher": str(d["teacher"]), "rules": str(d["rules"])}


def read_game_records(data, where: str, most: int | None = None, keep_bad_lines: bool = False
                      ) -> list[tuple[object, str]]:
    """The JSON values of a game-record file's bytes, each with where it was found: the whole
    text when it is one JSON value (``WHERE``), else JSON lines, one value per non-empty line
    (``"WHERE: line N"``), when the first line is a JSON value by itself. The format is read off
    the content, never the file's name, so a file reads the same whoever gives it (the play app's
    ``--records`` and its upload, ``read_game_record_file``). The text must be UTF-8 (a BOM is
    allowed). The values are not checked as records here (the caller does). With
    ``keep_bad_lines``, a JSON line after the first that does not parse is kept as its
    ``ValueError`` (in place of the value) instead of refusing the file.

    Raises:
        ValueError: not UTF-8, no value, invalid JSON (also JSON nested too deeply for the
            parser), naming ``where`` and, for JSON lines, the line;
            ``spades_env.readers.TooManyRecords``: more than ``most`` lines.
    """
    try:
        text = bytes(data).decode("utf-8-sig") if not isinstance(data, str) else data
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not a spades_env game record: not UTF-8 text ({e})") from None
    lines = [(i, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines:
        raise ValueError(f"{where}: no game in the file")
    try:
        return [(parse_json(text, f"{where}: not a spades_env game record"), where)]
    except ValueError as whole:
        if len(lines) < 2:
            raise
        try:
            parse_json(lines[0][1], where)
        except ValueError:
            raise whole from None
    if most is not None and len(lines) > most:
        raise TooManyRecords(f"{where}: {len(lines)} lines; at most {most} games are read from "
                             f"one file")
    out = []
    for i, ln in lines:
        at = f"{where}: line {i + 1}"
        try:
            out.append((parse_json(ln, at), at))
        except ValueError as e:
            if not keep_bad_lines:
                raise
            out.append((e, at))
    return out


def read_game_record_file(path: str) -> list[tuple[object, str]]:
    """``read_game_records`` of the file ``path``. Only a regular file is read
    (``spades_env.readers.read_regular``: never a FIFO or device, at most ``MAX_TEXT_BYTES``).

    Raises:
        ValueError: an unreadable or special file, or what ``read_game_records`` refuses.
    """
    return read_game_records(read_regular(path, "game-record file"), path)


DEFAULT_PLAYERS = ("North", "East", "South", "West")


def check_players(p, name: str) -> list[str]:
    if not isinstance(p, list) or len(p) != 4 or not all(isinstance(x, str) for x in p):
        raise ValueError(f"{name}: players must be a list of 4 names (by seat)")
    return [x[:40] for x in p]


def game_record(game: SpadesGame, players=DEFAULT_PLAYERS) -> dict:
    """A game record (JSON-ready dict) of ``game`` with the 4 player names by seat."""
    players = check_players(list(players), "players")
    return {"format": RECORD_FORMAT, "version": RECORD_VERSION, "players": players,
            "game": game.to_dict()}


def write_game_record(path: str, game: SpadesGame, players=DEFAULT_PLAYERS) -> None:
    """Write ``game_record(game, players)`` to ``path`` atomically
    (``spades_env.fileio.write_atomic``: the complete file or none, no temp file left behind).

    Raises:
        ValueError: bad ``players``.
        OSError (``spades_env.fileio.WriteError``): ``could not write PATH: REASON``.
    """
    data = json.dumps(game_record(game, players)).encode()
    write_atomic(path, data, prefix=".record-", suffix=".tmp")


__all__ = ["DEFAULT_PLAYERS", "RECORD_FORMAT", "RECORD_VERSION", "game_record", "write_game_record", "HAND_FORMAT",
           "HAND_VERSION", "MOVES_PER_HAND", "MAX_HAND_RECORDS", "load_hand_records", "check_hand_values",
           "read_game_record_file", "read_game_records"]
