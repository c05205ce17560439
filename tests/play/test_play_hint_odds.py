"""The hint's chances (docs/play.md, What the agent thinks): how often the player's team makes its
contract and its Nil holds over the search's own deals, in play and in bidding, the one line that
says which column it follows, and Blind Nil offered only where the rules allow it.

Each chance is counted again here, independently, from the search bot's outcomes on the same
seed (``PIMCBot.card_outcomes`` / ``bid_outcomes``) and the engine's scoring.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from spades_env import Rules, SpadesGame
from spades_env.bots import make_bot
from spades_env.cards import BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, TEAM
from spades_env.engine import Phase
from spades_env.play.analysis import TIE_POINTS, Analyst, default_checkpoint
from spades_env.play.analysis import pct
from spades_env.scoring import score_hand
from spades_env.variants import PRESETS

KEY = (5, 17, 7)


def _agent() -> Analyst:
    ckpt = default_checkpoint()
    if ckpt is None:
        pytest.skip("no shipped checkpoint in this checkout")
    pytest.importorskip("torch")
    return Analyst(ckpt)


def _seat2(rules, seed: int, until, bid=None):
    """The game at seat 2's first decision that ``until(view)`` accepts (``medium`` bots, seat 2
    bidding ``bid`` when given)."""
    g = SpadesGame(rules, seed=seed)
    bot = make_bot("medium", seed=seed)
    for _ in range(400):
        v = g.view(g.current_player)
        if v.seat == 2 and until(v):
            return g
        legal = v.legal_actions
        a = BID_OFFSET + bid if v.seat == 2 and bid is not None and BID_OFFSET + bid in legal \
            else bot.act(v)
        g.apply(a)
    raise AssertionError("never reached")


def _counted(view, outcomes) -> tuple:
    """(make, nil) counted here from ``(weight, bids, [(share, won)])`` outcomes."""
    team = TEAM[view.seat]
    made = total = held = nil_total = 0.0
    for w, bids, shares in outcomes:
        nils = [s for s in (team, team + 2) if bids[s] == 0
                and (s == view.seat or view.bids[s] == 0) and view.tricks_won[s] == 0]
        for f, won in shares:
            t = score_hand(bids, won, view.bags, view.rules, view.blind, view.scores)[team]
            if t.made is not None:
                total += w * f
                made += w * f * bool(t.made)
            if nils:
                nil_total += w * f
                held += w * f * all(won[s] == 0 for s in nils)
    return (round(made / total, 4) if total else None,
            round(held / nil_total, 4) if nil_total else None)


@pytest.mark.parametrize("seed,nil", [(1, False), (2, False), (6, True)])
def test_play_chance_is_the_count_over_the_search_deals(seed, nil):
    rules = Rules()
    g = _seat2(rules, seed, lambda v: v.phase == Phase.PLAY and len(v.legal_actions) > 2
               and v.trick_number >= 2, bid=0 if nil else None)
    v = g.view(2)
    assert (v.bids[2] == 0) == nil
    a = Analyst(None).analyse(v, KEY)
    hard = make_bot("hard", seed=0)
    hard.rng = np.random.default_rng(list(KEY))
    cards, values, outs = hard.card_outcomes(v)
    by_card = {c: _counted(v, [(w, tuple(v.bids), [(1.0, won)]) for w, won in o])
               for c, o in zip(cards, outs)}
    rows = {r["action"]: r for r in a["rows"]}
    for c, (make, held) in by_card.items():
        assert (rows[c]["make"], rows[c]["nil"]) == (make, held)
        assert rows[c]["value"] == round(values[cards.index(c)], 2)
    assert all(r["make"] is not None for r in a["rows"])  # equivalent cards share theirs
    s = a["suggestion"]
    assert s["by"] == "search" and s["action"] == a["best_value"]
    assert s["make"] == rows[s["action"]]["make"] and s["deals"] == len(outs[0])
    assert s["contract"] == sum(v.bids[x] for x in (0, 2))
    # the hard bot itself plays a card of that value
    hard.rng = np.random.default_rng(list(KEY))
    assert rows[hard.act(v)]["value"] == s["value"]
    line = s["text"]
    label = rows[s["action"]]["label"]
    # another candidate within TIE_POINTS of the best: the line names them about equal
    top = sorted((rows[c]["value"] for c in cards), reverse=True)
    if len(top) > 1 and round(top[0] - top[1], 2) <= TIE_POINTS:
        assert s["tie"] and line.startswith((f"Play {label}, ", f"Play {label} or ")), line
        assert ": about equal for the search (" in line, line
    else:
        assert not s["tie"]
        assert line.startswith(f"Play {label}: the most points expected by the search ("), line
    assert f"{pct(s['make'])} to make your team's contract of {s['contract']}" in line
    assert (f"that your Nil holds" in line) == nil
    if nil:
        assert s["nil"] == rows[s["action"]]["nil"] is not None
    assert f"({s['deals']} deals played out)" in line


def test_the_line_says_which_column_it_follows():
    """When the agent's choice is another card, the line names it after the search's pick; when
    the search names cards about equal (``tie``), the agent's choice among them is said there."""
    an = _agent()
    seen = {"differ": 0, "agree": 0, "tie": 0}
    for seed in range(1, 12):
        g = _seat2(Rules(), seed, lambda v: v.phase == Phase.PLAY and len(v.legal_actions) > 2)
        a = an.analyse(g.view(2), (seed,))
        s = a["suggestion"]
        agent = next(r for r in a["rows"] if r["action"] == a["best_prob"])
        if a["best_prob"] in s["tie"] or (s["tie"] and a["best_prob"] == s["action"]):
            seen["tie"] += 1
            assert f"about equal for the search (" in s["text"]
            assert f", the agent prefers {agent['label']} ({pct(agent['prob'])})" in s["text"]
        elif a["best_prob"] != s["action"]:
            seen["differ"] += 1
            assert s["text"].endswith(f". The agent prefers {agent['label']} "
                                      f"({pct(agent['prob'])})."), s["text"]
        else:
            seen["agree"] += 1
            assert f", also the agent's choice ({pct(agent['prob'])})" in s["text"]
    assert seen["differ"] and seen["agree"], seen


