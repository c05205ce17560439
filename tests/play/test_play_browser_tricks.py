"""The browser game: the last trick and the tricks of this hand (a dialog over the table, from
the game's state, so also after a reload), and the hint's full table one click away behind
Details. Driving the real page in headless Chromium against the real app under uvicorn, with the
fixtures of ``test_play_browser.py``.

``SPADES_SCREENS=folder`` keeps the screenshots taken on the way (looked at by hand).
"""

from __future__ import annotations

import os

import pytest

from .test_play_browser import (  # noqa: F401 - fixtures are used by name
    YOUR_TURN, click_first_legal, open_page, page, rects, served, server, start_game, tid,
)

pytest.importorskip("fastapi")
pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.slow

SIZES = [(1280, 860), (390, 844)]
SHOWN_JS = """els => els.map(e => [Number(e.dataset.seat), e.querySelector('.card').dataset.card,
                                   e.querySelector('.who').innerText])"""


def get_view(page, gid: str) -> dict:
    return page.evaluate("async (id) => (await fetch(`/api/games/${id}`)).json()", gid)


def shot(page, name: str) -> None:
    folder = os.environ.get("SPADES_SCREENS")
    if folder:
        page.screenshot(path=os.path.join(folder, name))


def overlaps(rs: list[dict]) -> list[tuple]:
    return [(i, j) for i, a in enumerate(rs) for j, b in enumerate(rs) if i < j
            and a["left"] < b["right"] and b["left"] < a["right"]
            and a["top"] < b["bottom"] and b["top"] < a["bottom"]]


