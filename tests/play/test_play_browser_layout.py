"""The browser game's layout at 1280x860, 1024x700 and 390x844 (a phone): the *Last trick* button
in sight and clickable, also while the score table of a finished hand covers the table, and the
status line on one line on a phone. Driving the real page in headless Chromium against the real
app under uvicorn, with the fixtures of ``test_play_browser.py``. Each failed before its fix.

``SPADES_SCREENS=folder`` keeps the screenshots taken on the way (``table_*`` with the hint's
Details open, ``last_trick_*``, ``hand_table_*``: the views of ``docs/play/screens/``).
"""

from __future__ import annotations

import os

import pytest

from .test_play_browser import (  # noqa: F401 - fixtures are used by name
    YOUR_TURN, click_first_legal, fast_forward, open_page, page, served, server, start_game, tid,
)

pytest.importorskip("fastapi")
pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.slow

SIZES = [(1280, 860), (1024, 700), (390, 844)]
PLAYING = YOUR_TURN + " && document.getElementById('bidpanel').hidden"

# where the element is, and which element a click at its centre reaches
IN_SIGHT_JS = """sel => {
  const el = document.querySelector(sel), r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width,
          height: r.height, hit: hit ? (hit.id || hit.className || hit.tagName) : null,
          itself: !!hit && (hit === el || el.contains(hit)), w: innerWidth, h: innerHeight};
}"""

# the status line's text height against its line height
STATUS_JS = """() => {
  const s = document.getElementById('status'), cs = getComputedStyle(s);
  const inner = s.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
  return {inner, line: parseFloat(cs.lineHeight), text: s.innerText, title: s.title,
          height: s.getBoundingClientRect().height};
}"""


def shot(page, name: str) -> None:
    folder = os.environ.get("SPADES_SCREENS")
    if folder:
        page.wait_for_timeout(200)
        page.screenshot(path=os.path.join(folder, name))


def assert_in_sight(page, selector: str) -> None:
    """Inside the viewport, and the element itself is what a click at its centre reaches."""
    b = page.evaluate(IN_SIGHT_JS, selector)
    assert b["width"] > 0 and b["height"] > 0, (selector, b)
    assert b["left"] >= 0 and b["top"] >= 0, (selector, b)
    assert b["right"] <= b["w"] and b["bottom"] <= b["h"], (selector, b)
    assert b["itself"], f"{selector} is covered by {b['hit']}: {b}"


def assert_one_line(page) -> dict:
    s = page.evaluate(STATUS_JS)
    assert s["inner"] < 1.5 * s["line"], f"the status line wraps: {s}"
    return s


def play_to_second_trick(page) -> None:
    """Bid, then play until the player's turn with a trick behind (Last trick shown) and a card
    or more on the table."""
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    page.click(tid("bid-submit"))
    for _ in range(6):
        page.wait_for_function(PLAYING, timeout=30000)
        if page.is_visible(tid("last-trick")) and page.locator(f"{tid('trick')} .card").count():
            return
        assert click_first_legal(page)
    page.wait_for_selector(f"{tid('last-trick')}:visible")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_last_trick_button_is_in_sight_also_over_the_score_table(server, page, size):
    """The button was behind the score table of a finished hand: under its dialog at 1024x700
    and 390x844, under its dimmed backdrop at every size (a click reached the backdrop). Now it
    is in sight and clickable while playing, with the hint's Details open, and in the score
    table's dialog, and the last trick opens over that dialog."""
    w, h = size
    page.set_viewport_size({"width": w, "height": h})
    open_page(page, server)
    start_game(page)
    play_to_second_trick(page)
    assert_in_sight(page, tid("last-trick"))
    # the hint beside the table (below it on a phone), its table open
    page.click(tid("hint"))
    page.wait_for_selector(f"{tid('hint-line')}:visible", timeout=30000)
    page.click(tid("hint-details"))
    page.wait_for_selector(f"{tid('analysis')} tr[data-action]")
    assert_in_sight(page, tid("last-trick"))
    shot(page, f"table_{w}x{h}.png")
    page.click("#analysis-close")
    page.click(tid("last-trick"))
    page.wait_for_selector(f"{tid('tricks-box')}:visible")
    assert_in_sight(page, tid("tricks-close"))
    shot(page, f"last_trick_{w}x{h}.png")
    page.click(tid("tricks-close"))
    page.wait_for_selector(tid("tricks-box"), state="hidden")
    # the hand is over: its score table covers the table, the button is still there to click
    fast_forward(page, "v.hand_table")
    page.wait_for_selector(f"{tid('hand-table')}:visible")
    page.wait_for_selector(f"{tid('last-trick')}:visible")
    assert_in_sight(page, tid("last-trick"))
    assert_in_sight(page, tid("next"))
    shot(page, f"hand_table_{w}x{h}.png")
    page.click(tid("last-trick"))
    page.wait_for_selector(f"{tid('tricks-box')}:visible")
    assert "trick 13 of hand 1" in page.inner_text("#tricks-title")
    assert_in_sight(page, tid("tricks-close"))  # over the score table, not under it
    assert page.locator(f"{tid('tricks-table')} tr[data-trick]").count() == 13
    page.click(tid("tricks-close"))
    page.wait_for_selector(tid("tricks-box"), state="hidden")
    assert page.is_visible(tid("hand-table"))
    # Next: the new hand has no trick yet; the button is back beside the status line for later
    page.click(tid("next"))
    page.wait_for_selector("#hand-table-box", state="hidden")
    assert page.is_hidden(tid("last-trick"))
    assert page.evaluate("document.querySelector('[data-testid=last-trick]').parentElement"
                         ".classList.contains('status-row')")


def test_status_line_is_one_line_on_a_phone(server, page):
    """At 390x844 the status line wrapped onto two lines beside Last trick and Hint ("Your turn:
    lead a card", "Your turn: play a card (clubs led)") and pushed the table down. Now it is one
    line in every state (a long one cut short, its title whole), the table right below it."""
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, server)
    start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    assert_one_line(page)
    page.click(tid("bid-submit"))
    seen = set()
    for _ in range(8):
        page.wait_for_function(PLAYING, timeout=30000)
        s = assert_one_line(page)
        assert s["title"].startswith(s["text"].split(" (")[0])
        seen.add(s["text"].split(" (")[0])
        if page.is_visible(tid("last-trick")):
            assert page.is_visible(tid("hint"))  # the status line shares its row with both
            row = page.locator(".status-row").bounding_box()
            felt = page.locator("#felt").bounding_box()
            assert felt["y"] - (row["y"] + row["height"]) < 12  # the table right below it
            if len(seen) > 1:
                break
        assert click_first_legal(page)
    assert page.is_visible(tid("last-trick"))
    # the hand's end: the longest line of a game in play
    fast_forward(page, "v.hand_table")
    page.wait_for_selector(f"{tid('hand-table')}:visible")
    s = assert_one_line(page)
    assert s["text"] == "Hand 1 is over"  # its short words on a phone, the whole line its title
    assert s["title"] == "Hand 1 is over: see the score table, then Next"
