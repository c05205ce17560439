"""The hint's near-ties and the replay's score data, through the API (FastAPI's test client) and
``analysis.suggestion`` itself: in play, cards the search values within 1.0 point of its best
card (other cards, not equivalent ones) are named together as about equal, with their values;
a replay's summary gives each finished hand's totals (the replay view's score graph).
"""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from spades_env import Rules, SpadesGame  # noqa: E402
from spades_env.cards import parse_card  # noqa: E402
from spades_env.engine import Phase  # noqa: E402
from spades_env.play.analysis import Analyst, pct, suggestion  # noqa: E402
from spades_env.play.app import COOKIE, create_app  # noqa: E402
from spades_env.play.session import HUMAN_SEAT, LINEUPS  # noqa: E402

FAST = {k: {"partner": "medium", "opponents": "easy"} for k in LINEUPS}  # fast bots
PLAYER = "p" * 20

# two hands near their end (seat 2 to play, three cards left), each from a fixed deal and moves:
# few enough deals agree with the view that the search plays each one out (its numbers are exact,
# whatever its random numbers)
NEAR_TIES = [
    (["2C 3C 7C KC 2D 8D 9D 2H 7H 10H AH 10S AS", "8C 10C JC QC 4D 10D QD 6H 8H 9H 2S 7S JS",
      "AC 3D 7D JD KD AD 3H 4H 5H JH QH 5S 8S", "4C 5C 6C 9C 5D 6D KH 3S 4S 6S 9S QS KS"], 2,
     [56, 55, 53, 55, 37, 38, 30, 27, 13, 15, 24, 16, 12, 2, 0, 6, 25, 17, 19, 21, 35, 40, 26, 32,
      3, 11, 8, 14, 51, 39, 42, 41, 1, 9, 45, 4, 28, 43, 31, 33, 49, 47, 44, 29, 50, 5, 48],
     # 7♦ +2.7 is more than 1.0 below Q♥: not named
     "Play Q\u2665 or J\u2666: about equal for the search (+4.4, +3.6 for your team against "
     "theirs); with Q\u2665, 100% to make your team's contract of 6 (42 deals played out)."),
    (["2C 4C 5C 10C AC 2D 4D KD 5H QH AH 6S JS", "3C 6C 7C 10D QD AD 4H 7H JH 2S 3S 9S QS",
      "8C 9C KC 6D 7D JD 6H 8H 9H 10H KH 4S 5S", "JC QC 3D 5D 8D 9D 2H 3H 7S 8S 10S KS AS"], 0,
     [54, 53, 54, 55, 25, 17, 14, 13, 21, 18, 16, 24, 12, 1, 6, 9, 38, 28, 30, 26, 15, 23, 22, 19,
      4, 11, 10, 0, 32, 27, 29, 35, 5, 7, 44, 8, 45, 43, 40, 42, 47, 48, 46, 41, 36, 31],
     # 9♥ and 10♥ are equivalent (one value): 9♥ is named for both
     "Play K\u2665 or 9\u2665: about equal for the search (+9.0, +8.4 for your team against "
     "theirs); with K\u2665, 100% to make your team's contract of 4 (60 deals played out)."),
]


def _client(app) -> TestClient:
    c = TestClient(app)
    c.cookies.set(COOKIE, PLAYER)
    return c


def _position(hands, dealer, moves) -> SpadesGame:
    g = SpadesGame.from_deal([h.split() for h in hands], dealer=dealer, rules=Rules())
    for a in moves:
        g.apply(a)
    assert g.current_player == HUMAN_SEAT and g.phase == Phase.PLAY
    return g


@pytest.mark.parametrize("case", NEAR_TIES, ids=["third-card-apart", "equivalent-cards"])
def test_near_tie_line_through_the_hint_route(tmp_path, case):
    """A saved game put at a constructed position: the hint route's one line names the two
    cards about equal, their values, and the best card's chances."""
    hands, dealer, moves, line = case
    g = _position(hands, dealer, moves)
    db = str(tmp_path / "db.sqlite3")
    app = create_app(db, lineups=FAST, seed=1, analyst=Analyst(None))
    with _client(app) as c:
        gid = c.post("/api/games", json={"difficulty": "easy", "target": 500}).json()["id"]
    app.state.store._db.execute("UPDATE games SET state = ?, moves = ? WHERE id = ?",
                                (g.to_json(), len(g.moves), gid))
    with _client(create_app(db, lineups=FAST, seed=1, analyst=Analyst(None))) as c:
        r = c.get(f"/api/games/{gid}/hint")
        assert r.status_code == 200, r.text
    a = r.json()["analysis"]
    s = a["suggestion"]
    assert s["text"] == line
    assert s["by"] == "search" and s["action"] == a["best_value"]
    named = line.split(":")[0][len("Play "):].split(" or ")
    labels = {row["action"]: row["label"] for row in a["rows"]}
    assert [labels[s["action"]]] + [labels[x] for x in s["tie"]] == named


def _rows(values: dict, probs: dict | None = None) -> list[dict]:
    """Analysis rows of cards (by their text, e.g. ``JD``) with these search values."""
    rows = []
    for card, v in values.items():
        a = parse_card(card)
        label = card.replace("D", "\u2666").replace("C", "\u2663").replace(
            "H", "\u2665").replace("S", "\u2660")
        rows.append({"action": a, "label": label, "value": v, "make": None, "nil": None,
                     "prob": (probs or {}).get(card), "played": False})
    return sorted(rows, key=lambda r: r["action"])


