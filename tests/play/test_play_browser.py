"""A real browser plays the browser game: Playwright driving headless Chromium. One test per fault
of the page found by trying it as a new user would (quick Next, dropped clicks, covered cards,
small screens, uploads, saved games, a server that goes away, score table details, host names)
and per feature (names, glowing and shaking cards, drag to play and to reorder, the menu, sound,
the hint, the replay analysis), and a whole game to 250 against Easy.

The browser is Debian's ``chromium`` package (``.ci/run`` installs it when missing; never
``playwright install``). Without it the test is skipped on a developer machine, and fails under CI
(``CI`` or ``SPADES_REQUIRE_BROWSER`` set), so CI cannot go green without running it.
The server is the real app under uvicorn on a free localhost port, with fast bots.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

from spades_env import PRESETS, Rules, SpadesGame  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.play.analysis import default_checkpoint  # noqa: E402
from spades_env.play.app import create_app  # noqa: E402
from spades_env.play.session import LINEUPS  # noqa: E402
from spades_env.play.replay import game_record, write_game_record  # noqa: E402
from spades_env.play.store import StatsDelta, Store  # noqa: E402

pytestmark = pytest.mark.slow  # every test here trains, serves or drives a browser (make test-fast)

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
FAST = {k: {"partner": "medium", "opponents": "easy"} for k in LINEUPS}  # fast bots


def chromium_path() -> str | None:
    for p in (os.environ.get("SPADES_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def _must_run() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("SPADES_REQUIRE_BROWSER"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """An app under uvicorn in a thread on ``port`` (default: a free one)."""

    def __init__(self, app, port: int | None = None):
        self.app = app
        self.port = port or _free_port()
        self.srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                 log_level="warning"))
        self.thread = threading.Thread(target=self.srv.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while not self.srv.started:
            assert time.time() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.srv.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app (fast bots, the shipped checkpoint for hints) under uvicorn in a thread."""
    db = tmp_path_factory.mktemp("browser") / "play.sqlite3"
    s = Served(create_app(str(db), lineups=FAST, seed=3))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def server(served):
    """The base URL of ``served``."""
    return served.url


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Record files of a short game of medium bots: ``one.json``, ``two.jsonl`` (two games),
    ``bad.json``; and the game."""
    folder = tmp_path_factory.mktemp("records")
    games = []
    for seed in (4, 5):
        g = SpadesGame(Rules(target_score=100), seed=seed)
        bots = [make_bot("medium", seed=s) for s in range(4)]
        while not g.is_over:
            g.apply(bots[g.current_player].act(g.view(g.current_player)))
        games.append(g)
    write_game_record(str(folder / "one.json"), games[0], ["Ann", "Ben", "Cat", "Dan"])
    (folder / "two.jsonl").write_text("".join(
        json.dumps(game_record(g, ["Ann", "Ben", "Cat", "Dan"])) + "\n" for g in games))
    (folder / "bad.json").write_text('{"format": "chess"}')
    return folder, games[0]


@pytest.fixture()
def page(tmp_path):
    exe = chromium_path()
    if exe is None:
        msg = "Debian's chromium is not installed (apt-get install chromium)"
        if _must_run():
            pytest.fail(msg + "; CI must run the browser test")
        pytest.skip(msg)
    with sync_api.sync_playwright() as p:
        # a fresh profile folder per test (Playwright passes it as --user-data-dir)
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=exe, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1100, "height": 860})
        try:
            pg = ctx.new_page()
            pg.set_default_timeout(20000)
            errors = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            yield pg
            assert errors == [], errors
        finally:
            ctx.close()


def tid(name: str) -> str:
    return f"[data-testid={name}]"


def test_play_a_hand_then_reload_and_continue(server, page):
    page.goto(server + "/?delay=0&pause=0")
    page.wait_for_selector("body[data-ready=true]")
    opts = page.eval_on_selector_all(f"{tid('difficulty')} option", "els => els.map(e => e.value)")
    assert opts == list(LINEUPS) and opts[:4] == ["easy", "medium", "hard", "insane"]
    opts = page.eval_on_selector_all(f"{tid('target')} option", "els => els.map(e => e.value)")
    assert opts == ["500", "400", "300", "250", "200", "150", "100"]
    presets = page.eval_on_selector_all(f"{tid('rules-preset')} option",
                                        "els => els.map(e => e.value)")
    assert presets == list(PRESETS)  # served by the API, not written in the page
    assert page.is_hidden(tid("continue"))
    page.select_option(tid("difficulty"), "easy")
    page.select_option(tid("target"), "250")
    page.click(tid("play"))

    # bidding: the panel appears on the player's turn; minus / plus move the count
    page.wait_for_selector(f"{tid('bid-submit')}:visible", timeout=20000)
    start = int(page.inner_text(tid("bid-value")))
    page.click(tid("bid-plus"))
    page.click(tid("bid-plus"))
    page.click(tid("bid-minus"))
    assert int(page.inner_text(tid("bid-value"))) == start + 1
    assert page.is_visible(tid("bid-nil"))
    page.click(tid("bid-submit"))

    # play: click legal cards until the hand table appears; one illegal click on the way
    refused = None
    deadline = time.time() + 90
    while not page.is_visible(tid("hand-table")):
        assert time.time() < deadline, "the hand did not end"
        status = page.inner_text(tid("status"))
        if status.startswith("Your turn: play") and refused is None:
            illegal = page.locator(f"{tid('hand')} [data-legal=false]")
            if illegal.count():
                illegal.first.click()
                page.wait_for_function(
                    "document.querySelector('[data-testid=status]').classList.contains('error')")
                refused = page.inner_text(tid("status"))
                continue
        legal = page.locator(f"{tid('hand')} [data-legal=true]:not(.idle)")  # clickable now
        if legal.count():
            n = page.locator(f"{tid('hand')} .card").count()
            legal.first.click()
            page.wait_for_function(
                f"document.querySelectorAll('[data-testid=hand] .card').length < {n} || "
                "!document.getElementById('hand-table-box').hidden")
        else:
            page.wait_for_timeout(30)
    assert refused is not None and refused.startswith("must follow suit: you hold a ")

    table = page.inner_text(tid("hand-table"))
    for row in ("Bids", "Tricks", "Contract points", "Bags", "Nil bonus / penalty",
                "Bag penalty", "Points this hand", "Game total"):
        assert row in table
    page.click(tid("next"))
    page.wait_for_selector("#hand-table-box", state="hidden")
    your_turn = "document.querySelector('[data-testid=status]').innerText.startsWith('Your turn')"
    page.wait_for_function(your_turn)  # the bots have bid up to the player
    score = page.inner_text(tid("score"))
    assert "Hand 2" in score

    # reload: the game is saved, and the page returns to its table with the same scores
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(f"{tid('score')}:visible")
    page.wait_for_function(your_turn)
    assert page.inner_text(tid("score")) == score
    assert page.locator(f"{tid('hand')} .card").count() == 13


# ---------------------------------------------------------------------- helpers
YOUR_TURN = "document.querySelector('[data-testid=status]').innerText.startsWith('Your turn')"
PLAY_JS = """async ([id, stop, max]) => {
  // drive game id through the API (the page itself idle on another screen) until stop(v)
  const until = new Function('v', 'return ' + stop);
  const post = async (p, b) => (await fetch(p, {method: 'POST',
    headers: {'Content-Type': 'application/json'}, body: JSON.stringify(b)})).json();
  let v = await (await fetch(`/api/games/${id}`)).json();
  for (let i = 0; i < max; i++) {
    if (until(v)) return v;
    if (v.hand_table) v = await post(`/api/games/${id}/next`, {});
    else if (v.your_turn) {
      let a;
      if (v.bidding) a = v.bidding.min === null ? 67 : 52 + Math.max(v.bidding.min, Math.min(3, v.bidding.max));
      else a = v.hand.find((h) => h.legal).action;
      v = await post(`/api/games/${id}/action`, {action: a, seq: v.seq});
    } else v = await post(`/api/games/${id}/advance`, {seq: v.seq});
  }
  throw new Error('never reached: ' + stop);
}"""
VIEW_JS = "async () => (await fetch(`/api/games/${location.hash.split('=')[1]}`)).json()"


def open_page(page, base: str, query: str = "delay=0&pause=0") -> None:
    page.goto(f"{base}/?{query}")
    page.wait_for_selector("body[data-ready=true]")


def start_game(page, difficulty: str = "easy", target: str | None = "250",
               preset: str | None = None) -> str:
    """Settings -> Play (confirming when unfinished games exist); the new game's id. ``target``
    None keeps the settings' target; ``preset`` picks a rules preset first."""
    page.select_option(tid("difficulty"), difficulty)
    if preset is not None:
        page.select_option(tid("rules-preset"), preset)
    if target is not None:
        page.select_option(tid("target"), target)
    page.click(tid("play"))
    if page.is_visible(tid("confirm-new")):
        page.click(tid("confirm-new"))
    page.wait_for_selector(f"{tid('score')}:visible")
    return page.evaluate("location.hash.split('=')[1]")


