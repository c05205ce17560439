"""Storage of the play app: saved games, their move logs and the players' statistics.

Everything the app keeps on disk goes through ``Store``; another database could replace this one
module. The embedded default is one SQLite file (stdlib ``sqlite3``) in WAL mode:

| table | one row per                | holds                                                      |
|-------|----------------------------|------------------------------------------------------------|
| meta  | key                        | ``app`` = ``spades_env.play``, ``schema_version``          |
| games | game                       | owner, difficulty, target, rules (``Rules.spec()``), bot   |
|       |                            | line-up, the engine state (``SpadesGame.to_json``), hand   |
|       |                            | tables seen, public notes                                  |
| moves | move of a game             | seat and action id, in order (``seq`` 0, 1, ...)           |
| stats | player, difficulty, rules  | finished games (and their target): played, won, hands,     |
|       |                            | points, contracts, contracts made, Nil bids (Blind Nil     |
|       |                            | included), Nil made, bags and the hands they were counted  |
|       |                            | over, the current streak (+n won, -n lost in a row) and    |
|       |                            | the longest winning streak                                 |

Each move is one transaction (``save_move``): the move row, the new state and, on the last move
of a game, the statistics change together or not at all, so a server killed in the middle of a
move leaves the game as it was before that move. A move is written only if the game still has the
number of moves the caller saw (``expected_moves``), so two requests cannot both apply a move.

Schema 2 added the rules: ``games.rules`` and the ``stats`` key ``(player, difficulty, rules)``.
A schema-1 database is migrated when opened, in one transaction: each game's rules are read from
its engine state (which always held them; a state that does not read gets the plain rules of its
target), and each statistics row, which could not tell games with Blind Nil from games without,
is filed under the plain rules of its target (``standard`` or ``short``).

The columns ``bags``, ``bag_hands``, ``streak`` and ``best_streak`` came later within schema 2:
a database without them gets them (0) when opened, and a database with them still opens in an
older spades_env (every query names its columns), so no schema version was spent on them. Bags
and streaks count from then on (``bag_hands``: the hands whose bags were counted).

Errors: opening a file that is not a SQLite database, a database of another program, a damaged
one, or one of a newer schema raises ``ValueError`` naming the file and what to do.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass

__all__ = ["Store", "GameRow", "StatsDelta", "StaleGameError", "APP_TAG", "SCHEMA_VERSION"]

APP_TAG = "spades_env.play"
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE games (
    id TEXT PRIMARY KEY,
    player TEXT NOT NULL,
    difficulty TEXT NOT NULL,
    target INTEGER NOT NULL,
    rules TEXT NOT NULL DEFAULT 'standard',
    lineup TEXT NOT NULL,
    seed INTEGER NOT NULL,
    state TEXT NOT NULL,
    moves INTEGER NOT NULL,
    hands_acked INTEGER NOT NULL DEFAULT 0,
    notes TEXT NOT NULL DEFAULT '{}',
    over INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX games_player ON games (player, updated);
CREATE TABLE moves (
    game_id TEXT NOT NULL REFERENCES games (id),
    seq INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    action INTEGER NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (game_id, seq)
);
CREATE TABLE stats (
    player TEXT NOT NULL,
    difficulty TEXT NOT NULL,
    rules TEXT NOT NULL,
    target INTEGER NOT NULL,
    games INTEGER NOT NULL DEFAULT 0,
    wins INTEGER NOT NULL DEFAULT 0,
    hands INTEGER NOT NULL DEFAULT 0,
    points INTEGER NOT NULL DEFAULT 0,
    contracts INTEGER NOT NULL DEFAULT 0,
    contracts_made INTEGER NOT NULL DEFAULT 0,
    nil_bids INTEGER NOT NULL DEFAULT 0,
    nil_made INTEGER NOT NULL DEFAULT 0,
    bags INTEGER NOT NULL DEFAULT 0,
    bag_hands INTEGER NOT NULL DEFAULT 0,
    streak INTEGER NOT NULL DEFAULT 0,
    best_streak INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (player, difficulty, rules)
);
"""

_STATS_V2 = _SCHEMA[_SCHEMA.index("CREATE TABLE stats"):].split(";")[0]

