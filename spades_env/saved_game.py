"""Saved games: the JSON format of ``SpadesGame.to_dict`` and its checked loading.

A saved game is one JSON object; a load builds the game with the engine's own moves and holds
the file to it:

| part | keys | on load |
|---|---|---|
| envelope | ``format`` (``FORMAT_TAG``), ``version`` (``FORMAT_VERSION``) | checked first |
| rules | ``rules`` (``Rules.to_dict``) | ``Rules.from_dict`` |
| starting point | ``initial`` (below) | built by ``start_game`` |
| moves | ``moves``: the action ids applied since ``initial`` | played by ``SpadesGame.apply`` |
| state | every other key of ``to_dict`` | compared with the game the moves give |

``initial`` is ``{}``, ``{"rng", "rules"}`` (before the first deal), ``{"hands", "dealer",
"scores", "bags", "rng", "rules"}`` with optionally ``"hand_results"`` (from a deal), or
``{"state"}`` (a save without a move log, for a game loaded mid-hand). The engine's constructors
check a deal (``SpadesGame.from_deal``), ``check_score_tables`` the score tables of earlier
hands, and ``apply`` the legality of every move; the state's fields (hands, trick, scores, RNG
state...) must then be the same JSON values as the game's, so the file states the result and the
engine computes it. The loaded game is the one the engine built, never the file's fields.

A save with an empty move log is its own starting point (a game set up mid-way, or a crafted
file): the current hand's deal is read off it (hands plus played cards, the Blind Nil passes
undone), its start follows from the earlier score tables, and its bids, passes and plays are
played again from that deal and compared in the same way. Every refusal is a ``ValueError``
that says what was wrong (``corrupt spades_env saved game: ...``).
"""

from __future__ import annotations

import json

import numpy as np

from .cards import (
    BID_OFFSET, BLIND_NIL_ACTION, FULL_DECK, LOOK_ACTION, MAX_BID, NEXT_SEAT, NUM_CARDS, PARTNER,
    SEATS_FROM,
)
from .rules import HandResult, Rules, game_outcome, moon_team, score_hand

FORMAT_TAG = "spades_env.game"
FORMAT_VERSION = 1
# Largest team total a game may start from or hold (2**53: exact as a float64, far inside int64),
# so that observations (total / target) and the batched engine's int64 records stay exact.
TOTAL_LIMIT = 2 ** 53

BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
"""the bit generators a saved game's RNG state may name (numpy's concrete ones)."""

_START_KEYS = ({"rng", "rules"}, {"hands", "dealer", "scores", "bags", "rng", "rules"},
               {"hands", "dealer", "scores", "bags", "rng", "rules", "hand_results"}, {"state"})


