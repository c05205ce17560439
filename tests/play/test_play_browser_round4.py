"""The browser game, round 4 of the issue: the score graph of a replayed game (the replay view),
and the hint's Nil (or Blind Nil) ringed on its own button. Driving the real page in headless
Chromium against the real app under uvicorn, with the fixtures of ``test_play_browser.py``.

``SPADES_SHOTS=folder`` keeps the screenshots taken on the way (``watch_graph_*``,
``hint_nil_*``, ``hint_blind_nil_*``).
"""

from __future__ import annotations

import pytest

from .test_play_browser import (  # noqa: F401 - fixtures are used by name
    FAST, PLAY_JS, YOUR_TURN, Served, open_page, open_record, page, records, served, server,
    start_game, tid,
)
from .test_play_browser_round3 import SIZES, shot

pytest.importorskip("fastapi")
pytest.importorskip("playwright.sync_api")

from spades_env import PRESETS, SpadesGame  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.cards import BID_OFFSET, BLIND_NIL_ACTION  # noqa: E402
from spades_env.play.app import create_app  # noqa: E402

pytestmark = pytest.mark.slow

NIL_SEED = 16  # an app whose first game (standard, to 250) has the hint bid Nil at seat 2
POST_JS = """async ([path, body]) => {
  const r = await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'},
                               body: JSON.stringify(body)});
  return r.json();
}"""
GET_JS = "async (path) => (await fetch(path)).json()"
GRAPH_JS = """() => [...document.querySelectorAll('#watch-graph circle.pt')].map((c) => ({
  team: Number(c.dataset.team), hand: Number(c.dataset.hand), total: Number(c.dataset.total),
  now: c.classList.contains('now'), cy: Number(c.getAttribute('cy'))}))"""
WIDTHS_JS = """() => ({page: document.documentElement.scrollWidth,
  graph: document.getElementById('watch-graph').getBoundingClientRect().right,
  wider: [...document.querySelectorAll('#screen-watch *')].filter((e) => e.offsetParent &&
    e.getBoundingClientRect().right > innerWidth + 0.5).map((e) => e.id || e.className)})"""
RING = "rgb(63, 143, 216) 0px 0px 0px 3px"  # the hinted card's ring (style.css)


def finished_game(page) -> tuple[str, dict]:
    """A game to 100 against fast bots played through the API to its end (the last score
    table closed); its id and its last view."""
    v = page.evaluate(POST_JS, ["/api/games", {"difficulty": "easy",
                                               "rules": {"preset": "standard",
                                                         "target_score": 100}}])
    gid = v["id"]
    v = page.evaluate(PLAY_JS, [gid, "v.result && !v.hand_table", 4000])
    return gid, v