_STAT_FIELDS_V2 = ("games", "wins", "hands", "points", "contracts", "contracts_made", "nil_bids",
                   "nil_made")
_ADDED_FIELDS = ("bags", "bag_hands")  # added within schema 2 (see the module docstring)
_STAT_FIELDS = _STAT_FIELDS_V2 + _ADDED_FIELDS
"""Counters a finished game adds to (``StatsDelta``)."""
_STREAK_FIELDS = ("streak", "best_streak")
"""Set, not added: the current streak (+n games won in a row, -n lost) and the longest winning
streak."""


class StaleGameError(RuntimeError):
    """The game changed since the caller loaded it (another request applied a move first)."""


@dataclass
class GameRow:
    """One saved game as stored.

    Attributes:
        id: the game id (``secrets.token_urlsafe``; the only way to reach a game).
        player: id of the owner (the browser's cookie).
        difficulty: level key (``easy``...``insane``, ``checkpoint``).
        target: points to win (``Rules.target_score``).
        lineup: bot level name by seat (``{"0": "hard", ...}``), the human's seat absent.
        seed: the game's seed (deals come from the engine's saved RNG; bots reseed from it).
        state: ``SpadesGame.to_json()`` text.
        moves: number of moves applied (``len(game.moves)``).
        hands_acked: hand tables the player has closed with Next.
        notes: public notes of the table (last trick, last move) as a dict.
        over: the game has ended.
        created, updated: Unix times (s).
        rules: the game's rules as ``Rules.spec()`` text (``Rules.parse`` reads it back); the
            engine state holds the same rules, this copy serves the listings and statistics.
    """

    id: str
    player: str
    difficulty: str
    target: int
    lineup: dict
    seed: int
    state: str
    moves: int
    hands_acked: int
    notes: dict
    over: bool
    created: float
    updated: float
    rules: str = "standard"


@dataclass
class StatsDelta:
    """What one finished game adds to its player's statistics (all ints)."""

    games: int = 1
    wins: int = 0
    hands: int = 0
    points: int = 0
    contracts: int = 0
    contracts_made: int = 0
    nil_bids: int = 0
    nil_made: int = 0
    bags: int = 0
    bag_hands: int = 0


def _unusable(path: str, why: str) -> ValueError:
    return ValueError(f"{path}: not a usable spades_env play database ({why}). Move the file away "
                      f"or start with --db OTHER_FILE.")


