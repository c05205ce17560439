"""docs/rules.md is kept true: every worked example and every generated table in it is checked
against the engine.

The file is parsed as markdown tables (found by their header row). Each ``*_errors(text)``
function checks one table of the given document text and returns a list of mismatches (empty when
the doc agrees with the code); the tests run them on docs/rules.md, and
``test_a_wrong_value_in_the_doc_is_caught`` runs them on copies of the doc with one value changed,
so the checks themselves are known to fail on a wrong row.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re

import numpy as np
import pytest

from tests.doctools import table as doc_table
from tests.doctools import tables

from spades_env import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, NUM_CARDS, PRESETS, Phase, Rules,
    Seat, SpadesGame, TeamScore, action_str, bid_action, card_str, game_outcome, parse_card,
    parse_cards, partner_of, score_hand, team_of, trick_winner,
)
from spades_env import rules as R
from spades_env.cards import MAX_BID, cards_to_mask

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "rules.md")

# the section headings other files cite (``docs/rules.md, Play``), in order
ANCHORS = ("Table", "Deal", "Bidding", "Blind Nil", "Play", "Scoring a hand", "End of the game",
           "Variant switches", "Notation and action ids", "Worked examples")


def read_doc() -> str:
    with open(DOC, encoding="utf-8") as f:
        return f.read()


def table(text: str, *header: str) -> list[dict]:
    """Rows (dicts by column name) of the one table of docs/rules.md whose header is ``header``."""
    return doc_table(text, *header, doc="docs/rules.md")


def _code(cell: str) -> str:
    """A cell without its backticks."""
    return cell.strip().strip("`")


def _pair(cell: str) -> list[str]:
    """``"a / b"`` (team 0 / team 1) -> ``["a", "b"]``."""
    parts = [p.strip() for p in cell.split("/")]
    if len(parts) != 2:
        raise ValueError(f"expected 'team 0 / team 1', got {cell!r}")
    return parts


def _ints(cell: str) -> list[int]:
    return [int(x) for x in _pair(cell)]


def parse_rules(cell: str) -> Rules:
    """``"standard"``, ``"house"``, ``"standard, loss_threshold=-300"``,
    ``"forced_spade_lead_breaks=True"`` -> a ``Rules``."""
    rules = Rules()
    changes = {}
    for tok in (t.strip() for t in cell.split(",")):
        if "=" in tok:
            k, v = tok.split("=", 1)
            changes[k.strip()] = ast.literal_eval(v.strip())
        else:
            rules = Rules.preset(tok)
    return dataclasses.replace(rules, **changes)


def _example_ids(text: str) -> list[str]:
    """Ids (a capital letter and a number) of the worked-example rows."""
    return [r[0] for h, rows in tables(text) if h and h[0] == "id" for r in rows
            if re.fullmatch(r"[A-Z]\d+", r[0])]


# --------------------------------------------------------------------------- scoring
SCORING = ("id", "bids", "tricks", "bags before", "contract", "result", "contract points",
           "Nil points", "bags", "bag penalty", "hand points", "bags after", "shows")
_RESULT = {True: "made", False: "set", None: "-"}


def scoring_errors(text: str) -> list[str]:
    """The scoring examples under ``standard`` and those with a ``rules`` column (a switch on)."""
    rows = [(row, Rules()) for row in table(text, *SCORING)]
    rows += [(row, parse_rules(row["rules"]))
             for row in table(text, *SCORING[:1], "rules", *SCORING[1:])]
    errors = []
    for row, rules in rows:
        bids, blind = [], []
        for tok in row["bids"].split():
            bids.append(0 if tok in ("Nil", "BNil") else int(tok))
            blind.append(tok == "BNil")
        tricks = [int(t) for t in row["tricks"].split()]
        teams = score_hand(bids, tricks, _ints(row["bags before"]), rules, blind)
        got = {
            "contract": [t.contract for t in teams],
            "result": [_RESULT[t.made] for t in teams],
            "contract points": [t.contract_points for t in teams],
            "Nil points": [t.nil_points for t in teams],
            "bags": [t.bags for t in teams],
            "bag penalty": [t.bag_penalty for t in teams],
            "hand points": [t.hand_points for t in teams],
            "bags after": [t.bags_after for t in teams],
        }
        for col, value in got.items():
            doc = _pair(row[col]) if col == "result" else _ints(row[col])
            if doc != value:
                errors.append(f"{row['id']} {col}: doc {doc}, score_hand {value}")
    return errors


# --------------------------------------------------------------------------- tricks
TRICKS = ("id", "leader", "cards", "winner", "shows")


def trick_errors(text: str) -> list[str]:
    errors = []
    for row in table(text, *TRICKS):
        w = trick_winner(parse_cards(row["cards"]), int(row["leader"]))
        if w != int(row["winner"]):
            errors.append(f"{row['id']}: doc says seat {row['winner']} wins, trick_winner {w}")
    return errors


JOKER_TRICKS = ("id", "rules", "leader", "cards", "winner", "shows")


def joker_trick_errors(text: str) -> list[str]:
    """The trick winners under ``jokers`` (docs/rules.md, Jokers): the cards read with the jokers'
    names, the winner by ``trick_winner`` with the rules' deck (the C rules and the play examples
    J4-J8 through every engine: ``tests/engine/test_rules_conformance.py``)."""
    errors = []
    for row in table(text, *JOKER_TRICKS):
        rules = parse_rules(row["rules"])
        cards = parse_cards(row["cards"], jokers=rules.jokers)
        w = trick_winner(cards, int(row["leader"]), rules.deck)
        if w != int(row["winner"]):
            errors.append(f"{row['id']}: doc says seat {row['winner']} wins, trick_winner {w}")
    return errors


# --------------------------------------------------------------------------- play
DEALS = ("deal", "dealer", "seat", "hand")
PLAY = ("id", "deal", "rules", "plays", "to act", "legal", "broken", "shows")
BLIND = ("id", "rules", "moves", "phase", "to act", "legal", "sees hand", "shows")
_YES_NO = {"yes": True, "no": False}
_PHASES = {"bidding": Phase.BIDDING, "exchange": Phase.EXCHANGE, "play": Phase.PLAY}
_ACTION_BY_NAME = {action_str(a): a for a in range(NUM_ACTIONS)}


def deals(text: str) -> dict:
    """{deal name: (dealer, [4 hands as card-id lists])} from the deals table; a deal whose hands
    name the jokers (BJ, LJ) is read as a deal of the jokers' deck (docs/rules.md, Jokers)."""
    out: dict = {}
    rows = table(text, *DEALS)
    jokers = {r["deal"] for r in rows if {"BJ", "LJ"} & set(r["hand"].split())}
    for row in rows:
        dealer, hands = out.setdefault(row["deal"], (int(row["dealer"]), [None] * 4))
        assert int(row["dealer"]) == dealer, f"deal {row['deal']}: two dealers"
        hands[int(row["seat"])] = parse_cards(row["hand"], jokers=row["deal"] in jokers)
    return out


