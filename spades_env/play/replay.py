"""Replays with all four hands shown: frames of a finished game or of a game record.

Record formats the replay view reads (docs/play.md):

| file            | content                                                                    |
|-----------------|----------------------------------------------------------------------------|
| ``*.json``      | one game: a game record (below) or a bare ``SpadesGame.to_json()`` save      |
| ``*.jsonl``     | one game per line, each a game record or a bare save                       |
| ``*.npz``       | ``training.teacher_records`` hands (seed, start scores and bags, 56 moves) |

A *game record* is ``{"format": "spades_env.game_record", "version": 1, "players": [4 names by
seat], "game": SpadesGame.to_dict()}`` (``game_record`` / ``write_game_record``). The engine's
save holds the first deal (``initial``) and every action id (``moves``), and loading checks that the
moves replay to the saved state, so a record is complete and verified.

A replay is a list of *frames*, each the whole table after one move (all four hands, bids, tricks,
the current trick, scores and bags) plus the move that led to it. A move that completes a trick
shows the complete trick; a move that ends a hand gives a frame with the hand's score table, then
a frame of the next deal. Replays are full information: the app only serves them for finished games
of the player and for files given to it.

One reader, ``read_records``, reads every record file, given with ``--records``
(``load_record_file``) or uploaded: the format is read off the content, every game is checked
when the file is read (its moves replayed through the engine), and every refusal is a
``RecordError`` (``TooLarge`` past a size limit), which every route answers the same way.

The app serves a replay hand by hand (``ReplayGame``): a summary (players, the hands with their
first move and frame, the total of frames), then the frames of one hand per request, so an answer
is the size of what the page shows. A game is indexed once (its hands and the state every
``CHECKPOINT_EVERY`` moves), so a request replays a bounded number of moves. Uploads are bounded
by moves before any game is loaded (``MAX_REPLAY_MOVES`` per game, ``MAX_UPLOAD_MOVES`` and
``MAX_UPLOAD_GAMES`` per file).
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from ..cards import action_parts, card_str, mask_to_cards
from ..engine import FORMAT_TAG, Phase, SpadesGame
from ..readers import TooManyRecords, read_regular
from ..records import (DEFAULT_PLAYERS, MAX_HAND_RECORDS, MOVES_PER_HAND, RECORD_FORMAT,
                       RECORD_VERSION, check_players, game_record, load_hand_records,
                       read_game_records, write_game_record)
from ..rules import Rules, trick_winner

__all__ = ["RECORD_FORMAT", "RECORD_VERSION", "game_record", "write_game_record",
           "parse_record", "frames_from_game", "frames_from_json_text", "load_record_file",
           "RecordSource", "seat_labels", "team_names", "replay_frames", "ReplayGame",
           "parse_upload",
           "read_records", "RecordError", "TooLarge", "MAX_REPLAY_MOVES", "MAX_UPLOAD_MOVES",
           "MAX_UPLOAD_GAMES", "CHECKPOINT_EVERY", "GAMES_KEPT", "problem_kind",
           "refusal_summary"]

_PHASES = ("bidding", "exchange", "play", "over")


def _cards(mask: int, rules: Rules) -> list[str]:
    """The names of a hand's cards in display order (``session.display_order``: the rules'
    deck, under jokers BJ and LJ)."""
    from .session import display_order
    return [card_str(c, jokers=rules.jokers)
            for c in display_order(mask_to_cards(mask), rules.deck)]


def seat_labels(lineup: dict) -> list[str]:
    """Names by seat for a play-app game: ``North (hard)``, ``East (easy)``, ``You``, ..."""
    from .session import SEAT_NAMES
    out = []
    for s in range(4):
        level = lineup.get(str(s))
        if level is None:
            out.append(SEAT_NAMES[s])
        else:
            label = "agent" if level.startswith("checkpoint:") else level
            out.append(f"{SEAT_NAMES[s]} ({label})")
    return out


def team_names(players) -> list[str]:
    """The two teams' names as the table shows them: seats 0 and 2, then 1 and 3, the player
    (``You``) first, each name without the level in brackets its seat label carries:
    ``["You & Max", "Zoe & Lily"]`` for ``["Max (hard)", "Zoe (easy)", "You", "Lily (easy)"]``,
    ``["Ann & Cat", "Ben & Dan"]`` for a record's ``["Ann", "Ben", "Cat", "Dan"]``."""
    def short(name: str) -> str:
        cut = name.rsplit(" (", 1)[0] if name.endswith(")") else name
        return cut or name
    out = []
    for t in (0, 1):
        seats = sorted((t, t + 2), key=lambda s: players[s] != "You")
        out.append(" & ".join(short(players[s]) for s in seats))
    return out