def fast_forward(page, stop: str, max_moves: int = 2000) -> dict:
    """Leave the table for the settings screen, play by API until ``stop`` (a JS expression of
    the view ``v``), then Continue the game on the page. Returns the view reached."""
    gid = page.evaluate("location.hash.split('=')[1]")
    page.goto(page.url.split("#")[0])
    page.wait_for_selector("body[data-ready=true]")
    v = page.evaluate(PLAY_JS, [gid, stop, max_moves])
    page.click(tid("continue"))
    page.wait_for_selector(f"{tid('score')}:visible")
    return v


def view(page) -> dict:
    return page.evaluate(VIEW_JS)


def hand_cards(page) -> list[str]:
    return page.eval_on_selector_all(f"{tid('hand')} .card", "els => els.map(e => e.dataset.card)")


def rects(page, selector: str) -> list[dict]:
    return page.eval_on_selector_all(selector, """els => els.map(e => {
        const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, card: e.dataset.card};
    })""")


def overlapping(rs: list[dict]) -> list[tuple]:
    return [(a["card"], b["card"]) for i, a in enumerate(rs) for b in rs[i + 1:]
            if a["left"] < b["right"] and b["left"] < a["right"]
            and a["top"] < b["bottom"] and b["top"] < a["bottom"]]


def open_hint_details(page) -> None:
    """Open the hint's full table: behind Details once its one-line hint is shown."""
    page.wait_for_selector(f"{tid('hint-line')}:visible", timeout=30000)
    if page.get_attribute(tid("hint-details"), "aria-expanded") != "true":
        page.click(tid("hint-details"))
    page.wait_for_selector(f"{tid('analysis')} tr[data-action]")


