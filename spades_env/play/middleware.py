"""The play app's ASGI middleware, run before routing: request body limits (``BodyLimit``: 413,
announced or chunked; uploads of game records bounded together, 503 past it), the Host header
check and the page's canonical local name (``HostCheck``), and the cheap early answer to a client
already at its limit of heavy requests (``HeavyGate``: 429 or 503). Also who a request is from
(``client_key_of``: the player cookie, else the address) and the key under which a client's
identical replay requests share one answer (``same_key``).
"""

from __future__ import annotations

import json
import re
import urllib.parse

__all__ = ["MAX_BODY", "MAX_UPLOAD", "UPLOADS_RECEIVING", "COOKIE", "LOCAL_HOSTS", "PLAYER_RE",
           "BodyLimit", "HostCheck", "HeavyGate", "upload_name", "send_error", "client_key_of",
           "is_heavy", "same_key"]

MAX_BODY = 4096
"""Largest request body (bytes) of every route but the record upload."""
MAX_UPLOAD = 8 * 1024 * 1024
"""Largest game record file (bytes) the replay view accepts by upload (its moves are bounded
too: ``replay.MAX_UPLOAD_MOVES``)."""
UPLOADS_RECEIVING = 4 * MAX_UPLOAD
"""Most bytes of upload bodies being received at once, all clients together (``BodyLimit``;
past it, 503 with ``Retry-After``): a body is read whole before the route runs."""
COOKIE = "spades_player"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
PLAYER_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")
"""A usable player id (the cookie ``COOKIE``); anything else gets a new one."""