def parse_record(d, name: str) -> tuple[SpadesGame, list[str]]:
    """The game and player names of a game record or a bare engine save (a parsed JSON value).

    Raises:
        ValueError: neither format, an unknown version, or a game that does not load (the message
            starts with ``name``).
    """
    if not isinstance(d, dict):
        raise ValueError(f"{name}: not a spades_env game record (a JSON object is expected)")
    try:
        if d.get("format") == RECORD_FORMAT:
            if d.get("version") != RECORD_VERSION:
                raise ValueError(f"unsupported game record version {d.get('version')!r}; this "
                                 f"spades_env reads version {RECORD_VERSION}")
            players = check_players(d.get("players"), name)
            game = SpadesGame.from_dict(d.get("game"))
        elif d.get("format") == FORMAT_TAG:
            players = list(DEFAULT_PLAYERS)
            game = SpadesGame.from_dict(d)
        else:
            raise ValueError(f"not a spades_env game record (format {d.get('format')!r}; "
                             f"expected {RECORD_FORMAT!r} or {FORMAT_TAG!r})")
    except ValueError as e:
        msg = str(e)
        raise ValueError(msg if msg.startswith(name) else f"{name}: {msg}") from None
    return game, players


def _snap(g: SpadesGame, move: int) -> dict:
    over = g.is_over
    return {
        "move": move, "hand_number": g.hand_number + (0 if over else 1), "dealer": g.dealer,
        "phase": _PHASES[g.phase], "to_act": g.current_player,
        "hands": [_cards(g.hands[s], g.rules) for s in range(4)],
        "bids": list(g.bids), "blind": list(g.blind), "tricks": list(g.tricks_won),
        "trick": [{"seat": s, "card": card_str(c, jokers=g.rules.jokers)}
                  for s, c in g.current_trick],
        "trick_complete": False, "trick_winner": None,
        "spades_broken": g.spades_broken, "scores": list(g.scores), "bags": list(g.bags),
        "event": None, "hand_result": None,
    }


def _event(seat: int, action: int, phase: int, jokers: bool = False) -> dict:
    if phase == Phase.EXCHANGE:
        return {"seat": seat, "kind": "pass",
                "text": f"passes {card_str(action, True, jokers)} to partner", "action": action}
    kind, words = action_parts(action, True, jokers)
    text = {"card": f"plays {words}", "bid": f"bids {words}", "look": "looks at the cards"}[kind]
    return {"seat": seat, "kind": "play" if kind == "card" else kind, "text": text,
            "action": action}