def _legal_ids(cell: str, game: SpadesGame) -> list[int]:
    """``whole hand``, card names, or action ids and ranges ``a..b`` -> action ids (ascending)."""
    if cell == "whole hand":
        return game.hand(game.current_player)
    ids = []
    for tok in cell.replace(",", " ").split():
        if ".." in tok:
            lo, hi = tok.split("..")
            ids += range(int(lo), int(hi) + 1)
        elif tok.isdigit():
            ids.append(int(tok))
        else:
            ids.append(parse_card(tok))
    return ids


def _bid_round(game: SpadesGame, bid: int = 3) -> None:
    """Every seat looks at its cards (when Blind Nil is on) and bids ``bid``."""
    while game.phase == Phase.BIDDING:
        legal = game.legal_actions()
        game.apply(LOOK_ACTION if LOOK_ACTION in legal else bid_action(bid))


def play_errors(text: str) -> list[str]:
    errors = []
    known = deals(text)
    for row in table(text, *PLAY):
        dealer, hands = known[row["deal"]]
        rules = parse_rules(row["rules"])
        jokers = rules.jokers
        g = SpadesGame.from_deal(hands, dealer, rules=rules)
        _bid_round(g)
        if row["plays"] != "-":
            for c in parse_cards(row["plays"], jokers=jokers):
                g.apply(c)
        p = g.current_player
        if p != int(row["to act"]):
            errors.append(f"{row['id']}: doc says seat {row['to act']} acts, engine seat {p}")
            continue
        legal = g.legal_actions()
        if row["legal"] == "whole hand":
            if legal != g.hand(p):
                errors.append(f"{row['id']}: doc says the whole hand is legal, engine "
                              f"{[card_str(c) for c in legal]}")
        elif [card_str(c, jokers=jokers) for c in legal] != row["legal"].split():
            errors.append(f"{row['id']}: doc legal {row['legal']!r}, engine "
                          f"{' '.join(card_str(c, jokers=jokers) for c in legal)!r}")
        if g.spades_broken != _YES_NO[row["broken"]]:
            errors.append(f"{row['id']}: doc broken {row['broken']}, engine {g.spades_broken}")
    return errors