class BodyLimit:
    """ASGI middleware: refuse (413) a request body over its limit, whether announced by
    Content-Length or streamed in chunks. The body is read here, within the limit, and handed on
    whole, so the app never sees a body that was cut."""

    def __init__(self, app, limit: int, upload_limit: int, upload_path: str):
        self.app = app
        self.limit = limit
        self.upload_limit = upload_limit
        self.upload_path = upload_path
        self.receiving = 0  # bytes of upload bodies being read now (``UPLOADS_RECEIVING``)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        upload = scope["path"] == self.upload_path
        limit = self.upload_limit if upload else self.limit
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    n = int(v)
                except ValueError:
                    return await send_error(send, 400, "bad Content-Length header")
                if n > limit:
                    if upload:
                        return await self._too_large(scope, send, n)
                    return await send_error(send, 413, f"request body too large: {n} bytes, "
                                                       f"the limit is {limit}")
        if scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        chunks, seen = [], 0
        try:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    return
                body = msg.get("body", b"")
                seen += len(body)
                if seen > limit:
                    if upload:
                        return await self._too_large(scope, send, None)
                    return await send_error(send, 413, f"request body too large: more than "
                                                       f"{limit} bytes, the limit is {limit}")
                if upload:
                    if self.receiving + len(body) > UPLOADS_RECEIVING:
                        return await send_error(
                            send, 503, "the server is receiving too many uploads at once; try "
                                       "again in a second", [(b"retry-after", b"1")])
                    self.receiving += len(body)
                chunks.append(body)
                if not msg.get("more_body", False):
                    break
        finally:
            if upload:
                self.receiving -= sum(len(c) for c in chunks)
        whole = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return whole
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope, send, n: int | None) -> None:
        """413 for an upload over its limit, naming the file (``X-File-Name``)."""
        name = upload_name(dict(scope.get("headers", ())).get(b"x-file-name", b"").decode(
            "latin-1"))
        size = "more than the limit" if n is None else f"{n / 2 ** 20:.1f} MiB"
        limit = f"{self.upload_limit / 2 ** 20:g} MiB"
        msg = f"{name} is too large to open: {size}; the limit is {limit}"
        body = json.dumps({"detail": msg, "summary": msg}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def upload_name(header: str) -> str:
    """The file name of an upload's ``X-File-Name`` header (URL-encoded by the page), printable
    and at most 120 characters; ``the uploaded file`` without one."""
    name = urllib.parse.unquote(header)[:120].strip()
    return "".join(ch for ch in name if ch.isprintable()) or "the uploaded file"


class HostCheck:
    """ASGI middleware: refuse (400) a request whose Host header is missing, empty or not one of
    ``allowed`` (``"*"``: any non-empty host). With ``canonical`` set, the page (``GET /``)
    asked for under another local name is redirected there, so that ``localhost`` and
    ``127.0.0.1`` share one cookie and therefore the same saved games."""

    def __init__(self, app, allowed, canonical: str | None = None):
        self.app = app
        self.any = "*" in allowed
        self.allowed = {h.lower() for h in allowed}
        self.canonical = canonical

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        hosts = [v for k, v in scope.get("headers", ()) if k == b"host"]
        raw = hosts[0].decode("latin-1").strip() if len(hosts) == 1 else ""
        if not raw:
            return await send_error(send, 400, "missing or empty Host header" if len(hosts) < 2
                                    else "more than one Host header")
        m = _HOST_RE.fullmatch(raw)
        if m is None:
            return await send_error(send, 400, f"invalid Host header {raw[:80]!r}")
        host = m.group("host").lower()
        if not self.any and host not in self.allowed:
            return await send_error(send, 400, f"Host {host[:80]!r} is not served here; open "
                                               f"the page as http://localhost:PORT/")
        if (self.canonical and host != self.canonical and scope["type"] == "http"
                and scope["method"] == "GET" and scope["path"] == "/"):
            port = f":{m.group('port')}" if m.group("port") else ""
            qs = scope.get("query_string", b"").decode("latin-1")
            url = f"http://{self.canonical}{port}/" + (f"?{qs}" if qs else "")
            await send({"type": "http.response.start", "status": 307,
                        "headers": [(b"location", url.encode("latin-1")),
                                    (b"content-length", b"0")]})
            return await send({"type": "http.response.body", "body": b""})
        return await self.app(scope, receive, send)


_HOST_RE = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?")


async def send_error(send, status: int, detail: str, headers=()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def client_key_of(cookie: str | None, address: str | None) -> str:
    """Who a request is from, for ``HeavyWork``'s limit: its player cookie, else (no usable
    cookie: every such request would get a new player id) its address."""
    if cookie and PLAYER_RE.fullmatch(cookie):
        return "player:" + cookie
    return "addr:" + (address or "?")


def is_heavy(method: str, path: str) -> bool:
    """A request of a ``HeavyWork`` route: a replay's summary, hand or analysis, the upload, a
    hint."""
    if path.startswith("/api/watch/"):
        return not path.endswith("/record")
    return method == "GET" and path.startswith("/api/games/") and path.endswith("/hint")


class HeavyGate:
    """ASGI middleware: a request of a heavy route from a client already at its ``HeavyWork``
    limit is answered here (429 or 503, ``Retry-After``), before routing and before an upload's
    body is read, so a client's flood of refused requests costs the server little. The route
    still admits each request itself (``HeavyWork.run``); this is only the cheap early answer."""

    def __init__(self, app, heavy):
        # heavy: the app's ``HeavyWork`` (its ``refusal``)
        self.app = app
        self.heavy = heavy

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and is_heavy(scope["method"], scope["path"]):
            cookie = None
            for k, v in scope.get("headers", ()):
                if k == b"cookie":
                    for part in v.decode("latin-1").split(";"):
                        name, _, value = part.strip().partition("=")
                        if name == COOKIE:
                            cookie = value
            client = scope.get("client")
            who = client_key_of(cookie, client[0] if client else None)
            busy = self.heavy.refusal(who, same_key(who, scope))
            if busy is not None:
                return await send_error(send, busy.status, busy.message,
                                        [(b"retry-after", b"1")])
        return await self.app(scope, receive, send)


def same_key(client: str, scope) -> tuple | None:
    """The key under which a client's identical requests share one answer (``HeavyWork.run``):
    a replay GET of a client with a player cookie (one without may be anyone)."""
    if scope["method"] != "GET" or not client.startswith("player:"):
        return None
    return (scope["path"], scope.get("query_string", b""))