def check_last_trick(page, first: dict, names: list[str], size) -> None:
    """The dialog is open and shows ``first`` (the API's trick 1): its four cards in play order,
    each with who played it, the winner marked and named, and one row of the hand's table."""
    page.wait_for_selector(f"{tid('tricks-box')}:visible")
    shown = page.eval_on_selector_all(f"{tid('last-trick-cards')} .lt-play", SHOWN_JS)
    assert [(s, c) for s, c, _ in shown] == [(x["seat"], x["card"]) for x in first["cards"]]
    for s, _, who in shown:
        assert who.startswith(names[s]), (who, names[s])
    assert "(led)" in shown[0][2] and all("(led)" not in w for _, _, w in shown[1:])
    won = page.eval_on_selector_all(f"{tid('last-trick-cards')} .lt-play.won",
                                    "els => els.map(e => Number(e.dataset.seat))")
    assert won == [first["winner"]]
    assert page.inner_text(tid("last-trick-winner")) == f"{names[first['winner']]} won it."
    rows = page.eval_on_selector_all(f"{tid('tricks-table')} tr[data-trick]", """rows => rows.map(r =>
        [Number(r.dataset.trick), [...r.querySelectorAll('td[data-card]')].map(td =>
        [Number(td.dataset.seat), td.dataset.card, td.classList.contains('won')]),
        r.querySelector('.winner-name').innerText])""")
    assert len(rows) == 1 and rows[0][0] == 1
    cells = rows[0][1]
    assert sorted((s, c) for s, c, _ in cells) == sorted((x["seat"], x["card"]) for x in first["cards"])
    assert [s for s, _, w in cells if w] == [first["winner"]]
    assert rows[0][2] == names[first["winner"]]
    # inside the window, the four cards side by side, none over another
    box = page.locator(".tricks-panel").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= size[0] + 0.5
    assert box["y"] >= 0 and box["y"] + box["height"] <= size[1] + 0.5
    cards = rects(page, f"{tid('last-trick-cards')} .lt-play")
    assert len(cards) == 4 and overlaps(cards) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= size[0]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_last_trick_shows_the_first_trick_also_after_a_reload(server, page, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_page(page, server)
    gid = start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    assert page.is_hidden(tid("last-trick"))  # no trick played yet
    page.click(tid("bid-submit"))
    mine = None  # the card the player played in trick 1
    for _ in range(3):
        page.wait_for_function(YOUR_TURN + " && document.getElementById('bidpanel').hidden",
                               timeout=30000)
        v = get_view(page, gid)
        if v["hand_tricks"]:
            break
        legal = page.locator(f"{tid('hand')} [data-legal=true]:not(.idle)")
        mine = legal.first.get_attribute("data-card")
        assert click_first_legal(page)
    # in the second trick: the API's first trick, against its own record of the trick completed
    assert v["phase"] == "play" and v["trick_number"] == 1 and len(v["hand_tricks"]) == 1
    first = v["hand_tricks"][0]
    assert first["number"] == 1 and len(first["cards"]) == 4
    assert first["cards"] == v["last_trick"]["cards"] and first["winner"] == v["last_trick"]["winner"]
    assert (2, mine) in [(x["seat"], x["card"]) for x in first["cards"]]  # the player is seat 2
    names = [s["name"] for s in v["seats"]]
    # the button on the table opens it
    page.wait_for_selector(f"{tid('last-trick')}:visible")
    btn = page.locator(tid("last-trick")).bounding_box()
    hint = page.locator(tid("status")).bounding_box()
    assert btn["x"] >= hint["x"] + hint["width"] - 0.5  # beside the status line, not over it
    page.click(tid("last-trick"))
    check_last_trick(page, first, names, size)
    shot(page, f"last-trick-{size[0]}x{size[1]}.png")
    page.click(tid("tricks-close"))
    page.wait_for_selector(tid("tricks-box"), state="hidden")
    # a reload: the same trick, from the server
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(f"{tid('score')}:visible")
    page.wait_for_selector(f"{tid('last-trick')}:visible")
    page.click(tid("last-trick"))
    check_last_trick(page, first, names, size)
    page.keyboard.press("Escape")
    page.wait_for_selector(tid("tricks-box"), state="hidden")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_hint_table_is_behind_details(server, page, size):
    """The one-line hint shows alone; the full table (every move's probability and value) opens
    with Details and closes again, and the choice is kept for the next hint."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_page(page, server)
    start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    page.click(tid("hint"))
    page.wait_for_selector(f"{tid('hint-line')}:visible", timeout=30000)
    page.wait_for_selector(f"{tid('analysis')} tr[data-action]", state="attached")
    more = page.locator(tid("analysis-more"))  # the bids the agent gives 0.0%, folded
    folded = int(more.text_content().split()[0]) if more.count() else 0
    assert page.locator(f"{tid('analysis')} tr[data-action]").count() + folded == 14  # Nil, 1..13
    assert page.is_hidden(tid("hint-table")) and page.is_hidden(tid("analysis"))
    assert page.inner_text(tid("hint-details")) == "Details"
    assert page.get_attribute(tid("hint-details"), "aria-expanded") == "false"
    line = page.locator(tid("hint-line")).bounding_box()
    box = page.locator("#analysis-box").bounding_box()
    assert box["height"] < line["height"] + 110  # the line and the toggle, no table
    shot(page, f"hint-collapsed-{size[0]}x{size[1]}.png")
    page.click(tid("hint-details"))
    page.wait_for_selector(f"{tid('analysis')} tr[data-action]")
    assert page.is_visible(tid("hint-line")) and page.is_visible(tid("analysis"))
    assert page.inner_text(tid("hint-details")) == "Hide details"
    assert page.get_attribute(tid("hint-details"), "aria-expanded") == "true"
    assert page.locator(f"{tid('analysis')} tr[data-action]").first.is_visible()
    shot(page, f"hint-details-{size[0]}x{size[1]}.png")
    # kept: the next hint opens with its table shown, until Details is closed again
    page.click("#analysis-close")
    page.click(tid("hint"))
    page.wait_for_selector(f"{tid('analysis')} tr[data-action]", timeout=30000)
    page.click(tid("hint-details"))
    page.wait_for_selector(tid("analysis"), state="hidden")
    assert page.is_visible(tid("hint-line"))
