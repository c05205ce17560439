"""Make the tables of docs/observation.md from the code, so the doc cannot drift from it.

    python docs/gen_observation_tables.py           # print every generated table
    python docs/gen_observation_tables.py --write   # replace the generated blocks of the doc
    python docs/gen_observation_tables.py --check   # exit status 1 when the doc differs

Offsets and sizes come from ``spades_env.observation.PIECES`` and ``spades_env.state.STATE_PIECES``,
the bounds from the spaces the AEC env declares (standard rules, ``max_hands=100``), the action
ids from ``spades_env.cards`` and the bid slots from ``observation.bid_slot``. Only the words
(what a piece means, how its values are coded) are written here, in ``OBS_TEXT`` and
``STATE_TEXT``; a piece without words is an error, so a new piece cannot reach the doc unexplained.

In the doc each table sits between two marker lines::

    <!-- BEGIN generated: NAME -->

    | the table |

    <!-- END generated: NAME -->

``tests/docs/test_docs_observation.py`` regenerates every table and requires the doc to hold exactly
these blocks.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

from spades_env.cards import (BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, MAX_BID, NUM_ACTIONS,
                              NUM_CARDS, RANK_LETTERS, SUIT_NAMES, card_id)
from spades_env.observation import (OBS_SIZE, OBS_SIZE_V1, OBS_SIZE_V2, OBS_VERSION, PIECES,
                                    RULE_FEATURES, RULES_SIZE, bid_slot, rules_features)
from spades_env.rules import PRESETS, Rules
from spades_env.spades_v2 import HISTORY_OFFSET, HISTORY_SIZE, HISTORY_SLOT, observation_space
from spades_env.state import STATE_PIECES, STATE_SIZE, state_space

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "observation.md")

# piece -> (shape, coding, meaning). The shape's product must equal the piece's size.
OBS_TEXT = {
    "phase": ("3", "one-hot", "bidding, Blind Nil exchange, play; all 0 once the game or the "
                              "episode is over"),
    "looked": ("1", "flag", "the observer has seen its own hand (always 1 without Blind Nil)"),
    "hand": ("52", "card flags", "the observer's cards, by card id; all 0 before it looks"),
    "played": ("4 x 52", "card flags", "cards played this hand, one block per relative seat"),
    "trick": ("4 x 52", "card flags", "the current trick: the card each relative seat played "
                                      "to it"),
    "led_suit": ("4", "one-hot", "suit led to the current trick (all 0 before the lead)"),
    "bids": ("4 x 16", "one-hot", "each relative seat's bid, coded by the bid-slot table"),
    "tricks_won": ("4", "count / 13", "tricks won this hand, by relative seat"),
    "voids": ("4 x 4", "flags", "suits a relative seat is known to hold none of: it failed to "
                                "follow suit, or it led a spade before spades were broken "
                                "(then it has no club, diamond or heart)"),
    "spades_broken": ("1", "flag", "spades are broken"),
    "trick_number": ("1", "count / 13", "tricks completed this hand"),
    "dealer": ("4", "one-hot", "relative seat of the dealer"),
    "to_act": ("4", "one-hot", "relative seat to act (all 0 when over)"),
    "scores": ("2", "points / target_score", "game totals, (my team, their team); may be "
                                             "negative"),
    "bags": ("2", "bags / bag_limit", "bag counts, (my team, their team)"),
    "target": ("1", "target_score / 500", "the game's target (1.0 with the standard 500)"),
    "exchange": ("2 x 52", "card flags", "this hand's Blind Nil exchange as the observer saw it: "
                                         "first the cards it passed that its partner still "
                                         "holds, then the cards it received; all 0 without an "
                                         "exchange"),
    "rules": ("32", "rule slots", "the game's rules, one slot per switch (rule-slot table); the "
                                  "same at every move of a game"),
}

STATE_TEXT = {
    "phase": ("4", "one-hot", "bidding, Blind Nil exchange, play, game over"),
    "to_act": ("4", "one-hot", "seat to act (all 0 when the game is over)"),
    "dealer": ("4", "one-hot", "seat of the dealer"),
    "hands": ("4 x 52", "card flags", "the cards every seat holds now"),
    "looked": ("4", "flags", "each seat has seen its hand (always 1 without Blind Nil)"),
    "played": ("4 x 52", "card flags", "cards played this hand, by seat"),
    "trick": ("4 x 52", "card flags", "the current trick: the card each seat played to it"),
    "led_suit": ("4", "one-hot", "suit led to the current trick (all 0 before the lead)"),
    "bids": ("4 x 16", "one-hot", "each seat's bid, coded by the bid-slot table"),
    "tricks_won": ("4", "count / 13", "tricks won this hand, by seat"),
    "voids": ("4 x 4", "flags", "suits a seat failed to follow (the engine's voids; not the "
                                "spade-lead inference of the observation)"),
    "spades_broken": ("1", "flag", "spades are broken"),
    "trick_number": ("1", "count / 13", "tricks completed this hand"),
    "scores": ("2", "points / target_score", "game totals, (team 0, team 1); may be negative"),
    "bags": ("2", "bags / bag_limit", "bag counts, (team 0, team 1)"),
    "target": ("1", "target_score / 500", "the game's target"),
}

HISTORY_TEXT = ("52 x 56", "one-hot pairs", "only with `history=True`: slot k (56 floats) is the "
                                            "k-th card played this hand: the relative seat that "
                                            "played it (4), then the card id (52); unused slots "
                                            "are 0")

BEGIN = "<!-- BEGIN generated: {} -->"
END = "<!-- END generated: {} -->"


def _index(start: int, stop: int) -> str:
    return str(start) if stop - start == 1 else f"{start} - {stop - 1}"


def _shape_size(shape: str) -> int:
    return int(np.prod([int(x) for x in shape.split(" x ")]))


def _bounds(low: np.ndarray, high: np.ndarray) -> str:
    return f"[{float(low.min()):g}, {float(high.max()):g}]"


def _rows_table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _text_of(table: dict, name: str, size: int, what: str):
    if name not in table:
        raise KeyError(f"{what} piece {name!r} has no words in docs/gen_observation_tables.py")
    shape, coding, meaning = table[name]
    if _shape_size(shape) != size:
        raise ValueError(f"{what} piece {name!r}: shape {shape} is not its size {size}")
    return shape, coding, meaning


def observation_table() -> str:
    """Every piece of the observation (version ``OBS_VERSION``), then the optional history."""
    space = observation_space(history=True, rules=Rules(), max_hands=100)["observation"]
    rows, start = [], 0
    for name, size in PIECES:
        stop = start + size
        shape, coding, meaning = _text_of(OBS_TEXT, name, size, "observation")
        since = "1" if stop <= OBS_SIZE_V1 else "2" if stop <= OBS_SIZE_V2 else str(OBS_VERSION)
        rows.append([f"`{name}`", _index(start, stop), shape, str(size), since, coding,
                     _bounds(space.low[start:stop], space.high[start:stop]), meaning])
        start = stop
    assert start == OBS_SIZE
    shape, coding, meaning = HISTORY_TEXT
    assert _shape_size(shape) == HISTORY_SIZE and int(shape.split(" x ")[1]) == HISTORY_SLOT
    stop = HISTORY_OFFSET + HISTORY_SIZE
    rows.append(["`history`", _index(HISTORY_OFFSET, stop), shape, str(HISTORY_SIZE),
                 "1 (moved in 2 and 3)", coding,
                 _bounds(space.low[HISTORY_OFFSET:stop], space.high[HISTORY_OFFSET:stop]),
                 meaning])
    return _rows_table(["piece", "index", "shape", "size", "since", "coding", "bounds",
                        "meaning"], rows)


def state_table() -> str:
    """Every piece of the full-information state (``env.state()``)."""
    space = state_space(Rules(), 100)
    rows, start = [], 0
    for name, size in STATE_PIECES:
        stop = start + size
        shape, coding, meaning = _text_of(STATE_TEXT, name, size, "state")
        rows.append([f"`{name}`", _index(start, stop), shape, str(size), coding,
                     _bounds(space.low[start:stop], space.high[start:stop]), meaning])
        start = stop
    assert start == STATE_SIZE
    return _rows_table(["piece", "index", "shape", "size", "coding", "bounds", "meaning"], rows)


def sizes_table() -> str:
    """The totals: observation versions, history, state."""
    rows = [
        ["observation, version 1", "`OBS_SIZE_V1`", str(OBS_SIZE_V1)],
        ["observation, version 2 (`spades_v1`)", "`OBS_SIZE_V2`", str(OBS_SIZE_V2)],
        [f"observation, version {OBS_VERSION} (`spades_v2`, batched engine)", "`OBS_SIZE`",
         str(OBS_SIZE)],
        ["`spades_v2` observation with `history=True`", "`OBS_SIZE + HISTORY_SIZE`",
         str(OBS_SIZE + HISTORY_SIZE)],
        ["state (`env.state()`)", "`STATE_SIZE`", str(STATE_SIZE)],
        ["action ids", "`NUM_ACTIONS`", str(NUM_ACTIONS)],
    ]
    return _rows_table(["vector", "constant", "floats"], rows)


def action_table() -> str:
    """The action ids, from the constants of ``spades_env.cards``."""
    last_bid = BID_OFFSET + MAX_BID
    rows = [
        [_index(0, NUM_CARDS), str(NUM_CARDS), "play card `id` (card table below); in the Blind "
                                               "Nil exchange: pass that card", "play, exchange"],
        [_index(BID_OFFSET, last_bid + 1), str(MAX_BID + 1),
         f"bid `id - {BID_OFFSET}` tricks; {BID_OFFSET} is Nil", "bidding"],
        [str(BLIND_NIL_ACTION), "1", "bid Blind Nil", "bidding, before looking (`blind_nil=True`)"],
        [str(LOOK_ACTION), "1", "look at the hand (declines Blind Nil)",
         "bidding, before looking (`blind_nil=True`)"],
    ]
    assert LOOK_ACTION + 1 == NUM_ACTIONS
    return _rows_table(["ids", "count", "action", "legal in"], rows)


def card_table() -> str:
    """Card ids: one row per suit, one column per rank."""
    rows = [[f"{SUIT_NAMES[s]}s ({s})"] + [str(card_id(s, r))
                                            for r in range(13)] for s in range(4)]
    return _rows_table(["suit \\ rank"] + list(RANK_LETTERS), rows)


def bid_slot_table() -> str:
    """One seat's 16-wide bid block, from ``observation.bid_slot``."""
    rows = [[str(bid_slot(None, False)), "not bid yet"],
            [str(bid_slot(0, False)), "Nil"],
            [f"{bid_slot(1, False)} - {bid_slot(MAX_BID, False)}", "bid 1 - 13 (slot = 1 + bid)"],
            [str(bid_slot(0, True)), "Blind Nil"]]
    return _rows_table(["slot", "bid"], rows)