def blind_nil_errors(text: str) -> list[str]:
    errors = []
    dealer, hands = deals(text)["B"]
    for row in table(text, *BLIND):
        g = SpadesGame.from_deal(hands, dealer, rules=parse_rules(row["rules"]))
        if row["moves"] != "-":
            for name in row["moves"].split(","):
                g.apply(_ACTION_BY_NAME[name.strip()])
        p = g.current_player
        if g.phase != _PHASES[row["phase"]] or p != int(row["to act"]):
            errors.append(f"{row['id']}: doc {row['phase']}, seat {row['to act']} to act; "
                          f"engine {Phase(g.phase).name}, seat {p}")
            continue
        if g.legal_actions() != _legal_ids(row["legal"], g):
            errors.append(f"{row['id']}: doc legal {row['legal']!r}, engine {g.legal_actions()}")
        v = g.view(p)
        sees = bool(v.hand) and v.looked
        hidden = v.hand == 0 and not v.looked
        if (sees, hidden) != ((True, False) if _YES_NO[row["sees hand"]] else (False, True)):
            errors.append(f"{row['id']}: doc sees hand {row['sees hand']}, view hand "
                          f"{v.hand != 0}, looked {v.looked}")
    return errors


# --------------------------------------------------------------------------- dealer rotation
DEALERS = ("id", "hand number", "dealer", "first to bid and lead")


def dealer_errors(text: str) -> list[str]:
    errors = []
    rows = sorted(table(text, *DEALERS), key=lambda r: int(r["hand number"]))
    _, hands = deals(text)["B"]
    g = SpadesGame.from_deal(hands, int(rows[0]["dealer"]), seed=0)
    rng = np.random.default_rng(0)
    for row in rows:
        while g.hand_number < int(row["hand number"]):
            legal = g.legal_actions()
            g.apply(legal[int(rng.integers(len(legal)))])
        assert not g.is_over, "the dealer-rotation game ended early"
        first = int(row["first to bid and lead"])
        if g.dealer != int(row["dealer"]) or g.current_player != first:
            errors.append(f"{row['id']}: doc dealer {row['dealer']}, first {first}; engine "
                          f"dealer {g.dealer}, first to bid {g.current_player}")
            continue
        probe = g.clone()
        _bid_round(probe, bid=1)
        if probe.phase != Phase.PLAY or probe.current_player != first:
            errors.append(f"{row['id']}: the first lead is seat {probe.current_player}, "
                          f"not {first}")
    return errors


