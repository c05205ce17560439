"""The browser game, round 3 of the issue: motion (cards fly to the table, a trick slides to its
winner; none under reduced motion or at Fast), Rules and help from the menu, and the richer
statistics (sets, Nils, bags per hand, streaks) with the score graph of the game. Driving the real
page in headless Chromium against the real app under uvicorn, with the fixtures of
``test_play_browser.py``.

``SPADES_SHOTS=folder`` keeps the screenshots taken on the way (``help_*``, ``hand_graph_*``,
``results_*`` at 1280x860 and 390x844).
"""

from __future__ import annotations

import time

import pytest

from .test_play_browser import (  # noqa: F401 - fixtures are used by name
    PLAY_JS, YOUR_TURN, open_page, page, served, server, shot, start_game, tid,
)
from .test_play_browser_layout import assert_in_sight

pytest.importorskip("fastapi")
pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.slow

SIZES = [(1280, 860), (390, 844)]
PLAYING = YOUR_TURN + " && document.getElementById('bidpanel').hidden"
MOTION = "delay=400&pause=900"  # slow enough for motion (at or over 250 ms), quicker than Normal

# every animation the page starts (Element.animate) and every CSS transition or animation that
# runs, and the most animations running at once (document.getAnimations, each frame)
WATCH_MOTION_JS = """
window.motion = {calls: [], css: [], most: 0, trickRunning: 0};
const animate = Element.prototype.animate;
Element.prototype.animate = function (frames, opts) {
  const t = (f) => (f && f.translate ? f.translate.split(' ').map(parseFloat) : null);
  window.motion.calls.push({card: this.dataset.card, seat: this.dataset.seat,
    cls: this.className, duration: typeof opts === 'number' ? opts : opts.duration,
    first: t(frames[0]), last: t(frames[frames.length - 1])});
  return animate.call(this, frames, opts);
};
for (const type of ['transitionrun', 'animationstart']) {
  document.addEventListener(type, (e) => window.motion.css.push(
    `${type} ${e.propertyName || e.animationName} on ${e.target.className}`), true);
}
const poll = () => {
  const all = document.getAnimations();
  window.motion.most = Math.max(window.motion.most, all.length);
  if (all.some((a) => a.playState === 'running' && a.effect && a.effect.target &&
                      a.effect.target.closest('#trick')))
    window.motion.trickRunning++;
  requestAnimationFrame(poll);
};
requestAnimationFrame(poll);
"""



def view(page, gid: str) -> dict:
    return page.evaluate("async (id) => (await fetch(`/api/games/${id}`)).json()", gid)


def play_tricks(page, gid: str, tricks: int, illegal: bool = False) -> dict:
    """Bid, then click the first legal card on each turn until ``tricks`` tricks of the hand are
    complete (with ``illegal``, one illegal card clicked on the way). Returns the view."""
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    page.click(tid("bid-submit"))
    deadline = time.time() + 60
    while True:
        v = view(page, gid)
        if len(v["hand_tricks"]) >= tricks:
            return v
        assert time.time() < deadline, "the tricks were not played"
        if not page.evaluate(PLAYING):
            page.wait_for_timeout(50)
            continue
        if illegal and page.locator(f"{tid('hand')} [data-legal=false]").count():
            illegal = False
            page.locator(f"{tid('hand')} [data-legal=false]").first.click()
            page.wait_for_function("document.getElementById('status').classList.contains('error')")
        n = page.locator(f"{tid('hand')} .card").count()
        page.locator(f"{tid('hand')} [data-legal=true]:not(.idle)").first.click()
        page.wait_for_function(f"document.querySelectorAll('[data-testid=hand] .card').length < {n}")


# ---------------------------------------------------------------------- motion
def test_played_cards_fly_in_and_a_trick_slides_to_its_winner(server, page):
    """With motion: each card played (the player's and the bots') is animated from its player's
    side to its place (260 ms), and each complete trick slides toward its winner's side before
    it clears; the animations run on the table's cards, and a click is never held by them."""
    page.add_init_script(WATCH_MOTION_JS)
    open_page(page, server, MOTION)
    gid = start_game(page)
    v = play_tricks(page, gid, 2)
    page.wait_for_timeout(1200)  # the second trick's pause and slide are over
    m = page.evaluate("window.motion")
    flying = [c for c in m["calls"] if "flying" in c["cls"]]
    played = [c for t in v["hand_tricks"] for c in t["cards"]] + v["trick"]
    assert [(c["card"], int(c["seat"])) for c in flying[:len(played)]] == [
        (c["card"], c["seat"]) for c in played]
    positions = {s["seat"]: s["position"] for s in v["seats"]}
    for c in flying:
        assert 200 <= c["duration"] <= 350, c
        assert c["last"] == [0, 0], c  # it ends in its place
        dx, dy = c["first"]
        side = {"bottom": dy > 30, "top": dy < -30, "left": dx < -30, "right": dx > 30}
        assert side[positions[int(c["seat"])]], c  # it comes from its player's side
    slides = [c for c in m["calls"] if "gathering" in c["cls"]]
    assert len(slides) >= 4 * len(v["hand_tricks"]) - 4  # the last one may still be on show
    for trick, group in zip(v["hand_tricks"], [slides[i:i + 4] for i in range(0, len(slides), 4)]):
        assert sorted(c["card"] for c in group) == sorted(c["card"] for c in trick["cards"])
        where = positions[trick["winner"]]
        for c in group:
            dx, dy = c["last"]
            assert {"bottom": dy > 0, "top": dy < 0, "left": dx < 0, "right": dx > 0}[where], c
            assert 200 <= c["duration"] <= 350
    assert m["trickRunning"] > 0 and m["most"] > 0  # they really ran, on the table's cards