def click_first_legal(page) -> bool:
    legal = page.locator(f"{tid('hand')} [data-legal=true]:not(.idle)")
    if not legal.count():
        return False
    n = page.locator(f"{tid('hand')} .card").count()
    legal.first.click()
    page.wait_for_function(
        f"document.querySelectorAll('[data-testid=hand] .card').length < {n} || "
        "!document.getElementById('hand-table-box').hidden")
    return True


def until_a_play_choice(page, view, more_than: int, seconds: float = 60) -> dict:
    """From the bid box: bid and play the first legal card until it is the player's turn in play
    with more than ``more_than`` legal cards; returns that view (``view()``: the game's JSON)."""
    page.click(tid("bid-submit"))
    deadline = time.time() + seconds
    while True:
        page.wait_for_function(YOUR_TURN, timeout=30000)
        v = view()
        if v["phase"] == "play" and sum(h["legal"] for h in v["hand"]) > more_than:
            return v
        assert time.time() < deadline
        if page.is_visible(tid("bid-submit")):
            page.click(tid("bid-submit"))
        else:
            click_first_legal(page)


def shot(page, name: str) -> None:
    """A screenshot into ``$SPADES_SHOTS`` (nothing without it)."""
    folder = os.environ.get("SPADES_SHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        page.wait_for_timeout(300)
        page.screenshot(path=os.path.join(folder, name))


def open_record(page, server, path) -> None:
    """The replay view of the record file ``path``, uploaded."""
    open_page(page, server)
    page.click(tid("watch"))
    page.set_input_files(tid("watch-file"), str(path))


# ---------------------------------------------------------------------- the faults
def test_quick_next_after_the_score_table_does_not_freeze(server, page):
    open_page(page, server, "delay=0&pause=1500")
    start_game(page)
    fast_forward(page, "v.your_turn && v.phase === 'play' && v.hand.length === 1")
    page.wait_for_function(YOUR_TURN)
    page.click(f"{tid('hand')} .card")
    page.wait_for_selector(f"{tid('next')}:visible")
    page.click(tid("next"))  # well within the 1.5 s the last trick stays shown
    page.wait_for_function(YOUR_TURN, timeout=8000)  # the bots bid up to the player
    assert "Hand 2" in page.inner_text(tid("score"))


def test_click_right_after_a_trick_is_not_dropped(server, page):
    open_page(page, server, "delay=0&pause=2500")
    start_game(page)
    fast_forward(page, "v.your_turn && v.phase === 'play'")
    deadline = time.time() + 120
    while True:
        assert time.time() < deadline, "the player never won a trick"
        page.wait_for_function(YOUR_TURN + " || !document.getElementById('hand-table-box').hidden")
        if page.is_visible(tid("next")):
            page.click(tid("next"))
            continue
        on_table = page.locator(f"{tid('trick')} .card").count()
        if on_table == 4 and "lead" in page.inner_text(tid("status")):
            # the player won the last trick, still shown: a click now must play at once
            # (before, such a click was dropped: nothing was ever sent)
            n = len(hand_cards(page))
            card = page.locator(f"{tid('hand')} [data-legal=true]").first.get_attribute("data-card")
            page.locator(f"{tid('hand')} [data-legal=true]").first.click()
            page.wait_for_function(
                f"document.querySelectorAll('[data-testid=hand] .card').length === {n - 1}",
                timeout=5000)
            assert card not in [h["card"] for h in view(page)["hand"]]
            return
        if page.is_visible(f"{tid('bid-submit')}"):
            page.click(tid("bid-submit"))
            continue
        click_first_legal(page)


def test_trick_cards_never_cover_each_other(server, page, records):
    open_page(page, server, "delay=0&pause=3000")
    start_game(page)
    fast_forward(page, "v.your_turn && v.phase === 'play'")
    deadline = time.time() + 60
    while page.locator(f"{tid('trick')} .card").count() < 4:
        assert time.time() < deadline
        if page.evaluate(YOUR_TURN):
            click_first_legal(page)
        page.wait_for_timeout(30)
    cards = rects(page, f"{tid('trick')} .card")
    assert len(cards) == 4 and overlapping(cards) == [], cards
    # the replay view's trick too
    folder, _ = records
    page.click(tid("watch"))
    page.set_input_files(tid("watch-file"), str(folder / "one.json"))
    page.wait_for_selector(f"{tid('watch-pos')}:visible")
    for _ in range(200):
        if page.locator("#w-trick .card").count() == 4:
            break
        page.click(tid("watch-next"))
    cards = rects(page, "#w-trick .card")
    assert len(cards) == 4 and overlapping(cards) == [], cards


FITS_JS = """() => {
  const w = innerWidth, h = innerHeight, bad = [];
  if (document.documentElement.scrollWidth > w) bad.push(`page ${document.documentElement.scrollWidth}px wide`);
  if (scrollY !== 0) bad.push('scrolled');
  for (const c of document.querySelectorAll('[data-testid=hand] .card')) {
    const r = c.getBoundingClientRect();
    if (r.left < 0 || r.right > w || r.top < 0 || r.bottom > h) bad.push(`card ${c.dataset.card} outside`);
  }
  for (const id of ['seat-top', 'seat-left', 'seat-right', 'seat-bottom', 'bidpanel']) {
    const el = document.getElementById(id);
    if (el.hidden) continue;
    const r = el.getBoundingClientRect();
    if (r.left < 0 || r.right > w || r.bottom > h) bad.push(`${id} cut off`);
  }
  return bad;
}"""


@pytest.mark.parametrize("size", [(1024, 700), (390, 844)])
def test_small_screens_show_the_whole_table_and_hand(server, page, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_page(page, server, "delay=0&pause=0")
    start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    assert len(hand_cards(page)) == 13
    assert page.evaluate(FITS_JS) == []
    page.click(tid("bid-submit"))
    page.wait_for_function(YOUR_TURN + " && !document.querySelector('#bidpanel:not([hidden])')")
    assert page.evaluate(FITS_JS) == []
    east = page.locator(tid("seat-east")).bounding_box()
    assert 0 <= east["x"] and east["x"] + east["width"] <= size[0]


def test_watch_upload_reads_jsonl_and_resets_the_title(server, page, records):
    folder, _ = records
    open_page(page, server)
    page.click(tid("watch"))
    accept = page.get_attribute(tid("watch-file"), "accept")
    assert ".jsonl" in accept.split(",") and ".json" in accept.split(",")
    page.set_input_files(tid("watch-file"), str(folder / "one.json"))
    page.wait_for_function("document.querySelector('[data-testid=watch-title]').innerText === 'one.json'")
    page.set_input_files(tid("watch-file"), str(folder / "bad.json"))
    page.wait_for_selector(f"{tid('watch-error')}:visible")
    # one line for the player, the reader's reason under Details
    assert page.inner_text(f"{tid('watch-error')} .summary") == "bad.json is not a Spades game record"
    assert page.text_content(f"{tid('watch-error')} .detail").startswith(
        "bad.json: not a spades_env game record")
    assert page.inner_text(tid("watch-title")) == ""  # not the previous replay's title
    assert page.is_hidden(tid("watch-pos"))
    page.set_input_files(tid("watch-file"), str(folder / "two.jsonl"))
    page.wait_for_function("document.querySelector('[data-testid=watch-title]').innerText === 'two.jsonl #0'")
    assert page.is_hidden(tid("watch-error"))
    opts = page.eval_on_selector_all(f"{tid('watch-game')} option", "els => els.map(e => e.textContent)")
    assert opts == ["two.jsonl #0", "two.jsonl #1"]
    page.select_option(tid("watch-game"), index=1)
    page.wait_for_function("document.querySelector('[data-testid=watch-title]').innerText === 'two.jsonl #1'")
    page.click(tid("watch-last"))
    page.wait_for_function(
        "/^move (\\d+) \\/ \\1$/.test(document.querySelector('[data-testid=watch-pos]').innerText)")
    pos = page.inner_text(tid("watch-pos"))
    a, b = re.match(r"move (\d+) / (\d+)", pos).groups()
    assert a == b and int(a) > 100


def _player(page) -> str:
    return next(c["value"] for c in page.context.cookies() if c["name"] == "spades_player")


def test_damaged_and_several_unfinished_games(served, page):
    open_page(page, served.url, "delay=200&pause=0")
    first = start_game(page)
    page.click(tid("menu"))
    page.click(tid("menu-new-game"))
    page.wait_for_selector(f"{tid('continue')}:visible")
    # Play asks before starting another game; Cancel starts none
    page.click(tid("play"))
    page.wait_for_selector(f"{tid('confirm-new')}:visible")
    assert "1 unfinished game" in page.inner_text("#confirm-text")
    page.click(tid("cancel-new"))
    assert page.is_hidden(tid("confirm-new")) and len(page.evaluate(
        "async () => (await (await fetch('/api/games')).json()).games")) == 1
    second = start_game(page, "medium", "500")
    assert second != first
    # any unfinished game can be continued: the older one is the second in the list
    page.click(tid("menu"))
    page.click(tid("menu-new-game"))
    page.wait_for_selector(f"{tid('continue-2')}:visible")
    page.click(tid("continue-2"))
    page.wait_for_selector(f"{tid('score')}:visible")
    assert page.evaluate("location.hash.split('=')[1]") == first
    assert "to 250" in page.inner_text(tid("score"))
    # the first game is damaged on disk, and the player has statistics
    page.click(tid("menu"))
    page.click(tid("menu-new-game"))
    store = served.app.state.store
    store._db.execute("UPDATE games SET state = 'garbage', hands_acked = 7 WHERE id = ?", (first,))
    store._tx(lambda db: Store._add_stats(db, _player(page), "easy", "short", 250,
                                          StatsDelta(games=3, wins=2, hands=20, points=600)))
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    rows = page.locator(f"{tid('saved-games')} li")
    assert rows.count() == 2
    damaged = page.locator(f"{tid('saved-games')} li.damaged")
    assert "is damaged and cannot be continued" in damaged.inner_text()
    assert page.inner_text(f"{tid('settings-stats')} tr[data-difficulty=easy] .games") == "3"
    damaged.locator("button", has_text="Discard").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=saved-games] li').length === 1")
    page.click(tid("continue"))
    page.wait_for_selector(f"{tid('score')}:visible")
    assert page.evaluate("location.hash.split('=')[1]") == second


def test_reconnects_when_the_server_returns(tmp_path, page):
    db = str(tmp_path / "play.sqlite3")
    first = Served(create_app(db, lineups=FAST, seed=9, analysis_checkpoint=None))
    port = first.port
    try:
        open_page(page, first.url, "delay=400&pause=0")
        start_game(page)
        page.wait_for_selector(f"{tid('bid-submit')}:visible")
        page.click(tid("bid-submit"))
        first.stop()
        page.wait_for_function("document.body.dataset.offline === 'true'", timeout=15000)
        assert "not answering" in page.inner_text(tid("status"))
        seq = None
        second = Served(create_app(db, lineups=FAST, analysis_checkpoint=None), port=port)
        try:
            page.wait_for_function("!document.body.dataset.offline", timeout=15000)
            seq = view(page)["seq"]
            page.wait_for_function(
                f"{YOUR_TURN} || document.querySelector('[data-testid=status]').innerText.includes('is ')")
            page.wait_for_function(f"async () => (await ({VIEW_JS})()).seq > {seq} || {YOUR_TURN}",
                                   timeout=15000)
            assert "not answering" not in page.inner_text(tid("status"))
        finally:
            second.stop()
    finally:
        first.stop()


def test_hand_table_lists_your_bid_first_and_hides_the_next_deal(server, page):
    open_page(page, server, "delay=0&pause=0")
    start_game(page)
    fast_forward(page, "v.your_turn && v.phase === 'play' && v.hand.length === 1")
    page.wait_for_function(YOUR_TURN)
    page.click(f"{tid('hand')} .card")
    page.wait_for_selector(f"{tid('hand-table')}:visible")
    v = view(page)
    hr = v["hand_table"]

    def txt(b, blind):
        return "Blind Nil" if blind else ("Nil" if b == 0 else str(b))
    cells = page.eval_on_selector_all(f"{tid('hand-table')} tr", "rows => rows.map(r => [...r.children].map(c => c.innerText))")
    assert cells[0][1:] == ["You & Max", "Zoe & Lily"]
    bids = next(r for r in cells if r[0] == "Bids")
    assert bids[1] == f"{txt(hr['bids'][2], hr['blind'][2])} + {txt(hr['bids'][0], hr['blind'][0])}"
    assert bids[2] == f"{txt(hr['bids'][1], hr['blind'][1])} + {txt(hr['bids'][3], hr['blind'][3])}"
    tricks = next(r for r in cells if r[0] == "Tricks")
    assert tricks[1] == f"{hr['tricks'][2]} + {hr['tricks'][0]}"
    # behind the table: still hand 1, no card of the next deal
    assert "Hand 1 " in page.inner_text(tid("score")) + " "
    assert hand_cards(page) == []
    assert page.locator("#seat-top .backs .card").count() == 0


def test_empty_watch_screen_and_card_symbols_in_the_replay(server, page, records):
    folder, game = records
    open_page(page, server)
    page.click(tid("watch"))
    page.wait_for_selector(f"{tid('watch-empty')}:visible")
    assert page.is_hidden("#watch-score") and page.is_hidden(tid("watch-event"))
    page.set_input_files(tid("watch-file"), str(folder / "one.json"))
    page.wait_for_selector(f"{tid('watch-event')}:visible")
    assert page.is_hidden(tid("watch-empty"))
    for _ in range(12):
        page.click(tid("watch-next"))
    text = page.inner_text(tid("watch-event"))
    assert re.fullmatch(r"(Ann|Ben|Cat|Dan) plays (10|[2-9JQKA])[\u2660\u2665\u2666\u2663]", text), text


def test_localhost_and_127_see_the_same_saved_games(tmp_path, page):
    app = create_app(str(tmp_path / "db.sqlite3"), lineups=FAST, seed=2,
                     canonical_host="localhost", analysis_checkpoint=None)
    s = Served(app)
    try:
        page.goto(f"http://127.0.0.1:{s.port}/?delay=0&pause=0")
        page.wait_for_selector("body[data-ready=true]")
        assert page.url.startswith(f"http://localhost:{s.port}/")
        start_game(page)
        page.goto(f"http://127.0.0.1:{s.port}/")
        page.wait_for_selector("body[data-ready=true]")
        page.wait_for_selector(f"{tid('continue')}:visible")
        page.goto(f"http://localhost:{s.port}/")
        page.wait_for_selector("body[data-ready=true]")
        page.wait_for_selector(f"{tid('continue')}:visible")
    finally:
        s.stop()


# ---------------------------------------------------------------------- the features
def test_players_have_names_at_their_seats(server, page):
    open_page(page, server)
    start_game(page)
    names = {k: page.inner_text(tid(f"seat-{k}")) for k in ("north", "east", "south", "west")}
    assert names == {"north": "Max", "east": "Zoe", "south": "You", "west": "Lily"}
    trick = page.locator(tid("trick")).bounding_box()
    west = page.locator("#seat-left").bounding_box()
    east = page.locator("#seat-right").bounding_box()
    assert west["x"] + west["width"] <= trick["x"] and east["x"] >= trick["x"] + trick["width"]
    assert page.inner_text(tid("score")).startswith("You & Max")


def test_legal_cards_glow_and_an_illegal_card_shakes(server, page):
    open_page(page, server, "delay=0&pause=0")
    start_game(page)
    fast_forward(page, "v.your_turn && v.phase === 'play' && v.trick.length > 0 && "
                       "v.hand.some((h) => !h.legal)")
    page.wait_for_function(YOUR_TURN)
    style = """el => { const s = getComputedStyle(el); return [s.transform, s.boxShadow]; }"""
    legal = page.locator(f"{tid('hand')} [data-legal=true]").first
    illegal = page.locator(f"{tid('hand')} [data-legal=false]").first
    lt, ls = legal.evaluate(style)
    it, is_ = illegal.evaluate(style)
    assert lt == "matrix(1, 0, 0, 1, 0, -14)" and it == "none"
    assert "rgba(255, 214, 92" in ls and "rgba(255, 214, 92" not in is_
    card = illegal.get_attribute("data-card")
    illegal.click()
    page.wait_for_selector(f"{tid('hand')} .card.shake[data-card='{card}']", timeout=2000)
    assert page.locator(f"{tid('hand')} [data-card='{card}']").evaluate(
        "el => el.getAnimations().length") >= 1
    assert page.inner_text(tid("status")).startswith("must follow suit: you hold a ")
    assert "error" in page.get_attribute(tid("status"), "class")


def _drag(page, src, x: float, y: float) -> None:
    b = src.bounding_box()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + 12)
    page.mouse.down()
    for k in range(1, 9):
        page.mouse.move(b["x"] + b["width"] / 2 + (x - b["x"] - b["width"] / 2) * k / 8,
                        b["y"] + 12 + (y - b["y"] - 12) * k / 8)
    page.mouse.up()


