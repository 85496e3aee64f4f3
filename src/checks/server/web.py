"""HTTP concerns that are not routes: security headers on every response, a cap on every request
body, the session's signing key, and the client's address.

Pure ASGI middleware, so that a body over the cap is refused while it streams in, before a
multipart parser or a handler sees it.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import tempfile
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# no script but the server's own live.js (server/live.py), which fetches from the server alone
CSP = ("default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """CSP (unless the response set its own, stricter one), nosniff, no framing, no referrer, no caching."""

    def __init__(self, app: ASGIApp, *, hsts: bool = False) -> None:
        self.app, self.hsts = app, hsts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                if b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", CSP.encode()))
                headers += [(name, value) for name, value in SECURITY_HEADERS if name not in present]
                if self.hsts:
                    headers.append((b"strict-transport-security", b"max-age=31536000"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


class BodyTooLarge(Exception):
    pass


class BodyIdle(Exception):
    pass


class BodyLimit:
    """Refuse a request whose body is over `limit` bytes with 413: at once from its Content-Length,
    else as soon as the bytes streamed in pass it; and one whose body stops coming for `idle`
    seconds with 408 (a slow client holds no worker for ever)."""

    def __init__(self, app: ASGIApp, limit: int, idle: float = 30.0) -> None:
        self.app, self.limit, self.idle = app, limit, idle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _too_large(send, self.limit)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            try:
                message = await asyncio.wait_for(receive(), self.idle)
            except asyncio.TimeoutError:
                raise BodyIdle from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if not started:
                await _too_large(send, self.limit)
        except BodyIdle:
            if not started:
                await _refuse(send, 408, f"the request's body stopped coming for {self.idle:g} s; send it again\n")


async def _too_large(send: Send, limit: int) -> None:
    await _refuse(send, 413, f"the upload is over {limit // 2**20} MiB, the most this course takes\n")


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def session_secret(data_dir: Path) -> str:
    """The key that signs session cookies: made once (0600) in the data folder, so that sessions
    outlive a restart and every server process of the course shares it (a cookie one process
    signed is good at any other: the web processes keep no sessions of their own). Written to a
    temporary file and linked into place, so that processes starting together agree on one key
    and none reads a half-written file."""
    path = data_dir / "session.key"
    data_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd, temp = tempfile.mkstemp(dir=data_dir, prefix=".session-")
        try:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(48))
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temp, 0o600)
            try:
                os.link(temp, path)  # fails where another process linked its key first: then that one counts
            except FileExistsError:
                pass
        finally:
            os.unlink(temp)
    return path.read_text().strip()


def client_address(scope: Scope) -> str:
    """The peer's address (behind a proxy: uvicorn's --proxy-headers sets it from X-Forwarded-For)."""
    client = scope.get("client")
    return client[0] if client else "unknown"