def test_bid_chance_is_the_count_over_the_search_deals():
    an = _agent()
    for seed in (1, 3, 4):
        g = _seat2(Rules(), seed, lambda v: v.phase == Phase.BIDDING and v.looked)
        v = g.view(2)
        t0 = time.perf_counter()
        a = an.analyse(v, KEY)
        assert time.perf_counter() - t0 < 1.0
        hard = make_bot("hard", seed=0)
        hard.rng = np.random.default_rng(list(KEY))
        own_bids, _vals, _outs = hard.bid_outcomes(v)
        agent = a["best_prob"] - BID_OFFSET
        asked = sorted(set(own_bids) | {agent})
        hard.rng = np.random.default_rng(list(KEY))
        bids, values, outs = hard.bid_outcomes(v, asked)
        rows = {r["action"]: r for r in a["rows"]}
        for b, val, o in zip(bids, values, outs):
            r = rows[BID_OFFSET + b]
            assert r["value"] == round(val, 2)
            assert (r["make"], r["nil"]) == _counted(v, o)
        valued = {r["action"] for r in a["rows"] if r["value"] is not None}
        assert valued == {BID_OFFSET + b for b in asked}
        s = a["suggestion"]
        best = max(asked, key=lambda b: rows[BID_OFFSET + b]["value"])
        assert s["by"] == "search" and s["action"] == BID_OFFSET + best
        words = "Nil" if best == 0 else str(best)
        assert s["text"].startswith(f"Bid {words}: the most points expected by the search (")
        if s["make"] is not None:
            assert f"{pct(s['make'])} to make your team's contract" in s["text"]
        if best == 0:
            assert f"{pct(s['nil'])} that your Nil holds" in s["text"]
        # hard's own bid is the best of its candidates, valued the same here
        hard.rng = np.random.default_rng(list(KEY))
        own = hard.act(v)
        assert rows[own]["value"] == max(rows[BID_OFFSET + b]["value"] for b in own_bids)