def test_drag_a_card_onto_the_table_plays_it(server, page):
    open_page(page, server, "delay=0&pause=5000")
    start_game(page)
    fast_forward(page, "v.your_turn && v.phase === 'play'")
    page.wait_for_function(YOUR_TURN)
    before = view(page)
    card = page.locator(f"{tid('hand')} [data-legal=true]").first
    name = card.get_attribute("data-card")
    t = page.locator(tid("trick")).bounding_box()
    _drag(page, card, t["x"] + t["width"] / 2, t["y"] + t["height"] / 2)
    page.wait_for_selector(f"{tid('trick')} .card[data-card='{name}']")
    assert name not in hand_cards(page)
    after = view(page)
    assert after["seq"] > before["seq"] and name not in [h["card"] for h in after["hand"]]


def test_drag_to_reorder_the_hand_survives_a_reload(server, page):
    open_page(page, server, "delay=0&pause=0")
    start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    order = hand_cards(page)
    first = page.locator(f"{tid('hand')} .card").first
    last = page.locator(f"{tid('hand')} .card").last.bounding_box()
    _drag(page, first, last["x"] + last["width"] - 2, last["y"] + 30)
    want = order[1:] + order[:1]
    assert hand_cards(page) == want
    assert len(view(page)["hand"]) == 13  # nothing was played
    page.reload()  # back at the table, the hand in the player's order
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    assert hand_cards(page) == want