def graph_state(page) -> tuple[dict, list]:
    pts = page.evaluate(GRAPH_JS)
    return {(p["team"], p["hand"]): p["total"] for p in pts}, pts


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_replay_shows_the_score_graph_of_the_game(server, page, size):
    """A finished game in the replay view: under the table, the graph of both teams' totals
    after every hand, each point the hand's total in the game's score tables (the API); the hand
    on view marked, from the first frame to the last; a click on a point shows that hand's score
    table; nothing wider than the window."""
    w, h = size
    page.set_viewport_size({"width": w, "height": h})
    open_page(page, server)
    gid, v = finished_game(page)
    results = v["hand_results"]
    assert len(results) >= 2
    totals = {(t, i + 1): hr["teams"][t]["total"] for i, hr in enumerate(results) for t in (0, 1)}
    page.click(tid("watch"))
    page.wait_for_selector(f"{tid('watch-source')} option[value='game/{gid}']", state="attached")
    page.select_option(tid("watch-source"), f"game/{gid}")
    page.wait_for_selector(f"{tid('watch-graph')}:visible")
    got, pts = graph_state(page)
    assert got == totals
    assert [p["hand"] for p in pts if p["now"]] == [1, 1]  # the first hand on view
    for i, hr in enumerate(results):  # higher totals drawn higher
        a, b = hr["teams"][0]["total"], hr["teams"][1]["total"]
        by = {(p["team"], p["hand"]): p["cy"] for p in pts}
        if a != b:
            assert (by[(0, i + 1)] < by[(1, i + 1)]) == (a > b)
    lines = page.eval_on_selector_all(f"{tid('watch-graph')} polyline",
                                      "l => l.map(e => e.getAttribute('points').split(' ').length)")
    assert lines == [len(results) + 1] * 2  # the start and one point a hand
    legend = page.inner_text(f"{tid('watch-graph')} .graph-legend")
    for t in v["teams"]:
        assert f"{t['name']} {t['score']}" in legend
    page.locator(tid("watch-graph")).scroll_into_view_if_needed()
    fits = page.evaluate(WIDTHS_JS)
    assert fits["page"] <= w and fits["graph"] <= w and fits["wider"] == [], fits
    shot(page, f"watch_graph_{w}x{h}.png")
    # the last frame: the last hand marked, its score table shown
    page.click(tid("watch-last"))
    last = len(results)
    page.wait_for_function(f"document.querySelector('#watch-graph line.now')"
                           f".dataset.hand === '{last}'")
    got, pts = graph_state(page)
    assert got == totals and [p["hand"] for p in pts if p["now"]] == [last, last]
    # a click on hand 2's point: that hand's last frame, its score table
    page.click(f"{tid('watch-graph')} circle.pt[data-team='0'][data-hand='2']", force=True)
    page.wait_for_function("document.querySelector('#watch-graph line.now')"
                           ".dataset.hand === '2'")
    assert page.is_visible("#w-hand-table")
    summary = page.evaluate(GET_JS, f"/api/watch/game/{gid}")
    h2 = summary["hands"][1]
    assert page.input_value(tid("watch-slider")) == str(h2["first_frame"] + h2["frames"] - 1)
    assert page.evaluate(WIDTHS_JS)["page"] <= w


def test_replay_graph_of_an_uploaded_record(server, page, records):
    """An uploaded record file's game: the graph's points are its hands' totals."""
    folder, game = records
    open_record(page, server, folder / "one.json")
    page.wait_for_selector(f"{tid('watch-graph')}:visible")
    got, _ = graph_state(page)
    assert got == {(t, i + 1): hr.teams[t].total for i, hr in enumerate(game.hand_results)
                   for t in (0, 1)}


# ---------------------------------------------------------------------- Nil on its own button
@pytest.fixture()
def nil_served(tmp_path):
    """An app of its own: its first game is ``NIL_SEED``'s."""
    s = Served(create_app(str(tmp_path / "play.sqlite3"), lineups=FAST, seed=NIL_SEED))
    yield s
    s.stop()


def ring(page, name: str) -> dict:
    return page.eval_on_selector(tid(name), """e => ({on: e.classList.contains('suggested'),
        shadow: getComputedStyle(e).boxShadow})""")


def hint(page):
    page.click(tid("hint"))
    page.wait_for_selector(f"{tid('hint-line')}:visible", timeout=30000)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_nil_hint_rings_the_nil_button(nil_served, page, size):
    """The hint bids Nil (the API's suggestion): the Nil button is ringed as the hinted card is,
    the count box left as it was; closing the hint clears it, a new hint rings it again, and
    bidding Nil clears it."""
    w, h = size
    page.set_viewport_size({"width": w, "height": h})
    open_page(page, nil_served.url)
    g = page.evaluate(POST_JS, ["/api/games", {"difficulty": "easy",
                                               "rules": {"preset": "standard",
                                                         "target_score": 250}}])
    open_page(page, nil_served.url, f"delay=0&pause=0#game={g['id']}")
    page.wait_for_function(YOUR_TURN)
    page.wait_for_selector(f"{tid('bid-nil')}:visible")
    api = page.evaluate(GET_JS, f"/api/games/{g['id']}/hint")["analysis"]["suggestion"]
    assert api["action"] == BID_OFFSET and api["text"].startswith("Bid Nil: ")
    count = page.inner_text(tid("bid-value"))
    assert not ring(page, "bid-nil")["on"]
    hint(page)
    assert page.inner_text(tid("hint-line")) == api["text"]
    r = ring(page, "bid-nil")
    assert r["on"] and RING in r["shadow"], r
    assert not ring(page, "bid-submit")["on"] and page.inner_text(tid("bid-value")) == count
    shot(page, f"hint_nil_{w}x{h}.png")
    page.click("#analysis-close")  # the hint goes away: so does the ring
    page.wait_for_selector(tid("hint-line"), state="hidden")
    r = ring(page, "bid-nil")
    assert not r["on"] and RING not in r["shadow"]
    hint(page)
    assert ring(page, "bid-nil")["on"]
    page.click(tid("bid-nil"))
    page.wait_for_function("!document.getElementById('bid-nil').classList.contains('suggested')")
    page.wait_for_function("state && state.seats[2].bid === 0")  # the bid made
    assert not ring(page, "bid-nil")["on"]