# ---------------------------------------------------------------------- Blind Nil at 0-0
def test_blind_nil_is_offered_only_where_the_rules_allow_it():
    """At 0-0 under ``house`` (Blind Nil at any score) the decision is Blind Nil or look, and
    the table says why it is allowed and that the agent's number is its network's output; with
    a deficit rule the seat at 0-0 is never offered it (it bids with its cards seen); trailing
    by the deficit it is, and the note says by how much."""
    an = Analyst(None)
    g = _seat2(PRESETS["house"], 3, lambda v: v.phase == Phase.BIDDING)
    v = g.view(2)
    assert list(v.scores) == [0, 0]
    a = an.analyse(v, KEY)
    assert [r["action"] for r in a["rows"]] == [BLIND_NIL_ACTION, LOOK_ACTION]
    assert a["notes"] and a["notes"][0].startswith(
        "Blind Nil is allowed now: these rules offer it at any score. The agent's Blind Nil "
        "probability is its network's output")
    s = a["suggestion"]
    assert (s["action"], s["by"]) == (LOOK_ACTION, "rule")
    assert s["text"] == ("Look at your cards: the search bot bids Blind Nil only when its team "
                         "trails by 200 or more.")
    deficit = Rules(blind_nil=True, blind_nil_deficit=100)
    g = _seat2(deficit, 3, lambda v: v.phase == Phase.BIDDING)
    v = g.view(2)
    assert v.looked and BLIND_NIL_ACTION not in v.legal_actions
    a = an.analyse(v, KEY)
    assert {BLIND_NIL_ACTION, LOOK_ACTION}.isdisjoint(r["action"] for r in a["rows"])
    assert a["notes"] == []
    g = SpadesGame(deficit, seed=3)
    g = SpadesGame.from_deal(list(g.hands), dealer=g.dealer, rules=deficit, scores=(20, 150))
    while g.current_player != 2:
        g.apply(g.legal_actions()[-1])
    a = an.analyse(g.view(2), KEY)
    assert [r["action"] for r in a["rows"]] == [BLIND_NIL_ACTION, LOOK_ACTION]
    assert "to a team trailing by 100 or more, and yours trails by 130" in a["notes"][0]


# ---------------------------------------------------------------------- the player's view only
def test_bid_hint_is_the_same_after_the_hidden_hands_are_redealt(tmp_path):
    """The bid hint (its chances included) through the route: after the three other hands are
    dealt again (cards swapped between them; the same bids, so the same view of seat 2) it is
    the same."""
    pytest.importorskip("fastapi")
    from spades_env.play.app import create_app
    from spades_env.play.session import HUMAN_SEAT
    from .test_play_requests_and_replays import FAST, _client, _replayed, _to_phase

    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=11,
                     analyst=Analyst(None))
    c = _client(app)
    gid = c.post("/api/games", json={"difficulty": "easy", "target": 250}).json()["id"]
    _to_phase(c, gid, lambda v: v["your_turn"] and v["phase"] == "bidding")
    hint = c.get(f"/api/games/{gid}/hint").json()["analysis"]
    assert hint["phase"] == "bidding" and hint["suggestion"]["by"] == "search"
    assert hint["suggestion"]["make"] is not None
    store = app.state.store
    g = SpadesGame.from_json(store.load_game(gid, "p" * 20).state)
    d = json.loads(g.to_json())
    hands = d["initial"]["hands"]
    others = [s for s in range(4) if s != HUMAN_SEAT]
    for a, b in zip(others, others[1:]):  # one card of each moved to the next
        ca, cb = (hands[a] & -hands[a]).bit_length() - 1, (hands[b] & -hands[b]).bit_length() - 1
        hands[a] ^= (1 << ca) | (1 << cb)
        hands[b] ^= (1 << ca) | (1 << cb)
    other = _replayed(d)
    assert other.view(HUMAN_SEAT) == g.view(HUMAN_SEAT)
    assert [other.hands[s] for s in others] != [g.hands[s] for s in others]
    store._db.execute("UPDATE games SET state = ? WHERE id = ?", (other.to_json(), gid))
    # a server started again on the database (the first one keeps the game loaded)
    app2 = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=11,
                      analyst=Analyst(None))
    assert SpadesGame.from_json(app2.state.store.load_game(gid, "p" * 20).state).hands \
        == other.hands
    assert _client(app2).get(f"/api/games/{gid}/hint").json()["analysis"] == hint
