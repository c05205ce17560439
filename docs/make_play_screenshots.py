"""Make the screenshots of the browser game in docs/ (play_table.png, play_hand_table.png,
play_results.png, play_watch.png).

    python docs/make_play_screenshots.py [--out docs] [--seed 7]

Serves the app (a fresh database in a temporary folder, the real ``medium`` line-up: ``hard``
partner, ``medium`` opponents, a 250-point game) and plays it through the page in headless
Chromium (Debian's ``chromium``), like tests/test_play_browser.py. The player bids 3 and plays its
first legal card. Takes a few minutes on two cores (the ``hard`` partner thinks).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import tempfile
import threading
import time

import uvicorn
from playwright.sync_api import sync_playwright

from spades_env.play.app import create_app

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    a = p.parse_args()
    tmp = tempfile.mkdtemp()
    app = create_app(os.path.join(tmp, "play.sqlite3"), seed=a.seed)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=srv.run, daemon=True).start()
    while not srv.started:
        time.sleep(0.05)
    shots = {}
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            os.path.join(tmp, "profile"), executable_path=a.chromium, args=ARGS, headless=True,
            viewport={"width": 1100, "height": 820})
        pg = ctx.new_page()
        pg.goto(f"http://127.0.0.1:{port}/?delay=0&pause=0")
        pg.wait_for_selector("body[data-ready=true]")
        pg.select_option("[data-testid=difficulty]", "medium")
        pg.select_option("[data-testid=target]", "250")
        pg.click("[data-testid=play]")
        while not pg.is_visible("[data-testid=results]"):
            if pg.is_visible("[data-testid=hand-table]"):
                if "hand_table" not in shots:
                    pg.screenshot(path=os.path.join(a.out, "play_hand_table.png"))
                    shots["hand_table"] = True
                pg.click("[data-testid=next]")
                pg.wait_for_timeout(100)
                continue
            if pg.is_visible("[data-testid=bid-submit]"):
                pg.click("[data-testid=bid-submit]")
                pg.wait_for_timeout(50)
                continue
            legal = pg.locator("[data-testid=hand] [data-legal=true]:not(.idle)")
            if legal.count():
                trick = pg.locator("[data-testid=trick] .card").count()
                hand = pg.locator("[data-testid=hand] .card").count()
                if "table" not in shots and trick == 3 and 6 <= hand <= 10:
                    pg.screenshot(path=os.path.join(a.out, "play_table.png"))
                    shots["table"] = True
                legal.first.click()
                pg.wait_for_timeout(50)
                continue
            pg.wait_for_timeout(50)
        pg.screenshot(path=os.path.join(a.out, "play_results.png"))
        pg.click("[data-testid=watch-this]")
        pg.wait_for_selector("#w-seat-0 .card")
        for _ in range(30):  # a few moves into the first hand's play
            pg.click("[data-testid=watch-next]")
        pg.screenshot(path=os.path.join(a.out, "play_watch.png"))
        ctx.close()
    srv.should_exit = True
    print("wrote", ", ".join(f"play_{k}.png" for k in (*shots, "results", "watch")))


if __name__ == "__main__":
    main()