# --------------------------------------------------------------------------- end of the game
ENDS = ("id", "rules", "totals", "outcome", "shows")
_OUTCOME = {"team 0 wins": 0, "team 1 wins": 1, "play on": None}


def end_errors(text: str) -> list[str]:
    errors = []
    for row in table(text, *ENDS):
        got = game_outcome(_ints(row["totals"]), parse_rules(row["rules"]))
        if got != _OUTCOME[row["outcome"]]:
            errors.append(f"{row['id']}: doc {row['outcome']!r}, game_outcome {got}")
    return errors


# --------------------------------------------------------------------------- Rules and presets
FIELDS = ("field", "type", "default", "allowed values", "meaning")
_RANGE = re.compile(r"^(-?[\d,]+) to (-?[\d,]+)$")


def _num(s: str) -> int:
    return int(s.replace(",", ""))


# a field only allowed beside another (docs/rules.md, House rules): checked with it on
_NEEDS = {"blind_nil_deficit": {"blind_nil": True}}


def _accepts(**kw) -> bool:
    for k in list(kw):
        kw.update(_NEEDS.get(k, {}))
    try:
        Rules(**kw)
    except ValueError:
        return False
    return True


def rules_field_errors(text: str) -> list[str]:
    errors = []
    rows = table(text, *FIELDS)
    want = [f for f in dataclasses.fields(Rules)]
    if [_code(r["field"]) for r in rows] != [f.name for f in want]:
        return [f"doc fields {[_code(r['field']) for r in rows]}, Rules fields "
                f"{[f.name for f in want]}"]
    for row, f in zip(rows, want):
        if _code(row["type"]) != str(f.type):
            errors.append(f"{f.name}: doc type {_code(row['type'])!r}, Rules {f.type!r}")
        default = ast.literal_eval(_code(row["default"]))
        if default != f.default or type(default) is not type(f.default):
            errors.append(f"{f.name}: doc default {default!r}, Rules {f.default!r}")
        m = _RANGE.match(row["allowed values"])
        if m:  # the bounds are accepted, one beyond them refused
            lo, hi = _num(m.group(1)), _num(m.group(2))
            if not (_accepts(**{f.name: lo}) and _accepts(**{f.name: hi})
                    and not _accepts(**{f.name: lo - 1}) and not _accepts(**{f.name: hi + 1})):
                errors.append(f"{f.name}: Rules does not accept exactly {lo}..{hi}")
        elif f.name == "loss_threshold":
            m = re.search(r"(-[\d,]+) up to `target_score - 1`", row["allowed values"])
            lo = _num(m.group(1)) if m else None
            t = Rules().target_score
            if lo is None or not (_accepts(loss_threshold=None) and _accepts(loss_threshold=lo)
                                  and _accepts(loss_threshold=t - 1)
                                  and not _accepts(loss_threshold=lo - 1)
                                  and not _accepts(loss_threshold=t)):
                errors.append(f"loss_threshold: Rules does not accept exactly "
                              f"{row['allowed values']!r}")
        elif row["allowed values"] != "True / False" or f.type != "bool":
            errors.append(f"{f.name}: allowed values {row['allowed values']!r} not checked")
    return errors


def preset_errors(text: str) -> list[str]:
    names = [f.name for f in dataclasses.fields(Rules)]
    rows = table(text, "preset", *names)
    errors = []
    if sorted(r["preset"] for r in rows) != sorted(PRESETS):
        errors.append(f"doc presets {[r['preset'] for r in rows]}, PRESETS {sorted(PRESETS)}")
    for row in rows:
        doc = {k: ast.literal_eval(row[k]) for k in names}
        got = Rules.preset(row["preset"]).to_dict() if row["preset"] in PRESETS else None
        if got != doc or (got and any(type(doc[k]) is not type(got[k]) for k in names)):
            errors.append(f"preset {row['preset']}: doc {doc}, PRESETS {got}")
    return errors