def test_no_motion_under_reduced_motion_nor_at_fast_speed(server, page):
    """``prefers-reduced-motion: reduce``: no card flies, no trick slides, no CSS transition or
    animation runs (not even the shake of a refused card), at a speed where motion would be on.
    At the Fast speed (bots 150 ms apart) nothing is animated either."""
    page.add_init_script(WATCH_MOTION_JS)
    page.emulate_media(reduced_motion="reduce")
    open_page(page, server, MOTION)
    assert page.evaluate("matchMedia('(prefers-reduced-motion: reduce)').matches")
    gid = start_game(page)
    v = play_tricks(page, gid, 2, illegal=True)
    page.wait_for_timeout(1200)
    m = page.evaluate("window.motion")
    assert len(v["hand_tricks"]) >= 2
    assert m["calls"] == [] and m["css"] == [] and m["most"] == 0, m
    # motion allowed again, but the Fast speed: nothing flies either
    page.emulate_media(reduced_motion="no-preference")
    open_page(page, server, "")
    page.select_option(tid("speed-setting"), "fast")
    gid = start_game(page)
    v = play_tricks(page, gid, 1)
    m = page.evaluate("window.motion")
    assert len(v["hand_tricks"]) >= 1 and m["calls"] == [], m


# ---------------------------------------------------------------------- rules and help
HELP_FITS_JS = """() => {
  const p = document.querySelector('#help-box .panel').getBoundingClientRect();
  return {left: p.left, right: p.right, top: p.top, bottom: p.bottom, w: innerWidth,
          h: innerHeight, page: document.documentElement.scrollWidth,
          inner: [...document.querySelectorAll('#help-box li, #help-box h3, #help-box p')]
            .filter((e) => e.offsetParent && e.scrollWidth > e.clientWidth + 1).length};
}"""


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_rules_and_help_show_the_house_rules_of_the_game(server, page, size):
    """Menu > Rules and help: the rules of the game in progress (a suicide game: its line, its
    house rules as the server lists them, every rule), Spades in short and how to use the page,
    inside the window at a phone's size and a laptop's; on the settings screen, the rules chosen
    there."""
    w, h = size
    page.set_viewport_size({"width": w, "height": h})
    open_page(page, server)
    rules = view(page, start_game(page, target=None, preset="suicide"))["rules"]
    assert "Bidding: suicide: in each partnership exactly one partner bids Nil" in rules["house"]
    page.click(tid("menu"))
    page.click(tid("menu-help"))
    page.wait_for_selector(f"{tid('help-house')} li")
    assert page.inner_text(tid("help-rules-title")) == f"This game: {rules['line']}"
    assert page.eval_on_selector_all(f"{tid('help-house')} li", "l => l.map(e => e.textContent)"
                                     ) == rules["house"]
    assert page.is_hidden(tid("help-no-house"))
    assert page.eval_on_selector_all(f"{tid('help-items')} li", "l => l.map(e => e.textContent)"
                                     ) == rules["items"]
    basics, app = page.inner_text(tid("help-basics")), page.inner_text(tid("help-app"))
    for words in ("Spades are trumps", "Nil", "bag", "set"):
        assert words in basics
    for words in ("drag it onto the table", "Hint", "Last trick", "settings", "speed"):
        assert words in app
    assert_in_sight(page, tid("help-close"))
    fits = page.evaluate(HELP_FITS_JS)
    assert fits["left"] >= 0 and fits["right"] <= w and fits["top"] >= 0 and fits["bottom"] <= h
    assert fits["page"] <= w and fits["inner"] == 0, fits  # nothing wider than the window
    shot(page, f"help_{w}x{h}.png")
    page.click(f"{tid('help-box')} summary")  # every rule of the game, then the end of the help
    page.locator(tid("help-app")).scroll_into_view_if_needed()
    assert page.evaluate(HELP_FITS_JS)["inner"] == 0
    shot(page, f"help_all_{w}x{h}.png")
    page.keyboard.press("Escape")
    page.wait_for_selector(tid("help-box"), state="hidden")
    # the settings screen: the rules chosen there (the standard rules: no house rule)
    page.click(tid("menu"))
    page.click(tid("menu-new-game"))
    page.wait_for_selector(f"{tid('play')}:visible")
    page.select_option(tid("rules-preset"), "standard")
    page.click(tid("menu"))
    page.click(tid("menu-help"))
    page.wait_for_selector(f"{tid('help-no-house')}:visible")
    assert page.inner_text(tid("help-rules-title")) == \
        "The rules chosen in the settings: Standard \u00b7 500"
    assert page.locator(f"{tid('help-house')} li").count() == 0
    page.click(tid("help-close"))
    page.wait_for_selector(tid("help-box"), state="hidden")


