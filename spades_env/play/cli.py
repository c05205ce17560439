"""Command line of the play app: ``spades play``.

Serves the app with uvicorn on ``--host``/``--port`` (default ``127.0.0.1:8000``) and opens the
page in the default browser unless ``--no-browser``. Exit status 2 with a one-line ``error:``
message for an unusable database, checkpoint or record file (read by ``replay.read_records``,
as an upload is; a file some of whose games are refused starts with a ``warning:`` line; a
database that is one of the files the app reads is refused before it is opened), an address it
cannot listen on, or a missing package (naming the extra that installs it); Ctrl-C stops the
server with one
``interrupted`` line and exit status 130.
"""

from __future__ import annotations

import sys

__all__ = ["main", "build_parser", "is_local_host", "listen"]


def is_local_host(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.x.y.z``, ``::1``)."""
    import ipaddress
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (``--host``, ``--port``, ``--db``, ``--no-browser``, ``--checkpoint``,
    ``--records``)."""
    import argparse
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


def listen(host: str, port: int) -> list:
    """Bound sockets for ``host:port``, one per address the name resolves to (as asyncio's
    ``create_server`` binds them), handed to uvicorn.

    Raises:
        ValueError: ``cannot listen on HOST:PORT: REASON`` (a port in use, an address not of this
            machine, a name that does not resolve...); nothing is left bound.
    """
    import socket
    bare = host.strip("[]")
    shown = f"[{bare}]" if ":" in bare else bare
    socks = []
    try:
        infos = socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _name, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except (OSError, UnicodeError) as e:
        for sock in socks:
            sock.close()
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ValueError(f"cannot listen on {shown}:{port}: {reason}") from None
    return socks


def main(argv=None) -> int:
    """Run the server until interrupted. Returns the exit status (0 stopped, 1 the server did not
    start, 2 bad input or a missing package, 130 Ctrl-C)."""
    try:
        return _serve(argv)
    except KeyboardInterrupt:  # Ctrl-C: while importing, or uvicorn re-raising it after stopping
        print("interrupted: spades play", file=sys.stderr)
        return 130


def _warn(args, app, local: bool) -> None:
    """The warnings before serving: games refused in a ``--records`` file, a non-local host."""
    for src in app.state.sources:
        if src.refused:
            first = min(src.refused)
            print(f"warning: --records {src.path}: {len(src.refused)} of {src.count} game(s) "
                  f"refused (they answer with the reason; the others open): "
                  f"{src.refused[first]}", file=sys.stderr)
    if not local:
        print(f"warning: binding to {args.host}: the game is reachable from other machines, with "
              f"no password and plain HTTP. Use --host 127.0.0.1 to keep it on this computer.",
              file=sys.stderr)


def _serve(argv) -> int:
    args = build_parser().parse_args(argv)
    for option, value in (("--host", args.host), ("--db", args.db),
                          ("--checkpoint", args.checkpoint)):
        if value is not None and not value.strip():
            print(f"error: {option}: an empty value (give a value, or leave the option out)",
                  file=sys.stderr)
            return 2
    try:
        import platformdirs  # noqa: F401 - the default --db (app.default_db_path)
        import uvicorn

        from .app import LOCAL_HOSTS, create_app, default_db_path
    except ImportError as e:
        what = e.name.split(".")[0] if e.name else f"the 'play' extra ({e})"
        print(f"error: spades play needs {what}, which is not installed: pip install "
              f"'spades_env[play]' (fastapi, uvicorn, platformdirs)", file=sys.stderr)
        return 2
    if not 1 <= args.port <= 65535:
        print(f"error: --port must be 1..65535, got {args.port}", file=sys.stderr)
        return 2
    local = is_local_host(args.host)
    db = args.db if args.db is not None else default_db_path()
    from ..bots import bot_inputs
    from ..fileio import check_outputs_apart
    try:  # the store is written: never a checkpoint or record file the app reads
        check_outputs_apart({"--db": db}, [("--checkpoint", args.checkpoint)]
                            + [("--records", r) for r in args.records]
                            + bot_inputs("the level", "expert"))  # the shipped network
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.checkpoint is not None:
        from ..bots import make_bot
        try:
            make_bot(f"checkpoint:{args.checkpoint}")
        except (ValueError, OSError, ImportError) as e:  # ImportError: no torch (says the extra)
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
        sockets = listen(args.host, args.port)  # a port in use: one line, not uvicorn's exit 3
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _warn(args, app, local)
    shown = "localhost" if args.host in ("127.0.0.1", "localhost") else args.host
    url = f"http://{shown}:{args.port}/"
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port,
                                           log_level="warning"))
    print(f"spades_env play: {url}  (database {db}; Ctrl-C stops)", file=sys.stderr)
    if not args.no_browser:
        import threading
        import time
        import webbrowser

        def open_when_ready():
            for _ in range(200):
                if server.started:
                    webbrowser.open(url)
                    return
                time.sleep(0.05)
        threading.Thread(target=open_when_ready, daemon=True).start()
    try:
        server.run(sockets=sockets)
    finally:
        for sock in sockets:
            sock.close()
    return 0 if server.started else 1
