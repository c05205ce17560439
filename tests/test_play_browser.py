"""A real browser plays a hand of the browser game: Playwright driving headless Chromium.

The browser is Debian's ``chromium`` package (``.ci/run`` installs it when missing; never
``playwright install``). Without it the test is skipped on a developer machine, and fails under CI
(``CI`` or ``SPADES_REQUIRE_BROWSER`` set), so CI cannot go green without running it.
The server is the real app under uvicorn on a free localhost port, with fast bots.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

from spades_env.play.app import create_app  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
FAST = {k: {"partner": "medium", "opponents": "easy"} for k in ("easy", "medium", "hard",
                                                                 "insane")}


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


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app under uvicorn in a thread; yields its base URL."""
    db = tmp_path_factory.mktemp("browser") / "play.sqlite3"
    app = create_app(str(db), lineups=FAST, seed=3)
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.time() + 20
    while not srv.started:
        assert time.time() < deadline and t.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(10)


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
    assert opts == ["easy", "medium", "hard", "insane"]
    opts = page.eval_on_selector_all(f"{tid('target')} option", "els => els.map(e => e.value)")
    assert opts == ["500", "250"]
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

    # reload: the game is saved; Continue resumes it with the same scores
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(f"{tid('continue')}:visible")
    page.click(tid("continue"))
    page.wait_for_selector(f"{tid('score')}:visible")
    page.wait_for_function(your_turn)
    assert page.inner_text(tid("score")) == score
    assert page.locator(f"{tid('hand')} .card").count() == 13