# --------------------------------------------------------------------------- notation and ids
def notation_errors(text: str) -> list[str]:
    errors = []
    rows = table(text, "written", "also", "card id")
    for row in rows:
        cid = int(row["card id"])
        for form in (row["written"], row["also"]):
            if parse_card(form) != cid:
                errors.append(f"parse_card({form!r}) = {parse_card(form)}, doc {cid}")
        if card_str(cid) != row["written"]:
            errors.append(f"card_str({cid}) = {card_str(cid)!r}, doc {row['written']!r}")
    for row in table(text, "id", "action_str"):
        got = action_str(int(row["id"]))
        if got != row["action_str"]:
            errors.append(f"action_str({row['id']}) = {got!r}, doc {row['action_str']!r}")
    ranges = {}
    for row in table(text, "ids", "action"):
        lo, _, hi = row["ids"].partition("..")
        ranges[(int(lo), int(hi or lo))] = row["action"]
    want = [(0, NUM_CARDS - 1), (BID_OFFSET, BID_OFFSET + MAX_BID),
            (BLIND_NIL_ACTION, BLIND_NIL_ACTION), (LOOK_ACTION, LOOK_ACTION)]
    if sorted(ranges) != want or want[-1][1] != NUM_ACTIONS - 1:
        errors.append(f"action id ranges {sorted(ranges)}, code {want} of {NUM_ACTIONS}")
    m = re.search(r"one space of (\d+)", text)
    if not m or int(m.group(1)) != NUM_ACTIONS:
        errors.append(f"the doc's size of the action space is not NUM_ACTIONS = {NUM_ACTIONS}")
    return errors


def seat_errors(text: str) -> list[str]:
    errors = []
    rows = table(text, "seat", "name", "team", "partner", "left")
    if [int(r["seat"]) for r in rows] != [0, 1, 2, 3]:
        return [f"seat table rows {[r['seat'] for r in rows]}"]
    for r in rows:
        s = int(r["seat"])
        got = (Seat(s).name, team_of(s), partner_of(s), int(Seat(s).next))
        doc = (r["name"], int(r["team"]), int(r["partner"]), int(r["left"]))
        if got != doc:
            errors.append(f"seat {s}: doc {doc}, code {got}")
    return errors


def score_table_errors(text: str) -> list[str]:
    doc = [_code(r["field"]) for r in table(text, "field", "meaning")]
    want = [f.name for f in dataclasses.fields(TeamScore)]
    return [] if doc == want else [f"score table fields: doc {doc}, TeamScore {want}"]


def reference_errors(text: str) -> list[str]:
    """Example ids cited in the rule tables' ``examples`` columns that no example table holds."""
    ids = set(_example_ids(text))
    errors = []
    for header, rows in tables(text):
        if "examples" not in header:
            continue
        k = header.index("examples")
        for r in rows:
            for ref in re.findall(r"\b[A-Z]\d+\b", r[k]):
                if ref not in ids:
                    errors.append(f"rule {r[0]!r} cites example {ref}, which does not exist")
    return errors


# --------------------------------------------------------------------------- house rules
HOUSE_BIDS = ("id", "rules", "next bidder's hand", "bids so far (seat 1, 2, 3)",
              "legal bids of the next bidder")


