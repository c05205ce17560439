"""Command line of the play app: ``spades play`` / ``spades play``.

Serves the app with uvicorn on ``--host``/``--port`` (default ``127.0.0.1:8000``) and opens the
page in the default browser unless ``--no-browser``. Exit status 2 with a one-line message for an
unusable database, checkpoint or record file, or a missing ``play`` extra.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
import threading
import time
import webbrowser

__all__ = ["main", "main_moved", "build_parser", "is_local_host"]


def is_local_host(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.x.y.z``, ``::1``)."""
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (``--host``, ``--port``, ``--db``, ``--no-browser``, ``--checkpoint``,
    ``--records``)."""
    p = argparse.ArgumentParser(
        prog="spades play",
        description="Play Spades in the browser against the bots or a trained checkpoint.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; anything else is reachable from other "
                        "machines)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--db", default=None,
                   help="SQLite file of saved games and statistics (default: play.sqlite3 in the "
                        "user's data folder)")
    p.add_argument("--no-browser", action="store_true", help="do not open the page")
    p.add_argument("--checkpoint", default=None, metavar="PATH",
                   help="a training checkpoint (.pt): offered as the opponents' level 'checkpoint'")
    p.add_argument("--records", nargs="+", default=[], metavar="FILE",
                   help="game records to offer in the replay view (.json, .jsonl, teacher .npz)")
    return p


def main_moved() -> int:
    """``spades-play``: the old name of ``spades play``, with a notice (removed in 0.8.0)."""
    print("notice: `spades-play` is now `spades play` (the old name is removed in 0.8.0)",
          file=sys.stderr)
    return main()


def main(argv=None) -> int:
    """Run the server until interrupted. Returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        import uvicorn

        from .app import LOCAL_HOSTS, create_app, default_db_path
    except ImportError as e:
        print(f"error: the play app needs the 'play' extra ({e}); install it with "
              f"pip install 'spades_env[play]'", file=sys.stderr)
        return 2
    if not 1 <= args.port <= 65535:
        print(f"error: --port must be 1..65535, got {args.port}", file=sys.stderr)
        return 2
    local = is_local_host(args.host)
    if not local:
        print(f"warning: binding to {args.host}: the game is reachable from other machines, with "
              f"no password and plain HTTP. Use --host 127.0.0.1 to keep it on this computer.",
              file=sys.stderr)
    db = args.db or default_db_path()
    if args.checkpoint is not None:
        from ..bots import make_bot
        try:
            make_bot(f"checkpoint:{args.checkpoint}")
        except (ValueError, OSError) as e:
            print(f"error: --checkpoint {args.checkpoint}: {e}", file=sys.stderr)
            return 2
    try:
        # Host headers: localhost names and the bound address (a web page elsewhere cannot use
        # the API through DNS rebinding); any host when serving beyond this machine
        bare = args.host.strip("[]")
        hosts = [*LOCAL_HOSTS, bare, f"[{bare}]"] if local else ["*"]
        # one name for this computer: the page asked for as 127.0.0.1 is sent to localhost, so
        # both see the same cookie and therefore the same saved games
        canonical = "localhost" if args.host in ("127.0.0.1", "localhost") else None
        app = create_app(db, checkpoint=args.checkpoint, records=args.records,
                         allowed_hosts=hosts, canonical_host=canonical)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    shown = "localhost" if args.host in ("127.0.0.1", "localhost") else args.host
    url = f"http://{shown}:{args.port}/"
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port,
                                           log_level="warning"))
    print(f"spades_env play: {url}  (database {db}; Ctrl-C stops)", file=sys.stderr)
    if not args.no_browser:
        def open_when_ready():
            for _ in range(200):
                if server.started:
                    webbrowser.open(url)
                    return
                time.sleep(0.05)
        threading.Thread(target=open_when_ready, daemon=True).start()
    server.run()
    return 0 if server.started else 1
