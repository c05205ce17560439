"""Play Spades in the browser against the bots or a trained checkpoint (a local web app).

``spades play`` serves the app on ``127.0.0.1:8000`` and opens the page. Needs the ``play``
extra (``pip install spades_env[play]``: FastAPI, uvicorn, platformdirs). docs/play.md describes the app, its HTTP API and the game-record format.

Modules: ``app`` (the app built from its parts: ``middleware``, ``heavy``, ``context`` and the
route groups ``routes_games`` and ``routes_replay``), ``session`` (a game plus its bots; the only
place that applies moves), ``rules_text`` (the rules as the page shows them), ``store`` (SQLite:
games, moves, statistics), ``replay`` (all-hands replays and game records), ``analysis`` (the
hint), ``static/`` (the page: HTML, CSS, six plain JS scripts; no build step).
"""

from __future__ import annotations

__all__ = ["create_app", "main"]


def __getattr__(name):
    # lazy: importing the package must not need FastAPI until the app is built
    if name == "create_app":
        from .app import create_app
        return create_app
    if name == "main":
        from .cli import main
        return main
    raise AttributeError(f"module 'spades_env.play' has no attribute {name!r}")