def _bid_set(cell: str) -> set:
    """``"0, 4..13"`` -> {0, 4, 5, ..., 13}."""
    out = set()
    for part in (p.strip() for p in cell.split(",")):
        lo, _, hi = part.partition("..")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def house_bidding_errors(text: str) -> list[str]:
    """Each row through ``rules.legal_bids`` and through the engine: a deal (seeded) that gives
    the next bidder the row's hand and lets the earlier seats make the row's bids, those bids
    played from dealer 0, then the engine's legal actions compared with the row."""
    errors = []
    rows = table(text, *HOUSE_BIDS)
    if len(rows) < 8:
        errors.append(f"only {len(rows)} worked bidding examples")
    rng = np.random.default_rng(0)
    for row in rows:
        rules = parse_rules(row["rules"])
        hand = cards_to_mask(parse_cards(row["next bidder's hand"], jokers=rules.jokers))
        made = row["bids so far (seat 1, 2, 3)"]
        made = [] if made == "(none)" else [int(b) for b in made.split(",")]
        want = _bid_set(row["legal bids of the next bidder"])
        seat = 1 + len(made)
        bids = [None] * 4
        for k, b in enumerate(made):
            bids[1 + k] = b
        got = R.legal_bids(rules, seat % 4, hand, True, bids)
        if {b for b in range(14) if got >> b & 1} != want:
            errors.append(f"{row['id']}: legal_bids gives "
                          f"{sorted(b for b in range(14) if got >> b & 1)}")
            continue
        rest = [c for c in range(52) if not hand >> c & 1]
        for _ in range(2000):  # a deal in which the earlier bids are legal
            rng.shuffle(rest)
            masks = [cards_to_mask(rest[13 * k:13 * k + 13]) for k in range(3)]
            hands = masks[:seat - 1] + [hand] + masks[seat - 1:]
            hands = hands[3:] + hands[:3]  # by seat: 1, 2, 3, 0 -> 0, 1, 2, 3
            g = SpadesGame.from_deal(hands, dealer=0, rules=rules)
            try:
                for b in made:
                    g.apply(52 + b)
            except ValueError:
                continue
            legal = {a - 52 for a in g.legal_actions()}
            if legal != want:
                errors.append(f"{row['id']}: the engine allows {sorted(legal)}")
            break
        else:
            errors.append(f"{row['id']}: no deal found in which the earlier bids are legal")
    return errors


CHECKS = (scoring_errors, trick_errors, joker_trick_errors, play_errors, blind_nil_errors, dealer_errors, end_errors,
          rules_field_errors, preset_errors, notation_errors, seat_errors, score_table_errors,
          reference_errors, house_bidding_errors)


# --------------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def doc() -> str:
    return read_doc()


def test_sections_other_files_cite_are_there_in_order(doc):
    heads = [line[3:].strip() for line in doc.splitlines() if line.startswith("## ")]
    assert [h for h in heads if h in ANCHORS] == list(ANCHORS)


def test_example_ids_are_unique_and_plentiful(doc):
    ids = _example_ids(doc)
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for prefix, least in (("S", 12), ("T", 8), ("B", 4), ("C", 6), ("N", 8), ("D", 4), ("E", 10),
                          ("J", 10)):
        assert sum(re.fullmatch(prefix + r"\d+", i) is not None for i in ids) >= least, prefix


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_doc_agrees_with_the_engine(doc, check):
    assert check(doc) == []


