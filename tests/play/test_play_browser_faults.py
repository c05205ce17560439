"""The browser game, round 3 (issue 42): one test per fault found in real play, each driving the
real page in headless Chromium (Debian's ``chromium``) against the real app under uvicorn. Each
of these failed on the page before its fix.

Shares the fixtures and helpers of ``test_play_browser.py`` (the browser, the served app, the
record files).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

import pytest

from .test_play_browser import (  # noqa: F401 - fixtures are used by name
    FAST, YOUR_TURN, Served, _drag, _free_port, click_first_legal, fast_forward, hand_cards,
    open_page, page, records, served, server, start_game, tid,
)

pytest.importorskip("fastapi")
sync_api = pytest.importorskip("playwright.sync_api")

from spades_env import Rules, SpadesGame  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.play.app import create_app  # noqa: E402
from spades_env.play.replay import game_record  # noqa: E402
from spades_env.play.session import LINEUPS, display_order  # noqa: E402

pytestmark = pytest.mark.slow

SUITS = "SHCD"  # the order a hand is shown in: spades, hearts, clubs, diamonds
RANKS = ["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"]


def game_id(page) -> str:
    return page.evaluate("location.hash.split('=')[1]")


def get_view(page, gid: str) -> dict:
    return page.evaluate("async (id) => (await fetch(`/api/games/${id}`)).json()", gid)


def sorted_by_suit(cards: list[str]) -> bool:
    """Spades, hearts, clubs, diamonds, each high to low (``session.display_order``)."""
    key = [(SUITS.index(c[-1]), -RANKS.index(c[:-1])) for c in cards]
    return key == sorted(key)


# ---------------------------------------------------------------------- 1. a new deal
def test_new_deal_is_sorted_by_suit_after_a_reorder(server, page):
    """Fault 1: a drag-reorder in hand 1 left its cards in their old places in hand 2 (clubs and
    diamonds split). A new deal is shown sorted by suit; the reorder still holds in its hand."""
    open_page(page, server)
    start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    order = hand_cards(page)
    assert sorted_by_suit(order)
    first = page.locator(f"{tid('hand')} .card").first
    last = page.locator(f"{tid('hand')} .card").last.bounding_box()
    _drag(page, first, last["x"] + last["width"] - 2, last["y"] + 30)
    assert hand_cards(page) == order[1:] + order[:1]
    v = fast_forward(page, "v.hand_number === 2 && v.your_turn && v.bidding && v.looked")
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    shown = hand_cards(page)
    assert shown == [h["card"] for h in v["hand"]]  # the server's order: by suit, high to low
    assert len(shown) == 13 and sorted_by_suit(shown), shown
    assert len(set(order) & set(shown)) > 0  # some cards of hand 1 came again


# ---------------------------------------------------------------------- 2. two tabs
def test_two_tabs_on_one_game(server, page):
    """Fault 2: a second tab on the same game kept an old trick and a card too many, and a click
    there was refused as a stale move with a 'reload' that led to the start screen. Now the tab
    that opens the game plays it; the other says so, follows the game as it goes on, and takes
    it over with one click."""
    open_page(page, server)
    gid = start_game(page)
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    other = page.context.new_page()
    other.set_default_timeout(20000)
    errors = []
    other.on("pageerror", lambda e: errors.append(str(e)))
    open_page(other, server)
    other.click(tid("continue"))
    other.wait_for_selector(f"{tid('bid-submit')}:visible")
    # the first tab says the game is open elsewhere and offers to take it over
    page.wait_for_selector(f"{tid('elsewhere')}:visible", timeout=5000)
    assert "open in another tab" in page.inner_text(tid("elsewhere"))
    assert page.is_visible(tid("take-over"))
    assert other.is_hidden(tid("elsewhere"))
    # the second tab plays: the first one follows, card for card
    other.click(tid("bid-submit"))
    other.wait_for_function(YOUR_TURN + " && document.getElementById('bidpanel').hidden",
                            timeout=20000)
    click_first_legal(other)
    other.wait_for_function(YOUR_TURN, timeout=20000)
    v = get_view(other, gid)
    page.wait_for_function(
        f"document.querySelectorAll('[data-testid=hand] .card').length === {len(v['hand'])}",
        timeout=5000)
    assert sorted(hand_cards(page)) == sorted(h["card"] for h in v["hand"])
    assert page.locator(f"{tid('hand')} .card:not(.idle)").count() == 0  # nothing to click here
    # take it over: the first tab plays, the second says so and follows
    page.click(tid("take-over"))
    page.wait_for_selector(f"{tid('elsewhere')}", state="hidden")
    other.wait_for_selector(f"{tid('elsewhere')}:visible", timeout=5000)
    page.wait_for_function(YOUR_TURN)
    n = len(hand_cards(page))
    assert click_first_legal(page)
    page.wait_for_function(YOUR_TURN, timeout=20000)
    v = get_view(page, gid)
    assert len(v["hand"]) == n - 1
    other.wait_for_function(
        f"document.querySelectorAll('[data-testid=hand] .card').length === {n - 1}", timeout=5000)
    assert "stale" not in page.inner_text(tid("status")) + other.inner_text(tid("status"))
    assert errors == []
    other.close()


# ---------------------------------------------------------------------- 4. reload
def test_reload_mid_trick_returns_to_the_table(server, page):
    """Fault 4: F5 showed the start screen although the address held ``#game=...``, and the
    trick on the table was gone. A reload returns to the table, the trick as it was."""
    open_page(page, server)
    gid = start_game(page)
    v = fast_forward(page, "v.your_turn && v.phase === 'play' && v.trick.length >= 2")
    page.wait_for_function(YOUR_TURN)
    trick = page.eval_on_selector_all(f"{tid('trick')} .card", "els => els.map(e => e.dataset.card)")
    assert trick == [c["card"] for c in v["trick"]] and len(trick) >= 2
    hand = hand_cards(page)
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(f"{tid('score')}:visible", timeout=5000)
    assert game_id(page) == gid
    assert page.is_hidden("#screen-settings")
    page.wait_for_function(YOUR_TURN)
    assert page.eval_on_selector_all(f"{tid('trick')} .card",
                                     "els => els.map(e => e.dataset.card)") == trick
    assert hand_cards(page) == hand


# ---------------------------------------------------------------------- 5. back and forward
def test_back_and_forward_stay_in_the_app(server, page):
    """Fault 5: Back left the app and Forward came back to the start screen. Back and Forward
    move between the app's screens: settings, the table, the replays."""
    open_page(page, server)
    gid = start_game(page)
    page.go_back()
    page.wait_for_selector(f"{tid('play')}:visible", timeout=5000)
    assert page.url.startswith(server) and page.is_hidden("#screen-table")
    page.go_forward()
    page.wait_for_selector(f"{tid('score')}:visible", timeout=5000)
    assert game_id(page) == gid
    page.click(tid("watch"))
    page.wait_for_selector(f"{tid('watch-empty')}:visible")
    page.go_back()
    page.wait_for_selector(f"{tid('score')}:visible", timeout=5000)
    assert game_id(page) == gid and page.is_hidden("#screen-watch")
    page.go_forward()
    page.wait_for_selector(f"{tid('watch-empty')}:visible", timeout=5000)
