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
    FAST, YOUR_TURN, Served, _free_port, click_first_legal, hand_cards, page, records, served,
    server, tid,
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

# drive the game with ``id`` through the API until stop(v) (the page on another screen)
PLAY_JS = """async ([id, stop, max]) => {
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


def game_id(page) -> str:
    return page.evaluate("location.hash.split('=')[1]")


def get_view(page, gid: str) -> dict:
    return page.evaluate("async (id) => (await fetch(`/api/games/${id}`)).json()", gid)


def open_page(page, base: str, query: str = "delay=0&pause=0") -> None:
    page.goto(f"{base}/?{query}")
    page.wait_for_selector("body[data-ready=true]")


def start_game(page, difficulty: str = "easy", target: str = "250") -> str:
    page.select_option(tid("difficulty"), difficulty)
    page.select_option(tid("target"), target)
    page.click(tid("play"))
    if page.is_visible(tid("confirm-new")):
        page.click(tid("confirm-new"))
    page.wait_for_selector(f"{tid('score')}:visible")
    return game_id(page)


def fast_forward(page, base: str, stop: str, query: str = "delay=0&pause=0",
                 max_moves: int = 2000) -> dict:
    """Leave the table for the settings screen, play the page's game by API until ``stop`` (a JS
    expression of the view ``v``), then Continue it on the page; the view reached."""
    gid = game_id(page)
    open_page(page, base, query)
    v = page.evaluate(PLAY_JS, [gid, stop, max_moves])
    page.click(tid("continue"))
    page.wait_for_selector(f"{tid('score')}:visible")
    return v


def sorted_by_suit(cards: list[str]) -> bool:
    """Spades, hearts, clubs, diamonds, each high to low (``session.display_order``)."""
    key = [(SUITS.index(c[-1]), -RANKS.index(c[:-1])) for c in cards]
    return key == sorted(key)


def _drag(page, src, x: float, y: float) -> None:
    b = src.bounding_box()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + 12)
    page.mouse.down()
    for k in range(1, 9):
        page.mouse.move(b["x"] + b["width"] / 2 + (x - b["x"] - b["width"] / 2) * k / 8,
                        b["y"] + 12 + (y - b["y"] - 12) * k / 8)
    page.mouse.up()


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
    v = fast_forward(page, server, "v.hand_number === 2 && v.your_turn && v.bidding && v.looked")
    page.wait_for_selector(f"{tid('bid-submit')}:visible")
    shown = hand_cards(page)
    assert shown == [h["card"] for h in v["hand"]]  # the server's order: by suit, high to low
    assert len(shown) == 13 and sorted_by_suit(shown), shown
    assert len(set(order) & set(shown)) > 0  # some cards of hand 1 came again