# (check, text in the doc, the same with one value wrong)
MUTATIONS = [
    (scoring_errors, "| -100 / 0 | -48 / +60 | 1 / 4 |", "| -100 / 0 | -47 / +60 | 1 / 4 |"),
    (scoring_errors, "| S5 | Nil 4 4 3 | 2 4 3 4 | 0 / 0 | 4 / 7 | set / made |",
     "| S5 | Nil 4 4 3 | 2 4 3 4 | 0 / 0 | 6 / 7 | set / made |"),
    (scoring_errors, "| +242 / +70 | 2 / 0 |", "| +242 / +70 | 0 / 0 |"),
    (scoring_errors, "| 0 / +92 | 0 / 0 | 2 / 2 | 0 / 0 | 0 / +92 | 2 / 2 | both",
     "| 0 / +92 | 0 / 0 | 0 / 2 | 0 / 0 | 0 / +92 | 2 / 2 | both"),
    (scoring_errors, "| S14 | failed_nil_tricks_count=True | Nil 4 4 3 |",
     "| S14 | failed_nil_tricks_count=False | Nil 4 4 3 |"),
    (scoring_errors, "| +52 / +60 | -100 / 0 | 2 / 0 |", "| +51 / +60 | -100 / 0 | 2 / 0 |"),
    (trick_errors, "| T2 | 1 | KD 2S AD 3D | 2 |", "| T2 | 1 | KD 2S AD 3D | 3 |"),
    (play_errors, "| 2C 2S | 2 | AC | yes |", "| 2C 2S | 2 | AC | no |"),
    (play_errors, "| 0 | KH AH | no |", "| 0 | AH KH 2S | no |"),
    (play_errors, "9H 2S AS 2D 7D | 1 | 2C 3C 4C 5C 6C 7C 8C 9C 10C | no |",
     "9H 2S AS 2D 7D | 1 | whole hand | no |"),
    (blind_nil_errors, "| bidding | 0 | 66, 67 | no |", "| bidding | 0 | 66, 67 | yes |"),
    (blind_nil_errors, "bid 3, bid Blind Nil, look at cards, bid 3 | play |",
     "bid 3, bid Blind Nil, look at cards, bid 3 | exchange |"),
    (dealer_errors, "| D2 | 1 | 3 | 0 |", "| D2 | 1 | 3 | 1 |"),
    (end_errors, "| E3 | standard | 510 / 510 | play on |",
     "| E3 | standard | 510 / 510 | team 0 wins |"),
    (end_errors, "| E5 | house | -200 / 150 | team 1 wins |",
     "| E5 | standard | -200 / 150 | team 1 wins |"),
    (rules_field_errors, "| `target_score` | `int` | `500` |",
     "| `target_score` | `int` | `400` |"),
    (rules_field_errors, "| `blind_nil` | `bool` | `False` |", "| `blind_nil` | `bool` | `0` |"),
    (preset_errors, "| short | 250 |", "| short | 300 |"),
    (notation_errors, "| 10H | TH | 34 |", "| 10H | TH | 35 |"),
    (notation_errors, "| 66 | bid Blind Nil |", "| 66 | bid blind Nil |"),
    (seat_errors, "| 2 | SOUTH | 0 | 0 | 3 |", "| 2 | SOUTH | 0 | 0 | 1 |"),
    (score_table_errors, "| `bags_after` |", "| `bags_carried` |"),
    (reference_errors, "| S3 |\n| contract |", "| S31 |\n| contract |"),
    (house_bidding_errors, "| 2, 0, 2 | 4..13 |", "| 2, 0, 2 | 3..13 |"),
    (house_bidding_errors, "| 5, 4, 0 | 0 |", "| 5, 4, 0 | 0, 4 |"),
    (house_bidding_errors, "| 3, 2 | 0, 3 |", "| 3, 2 | 3 |"),
    (house_bidding_errors, "| 4, 3, 2 | 0..3, 5..13 |", "| 4, 3, 2 | 0..13 |"),
    (house_bidding_errors, "10C 3H | 3 | 4 |", "10C 3H | 3 | 1 |"),  # 4 spades, not 1
    (joker_trick_errors, "| 0 | AD 2D KD BJ | 3 |", "| 0 | AD 2D KD BJ | 1 |"),
    (joker_trick_errors, "| 2 | 2D 3S 2S AS | 2 |", "| 2 | 2D 3S 2S AS | 0 |"),
    (play_errors, "| AD | 1 | 3D 4D | no |", "| AD | 1 | 2D 3D 4D | no |"),
    (play_errors, "| J4 | J | jokers=True | - | 0 | 3C", "| J4 | J | jokers=True | - | 0 | BJ 3C"),
    (play_errors, "| 2 | 7D 8D JD | yes |", "| 2 | 7D 8D JD | no |"),
]


@pytest.mark.parametrize("check,right,wrong", MUTATIONS,
                         ids=[f"{m[0].__name__}-{i}" for i, m in enumerate(MUTATIONS)])
def test_a_wrong_value_in_the_doc_is_caught(doc, check, right, wrong):
    assert doc.count(right) == 1, f"the doc no longer holds {right!r}: update this mutation"
    assert check(doc.replace(right, wrong)) != []
