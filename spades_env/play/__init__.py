"""Play Spades in the browser against the bots or a trained checkpoint (a local web app).

``spades play`` serves the app on ``127.0.0.1:8000`` and opens the page. Needs the ``play``
extra (``pip install spades_env[play]``: FastAPI, uvicorn, platformdirs). docs/play.md describes the app, its HTTP API and the game-record format.

Modules: ``app`` (routes), ``session`` (a game plus its bots; the only place that applies moves),
``store`` (SQLite: games, moves, statistics), ``replay`` (all-hands replays and game records),
``static/`` (the page: HTML, CSS, JS; no build step).
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
