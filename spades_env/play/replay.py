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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ..cards import BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NUM_CARDS, card_str, mask_to_cards
from ..engine import FORMAT_TAG, Phase, SpadesGame
from ..records import (DEFAULT_PLAYERS, RECORD_FORMAT, RECORD_VERSION, _players, game_record,
                       load_hand_records, write_game_record)
from ..rules import Rules, trick_winner

__all__ = ["RECORD_FORMAT", "RECORD_VERSION", "game_record", "write_game_record",
           "parse_record", "frames_from_game", "frames_from_json_text", "load_record_file",
           "RecordSource", "seat_labels", "replay_frames"]

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
            players = _players(d.get("players"), name)
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
        return {"seat": seat, "kind": "pass", "text": f"passes {card_str(action)} to partner"}
    if action < NUM_CARDS:
        return {"seat": seat, "kind": "play", "text": f"plays {card_str(action)}"}
    if action == BLIND_NIL_ACTION:
        return {"seat": seat, "kind": "bid", "text": "bids Blind Nil"}
    if action == LOOK_ACTION:
        return {"seat": seat, "kind": "look", "text": "looks at the cards"}
    b = action - BID_OFFSET
    return {"seat": seat, "kind": "bid", "text": "bids Nil" if b == 0 else f"bids {b}"}


def replay_frames(start: SpadesGame, moves, stop_at_hand_end: bool = False) -> list[dict]:
    """Frames of ``moves`` applied to ``start`` (which is changed): see the module docstring.

    Raises:
        ValueError: a move the engine refuses (``IllegalActionError``), with its index.
    """
    g = start
    frames = [_snap(g, 0)]
    moves = list(moves)
    for k, a in enumerate(moves):
        seat, phase = g.current_player, g.phase
        trick = g.current_trick
        hands_before = g.hand_number
        pre_hands = list(g.hands)
        try:
            g.apply(int(a))
        except ValueError as e:
            raise ValueError(f"move {k} ({a}) is refused by the engine: {e}") from None
        ev = _event(seat, int(a), phase)
        if g.hand_number > hands_before:
            hr = g.hand_results[-1]
            cards = trick + [(seat, int(a))]
            f = {
                "move": k + 1, "hand_number": hr.hand_number + 1, "dealer": hr.dealer,
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
                frames.append(_snap(g, k + 1))
            continue
        f = _snap(g, k + 1)
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

    def frames(self, index: int) -> dict:
        """Replay of game (or teacher hand) ``index``; ``ValueError`` when out of range."""
        if not 0 <= index < self.count:
            raise ValueError(f"{self.name} holds {self.count} game(s); {index} is out of range")
        title = f"{self.name} #{index}"
        if self.kind == "games":
            game, players = self._games[index]
            return frames_from_game(game, players, title=title)
        rec = self._teacher
        rules = Rules.preset(rec.get("rules", "standard"))
        g = SpadesGame(rules, seed=int(rec["seed"][index]))
        g.scores = [int(x) for x in rec["scores"][index]]
        g.bags = [int(x) for x in rec["bags"][index]]
        moves = [int(x) for x in rec["moves"][index]]
        players = [f"{n} ({rec.get('teacher', 'teacher')})" for n in DEFAULT_PLAYERS]
        return {"title": title, "players": players, "rules": rules.to_dict(), "winner": None,
                "moves": len(moves),
                "frames": replay_frames(g, moves, stop_at_hand_end=True)}


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
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"{path}: cannot read ({e.strerror})") from None
    games = []
    if path.endswith(".jsonl"):
        for i, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise ValueError(f"{path}: line {i + 1}: invalid JSON ({e})") from None
            games.append(parse_record(d, f"{path}: line {i + 1}"))
    else:
        try:
            d = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise ValueError(f"{path}: not a spades_env game record: invalid JSON ({e})") from None
        games.append(parse_record(d, path))
    if not games:
        raise ValueError(f"{path}: no game in the file")
    return RecordSource(path, name, "games", len(games), _games=games)