def rule_slot_table() -> str:
    """The slots of the ``rules`` piece (``observation.RULE_FEATURES``) and their values under
    each preset."""
    names = list(PRESETS)
    feats = {n: rules_features(PRESETS[n]) for n in names}
    rows = []
    for k, (field, coding, scale) in enumerate(RULE_FEATURES):
        how = {"flag": "1 when on (not 0)", "set": "1 when set (not None)",
               "minus": f"-{field} / {scale:g} (0 when None)",
               "value": f"{field} / {scale:g}"}[coding]
        rows.append([str(k), f"`{field}`", how] + [f"{float(feats[n][k]):.4g}" for n in names])
    rows.append([f"{len(RULE_FEATURES)} - {RULES_SIZE - 1}", "(free)", "0: room for later switches"]
                + ["0"] * len(names))
    return _rows_table(["slot", "field", "value"] + [f"`{n}`" for n in names], rows)


TABLES = {
    "rule_slots": rule_slot_table,
    "sizes": sizes_table,
    "observation": observation_table,
    "bid_slots": bid_slot_table,
    "state": state_table,
    "actions": action_table,
    "cards": card_table,
}


def block(name: str) -> str:
    """The generated block ``name`` with its marker lines."""
    return f"{BEGIN.format(name)}\n\n{TABLES[name]()}\n\n{END.format(name)}"