def test_menu_pause_holds_the_bots_and_resume_continues(server, page):
    open_page(page, server, "delay=300&pause=0")
    start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    page.click(tid("bid-submit"))  # then three bots bid
    page.click(tid("menu"))
    page.click(tid("menu-pause"))
    page.wait_for_timeout(400)  # a request already sent may land
    seq = view(page)["seq"]
    page.wait_for_timeout(2000)
    assert view(page)["seq"] == seq
    assert page.inner_text(tid("status")).startswith("Paused")
    page.click(tid("menu"))
    assert page.is_hidden(tid("menu-pause")) and page.is_visible(tid("menu-resume"))
    page.click(tid("menu-resume"))
    page.wait_for_function(f"async () => (await ({VIEW_JS})()).seq > {seq}", timeout=10000)


def test_menu_new_game_and_sound_toggle_remembered(server, page):
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    open_page(page, server, "delay=0&pause=0")
    start_game(page)
    page.click(tid("menu"))
    assert page.get_attribute(tid("menu-sound"), "aria-pressed") == "true"
    page.keyboard.press("Escape")
    page.click(tid("menu"))
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    page.click(tid("bid-submit"))
    page.wait_for_function("Number(document.body.dataset.sounds || 0) > 0")  # Web Audio beeps
    page.click(tid("menu"))
    page.click(tid("menu-sound"))
    assert page.get_attribute(tid("menu-sound"), "aria-pressed") == "false"
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.get_attribute(tid("menu-sound"), "aria-pressed") == "false"
    page.wait_for_selector(f"{tid('score')}:visible")  # the reload returned to the table
    page.click(tid("menu"))
    page.click(tid("menu-new-game"))
    page.wait_for_selector(f"{tid('play')}:visible")
    assert page.is_visible(tid("continue"))  # the game stays saved
    # nothing downloaded for sound (or anything else): only the page, its files and the API
    paths = {re.sub(r"^https?://[^/]+", "", u).split("?")[0] for u in requests}
    assert all(p == "/" or p.startswith(("/static/", "/api/")) for p in paths), paths
    assert {"/", "/static/app.js", "/static/style.css"} <= paths


