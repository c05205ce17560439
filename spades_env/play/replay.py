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

The app serves a replay hand by hand (``ReplayGame``): a summary (players, the hands with their
first move and frame, the total of frames), then the frames of one hand per request, so an answer
is the size of what the page shows. Uploads are bounded by moves before any game is loaded
(``parse_upload``: ``MAX_REPLAY_MOVES`` per game, ``MAX_UPLOAD_MOVES`` per file, ``TooLarge``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ..cards import BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NUM_CARDS, card_str, mask_to_cards
from ..engine import FORMAT_TAG, Phase, SpadesGame
from ..records import (DEFAULT_PLAYERS, RECORD_FORMAT, RECORD_VERSION, check_players, game_record,
                       load_hand_records, read_game_record_file, write_game_record)
from ..rules import Rules, trick_winner

__all__ = ["RECORD_FORMAT", "RECORD_VERSION", "game_record", "write_game_record",
           "parse_record", "frames_from_game", "frames_from_json_text", "load_record_file",
           "RecordSource", "seat_labels", "replay_frames", "ReplayGame", "parse_upload",
           "TooLarge", "MAX_REPLAY_MOVES", "MAX_UPLOAD_MOVES", "MAX_UPLOAD_GAMES"]

_PHASES = ("bidding", "exchange", "play", "over")
_SUIT_DISPLAY = (3, 2, 0, 1)


def _cards(mask: int) -> list[str]:
    cards = sorted(mask_to_cards(mask), key=lambda c: (_SUIT_DISPLAY.index(c // 13), -(c % 13)))
    return [card_str(c) for c in cards]


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
        "hands": [_cards(g.hands[s]) for s in range(4)],
        "bids": list(g.bids), "blind": list(g.blind), "tricks": list(g.tricks_won),
        "trick": [{"seat": s, "card": card_str(c)} for s, c in g.current_trick],
        "trick_complete": False, "trick_winner": None,
        "spades_broken": g.spades_broken, "scores": list(g.scores), "bags": list(g.bags),
        "event": None, "hand_result": None,
    }


def _event(seat: int, action: int, phase: int) -> dict:
    if phase == Phase.EXCHANGE:
        return {"seat": seat, "kind": "pass", "text": f"passes {card_str(action, True)} to partner",
                "action": action}
    if action < NUM_CARDS:
        return {"seat": seat, "kind": "play", "text": f"plays {card_str(action, True)}",
                "action": action}
    if action == BLIND_NIL_ACTION:
        return {"seat": seat, "kind": "bid", "text": "bids Blind Nil", "action": action}
    if action == LOOK_ACTION:
        return {"seat": seat, "kind": "look", "text": "looks at the cards", "action": action}
    b = action - BID_OFFSET
    return {"seat": seat, "kind": "bid", "text": "bids Nil" if b == 0 else f"bids {b}",
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
        ev = _event(seat, int(a), phase)
        if g.hand_number > hands_before:
            hr = g.hand_results[-1]
            cards = trick + [(seat, int(a))]
            f = {
                "move": first_move + k + 1, "hand_number": hr.hand_number + 1, "dealer": hr.dealer,
                "phase": "hand over", "to_act": -1,
                "hands": [_cards(pre_hands[s] & ~(1 << int(a))) for s in range(4)],
                "bids": list(hr.bids), "blind": list(hr.blind), "tricks": list(hr.tricks),
                "trick": [{"seat": s, "card": card_str(c)} for s, c in cards],
                "trick_complete": True,
                "trick_winner": trick_winner([c for _, c in cards], cards[0][0]),
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
            f["trick"] = [{"seat": s, "card": card_str(c)} for s, c in cards]
            f["trick_complete"] = True
            f["trick_winner"] = g.trick_leader
        frames.append(f)
    return frames


def frames_from_game(game: SpadesGame, players=DEFAULT_PLAYERS, title: str = "") -> dict:
    """The replay of ``game`` from its first deal (``game.initial``) through ``game.moves``.

    Returns ``{"title", "players", "rules", "winner", "moves", "frames"}``.
    """
    start = SpadesGame.replay([], initial=game.initial) if game.initial else SpadesGame(game.rules)
    return {"title": title, "players": list(players), "rules": game.rules.to_dict(),
            "winner": game.winner, "moves": len(game.moves),
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


@dataclass
class RecordSource:
    """A record file given to the app (``load_record_file``).

    Attributes:
        path: the file; name: its base name; kind: ``games`` (JSON/JSONL) or ``teacher`` (npz).
        count: games (or teacher hands) in the file.
    """

    path: str
    name: str
    kind: str
    count: int
    _games: list = field(default_factory=list, repr=False)
    _teacher: dict | None = field(default=None, repr=False)

    def game(self, index: int) -> "ReplayGame":
        """Game (or teacher hand) ``index`` as a ``ReplayGame``; ``ValueError`` when out of
        range."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.count:
            raise ValueError(f"{self.name} holds {self.count} game(s); {index} is out of range")
        title = f"{self.name} #{index}"
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


def load_record_file(path: str) -> RecordSource:
    """Open a record file for the replay view (every game in it is loaded and checked now).

    Raises:
        ValueError: missing, unreadable, or not one of the formats of the module table (the
            message names the file and, for JSONL, the line).
    """
    name = os.path.basename(path)
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such record file")
    if path.endswith(".npz"):
        rec = load_hand_records(path)
        return RecordSource(path, name, "teacher", len(rec["seed"]), _teacher=rec)
    games = [parse_record(d, where) for d, where in read_game_record_file(path)]
    if not games:
        raise ValueError(f"{path}: no game in the file")
    return RecordSource(path, name, "games", len(games), _games=games)


# ---------------------------------------------------------------------- paged replays
MAX_REPLAY_MOVES = 100_000
"""Most moves of one game the replay view opens (a 500-point game has about 1,000-3,000)."""
MAX_UPLOAD_MOVES = 200_000
"""Most moves of all the games of one uploaded file together (bounds the work of an upload)."""
MAX_UPLOAD_GAMES = 2_000
"""Most games in one uploaded file."""


class TooLarge(ValueError):
    """A record past a size limit of the replay view (the app answers 413)."""


class ReplayGame:
    """One game of a replay source, served hand by hand (``summary``, ``hand_frames``): the page
    shows one frame at a time, so no answer holds more than one hand's frames, and the work of a
    request is bounded by ``MAX_REPLAY_MOVES`` engine moves.

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
        """A fresh game after the first ``move`` moves."""
        g = self._start()
        for a in self.moves[:move]:
            g.apply(a)
        return g

    def hands(self) -> list[dict]:
        """Per hand: ``start`` (its first move), ``end`` (one past its last), ``first_frame``
        (the index of its deal frame in the whole replay), ``frames``, and ``scores``/``bags``
        after it (None for an unfinished hand). One pass over the moves, then cached."""
        if self._hands is None:
            g = self._start()
            out, start = [], 0
            for k, a in enumerate(self.moves):
                before = g.hand_number
                try:
                    g.apply(a)
                except ValueError as e:
                    raise ValueError(f"{self.title}: move {k} ({a}) is refused by the engine: "
                                     f"{e}") from None
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
            self._hands = out
        return self._hands

    def summary(self) -> dict:
        """``{"title", "players", "rules", "winner", "moves", "frame_count", "hands"}``."""
        hands = self.hands()
        return {"title": self.title, "players": self.players, "rules": self.rules.to_dict(),
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
    """The games of an uploaded file: one JSON game record (or engine save), or JSONL with one
    per line (the arena's ``--records``). Sizes are checked before the games are loaded.

    Raises:
        TooLarge: more than ``MAX_UPLOAD_GAMES`` games, a game of more than ``MAX_REPLAY_MOVES``
            moves, or more than ``MAX_UPLOAD_MOVES`` moves in all.
        ValueError: invalid JSON or a record that does not load (the message names the line).
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else str(raw)
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: not a spades_env game record: not UTF-8 text ({e})") from None
    try:
        docs = [(name, json.loads(text))]
    except RecursionError:
        raise ValueError(f"{name}: not a spades_env game record: JSON nested too deeply"
                         ) from None
    except json.JSONDecodeError as whole:
        lines = [(i, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
        if len(lines) < 2:
            raise ValueError(f"{name}: not a spades_env game record: invalid JSON ({whole})"
                             ) from None
        if len(lines) > MAX_UPLOAD_GAMES:
            raise TooLarge(f"{name}: {len(lines)} lines; the replay view opens at most "
                           f"{MAX_UPLOAD_GAMES} games of one file") from None
        docs = []
        for i, ln in lines:
            try:
                docs.append((f"{name}: line {i + 1}", json.loads(ln)))
            except RecursionError:
                raise ValueError(f"{name}: line {i + 1}: JSON nested too deeply") from None
            except json.JSONDecodeError as e:
                raise ValueError(f"{name}: line {i + 1}: invalid JSON ({e})") from None
    total = 0
    for where, d in docs:
        n = _record_moves(d)
        if n > MAX_REPLAY_MOVES:
            raise TooLarge(f"{where}: {n} moves; the replay view opens games of at most "
                           f"{MAX_REPLAY_MOVES} moves")
        total += n
    if total > MAX_UPLOAD_MOVES:
        raise TooLarge(f"{name}: {total} moves in all; an upload may hold at most "
                       f"{MAX_UPLOAD_MOVES}")
    return [parse_record(d, where) for where, d in docs]