def doc_blocks(text: str) -> dict[str, str]:
    """``{name: block with markers}`` of every generated block found in ``text``."""
    pat = re.compile(r"<!-- BEGIN generated: (\w+) -->\n.*?<!-- END generated: \1 -->", re.S)
    return {m.group(1): m.group(0) for m in pat.finditer(text)}


def rewrite(text: str) -> str:
    """``text`` with every generated block replaced by its fresh version."""
    for name, old in doc_blocks(text).items():
        text = text.replace(old, block(name))
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the blocks of docs/observation.md")
    g.add_argument("--check", action="store_true", help="exit 1 when docs/observation.md differs")
    a = p.parse_args(argv)
    if not (a.write or a.check):
        print("\n\n".join(block(n) for n in TABLES))
        return 0
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    new = rewrite(text)
    missing = sorted(set(TABLES) - set(doc_blocks(text)))
    if a.check:
        bad = missing + [n for n, b in doc_blocks(text).items() if b != block(n)]
        if bad:
            print(f"docs/observation.md is out of date: {bad} (python docs/gen_observation_tables.py "
                  f"--write)", file=sys.stderr)
            return 1
        return 0
    if missing:
        print(f"docs/observation.md has no block for {missing}", file=sys.stderr)
        return 1
    if new != text:
        with open(DOC, "w", encoding="utf-8") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