def test_hint_shows_the_agent_and_the_search_for_each_legal_move(server, page):
    if default_checkpoint() is None:
        pytest.skip("no shipped checkpoint in this checkout")
    open_page(page, server, "delay=0&pause=0")
    start_game(page)
    v = fast_forward(page, "v.your_turn && v.phase === 'play' && "
                           "v.hand.filter((h) => h.legal).length > 2")
    page.wait_for_function(YOUR_TURN)
    page.click(tid("hint"))
    open_hint_details(page)
    rows = page.eval_on_selector_all(f"{tid('analysis')} tr[data-action]", """rows => rows.map(r =>
        [Number(r.dataset.action), r.querySelector('.prob').innerText, r.querySelector('.value').innerText])""")
    legal = sorted(h["action"] for h in v["hand"] if h["legal"])
    assert [r[0] for r in rows] == legal
    probs = [float(r[1].rstrip("%")) for r in rows]
    assert abs(sum(probs) - 100) < 1 and all(re.fullmatch(r"[+-]?\d+\.\d", r[2]) for r in rows)
    box = page.locator("#analysis-box").bounding_box()
    felt = page.locator("#felt").bounding_box()
    assert box["x"] >= felt["x"] + felt["width"]  # beside the table, not over it
    # switched off in the settings: no hint button
    page.click(tid("menu"))
    page.click(tid("menu-new-game"))
    page.uncheck(tid("hint-setting"))
    page.click(tid("continue"))
    page.wait_for_function(YOUR_TURN)
    assert page.is_hidden(tid("hint"))