def replay_frames(start: SpadesGame, moves, stop_at_hand_end: bool = False,
                  first_move: int = 0) -> list[dict]:
    """Frames of ``moves`` applied to ``start`` (which is changed): see the module docstring.
    ``first_move`` is the number of moves ``start`` has already had (it numbers the frames).

    Raises:
        ValueError: a move the engine refuses (``IllegalActionError``), with its index.
    """
    g = start
    frames = [_snap(g, first_move)]
    moves = list(moves)
    for k, a in enumerate(moves):
        seat, phase = g.current_player, g.phase
        trick = g.current_trick
        hands_before = g.hand_number
        pre_hands = list(g.hands)
        try:
            g.apply(int(a))
        except ValueError as e:
            raise ValueError(f"move {first_move + k} ({a}) is refused by the engine: {e}"
                             ) from None
        ev = _event(seat, int(a), phase, g.rules.jokers)
        if g.hand_number > hands_before:
            hr = g.hand_results[-1]
            cards = trick + [(seat, int(a))]
            f = {
                "move": first_move + k + 1, "hand_number": hr.hand_number + 1, "dealer": hr.dealer,
                "phase": "hand over", "to_act": -1,
                "hands": [_cards(pre_hands[s] & ~(1 << int(a)), g.rules) for s in range(4)],
                "bids": list(hr.bids), "blind": list(hr.blind), "tricks": list(hr.tricks),
                "trick": [{"seat": s, "card": card_str(c, jokers=g.rules.jokers)}
                          for s, c in cards],
                "trick_complete": True,
                "trick_winner": trick_winner([c for _, c in cards], cards[0][0], g.rules.deck),
                "spades_broken": True, "scores": [t.total for t in hr.teams],
                "bags": [t.bags_after for t in hr.teams], "event": ev,
                "hand_result": hr.to_dict(),
            }
            frames.append(f)
            if stop_at_hand_end:
                break
            if not g.is_over and k + 1 < len(moves):
                frames.append(_snap(g, first_move + k + 1))
            continue
        f = _snap(g, first_move + k + 1)
        f["event"] = ev
        if phase == Phase.PLAY and len(trick) == 3:
            cards = trick + [(seat, int(a))]
            f["trick"] = [{"seat": s, "card": card_str(c, jokers=g.rules.jokers)}
                          for s, c in cards]
            f["trick_complete"] = True
            f["trick_winner"] = g.trick_leader
        frames.append(f)
    return frames


def frames_from_game(game: SpadesGame, players=DEFAULT_PLAYERS, title: str = "") -> dict:
    """The replay of ``game`` from its first deal (``game.initial``) through ``game.moves``.

    Returns ``{"title", "players", "teams", "rules", "winner", "moves", "frames"}``.
    """
    start = SpadesGame.replay([], initial=game.initial) if game.initial else SpadesGame(game.rules)
    return {"title": title, "players": list(players), "teams": team_names(players),
            "rules": game.rules.to_dict(), "winner": game.winner, "moves": len(game.moves),
            "frames": replay_frames(start, game.moves)}


def frames_from_json_text(text, name: str) -> dict:
    """The replay of one game record or engine save given as JSON text (bytes or str).

    Raises:
        ValueError: invalid JSON or not a loadable record (the message starts with ``name``).
    """
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{name}: not a spades_env game record: invalid JSON ({e})") from None
    game, players = parse_record(d, name)
    return frames_from_game(game, players, title=name)


# ---------------------------------------------------------------------- limits and errors
MAX_REPLAY_MOVES = 100_000
"""Most moves of one game the replay view opens (a 500-point game has about 1,000-3,000)."""
MAX_UPLOAD_MOVES = 200_000
"""Most moves of all the games of one uploaded file together (bounds the work of an upload)."""
MAX_UPLOAD_GAMES = 2_000
"""Most games (or teacher hands) in one uploaded file."""
CHECKPOINT_EVERY = 512
"""A ``ReplayGame`` keeps the state every this many moves: ``state_at`` applies at most this
many moves, whatever the game's length."""
GAMES_KEPT = 64
"""``ReplayGame``s (with their checkpoints) a ``RecordSource`` keeps, the most recently opened."""


class RecordError(ValueError):
    """A record file, or a game of it, that the replay view refuses; the message names the file
    (and the line or hand). Every route answers it the same way: 422 with the message
    (``TooLarge``: 413)."""


class TooLarge(RecordError):
    """A record past a size limit of the replay view (the app answers 413)."""


def problem_kind(message: str) -> str:
    """What kind of problem a refusal's message is, in a player's words: ``not JSON``, ``not a
    game record``, ``too large`` or ``damaged`` (a record whose game does not load)."""
    if "invalid JSON" in message or "not UTF-8" in message:
        return "not JSON"
    if "not a spades_env game record" in message or "teacher records, not" in message:
        return "not a game record"
    if "moves in all" in message or ("at most" in message and "moves" in message):
        return "too large"
    return "damaged"


