"""A cap on request bodies, for both daemons' HTTP servers (413 beyond it).

uvicorn reads whatever body a client sends, and FastAPI keeps it in memory
whole before a route sees it: without a cap, one request of a few GiB (a
buggy client, or anyone who can reach the port, before any credential is
checked) is enough to exhaust the daemon's memory.  ``BodyLimit`` is a
plain ASGI wrapper (no framework: the agent and the controller both use it,
and ``slurmlite`` imports nothing outside the standard library) that

* answers ``413`` at once when ``Content-Length`` announces more than the
  limit, before reading anything;
* otherwise reads the body itself, counting, and answers ``413`` as soon as
  the count passes the limit (a chunked upload announces no length);
* hands a body within the limit to the application unchanged, as if it
  had read it from the socket (later ``receive`` calls, e.g. a wait for the
  client leaving, go to the server as before).

The limit is per route: ``limits`` maps ``(METHOD, path)`` to a larger (or
smaller) cap, e.g. ``{("POST", "/v1/jobs"): 16 MiB}`` for a submission that
carries a 4 MiB script and its environment; every other request gets
``default`` (1 MiB: a control message is a few kB).  Uploads that need more
get their own route and limit.

Worked example: ``BodyLimit(app, 1 << 20)``; a POST of 3 MiB to
``/v1/jobs/cancel`` -> ``413 {"detail": "request body over 1048576 bytes
(POST /v1/jobs/cancel)"}``, and ``app`` never runs.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]

MiB = 1024 * 1024
DEFAULT_LIMIT = 1 * MiB


class BodyLimit:
    """``app`` behind a request-body cap (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        default: int = DEFAULT_LIMIT,
        limits: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        self.app = app
        self.default = default
        self.limits = dict(limits or {})

    def __getattr__(self, name: str) -> Any:  # state, openapi...: the wrapped app's
        return getattr(self.app, name)

    def limit_for(self, method: str, path: str) -> int:
        return self.limits.get((method, path), self.default)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["method"], scope["path"])
        over = f"request body over {limit} bytes ({scope['method']} {scope['path']})"
        if _declared_length(scope) > limit:
            await _too_large(send, over)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left: nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _too_large(send, over)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _declared_length(scope: dict[str, Any]) -> int:
    """The ``Content-Length`` header's value; 0 when absent or not a number."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isascii() and text.isdigit() else 0
    return 0


async def _too_large(send: Send, detail: str) -> None:
    data = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"connection", b"close"),  # the rest of the body is not read: end the connection
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": data})