def plain_data(x):
    """A deep copy of ``x`` as plain JSON data: dicts, lists, ints, floats, strings, bools, None
    (numpy arrays and scalars become lists and Python numbers)."""
    if isinstance(x, dict):
        return {k: plain_data(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain_data(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def rng_state(rng: np.random.Generator) -> dict:
    """The generator's state as plain JSON data (a fresh object each call)."""
    return plain_data(rng.bit_generator.state)


def rng_from_state(state: dict) -> np.random.Generator:
    """A generator restored from ``rng_state`` output (the input is not kept).

    Raises:
        ValueError: not the state of one of ``BIT_GENERATORS``.
    """
    if not isinstance(state, dict) or not isinstance(state.get("bit_generator"), str):
        raise ValueError(f"rng state must be a dict with a 'bit_generator' name, got "
                         f"{type(state).__name__}")
    name = state["bit_generator"]
    bg_cls = getattr(np.random, name, None) if name in BIT_GENERATORS else None
    if bg_cls is None:
        raise ValueError(f"unknown bit generator {name!r}; a saved game names one of "
                         f"{list(BIT_GENERATORS)}")
    try:
        bg = bg_cls()
        bg.state = plain_data(state)
    except Exception as e:  # noqa: BLE001 - numpy's own errors for a foreign state, any kind
        raise ValueError(f"bad {name} rng state: {type(e).__name__}: {e}") from None
    return np.random.Generator(bg)


_CORRUPT = "corrupt spades_env saved game: "


def _corrupt(msg: str) -> ValueError:
    return ValueError(_CORRUPT + msg.replace(_CORRUPT, ""))  # once, also around a nested refusal


def _table_start(tables, k: int, rules: Rules) -> tuple[list[int], list[int]]:
    """Team totals and bags before score table ``k``: the table before it, or for the first one
    what its own numbers started from (total minus the hand's points; bags modulo the limit)."""
    if k:
        prev = tables[k - 1].teams
        return [prev[0].total, prev[1].total], [prev[0].bags_after, prev[1].bags_after]
    teams = tables[0].teams
    return ([teams[t].total - teams[t].hand_points for t in (0, 1)],
            [(teams[t].bags_after - teams[t].bags) % rules.bag_limit for t in (0, 1)])


def check_score_tables(tables, rules: Rules) -> None:
    """Check the score tables of finished hands (``HandResult``s, oldest first): each is the
    rules' scoring (``score_hand``) of its bids and tricks, and they chain (hand numbers 0, 1,
    ..., dealers rotating left, each hand starting from the totals and bags of the one before, no
    hand after one that ended the game, totals within ``TOTAL_LIMIT``).

    Raises:
        ValueError: the first table that breaks a rule, named.
    """
    for k, h in enumerate(tables):
        if h.hand_number != k:
            raise ValueError(f"score table {k} has hand number {h.hand_number}")
        if not 0 <= h.dealer < 4 or (k and h.dealer != NEXT_SEAT[tables[k - 1].dealer]):
            raise ValueError(f"score table {k}: the dealer does not rotate left hand by hand")
        if any(h.blind) and not rules.blind_nil:
            raise ValueError(f"score table {k} has a Blind Nil, which these rules do not allow")
        teams = h.teams
        for t in (0, 1):
            ts = teams[t]
            if ts.team != t or ts.bids != (h.bids[t], h.bids[t + 2]) \
                    or ts.blind != (h.blind[t], h.blind[t + 2]) \
                    or ts.tricks != (h.tricks[t], h.tricks[t + 2]):
                raise ValueError(f"score table {k}: team {t}'s line does not match the seats' "
                                 f"bids and tricks")
            if abs(ts.total) > TOTAL_LIMIT:
                raise ValueError(f"score table {k}: totals must be within +-{TOTAL_LIMIT}")
        before, bags = _table_start(tables, k, rules)
        if k and game_outcome(before, rules, moon_team(rules, tables[k - 1].teams)) is not None:
            raise ValueError(f"score table {k} follows a hand that ended the game")
        try:
            want = score_hand(h.bids, h.tricks, bags, rules, h.blind, before)
        except ValueError as e:
            raise ValueError(f"score table {k}: {e}") from None
        if tuple(want) != teams:
            raise ValueError(f"score table {k} is not the scoring of its bids and tricks")


def start_game(game_cls, initial: dict | None, rules: Rules | None = None, seed=None):
    """The game at a move log's starting point (``SpadesGame.replay`` plays the moves from it).

    Args:
        game_cls: ``SpadesGame`` (given, so that this module does not import the engine).
        initial: ``game.initial`` (``None`` or ``{}``: a new game from ``rules`` and ``seed``).
        rules: the rules; default: ``initial["rules"]`` when present, else ``standard``.
        seed: the new game's seed when ``initial`` is empty.
    Raises:
        ValueError: an ``initial`` that is not a starting point (a bad deal, RNG state, rules or
            score tables that do not chain to its totals, bags and dealer).
    """
    if initial is not None and not isinstance(initial, dict):
        raise ValueError(f"initial must be a dict (game.initial), got {type(initial).__name__}")
    try:
        if initial and "state" in initial:
            state = initial["state"]
            if not isinstance(state, dict) or state.get("moves") != [] \
                    or state.get("initial") != {}:
                raise ValueError("a starting state must have no move log and no initial state")
            g = load(game_cls, state)
            if rules is not None and rules != g.rules:
                raise ValueError("a starting state must have the given rules")
            return g
        if rules is None and initial and "rules" in initial:
            rules = Rules.from_dict(initial["rules"])
        if not initial:
            return game_cls(rules, seed)
        if "hands" not in initial:
            return game_cls(rules, rng_from_state(initial["rng"]))
        g = game_cls.from_deal(initial["hands"], initial["dealer"], initial["scores"],
                               initial["bags"], rules, rng_from_state(initial["rng"]))
        if "hand_results" in initial:
            if not isinstance(initial["hand_results"], list):
                raise ValueError("hand_results must be a list of score tables")
            tables = [HandResult.from_dict(h) for h in initial["hand_results"]]
            check_score_tables(tables, g.rules)
            if tables and (*_table_start(tables, len(tables), g.rules),
                           NEXT_SEAT[tables[-1].dealer]) != (g.scores, g.bags, g.dealer):
                raise ValueError("the totals, bags or dealer do not follow the last score table")
            g.hand_results = tables
            g.hand_number = len(tables)
        return g
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"corrupt initial state for replay: {type(e).__name__}: {e}") from None


def play_moves(game, moves):
    """Apply ``moves`` (action ids, in order) to ``game`` and return it.

    Raises:
        ValueError: ``moves`` is not a list of action ids; ``IllegalActionError`` (a
            ``ValueError``) for the first illegal one.
    """
    if isinstance(moves, (str, bytes, dict)):
        raise ValueError(f"moves must be a list of action ids, got {type(moves).__name__}")
    try:
        moves = list(moves)
    except TypeError:
        raise ValueError(f"moves must be a list of action ids, got "
                         f"{type(moves).__name__}") from None
    apply = game.apply
    for a in moves:
        apply(a)
    return game


_CANONICAL = json.JSONEncoder(sort_keys=True, allow_nan=False)


def _json(x) -> str | None:
    """``x`` as canonical JSON text (sorted keys), or None when it is not JSON data (NaN, a
    circular or foreign object). Equal texts are equal values of the same JSON types: ``true``
    is not ``1``, ``1.0`` is not ``1``."""
    try:
        return _CANONICAL.encode(x)
    except (ValueError, TypeError, RecursionError):
        return None


def _full_rules(initial: dict) -> dict:
    """``initial`` with its rules (``initial["rules"]``, ``initial["state"]["rules"]``) written in
    full, as the engine records them: a save made before a switch existed lacks that field, which
    loads as its default (``Rules.from_dict``). Rules that do not read are left for the checks of
    the starting point to refuse."""
    out = dict(initial)
    holders = [out]
    if isinstance(out.get("state"), dict):
        out["state"] = dict(out["state"])
        holders.append(out["state"])
    for holder in holders:
        if isinstance(holder.get("rules"), dict):
            try:
                holder["rules"] = Rules.from_dict(holder["rules"]).to_dict()
            except ValueError:
                pass
    return out


def _compare(d: dict, game, what: str) -> None:
    """Raise unless every field of ``game.to_dict()`` is the same JSON value in ``d``; the
    message names the fields that differ. Not compared: ``rules`` (the game was built with them,
    read by ``Rules.from_dict``: fields left out take their defaults) and keys ``d`` has in
    excess."""
    mine = game.to_dict()
    del mine["rules"]
    missing = [k for k in mine if k not in d]
    if missing:
        raise _corrupt(f"missing field(s) {missing}")
    text = _json(mine)
    if text is None or _json({k: d[k] for k in mine}) != text:
        differ = [k for k, v in mine.items() if _json(v) is None or _json(d[k]) != _json(v)]
        raise _corrupt(f"{what} ({', '.join(differ)} differ)")


def _int(x, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise _corrupt(f"{what} must be an int, got {x!r}"[:300])
    return x


def _ints(x, n: int, what: str) -> list[int]:
    if not isinstance(x, list) or len(x) != n:
        raise _corrupt(f"{what} must be a list of {n} ints, got {x!r}"[:300])
    return [_int(v, what) for v in x]


def _list(x, what: str) -> list:
    if not isinstance(x, list):
        raise _corrupt(f"{what} must be a list, got {type(x).__name__}")
    return x


def _flags(x, what: str) -> list[bool]:
    if not isinstance(x, list) or len(x) != 4 or any(not isinstance(v, bool) for v in x):
        raise _corrupt(f"{what} must be a list of 4 bools, got {x!r}"[:300])
    return x


def _check_start(initial, rules: Rules, game_cls, build: bool):
    """The game ``initial`` starts from (``None`` when empty, or when not ``build`` and the start
    is a new game: its RNG state is all there is to check), with exactly one of the known sets
    of keys and the game's rules, checked as ``start_game`` builds it."""
    if not initial:
        return None
    if set(initial) not in _START_KEYS:
        raise _corrupt(f"initial has the keys {sorted(initial)}, expected "
                       f"{sorted(_START_KEYS[0])}, {sorted(_START_KEYS[1])} (and hand_results) "
                       f"or ['state']")
    try:
        if "state" not in initial and Rules.from_dict(initial["rules"]) != rules:
            raise ValueError("its rules are not the game's rules")
        if not build and set(initial) == _START_KEYS[0]:
            rng_from_state(initial["rng"])
            return None
        return start_game(game_cls, initial, rules)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as e:
        raise _corrupt(f"bad initial state ({e})") from None


def _hand_from_fields(game_cls, d: dict, rules: Rules):
    """The game a save without a move log describes, built by the engine: the current hand's deal
    (hands plus played cards, the Blind Nil passes undone) from the start the earlier score tables
    give, then the hand's bids, passes and plays as the save lists them, each through ``apply``."""
    hands = _ints(d["hands"], 4, "hands")
    played = _ints(d["played"], 4, "played")
    if any(not 0 <= m <= FULL_DECK for m in hands + played):
        raise _corrupt("card mask out of range")
    plays = [_ints(p, 2, "plays") for p in _list(d["plays"], "plays")]
    passes = [_ints(x, 3, "exchanges") for x in _list(d["exchanges"], "exchanges")]
    bids = d["bids"]
    if not isinstance(bids, list) or len(bids) != 4 or any(
            b is not None and not 0 <= _int(b, "bids") <= MAX_BID for b in bids):
        raise _corrupt(f"bids must be 4 bids (None or 0..{MAX_BID}), got {bids!r}"[:300])
    blind, looked = _flags(d["blind"], "blind"), _flags(d["looked"], "looked")
    table_data = _list(d["hand_results"], "hand_results")
    try:
        rng = rng_from_state(d["rng"])
        tables = [HandResult.from_dict(h) for h in table_data]
        check_score_tables(tables, rules)
    except ValueError as e:
        raise _corrupt(str(e)) from None
    # the start of this hand: after the earlier tables (a finished game's last table is this
    # hand's own), or the save's totals when no hand came before
    finished = len(plays) == 4 * 13
    if finished and not tables:
        raise _corrupt("a finished hand without its score table")
    before = tables[:-1] if finished else tables
    if before or finished:
        scores, bags = _table_start(tables, len(before), rules)
        dealer = NEXT_SEAT[before[-1].dealer] if before else tables[0].dealer
    else:
        scores, bags, dealer = d["scores"], d["bags"], d["dealer"]
    deal = [hands[s] | played[s] for s in range(4)]
    for frm, to, c in reversed(passes):
        if not (0 <= frm < 4 and to == PARTNER[frm] and 0 <= c < NUM_CARDS):
            raise _corrupt("bad Blind Nil exchange record")
        if not (deal[to] >> c) & 1:
            raise _corrupt(f"card {c} is not with seat {to}, which it was passed to")
        deal[to] &= ~(1 << c)
        deal[frm] |= 1 << c
    try:
        g = game_cls.from_deal(deal, dealer, scores, bags, rules, rng)
    except ValueError as e:
        raise _corrupt(f"the start of this hand: {e}") from None
    # the earlier score tables go in after the moves (the first move would copy them into the
    # record of its starting point, which a load replaces by the save's); this hand's own table,
    # when the save finished it, is the one the moves append
    g.hand_number = len(before)
    moves = []  # (seat, action) of this hand, in order
    offered = [not x for x in g.looked]  # rules.blind_nil_offered, at the hand's start
    for s in SEATS_FROM[NEXT_SEAT[dealer]]:
        if offered[s]:
            if blind[s]:
                moves.append((s, BLIND_NIL_ACTION))
                continue
            if not looked[s]:
                break
            moves.append((s, LOOK_ACTION))
        if bids[s] is None:
            break
        moves.append((s, BID_OFFSET + bids[s]))
    moves += [(frm, c) for frm, _, c in passes] + [(s, c) for s, c in plays]
    for k, (s, a) in enumerate(moves):
        try:
            g.apply(a, seat=s)
        except ValueError as e:
            raise _corrupt(f"move {k + 1} of this hand (seat {s}, action {a}) is illegal: "
                           f"{e}") from None
    g.hand_results = before + g.hand_results
    return g


def load(game_cls, d: dict):
    """The game of a saved game ``d`` (``SpadesGame.to_dict`` output), built by the engine from
    its starting point and moves and compared with every field of ``d`` (the module docstring).

    Args:
        game_cls: ``SpadesGame`` (given, so that this module does not import the engine).
        d: the parsed save; nothing of it is kept.
    Raises:
        ValueError: not a spades_env saved game, an unknown version, a field of the wrong type, a
            starting point that does not build, an illegal move, or a field that is not what the
            moves give (the message names it).
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT_TAG:
        raise ValueError("not a spades_env saved game (missing format tag 'spades_env.game')")
    if d.get("version") != FORMAT_VERSION:
        raise ValueError(f"unsupported saved-game version {d.get('version')!r}; "
                         f"this spades_env reads version {FORMAT_VERSION}")
    try:
        try:
            rules = Rules.from_dict(d["rules"])
        except ValueError as e:
            raise _corrupt(f"rules: {e}") from None
        moves, initial = _list(d["moves"], "moves"), d["initial"]
        if not isinstance(initial, dict):
            raise _corrupt("initial must be a dict")
        initial = _full_rules(initial)
        d = {**d, "initial": initial}
        start = _check_start(initial, rules, game_cls, build=bool(moves))
        if moves:
            if start is None:
                raise _corrupt("a move log without its initial state")
            try:
                g = play_moves(start, moves)
            except ValueError as e:
                raise _corrupt(f"the move log does not replay ({e})") from None
            _compare(d, g, "the move log does not replay to the saved state")
        else:
            g = _hand_from_fields(game_cls, d, rules)
            g.moves = []
            g.initial = initial
            _compare(d, g, "the saved fields are not what the hand's deal and moves give")
        return g
    except KeyError as e:
        raise _corrupt(f"missing field {e}"[:500]) from None
    except (TypeError, AttributeError, IndexError, OverflowError, RecursionError) as e:
        raise _corrupt(f"{type(e).__name__}: {e}"[:500]) from None


def loads(game_cls, text: str | bytes):
    """The game of saved-game JSON text (``SpadesGame.to_json`` output); see ``load``.

    Raises:
        ValueError: invalid JSON, or a save ``load`` refuses.
    """
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, RecursionError) as e:
        raise ValueError(f"not a spades_env saved game: invalid JSON ({e})") from None
    return load(game_cls, d)


__all__ = ["FORMAT_TAG", "FORMAT_VERSION", "TOTAL_LIMIT", "BIT_GENERATORS", "plain_data",
           "rng_state", "rng_from_state", "check_score_tables", "start_game", "play_moves", "load",
           "loads"]
