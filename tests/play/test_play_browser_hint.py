"""The browser game: the hint a player understands (docs/play.md, What the agent thinks). Its one
line names the move, why, and the chance to make the contract (and the Nil) the API counts over
the search's deals; the bid table folds the bids the agent gives 0.0% under one "other bids" row,
all of them one click away. Driving the real page in headless Chromium against the real app under
uvicorn (the shipped checkpoint for the agent), with the fixtures of ``test_play_browser.py``.

``SPADES_SHOTS=folder`` keeps the screenshots (``hint_bid_*``, ``hint_play_*``).
"""

from __future__ import annotations


import pytest

from .test_play_browser import (  # noqa: F401 - fixtures are used by name
    YOUR_TURN, click_first_legal, open_hint_details, open_page, page, served, server, shot,
    start_game, tid, until_a_play_choice,
)

pytest.importorskip("fastapi")
pytest.importorskip("playwright.sync_api")

from spades_env.play.analysis import default_checkpoint, pct  # noqa: E402

from .test_play_round4 import agent_words, play_line_start  # noqa: E402

pytestmark = pytest.mark.slow

SIZES = [(1280, 860), (390, 844)]
HINT_JS = "async (id) => (await (await fetch(`/api/games/${id}/hint`)).json()).analysis"
VIEW_JS = "async (id) => (await fetch(`/api/games/${id}`)).json()"
ROWS_JS = "els => els.map(e => [Number(e.dataset.action), e.querySelector('.prob').innerText])"



def inside(page, size) -> None:
    """The hint's panel and its line within the window's width, nothing wider than it."""
    assert page.evaluate("document.documentElement.scrollWidth") <= size[0]
    for sel in ("#analysis-box", tid("hint-line")):
        box = page.locator(sel).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= size[0] + 0.5, (sel, box)


def ask_hint(page, gid: str) -> dict:
    page.click(tid("hint"))
    page.wait_for_selector(f"{tid('hint-line')}:visible", timeout=30000)
    return page.evaluate(HINT_JS, gid)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_hint_line_shows_the_chance_and_the_bid_table_folds(server, page, size):
    if default_checkpoint() is None:
        pytest.skip("no shipped checkpoint: the bid table has no probabilities to fold")
    w, h = size
    page.set_viewport_size({"width": w, "height": h})
    open_page(page, server)
    gid = start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")

    # bidding: the search's bid, its chance, preset in the bid box
    a = ask_hint(page, gid)
    s = a["suggestion"]
    line = page.inner_text(tid("hint-line"))
    assert line == s["text"] and s["by"] == "search"
    assert s["make"] is not None and f"{pct(s['make'])} to make your team's contract" in line
    assert f"({s['deals']} deals played out)" in line
    bid = s["action"] - 52
    if bid:
        assert line.startswith(f"Bid {bid}: the most points expected by the search (")
        assert page.inner_text(tid("bid-value")) == str(bid)
    # the table: the 0.0% bids folded under one row, but the hint's move and the agent's choice
    open_hint_details(page)
    keep = {s["action"], a["best_prob"]}
    folded = [r["action"] for r in a["rows"] if r["prob"] < 0.0005 and r["action"] not in keep]
    assert folded, "the agent gave every bid at least 0.1%: nothing to fold"
    shown = page.eval_on_selector_all(f"{tid('analysis')} tr[data-action]", ROWS_JS)
    assert [x for x, _ in shown] == [r["action"] for r in a["rows"] if r["action"] not in folded]
    assert all(p != "0.0%" for x, p in shown if x not in keep), shown
    more = page.locator(tid("analysis-more"))
    n = len(folded)
    assert more.inner_text() == f"{n} other bid{'s' if n > 1 else ''} (0.0%)"
    assert more.get_attribute("aria-expanded") == "false"
    heads = page.eval_on_selector_all(f"{tid('analysis')} th", "els => els.map(e => e.innerText)")
    assert "Make" in heads
    inside(page, size)
    more.scroll_into_view_if_needed()  # (on a phone the panel scrolls inside)
    shot(page, f"hint_bid_{w}x{h}.png")
    more.click()  # the full list, one click away
    shown = page.eval_on_selector_all(f"{tid('analysis')} tr[data-action]", ROWS_JS)
    assert [x for x, _ in shown] == [r["action"] for r in a["rows"]] and len(shown) == 14
    assert page.inner_text(tid("analysis-more")) == "Fewer bids"
    page.click(tid("analysis-more"))
    assert page.locator(f"{tid('analysis')} tr[data-action]").count() == 14 - n

    # play: the search's card, raised in the hand, with the chance to make the contract
    until_a_play_choice(page, lambda: page.evaluate(VIEW_JS, gid), more_than=2)
    a = ask_hint(page, gid)
    s = a["suggestion"]
    line = page.inner_text(tid("hint-line"))
    assert line == s["text"] and s["by"] in ("search", "equivalent")
    if s["by"] == "search":
        assert line.startswith(play_line_start(a)), line  # a near-tie names the cards
        assert f"{pct(s['make'])} to make your team's contract of {s['contract']}" in line
        assert agent_words(a) in line
    raised = page.eval_on_selector_all(f"{tid('hand')} .card.suggested",
                                       "els => els.map(e => Number(e.dataset.action))")
    assert raised == [s["action"]]
    page.wait_for_selector(f"{tid('analysis')} tr[data-action]")  # Details stays open
    assert page.locator(tid("analysis-more")).count() == 0  # nothing folded in play
    makes = page.eval_on_selector_all(f"{tid('analysis')} tr[data-action] td.make",
                                      "els => els.map(e => e.innerText)")
    assert makes == [pct(r["make"]) if r["make"] is not None else "\u2013" for r in a["rows"]]
    inside(page, size)
    page.locator(f"{tid('analysis')} tr[data-action]").last.scroll_into_view_if_needed()
    shot(page, f"hint_play_{w}x{h}.png")