def test_replay_analysis_marks_the_move_played(server, page, records):
    folder, game = records
    open_record(page, server, folder / "one.json")
    page.wait_for_selector(f"{tid('watch-pos')}:visible")
    for _ in range(12):  # frame 12: the result of move 11, a card played
        page.click(tid("watch-next"))
    page.wait_for_selector(f"{tid('analysis')} tr[data-action] .value:not(:empty)", timeout=30000)
    page.wait_for_function("document.querySelector('[data-testid=analysis] tr.played')")
    probe = SpadesGame.replay(game.moves[:11], initial=game.initial)
    actions = page.eval_on_selector_all(f"{tid('analysis')} tr[data-action]",
                                        "rows => rows.map(r => Number(r.dataset.action))")
    assert actions == sorted(probe.legal_actions())
    played = page.eval_on_selector_all(f"{tid('analysis')} tr.played",
                                       "rows => rows.map(r => Number(r.dataset.action))")
    assert played == [game.moves[11]]
    assert page.inner_text("#analysis-title").startswith("ABCD"[probe.current_player]
                                                          .replace("A", "Ann").replace("B", "Ben")
                                                          .replace("C", "Cat").replace("D", "Dan"))


def test_full_game_to_250_against_easy(server, page):
    open_page(page, server, "delay=0&pause=0")
    start_game(page, "easy", "250")
    deadline = time.time() + 400
    hands = 0
    while not page.is_visible(tid("results")):
        assert time.time() < deadline, "the game did not end"
        if page.is_visible(tid("next")):
            hands += 1
            page.click(tid("next"))
            page.wait_for_function("document.getElementById('hand-table-box').hidden || "
                                   "!document.getElementById('screen-results').hidden")
            continue
        if page.is_visible(tid("bid-submit")):
            page.click(tid("bid-submit"))
            page.wait_for_function("document.getElementById('bidpanel').hidden")
            continue
        if not click_first_legal(page):
            page.wait_for_timeout(20)
    text = page.inner_text("#result-text")
    m = re.fullmatch(r"You (win|lose) (-?\d+) to (-?\d+) after (\d+) hands", text)
    assert m and int(m.group(4)) == hands and max(int(m.group(2)), int(m.group(3))) >= 250
    assert (m.group(1) == "win") == (int(m.group(2)) > int(m.group(3)))
    row = page.locator(f"{tid('stats')} tr[data-difficulty=easy][data-target='250']")
    assert row.locator(".games").inner_text() == "1"
    assert row.locator(".wins").inner_text() == ("1" if m.group(1) == "win" else "0")


def set_bid(page, n: int) -> None:
    """Step the bid count to ``n`` with its minus and plus buttons."""
    for _ in range(14):
        at = int(page.inner_text(tid("bid-value")))
        if at == n:
            return
        page.click(tid("bid-minus" if at > n else "bid-plus"))
    raise AssertionError(f"the bid count never reached {n}")


