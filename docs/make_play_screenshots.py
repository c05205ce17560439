"""Make the screenshots of the browser game in docs/play/screens/: the table (with the one-line
hint, then its Details), the Rules and help dialog, bidding, the score table after a hand (with
the score graph), the results and the replay view with the agent's analysis, each at 1280x860,
1024x700 and 390x844 (``{screen}_{width}x{height}.png``).

    python docs/make_play_screenshots.py [--out docs/play/screens] [--seed 7]

Serves the app (a fresh database in a temporary folder, the real ``easy`` line-up: ``hard``
partner, ``easy`` opponents, a 250-point game; the shipped checkpoint for the analysis) and plays
it through the page in headless Chromium (Debian's ``chromium``), like tests/play/test_play_browser.py.
The player bids 3 and plays its first legal card. At each moment shown, the page is resized to
each size in turn. Also checks, at each size, that the page is no wider than the window and that
every card of the hand is inside it (exits 1 otherwise).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

import uvicorn
from playwright.sync_api import sync_playwright

from spades_env.play.app import create_app

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SIZES = [(1280, 860), (1024, 700), (390, 844)]
FITS = """() => {
  const w = innerWidth, h = innerHeight, bad = [];
  if (document.documentElement.scrollWidth > w) bad.push(`page ${document.documentElement.scrollWidth}px wide`);
  const hand = document.querySelector('[data-testid=hand]');
  if (hand && hand.offsetParent) for (const c of hand.querySelectorAll('.card')) {
    const r = c.getBoundingClientRect();
    if (r.left < 0 || r.right > w || r.top < 0 || r.bottom > h) bad.push(`card ${c.dataset.card} at ${Math.round(r.left)},${Math.round(r.top)}`);
  }
  for (const s of document.querySelectorAll('#screen-table:not([hidden]) .seat')) {
    const r = s.getBoundingClientRect();
    if (r.left < 0 || r.right > w) bad.push(`${s.id} cut off`);
  }
  return bad;
}"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "play", "screens"))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp()
    app = create_app(os.path.join(tmp, "play.sqlite3"), seed=a.seed)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=srv.run, daemon=True).start()
    while not srv.started:
        time.sleep(0.05)
    problems = []
    shots = set()
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            os.path.join(tmp, "profile"), executable_path=a.chromium, args=ARGS, headless=True,
            viewport={"width": 1280, "height": 860})
        pg = ctx.new_page()

        def shoot(name: str) -> None:
            for w, h in SIZES:
                pg.set_viewport_size({"width": w, "height": h})
                pg.wait_for_timeout(150)
                pg.screenshot(path=os.path.join(a.out, f"{name}_{w}x{h}.png"))
                problems.extend(f"{name} {w}x{h}: {b}" for b in pg.evaluate(FITS))
            pg.set_viewport_size({"width": 1280, "height": 860})
            shots.add(name)

        pg.goto(f"http://127.0.0.1:{port}/?delay=0&pause=0")
        pg.wait_for_selector("body[data-ready=true]")
        pg.select_option("[data-testid=difficulty]", "easy")
        pg.select_option("[data-testid=target]", "250")
        pg.click("[data-testid=play]")
        while not pg.is_visible("[data-testid=results]"):
            if pg.is_visible("[data-testid=hand-table]"):
                if "hand_table" not in shots:
                    shoot("hand_table")
                pg.click("[data-testid=next]")
                pg.wait_for_timeout(100)
                continue
            if pg.is_visible("[data-testid=bid-submit]"):
                if "bidding" not in shots:
                    shoot("bidding")
                pg.click("[data-testid=bid-submit]")
                pg.wait_for_timeout(50)
                continue
            legal = pg.locator("[data-testid=hand] [data-legal=true]:not(.idle)")
            if legal.count():
                trick = pg.locator("[data-testid=trick] .card").count()
                hand = pg.locator("[data-testid=hand] .card").count()
                if "table" not in shots and trick >= 2 and 8 <= hand <= 11 and legal.count() >= 3:
                    pg.click("[data-testid=hint]")
                    pg.wait_for_selector("[data-testid=hint-line]:visible")
                    shoot("table")
                    pg.click("[data-testid=hint-details]")  # the full table behind Details
                    pg.wait_for_selector("[data-testid=analysis] tr[data-action]")
                    shoot("hint_details")
                    pg.click("[data-testid=hint-details]")
                    pg.click("#analysis-close")
                    pg.click("[data-testid=menu]")
                    pg.click("[data-testid=menu-help]")
                    pg.wait_for_selector("[data-testid=help-box]:visible")
                    shoot("help")
                    pg.click("[data-testid=help-close]")
                legal.first.click()
                pg.wait_for_timeout(50)
                continue
            pg.wait_for_timeout(50)
        shoot("results")
        pg.click("[data-testid=watch-this]")
        pg.wait_for_selector("[data-testid=watch-pos]:visible")
        for _ in range(9):  # to the first card played: a decision with values
            pg.click("[data-testid=watch-next]")
        pg.wait_for_selector("[data-testid=analysis] tr[data-action] td.value:not(:empty)")
        pg.wait_for_timeout(300)
        shoot("watch")
        ctx.close()
    srv.should_exit = True
    for name in sorted(shots):
        print(f"{name}: " + ", ".join(f"{name}_{w}x{h}.png" for w, h in SIZES))
    for pr in problems:
        print("PROBLEM:", pr, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