def refusal_summary(message: str, name: str | None = None, too_large: bool = False) -> str:
    """One line for a player about a refused record file (the message stays as its details):
    ``NAME is damaged: its game does not load (cut short or edited?)``, ``NAME is not a Spades
    game record``, ``NAME is too large for the replay view``. ``name`` defaults to the start of
    the message (every refusal names its file first)."""
    name = name or message.split(": ")[0]
    kind = "too large" if too_large else problem_kind(message)
    return {"not JSON": f"{name} is not a Spades game record (it is not JSON text)",
            "not a game record": f"{name} is not a Spades game record",
            "too large": f"{name} is too large for the replay view",
            }.get(kind, f"{name} is damaged: its game does not load (cut short or edited?)")


# ---------------------------------------------------------------------- record files
_ZIP_MAGIC = b"PK"


@dataclass
class RecordSource:
    """A record file read by ``read_records`` (given with ``--records`` or uploaded); every game
    in it was checked when it was read. A game that did not load (a move the engine refuses, a
    save that does not replay to its state) is kept as refused, with its reason: every request
    for it is answered with that reason (``game`` raises ``RecordError``), and the others open.

    Attributes:
        path: where it came from (the path, or the upload's name); name: its base name (titles);
        kind: ``games`` (JSON/JSONL) or ``teacher`` (npz); count: games (or teacher hands);
        refused: index -> reason, for the games that did not load.
    """

    path: str
    name: str
    kind: str
    count: int
    _games: list = field(default_factory=list, repr=False)
    _teacher: dict | None = field(default=None, repr=False)
    refused: dict = field(default_factory=dict)
    places: dict = field(default_factory=dict)  # index -> "line N" (JSON lines) or "hand N"
    _kept: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def problem(self, index: int) -> str | None:
        """A refused game's problem in short (``line 2: not JSON``), else None."""
        if index not in self.refused:
            return None
        kind = problem_kind(self.refused[index])
        place = self.places.get(index)
        return f"{place}: {kind}" if place else kind

    def title(self, index: int) -> str:
        """The title of game ``index``: the file's name, with ``#index`` when it holds more."""
        return self.name if self.count == 1 else f"{self.name} #{index}"

    def moves(self, index: int) -> int:
        """The number of moves of game ``index`` (in range)."""
        if index in self.refused:
            return 0
        if self.kind == "games":
            return len(self._games[index][0].moves)
        return MOVES_PER_HAND

    def game(self, index: int) -> "ReplayGame":
        """Game (or teacher hand) ``index`` as a ``ReplayGame`` (the newest ``GAMES_KEPT`` are
        kept with their checkpoints); ``RecordError`` when out of range."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.count:
            raise RecordError(f"{self.name} holds {self.count} game(s); {index} is out of range")
        if index in self.refused:
            raise RecordError(self.refused[index])
        with self._lock:
            rg = self._kept.get(index)
            if rg is None:
                rg = self._kept[index] = self._make(index)
                while len(self._kept) > GAMES_KEPT:
                    self._kept.popitem(last=False)
            self._kept.move_to_end(index)
            return rg

    def _make(self, index: int) -> "ReplayGame":
        title = self.title(index)
        if self.kind == "games":
            game, players = self._games[index]
            return ReplayGame.of_game(game, players, title)
        rec = self._teacher
        rules = Rules.preset(rec.get("rules", "standard"))
        seed = int(rec["seed"][index])
        scores = [int(x) for x in rec["scores"][index]]
        bags = [int(x) for x in rec["bags"][index]]

        def start():
            g = SpadesGame(rules, seed=seed)
            g.scores = list(scores)
            g.bags = list(bags)
            return g
        moves = [int(x) for x in rec["moves"][index]]
        players = [f"{n} ({rec.get('teacher', 'teacher')})" for n in DEFAULT_PLAYERS]
        return ReplayGame(title, players, rules, None, moves, start, one_hand=True)

    def frames(self, index: int) -> dict:
        """The whole replay of game ``index`` (every frame; the app serves it hand by hand)."""
        return self.game(index).full()


def _check_hand(src: RecordSource, index: int) -> None:
    """Replay teacher hand ``index`` through the engine: every move legal, the hand ending with
    its last move."""
    rg = src._make(index)
    g = rg._start()
    last = len(rg.moves) - 1
    for k, a in enumerate(rg.moves):
        try:
            g.apply(a)
        except ValueError as e:
            raise RecordError(f"{src.name}: hand {index}: move {k} ({a}) is refused by the "
                              f"engine: {e}") from None
        if g.hand_number and k != last:
            raise RecordError(f"{src.name}: hand {index}: the hand ends at move {k}, before its "
                              f"last ({last})")
    if not g.hand_number:
        raise RecordError(f"{src.name}: hand {index}: its {len(rg.moves)} moves do not finish "
                          f"the hand")


def _read_hands(data: bytes, where: str, name: str, upload: bool) -> RecordSource:
    try:
        rec = load_hand_records(where, data=data,
                                max_hands=MAX_UPLOAD_GAMES if upload else MAX_HAND_RECORDS)
    except TooManyRecords as e:
        raise TooLarge(f"{e}; the replay view opens at most {MAX_UPLOAD_GAMES} hands of an "
                       f"uploaded file") from None
    n = len(rec["seed"])
    if not n:
        raise RecordError(f"{where}: no hand in the file")
    if upload and n * MOVES_PER_HAND > MAX_UPLOAD_MOVES:
        raise TooLarge(f"{where}: {n * MOVES_PER_HAND} moves in all; an upload may hold at most "
                       f"{MAX_UPLOAD_MOVES}")
    src = RecordSource(where, name, "teacher", n, _teacher=rec)
    for i in range(n):
        try:
            _check_hand(src, i)
        except RecordError as e:
            src.refused[i] = str(e)
            src.places[i] = f"hand {i}"
    return _some_loaded(src)


def _some_loaded(src: RecordSource) -> RecordSource:
    """``src``, unless none of its games loaded: then the first one's reason is the file's
    (naming ``src.path``; a game's reason names the file as its titles do, ``src.name``)."""
    if len(src.refused) == src.count:
        why = src.refused[0]
        raise RecordError(src.path + why[len(src.name):] if why.startswith(src.name) else why)
    return src


def _read_games(data: bytes, where: str, name: str, upload: bool) -> RecordSource:
    try:
        docs = read_game_records(data, where, most=MAX_UPLOAD_GAMES if upload else None,
                                 keep_bad_lines=True)
    except TooManyRecords as e:
        raise TooLarge(str(e)) from None
    total = 0
    for d, at in docs:
        n = _record_moves(d)
        if n > MAX_REPLAY_MOVES:
            raise TooLarge(f"{at}: {n} moves; the replay view opens games of at most "
                           f"{MAX_REPLAY_MOVES} moves")
        total += n
    if upload and total > MAX_UPLOAD_MOVES:
        raise TooLarge(f"{where}: {total} moves in all; an upload may hold at most "
                       f"{MAX_UPLOAD_MOVES}")
    games, refused, places = [], {}, {}
    for i, (d, at) in enumerate(docs):
        try:
            if isinstance(d, ValueError):  # a line that is not JSON (``keep_bad_lines``)
                raise d
            games.append(parse_record(d, name + at[len(where):]))
        except ValueError as e:
            games.append(None)
            msg = str(e)
            refused[i] = name + msg[len(where):] if msg.startswith(where) else msg
            if at != where:
                places[i] = at[len(where) + 2:]
    return _some_loaded(RecordSource(where, name, "games", len(games), _games=games,
                                     refused=refused, places=places))


def read_records(data, where: str, name: str | None = None, upload: bool = False
                 ) -> RecordSource:
    """The one reader of record files, whoever gives them (``load_record_file`` for
    ``--records``, the app's upload): the same bytes are accepted or refused, with the same
    reason, either way.

    The format is read off the content: a zip archive is teacher records (``.npz``,
    ``records.load_hand_records``), anything else UTF-8 text, one JSON game record or engine
    save, or JSON lines of them (``records.read_game_records``). Every game is checked now, so
    no later request meets a bad one: a JSON game by loading it (``SpadesGame.from_dict`` replays
    its moves and compares the result), a teacher hand by replaying its 56 moves through the
    engine; a game that does not load is kept as refused with its reason (``RecordSource``),
    and a file none of whose games loads is refused with the first game's reason. A game of more
    than ``MAX_REPLAY_MOVES`` moves refuses the file; an upload
    (``upload=True``) also holds at most ``MAX_UPLOAD_GAMES`` games and ``MAX_UPLOAD_MOVES``
    moves (it is checked before the games are loaded).

    Args:
        data: the file's bytes. where: what the messages name (a path, an upload's name).
        name: the name in titles (default ``where``).
    Raises:
        TooLarge: past a size limit. RecordError: anything else refused (the message starts
            with ``where``).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    data = bytes(data)
    name = name or where
    try:
        if data[:2] == _ZIP_MAGIC:
            return _read_hands(data, where, name, upload)
        return _read_games(data, where, name, upload)
    except RecordError:
        raise
    except ValueError as e:
        raise RecordError(str(e)) from None


def load_record_file(path: str) -> RecordSource:
    """Read a record file given with ``--records`` (``read_records``: every game in it is
    loaded and checked now).

    Raises:
        RecordError (a ValueError): missing, unreadable, a special file, or refused by
            ``read_records`` (the message names the file and, for JSONL, the line).
    """
    try:
        data = read_regular(path, "record file")
    except ValueError as e:
        raise RecordError(str(e)) from None
    return read_records(data, path, os.path.basename(path))


# ---------------------------------------------------------------------- paged replays
class ReplayGame:
    """One game of a replay source, served hand by hand (``summary``, ``hand_frames``): the page
    shows one frame at a time, so no answer holds more than one hand's frames.

    The game is indexed once, by one pass over its moves on first use (``hands``; thread-safe):
    its hands, and the state every ``CHECKPOINT_EVERY`` moves, so ``state_at`` and
    ``hand_frames`` apply at most ``CHECKPOINT_EVERY`` (plus one hand's) moves whatever the
    game's length.

    Args:
        title, players, rules, winner: shown by the page.
        moves: every action id, in order.
        start: a function returning a fresh game before the first move.
        one_hand: stop at the end of the first hand (teacher records).
    """

    def __init__(self, title: str, players, rules: Rules, winner, moves, start,
                 one_hand: bool = False):
        self.title = title
        self.players = list(players)
        self.rules = rules
        self.winner = winner
        self.moves = [int(a) for a in moves]
        self._start = start
        self.one_hand = one_hand
        self._hands = None
        self._checkpoints: list[SpadesGame] = []
        self._index_lock = threading.Lock()
        if len(self.moves) > MAX_REPLAY_MOVES:
            raise TooLarge(f"{title}: {len(self.moves)} moves; the replay view opens games of at "
                           f"most {MAX_REPLAY_MOVES} moves")

    @classmethod
    def of_game(cls, game: SpadesGame, players=DEFAULT_PLAYERS, title: str = "") -> "ReplayGame":
        """The replay of ``game`` from its first deal (``game.initial``)."""
        initial = game.initial
        rules = game.rules
        if initial:
            return cls(title, players, rules, game.winner, game.moves,
                       lambda: SpadesGame.replay([], initial=initial))
        return cls(title, players, rules, game.winner, game.moves, lambda: SpadesGame(rules))

    def state_at(self, move: int) -> SpadesGame:
        """A fresh game after the first ``move`` moves (0 <= ``move`` <= the moves indexed):
        a copy of the checkpoint before it, plus at most ``CHECKPOINT_EVERY`` moves."""
        self.hands()
        base = min(move // CHECKPOINT_EVERY, len(self._checkpoints) - 1)
        g = self._checkpoints[base].clone()
        g.moves = self.moves[:base * CHECKPOINT_EVERY]
        for a in self.moves[base * CHECKPOINT_EVERY:move]:
            g.apply(a)
        return g

    @staticmethod
    def _checkpoint(g: SpadesGame) -> SpadesGame:
        """A copy of ``g`` without its move log (``state_at`` puts it back)."""
        moves, g.moves = g.moves, []
        try:
            return g.clone()
        finally:
            g.moves = moves

    def hands(self) -> list[dict]:
        """Per hand: ``start`` (its first move), ``end`` (one past its last), ``first_frame``
        (the index of its deal frame in the whole replay), ``frames``, and ``scores``/``bags``
        after it (None for an unfinished hand). One pass over the moves (which also keeps the
        checkpoints of ``state_at``), then cached.

        Raises:
            ValueError: a move the engine refuses (never for a game ``read_records`` checked).
        """
        if self._hands is not None:
            return self._hands
        with self._index_lock:
            if self._hands is not None:
                return self._hands
            g = self._start()
            checkpoints = [self._checkpoint(g)]
            out, start = [], 0
            for k, a in enumerate(self.moves):
                before = g.hand_number
                try:
                    g.apply(a)
                except ValueError as e:
                    raise RecordError(f"{self.title}: move {k} ({a}) is refused by the engine: "
                                      f"{e}") from None
                if (k + 1) % CHECKPOINT_EVERY == 0:
                    checkpoints.append(self._checkpoint(g))
                if g.hand_number > before:
                    out.append({"start": start, "end": k + 1, "scores": list(g.scores),
                                "bags": list(g.bags)})
                    start = k + 1
                    if self.one_hand:
                        break
            if start < len(self.moves) or not out:
                out.append({"start": start, "end": len(self.moves), "scores": None,
                            "bags": None})
            frame = 0
            for i, h in enumerate(out):
                h["hand"] = i
                h["first_frame"] = frame
                h["frames"] = h["end"] - h["start"] + 1
                frame += h["frames"]
            self._checkpoints = checkpoints
            self._hands = out
        return self._hands

    def summary(self) -> dict:
        """``{"title", "players", "teams", "rules", "winner", "moves", "frame_count", "hands"}``
        (``teams``: ``team_names``)."""
        hands = self.hands()
        return {"title": self.title, "players": self.players,
                "teams": team_names(self.players), "rules": self.rules.to_dict(),
                "winner": self.winner, "moves": hands[-1]["end"],
                "frame_count": sum(h["frames"] for h in hands), "hands": hands}

    def hand_frames(self, k: int) -> dict:
        """``{"hand": k, "first_frame", "frames"}``: the frames of hand ``k`` (its deal, then one
        per move; the last shows the hand's score table when it ended)."""
        hands = self.hands()
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(hands):
            raise IndexError(f"{self.title}: no hand {k} (it has {len(hands)})")
        h = hands[k]
        g = self.state_at(h["start"])
        frames = replay_frames(g, self.moves[h["start"]:h["end"]], first_move=h["start"])
        return {"hand": k, "first_frame": h["first_frame"], "frames": frames}

    def full(self) -> dict:
        """The summary with every frame (small games only: tests, scripts)."""
        out = self.summary()
        out["frames"] = [f for k in range(len(out["hands"]))
                         for f in self.hand_frames(k)["frames"]]
        return out


def _record_moves(d) -> int:
    """Number of moves of a parsed record before it is loaded (0 when it has no move list)."""
    if isinstance(d, dict):
        game = d.get("game") if d.get("format") == RECORD_FORMAT else d
        if isinstance(game, dict) and isinstance(game.get("moves"), list):
            return len(game["moves"])
    return 0


def parse_upload(raw, name: str) -> list[tuple[SpadesGame, list[str]]]:
    """The games and player names of an uploaded JSON or JSONL file (``read_records`` with the
    upload's limits; kept for callers of 0.8.0).

    Raises:
        TooLarge, RecordError: as ``read_records``; also teacher records (not games).
    """
    src = read_records(raw, name, upload=True)
    if src.kind != "games":
        raise RecordError(f"{name}: teacher records, not game records (use read_records)")
    if src.refused:
        raise RecordError(next(iter(src.refused.values())))
    return list(src._games)