def test_house_rules_panel_and_a_whole_suicide_game(server, page):
    """The house-rules panel: a preset from the API with a field changed, a combination the
    engine refuses shown with its reason (and Play creating nothing), then a whole game under
    the chosen rules to the results screen, the rules line showing them all along, a bid the
    engine refuses disabled, its reason in the status line."""
    open_page(page, server, "delay=0&pause=0")
    before = len(page.evaluate("async () => (await (await fetch('/api/games')).json()).games"))
    page.select_option(tid("difficulty"), "easy")
    page.select_option(tid("rules-preset"), "suicide")
    assert page.input_value(tid("bid-variant")) == "suicide"
    assert page.input_value(tid("min-team-bid")) == "4"
    assert page.input_value(tid("loss-threshold")) == "-200"
    # suicide and Nil passing: the engine refuses, the panel says why, Play starts nothing
    page.select_option(tid("nil-pass"), "2")
    page.wait_for_selector(f"{tid('rules-error')}:visible")
    err = page.inner_text(tid("rules-error"))
    assert err.startswith("Rules.nil_pass and Rules.suicide cannot both be on")
    page.click(tid("play"))
    if page.is_visible(tid("confirm-new")):
        page.click(tid("confirm-new"))
    page.wait_for_timeout(300)
    assert page.is_visible(tid("rules-error")) and page.is_hidden("#screen-table")
    assert len(page.evaluate(
        "async () => (await (await fetch('/api/games')).json()).games")) == before
    # a valid change: no Nil passing, a short game, spades led at any time
    page.select_option(tid("nil-pass"), "0")
    page.select_option(tid("target"), "100")
    page.check(tid("spades-any-time"))
    line = "Suicide \u00b7 board 4 \u00b7 spades any time \u00b7 100/-200"
    page.wait_for_function(
        f"document.querySelector('[data-testid=rules-preview]').innerText === {json.dumps(line)}")
    assert page.is_hidden(tid("rules-error"))
    page.click(tid("play"))
    if page.is_visible(tid("confirm-new")):
        page.click(tid("confirm-new"))
    page.wait_for_selector(f"{tid('score')}:visible")
    assert page.inner_text(tid("rules-line")).startswith(line)
    assert page.is_hidden(tid("rules-list"))
    page.click(tid("rules-line"))  # the full list on tap
    items = page.inner_text(tid("rules-list"))
    assert "Game to 100 points" in items and "Spades may be led at any time" in items
    assert "Bidding: suicide" in items
    page.click(tid("score"))  # a tap elsewhere closes it
    assert page.is_hidden(tid("rules-list"))

    deadline = time.time() + 400
    refused_seen = False
    while not page.is_visible(tid("results")):
        assert time.time() < deadline, "the game did not end"
        if page.is_visible(tid("next")):
            page.click(tid("next"))
            page.wait_for_function("document.getElementById('hand-table-box').hidden || "
                                   "!document.getElementById('screen-results').hidden")
            continue
        if page.is_visible(tid("bid-submit")):
            v = view(page)["bidding"]
            counts = [b for b in v["bids"] if b > 0] if v else []
            bad = [int(k) for k in v["refused"] if k != "0"] if v else []
            if bad and not refused_seen:
                # step to a count the engine refuses here (suicide: under the team's minimum,
                # or any count beside a partner's bid): Bid is disabled, the reason shown
                k = min(bad, key=lambda x: abs(x - 3))
                set_bid(page, k)
                assert page.is_disabled(tid("bid-submit"))
                assert page.inner_text(tid("status")) == v["refused"][str(k)]
                assert "error" in page.get_attribute(tid("status"), "class")
                if counts:
                    set_bid(page, counts[0])
                    assert page.is_enabled(tid("bid-submit"))
                    assert page.inner_text(tid("status")) == "Your turn: bid"
                refused_seen = True
            if v and not v["bids"][1:] and v["nil"]:  # only Nil: the count is refused
                assert page.is_disabled(tid("bid-submit"))
                page.click(tid("bid-nil"))
            elif page.is_enabled(tid("bid-submit")):
                page.click(tid("bid-submit"))
            else:
                page.click(tid("bid-nil"))
            page.wait_for_function("document.getElementById('bidpanel').hidden")
            continue
        if not click_first_legal(page):
            page.wait_for_timeout(20)
    assert refused_seen
    text = page.inner_text("#result-text")
    assert re.fullmatch(r"You (win|lose) -?\d+ to -?\d+ after \d+ hands", text)
    assert line in page.inner_text("#stats-title")
    rules = Rules.parse({"preset": "suicide", "target_score": 100, "spades_lead_any_time": True})
    row = page.locator(f"{tid('stats')} tr[data-difficulty=easy][data-rules='{rules.spec()}']")
    assert row.locator(".games").inner_text() == "1"
    # the panel keeps the chosen rules for the next game
    page.click(tid("new-game"))
    page.wait_for_function(
        f"document.querySelector('[data-testid=rules-preview]').innerText === {json.dumps(line)}")


def test_a_jokers_game_shows_joker_faces(server, page):
    """docs/rules.md, Jokers: the panel's preset ``joker_joker_deuce_deuce`` checks its jokers
    box, the rules chip names the game, and a joker the player holds (or sees in the trick) is
    drawn as a joker (``BJ`` red, ``LJ`` black, named for screen readers), never as a 2H or 2C."""
    open_page(page, server)
    page.select_option(tid("rules-preset"), "joker_joker_deuce_deuce")
    assert page.is_checked(tid("jokers"))
    start_game(page, "easy", "250")
    assert page.inner_text(tid("rules-line")).startswith("Joker Joker Deuce Deuce")
    joker = "['BJ', 'LJ'].includes(c.card)"
    v = fast_forward(page, f"v.your_turn && (v.hand.some((c) => {joker}) || "
                           f"v.trick.some((c) => {joker}))")
    page.wait_for_function(YOUR_TURN)
    shown = [c["card"] for c in v["hand"]] + [c["card"] for c in v["trick"]]
    faces = page.eval_on_selector_all(
        ".card.joker", "els => els.map(e => [e.dataset.card, e.getAttribute('aria-label'), "
                       "getComputedStyle(e).color])")
    want = {c for c in shown if c in ("BJ", "LJ")}
    assert want and {f[0] for f in faces} >= want
    red = page.evaluate("""() => { const e = document.createElement('div');
        e.className = 'card suit-H'; document.body.appendChild(e);
        const c = getComputedStyle(e).color; e.remove(); return c; }""")
    for card, label, colour in faces:
        assert label == {"BJ": "Big Joker", "LJ": "Little Joker"}[card]
        assert (colour == red) == (card == "BJ")  # the big joker red, the little one not
    assert not {"2H", "2C"} & set(hand_cards(page))