# ---------------------------------------------------------------------- statistics and the graph
GRAPH_JS = """sel => [...document.querySelectorAll(sel + ' circle.pt')].map((c) => ({
  team: Number(c.dataset.team), hand: Number(c.dataset.hand), total: Number(c.dataset.total),
  cy: Number(c.getAttribute('cy'))}))"""


def graph_points(page, sel: str) -> dict:
    return {(p["team"], p["hand"]): p for p in page.evaluate(GRAPH_JS, sel)}


def assert_graph_is_the_scores(page, sel: str, results: list[dict]) -> None:
    pts = graph_points(page, sel)
    assert {k: p["total"] for k, p in pts.items()} == {
        (t, i + 1): hr["teams"][t]["total"] for i, hr in enumerate(results) for t in (0, 1)}
    for i, hr in enumerate(results):  # higher scores higher up
        a, b = hr["teams"][0]["total"], hr["teams"][1]["total"]
        if a != b:
            assert (pts[(0, i + 1)]["cy"] < pts[(1, i + 1)]["cy"]) == (a > b)
    lines = page.eval_on_selector_all(f"{sel} polyline", "l => l.map(e => e.getAttribute('points')"
                                      ".split(' ').length)")
    assert lines == [len(results) + 1] * 2  # from the start, one point a hand


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_score_graph_and_the_new_statistics(server, page, size):
    """The score graph under the hand's score table and on the results screen: each point is a
    team's total after that hand, as the score tables of the game say; the results screen's line
    on the game and the statistics' sets, Nils, bags per hand and streaks are the server's."""
    w, h = size
    page.set_viewport_size({"width": w, "height": h})
    open_page(page, server)
    gid = start_game(page, "easy", "150")
    page.goto(page.url.split("#")[0])  # play by API to the second hand's score table
    page.wait_for_selector("body[data-ready=true]")
    v = page.evaluate(PLAY_JS, [gid, "v.hand_table && v.hand_results.length === 2", 2000])
    page.click(tid("continue"))
    page.wait_for_selector(f"{tid('hand-graph')}:visible")
    assert_graph_is_the_scores(page, "#hand-graph", v["hand_results"])
    legend = page.inner_text(f"{tid('hand-graph')} .graph-legend")
    for t in v["teams"]:
        assert f"{t['name']} {t['score']}" in legend
    assert_in_sight(page, tid("next"))
    shot(page, f"hand_graph_{w}x{h}.png")
    # to the end of the game: the results screen's graph holds every hand
    page.goto(page.url.split("#")[0])
    page.wait_for_selector("body[data-ready=true]")
    v = page.evaluate(PLAY_JS, [gid, "v.result && v.hand_table", 4000])
    page.click(tid("continue"))
    page.click(tid("next"))
    page.wait_for_selector(f"{tid('result-graph')}:visible")
    final = view(page, gid)
    assert_graph_is_the_scores(page, "#result-graph", final["hand_results"])
    last = len(final["hand_results"])
    assert [graph_points(page, "#result-graph")[(t, last)]["total"] for t in (0, 1)] == [
        t["score"] for t in final["teams"]]
    g, st = final["result"]["game"], final["result"]["stats"]
    nils = (f"your Nil bids {g['nil_made']} made, {g['nil_failed']} failed" if g["nil_bids"]
            else "no Nil bid of yours")
    assert page.inner_text(tid("result-game")) == (
        f"This game, your team: {g['sets']} set{'' if g['sets'] == 1 else 's'} in "
        f"{g['contracts']} contract{'' if g['contracts'] == 1 else 's'}; {nils}; "
        f"{g['bags_per_hand']:.1f} bags per hand.")
    row = page.locator(f"{tid('stats')} .stats-more tr[data-difficulty=easy]"
                       f"[data-rules='{final['rules']['spec']}']")
    assert row.locator(".sets").inner_text() == str(st["sets"])
    assert row.locator(".nils").inner_text() == f"{st['nil_made']} / {st['nil_failed']}"
    assert row.locator(".bags-per-hand").inner_text() == f"{st['bags_per_hand']:.1f}"
    streak = st["streak"]
    assert row.locator(".streak").inner_text() == (f"{streak} won" if streak > 0
                                                   else f"{-streak} lost")
    assert page.evaluate("document.documentElement.scrollWidth") <= w
    shot(page, f"results_{w}x{h}.png")