class _View:
    phase, seat, bids = Phase.PLAY, 2, (3, 2, 4, 3)


def _line(values, probs=None, groups=None) -> dict:
    rows = _rows(values, probs)
    best = max(rows, key=lambda r: r["value"])["action"]
    agent = max(rows, key=lambda r: r["prob"])["action"] if probs else None
    g = None if groups is None else {parse_card(k): parse_card(v) for k, v in groups.items()}
    return suggestion(_View(), rows, agent, best, {}, groups=g)


def test_near_tie_lines_from_the_rows():
    """The line of ``suggestion`` on constructed rows: the example of the issue; the agent's
    choice among the tied cards or not; equivalent cards never named as a tie; 1.0 apart still
    about equal, 1.01 not; more than three close cards counted; and the usual line otherwise."""
    s = _line({"JD": 12.9, "10C": 12.6, "2D": 3.0}, {"JD": 0.2, "10C": 0.1, "2D": 0.7})
    assert s["text"] == ("Play J\u2666 or 10\u2663: about equal for the search (+12.9, +12.6 "
                         "for your team against theirs). The agent prefers 2\u2666 (70%).")
    assert s["tie"] == [parse_card("10C")] and s["action"] == parse_card("JD")
    s = _line({"JD": 12.9, "10C": 12.6, "2D": 3.0}, {"JD": 0.2, "10C": 0.7, "2D": 0.1})
    assert s["text"] == ("Play J\u2666 or 10\u2663: about equal for the search (+12.9, +12.6 "
                         "for your team against theirs), the agent prefers 10\u2663 (70%).")
    # 10♦ is J♦'s equivalent (the same value): not a tie; 2♦ is 1.01 below
    s = _line({"JD": 5.0, "10D": 5.0, "2D": 3.99}, groups={"10D": "10D", "JD": "10D", "2D": "2D"})
    assert s["tie"] == [] and s["text"] == (
        "Play 10\u2666: the most points expected by the search (+5.0 for your team against "
        "theirs).")
    s = _line({"JD": 5.0, "2D": 4.0})  # exactly 1.0 apart
    assert s["text"].startswith("Play J\u2666 or 2\u2666: about equal for the search (+5.0, +4.0 ")
    s = _line({"AS": -1.0, "2C": -1.2, "3H": -1.5, "4D": -1.9, "5D": -1.9, "9C": -9.0})
    assert s["text"] == ("Play A\u2660, 2\u2663 or 3\u2665: about equal for the search (-1.0, "
                         "-1.2, -1.5 for your team against theirs; 2 other cards as close).")
    assert s["tie"] == [parse_card("2C"), parse_card("3H")]


def test_replay_summary_gives_each_hands_totals(tmp_path):
    """The replay summary's hands (the replay's score graph): the start at the first frame's
    scores, then each finished hand's totals, as the game's own score tables give them."""
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=5, analyst=Analyst(None))
    with _client(app) as c:
        v = c.post("/api/games", json={"difficulty": "easy",
                                       "rules": {"preset": "standard", "target_score": 100}}).json()
        gid = v["id"]
        for _ in range(3000):
            if v["result"] and not v["hand_table"]:
                break
            if v["hand_table"]:
                v = c.post(f"/api/games/{gid}/next").json()
            elif v["your_turn"]:
                b = v["bidding"]
                a = (52 + max(b["min"], min(3, b["max"])) if b else
                     next(h["action"] for h in v["hand"] if h["legal"]))
                v = c.post(f"/api/games/{gid}/action", json={"action": a, "seq": v["seq"]}).json()
            else:
                v = c.post(f"/api/games/{gid}/advance", json={"seq": v["seq"]}).json()
        summary = c.get(f"/api/watch/game/{gid}").json()
    results = v["hand_results"]
    assert len(results) >= 2 and summary["frames"][0]["scores"] == [0, 0]
    assert [h["scores"] for h in summary["hands"]] == [
        [hr["teams"][t]["total"] for t in (0, 1)] for hr in results]
    assert summary["rules"]["target_score"] == 100


def play_line_start(a: dict) -> str:
    """The start of the one line of analysis ``a`` in play where the search valued the cards:
    the best card and the most points, or with a near-tie the cards named and their values (the
    browser tests check the page's line with it)."""
    s = a["suggestion"]
    rows = {r["action"]: r for r in a["rows"]}
    named = [rows[x] for x in [s["action"], *s["tie"]]]
    pts = [f"{'+' if r['value'] > 0 else ''}{r['value']:.1f}" for r in named]
    if len(named) == 1:
        return f"Play {named[0]['label']}: the most points expected by the search ({pts[0]} "
    labels = [r["label"] for r in named]
    return (f"Play {', '.join(labels[:-1])} or {labels[-1]}: about equal for the search "
            f"({', '.join(pts)}")


def agent_words(a: dict) -> str:
    """Where the line of ``a`` names the agent's choice: among the cards about equal, or after
    the search's pick ('' when they agree outside a near-tie)."""
    s = a["suggestion"]
    if a["best_prob"] is None:
        return ""
    agent = next(r for r in a["rows"] if r["action"] == a["best_prob"])
    if s["tie"] and a["best_prob"] in (s["action"], *s["tie"]):
        return f", the agent prefers {agent['label']} ({pct(agent['prob'])})"
    if a["best_prob"] != s["action"]:
        return f"The agent prefers {agent['label']} ({pct(agent['prob'])})."
    return ""