class Store:
    """The play app's database (see the module docstring).

    Args:
        path: SQLite file; created with the schema when missing or empty. Its folder is created.
    Raises:
        ValueError: the file is not a SQLite database, belongs to another program, is damaged, or
            has a newer schema, or its folder cannot be created (the message names the file).
    Thread safety: one connection guarded by a lock; every method is one transaction.
    """

    def __init__(self, path: str):
        self.path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:  # a file in the way, a read-only or virtual file system...
            raise ValueError(f"{self.path}: cannot create its folder {folder}: "
                             f"{e.strerror or e}") from None
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                       timeout=10.0)
        except sqlite3.Error as e:
            raise _unusable(self.path, str(e)) from None
        try:
            self._open()
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise _unusable(self.path, str(e)) from None
        except ValueError:
            self._db.close()
            raise

    def _open(self) -> None:
        db = self._db
        db.execute("PRAGMA busy_timeout = 10000")
        check = db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise _unusable(self.path, f"damaged: {check}")
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("BEGIN IMMEDIATE")
            try:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        db.execute(stmt)
                db.executemany("INSERT INTO meta VALUES (?, ?)",
                               [("app", APP_TAG), ("schema_version", str(SCHEMA_VERSION))])
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            tables = {r[0] for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
        elif "meta" not in tables:
            raise _unusable(self.path, "a SQLite database of another program")
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("app") != APP_TAG:
            raise _unusable(self.path, f"a SQLite database of another program "
                                       f"(app {meta.get('app')!r})")
        try:
            version = int(meta.get("schema_version", ""))
        except ValueError:
            raise _unusable(self.path, "no schema version") from None
        if version > SCHEMA_VERSION:
            raise _unusable(self.path, f"schema version {version} is newer than this spades_env "
                                       f"reads ({SCHEMA_VERSION}); upgrade spades_env")
        if not {"games", "moves", "stats"} <= tables:
            raise _unusable(self.path, "tables are missing")
        if version < SCHEMA_VERSION:
            self._migrate(version)
        self._add_columns()
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")

    def _migrate(self, version: int) -> None:
        """Bring a schema-1 database to schema 2 in one transaction (the module docstring)."""
        from ..rules import Rules  # the store reads rules only to migrate old rows

        def spec_of(state: str, target: int) -> str:
            try:
                return Rules.from_dict(json.loads(state)["rules"]).spec()
            except (ValueError, KeyError, TypeError):
                try:
                    return Rules(target_score=int(target)).spec()
                except ValueError:
                    return "standard"

        def plain(target: int) -> str:
            try:
                return Rules(target_score=int(target)).spec()
            except ValueError:
                return f"standard,target_score={target}"

        def fn(db):
            db.execute("ALTER TABLE games ADD COLUMN rules TEXT NOT NULL DEFAULT 'standard'")
            rows = db.execute("SELECT id, state, target FROM games").fetchall()
            db.executemany("UPDATE games SET rules = ? WHERE id = ?",
                           [(spec_of(st, t), gid) for gid, st, t in rows])
            old = db.execute(f"SELECT player, difficulty, target, {', '.join(_STAT_FIELDS_V2)} "
                             f"FROM stats").fetchall()
            db.execute("DROP TABLE stats")
            db.execute(_STATS_V2)
            db.executemany(f"INSERT INTO stats (player, difficulty, rules, target, "
                           f"{', '.join(_STAT_FIELDS_V2)}) VALUES "
                           f"({', '.join('?' * (4 + len(_STAT_FIELDS_V2)))})",
                           [(r[0], r[1], plain(r[2]), *r[2:]) for r in old])
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                       (str(SCHEMA_VERSION),))
        self._tx(fn)

    def _add_columns(self) -> None:
        """Add the statistics columns that came within schema 2, where missing (0 each)."""
        have = {r[1] for r in self._db.execute("PRAGMA table_info(stats)")}
        missing = [c for c in _ADDED_FIELDS + _STREAK_FIELDS if c not in have]
        if missing:
            self._tx(lambda db: [db.execute(f"ALTER TABLE stats ADD COLUMN {c} INTEGER NOT NULL "
                                            f"DEFAULT 0") for c in missing])

    def close(self) -> None:
        """Close the connection (further calls fail)."""
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------------ transactions
    def _tx(self, fn):
        """Run ``fn(db)`` in one IMMEDIATE transaction; roll back on any exception."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                out = fn(db)
                db.execute("COMMIT")
                return out
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------------ games
    def create_game(self, row: GameRow) -> None:
        """Insert a new game (its ``moves`` must be 0)."""
        def fn(db):
            db.execute("INSERT INTO games (id, player, difficulty, target, lineup, seed, state, "
                       "moves, hands_acked, notes, over, created, updated, rules) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (row.id, row.player, row.difficulty, row.target, json.dumps(row.lineup),
                        row.seed, row.state, row.moves, row.hands_acked, json.dumps(row.notes),
                        int(row.over), row.created, row.updated, row.rules))
        self._tx(fn)

    @staticmethod
    def _row(r) -> GameRow:
        return GameRow(id=r[0], player=r[1], difficulty=r[2], target=r[3], lineup=json.loads(r[4]),
                       seed=r[5], state=r[6], moves=r[7], hands_acked=r[8], notes=json.loads(r[9]),
                       over=bool(r[10]), created=r[11], updated=r[12], rules=r[13])

    _COLS = ("id, player, difficulty, target, lineup, seed, state, moves, hands_acked, notes, "
             "over, created, updated, rules")

    def load_game(self, game_id: str, player: str) -> GameRow | None:
        """The game ``game_id`` if it belongs to ``player``, else None (unknown and foreign games
        look the same)."""
        with self._lock:
            r = self._db.execute(f"SELECT {self._COLS} FROM games WHERE id = ? AND player = ?",
                                 (game_id, player)).fetchone()
        return None if r is None else self._row(r)

    def game_version(self, game_id: str, player: str) -> tuple[int, int] | None:
        """``(moves, hands_acked)`` of the player's game ``game_id`` (a cheap check that a cached
        copy is current), or None for an unknown or foreign game."""
        with self._lock:
            r = self._db.execute("SELECT moves, hands_acked FROM games WHERE id = ? AND player = ?",
                                 (game_id, player)).fetchone()
        return None if r is None else (r[0], r[1])

    def latest_game(self, player: str, unfinished_only: bool = True) -> GameRow | None:
        """The player's most recently updated game (with ``unfinished_only``: one still to be
        continued: not over, or over with its last hand table not yet closed, i.e.
        ``hands_acked < notes["hands"]``), or None."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._COLS} FROM games WHERE player = ? "
                f"ORDER BY updated DESC, rowid DESC LIMIT 50", (player,)).fetchall()
        for r in rows:
            row = self._row(r)
            if not unfinished_only or not row.over or row.hands_acked < row.notes.get("hands", 0):
                return row
        return None

    def unfinished_games(self, player: str, limit: int = 20) -> list[GameRow]:
        """The player's games still to be continued (see ``latest_game``), newest first."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._COLS} FROM games WHERE player = ? "
                f"ORDER BY updated DESC, rowid DESC LIMIT 200", (player,)).fetchall()
        out = []
        for r in rows:
            try:
                row = self._row(r)
            except (ValueError, TypeError):  # damaged notes or line-up: still listed
                row = GameRow(id=r[0], player=r[1], difficulty=r[2], target=r[3], lineup={},
                              seed=0, state=r[6], moves=r[7], hands_acked=r[8], notes={},
                              over=False, created=r[11], updated=r[12], rules=r[13])
            if not row.over or row.hands_acked < row.notes.get("hands", 0):
                out.append(row)
            if len(out) >= limit:
                break
        return out

    def delete_game(self, game_id: str, player: str) -> bool:
        """Remove the player's game and its moves (statistics stay); False when there is no such
        game of that player."""
        def fn(db):
            cur = db.execute("SELECT 1 FROM games WHERE id = ? AND player = ?",
                             (game_id, player)).fetchone()
            if cur is None:
                return False
            db.execute("DELETE FROM moves WHERE game_id = ?", (game_id,))
            db.execute("DELETE FROM games WHERE id = ?", (game_id,))
            return True
        return self._tx(fn)

    def list_games(self, player: str, finished: bool | None = None, limit: int = 200
                   ) -> list[GameRow]:
        """The player's games, newest first (all, or only finished / unfinished ones)."""
        where = "" if finished is None else f"AND over = {1 if finished else 0}"
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._COLS} FROM games WHERE player = ? {where} "
                f"ORDER BY updated DESC, rowid DESC LIMIT ?", (player, int(limit))).fetchall()
        return [self._row(r) for r in rows]

    def save_move(self, game_id: str, expected_moves: int, seat: int, action: int, state: str,
                  moves: int, notes: dict, over: bool, stats: tuple | None = None) -> None:
        """Record one move in one transaction.

        Args:
            game_id: the game.
            expected_moves: the move count the caller loaded; the write happens only if the stored
                game still has it.
            seat, action: the move (action id 0..67).
            state: the new ``SpadesGame.to_json()``; ``moves``: its move count.
            notes: the new public notes; ``over``: the game has ended.
            stats: ``(player, difficulty, rules, target, StatsDelta)`` to add on the game's last
                move (``rules``: the ``Rules.spec()`` text the statistics are kept under).
        Raises:
            StaleGameError: the game moved on (or vanished) since it was loaded; nothing written.
        """
        def fn(db):
            now = time.time()
            cur = db.execute("SELECT moves FROM games WHERE id = ?", (game_id,)).fetchone()
            if cur is None or cur[0] != expected_moves:
                raise StaleGameError(f"game {game_id} changed since it was loaded")
            db.execute("INSERT INTO moves (game_id, seq, seat, action, at) VALUES (?, ?, ?, ?, ?)",
                       (game_id, expected_moves, int(seat), int(action), now))
            self._write_state(db, game_id, state, moves, notes, over, now)
            if stats is not None:
                self._add_stats(db, *stats)
        self._tx(fn)

    @staticmethod
    def _write_state(db, game_id, state, moves, notes, over, now) -> None:
        db.execute("UPDATE games SET state = ?, moves = ?, notes = ?, over = ?, updated = ? "
                   "WHERE id = ?", (state, int(moves), json.dumps(notes), int(over), now, game_id))

    @staticmethod
    def _add_stats(db, player: str, difficulty: str, rules: str, target: int,
                   d: StatsDelta) -> None:
        db.execute("INSERT OR IGNORE INTO stats (player, difficulty, rules, target) "
                   "VALUES (?, ?, ?, ?)", (player, difficulty, rules, int(target)))
        sets = ", ".join(f"{k} = {k} + ?" for k in _STAT_FIELDS)
        key = (player, difficulty, rules)
        db.execute(f"UPDATE stats SET {sets} WHERE player = ? AND difficulty = ? AND rules = ?",
                   (*(int(getattr(d, k)) for k in _STAT_FIELDS), *key))
        if d.games == 1:  # one game: the streak goes on or turns (a bulk delta leaves it)
            db.execute("UPDATE stats SET streak = CASE WHEN ? THEN MAX(streak, 0) + 1 "
                       "ELSE MIN(streak, 0) - 1 END WHERE player = ? AND difficulty = ? AND "
                       "rules = ?", (int(d.wins > 0), *key))
            db.execute("UPDATE stats SET best_streak = MAX(best_streak, streak) "
                       "WHERE player = ? AND difficulty = ? AND rules = ?", key)

    def set_notes(self, game_id: str, expected_moves: int, notes: dict) -> None:
        """Replace the public notes (e.g. a closed hand table) if the game still has
        ``expected_moves`` moves; ``StaleGameError`` otherwise."""
        def fn(db):
            cur = db.execute("SELECT moves FROM games WHERE id = ?", (game_id,)).fetchone()
            if cur is None or cur[0] != expected_moves:
                raise StaleGameError(f"game {game_id} changed since it was loaded")
            db.execute("UPDATE games SET notes = ?, updated = ? WHERE id = ?",
                       (json.dumps(notes), time.time(), game_id))
        self._tx(fn)

    def set_hands_acked(self, game_id: str, expected_moves: int, hands_acked: int,
                        notes: dict) -> None:
        """Record that the player closed the hand tables up to ``hands_acked`` (with the new
        notes); ``StaleGameError`` if the game moved on."""
        def fn(db):
            cur = db.execute("SELECT moves FROM games WHERE id = ?", (game_id,)).fetchone()
            if cur is None or cur[0] != expected_moves:
                raise StaleGameError(f"game {game_id} changed since it was loaded")
            db.execute("UPDATE games SET hands_acked = ?, notes = ?, updated = ? WHERE id = ?",
                       (int(hands_acked), json.dumps(notes), time.time(), game_id))
        self._tx(fn)

    def move_log(self, game_id: str) -> list[tuple[int, int, int]]:
        """``(seq, seat, action)`` of every stored move of the game, in order."""
        with self._lock:
            return [tuple(r) for r in self._db.execute(
                "SELECT seq, seat, action FROM moves WHERE game_id = ? ORDER BY seq",
                (game_id,)).fetchall()]

    # ------------------------------------------------------------------ statistics
    def stats(self, player: str) -> list[dict]:
        """The player's statistics, one dict per (difficulty, rules): ``difficulty``, ``rules``
        (the ``Rules.spec()`` text), ``target``, the ``StatsDelta`` fields summed over
        finished games, ``streak`` and ``best_streak``."""
        cols = _STAT_FIELDS + _STREAK_FIELDS
        with self._lock:
            rows = self._db.execute(
                f"SELECT difficulty, rules, target, {', '.join(cols)} FROM stats "
                f"WHERE player = ? ORDER BY difficulty, target, rules", (player,)).fetchall()
        return [dict(zip(("difficulty", "rules", "target") + cols, r)) for r in rows]