def test_blind_nil_hint_rings_the_blind_nil_button(served, page):
    """A game put at seat 2's Blind Nil decision (its partner bids after it), its team 250
    behind (``house``: Blind Nil at any score): the hint bids Blind Nil, its button ringed;
    bidding it clears the ring."""
    page.set_viewport_size({"width": 1280, "height": 860})
    open_page(page, served.url)
    g = page.evaluate(POST_JS, ["/api/games", {"difficulty": "easy",
                                               "rules": {"preset": "house"}}])
    game = SpadesGame(PRESETS["house"], seed=9)
    game = SpadesGame.from_deal(list(game.hands), dealer=0, rules=PRESETS["house"],
                                scores=(0, 250))
    bot = make_bot("medium", seed=9)
    while game.current_player != 2:
        game.apply(bot.act(game.view(game.current_player)))
    assert BLIND_NIL_ACTION in game.legal_actions()
    served.app.state.store._db.execute("UPDATE games SET state = ?, moves = ? WHERE id = ?",
                                       (game.to_json(), len(game.moves), g["id"]))
    open_page(page, served.url, f"delay=0&pause=0#game={g['id']}")
    page.wait_for_selector(f"{tid('bid-blind-nil')}:visible")
    hint(page)
    assert page.inner_text(tid("hint-line")).startswith("Bid Blind Nil: ")
    r = ring(page, "bid-blind-nil")
    assert r["on"] and RING in r["shadow"] and not ring(page, "bid-look")["on"], r
    shot(page, "hint_blind_nil_1280x860.png")
    page.click(tid("bid-blind-nil"))
    page.wait_for_function(
        "!document.getElementById('bid-blind-nil').classList.contains('suggested')")
    page.wait_for_function("state && state.seats[2].bid === 0 && state.seats[2].blind")


def test_blind_nil_decision_of_every_hand_can_be_answered(server, page):
    """Regression: under `house` (Blind Nil at any score) the Blind Nil decision of hand 2 came
    with its two buttons still disabled from the bid sent in hand 1 (the page was stuck until a
    reload). Every hand's decision must be live: look at the cards in hands 1 and 2."""
    open_page(page, server, "delay=0&pause=0")
    start_game(page, target=None, preset="house")
    looked = 0
    # the player's turn, or the hand's score table (its Next button): waiting on the turn alone
    # hung when the last card's trick closed the hand more than 100 ms after the click
    turn_or_table = YOUR_TURN + " || !document.getElementById('hand-table-box').hidden"
    for _ in range(200):
        page.wait_for_function(turn_or_table, timeout=30000)
        if page.is_visible(tid("bid-look")):
            assert page.is_enabled(tid("bid-look")) and page.is_enabled(tid("bid-blind-nil")), \
                f"hand {looked + 1}: the Blind Nil decision's buttons are disabled"
            page.click(tid("bid-look"), timeout=5000)
            looked += 1
            if looked == 2:
                break
        elif page.is_visible(tid("bid-submit")) and page.is_enabled(tid("bid-submit")):
            page.click(tid("bid-submit"))
        elif page.is_visible(tid("next")):
            page.click(tid("next"))
        else:
            card = page.query_selector(f"{tid('hand')} .card[data-legal=true]")
            if card:
                card.click()
            page.wait_for_timeout(100)
    assert looked == 2
