"""The request-body cap (``slurmlite.bodylimit``), driven as a server drives an ASGI app."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from slurmlite.bodylimit import BodyLimit


class Echo:
    """An app that reads the whole body and answers its length; notes each call."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        self.calls += 1
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        after = await receive()  # what the server says next (here: the client left)
        data = json.dumps({"length": len(body), "after": after["type"]}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": data})


def serve(app: Any, chunks: list[bytes], path: str = "/v1/x", length: int | None = None):
    """Send one POST in ``chunks`` (``length``: its Content-Length header); return
    (status, answer, chunks the server handed out)."""
    headers = [] if length is None else [(b"content-length", str(length).encode())]
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
    pending = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]
    given = 0
    sent: list[dict] = []

    async def receive() -> dict:
        nonlocal given
        if given < len(pending):
            given += 1
            return pending[given - 1]
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    if not sent:
        return None, None, given
    return sent[0]["status"], json.loads(sent[1]["body"]), given


def test_a_body_within_the_limit_reaches_the_app_whole():
    app = Echo()
    status, answer, _ = serve(BodyLimit(app, default=10), [b"12345", b"67890"])
    assert (status, answer) == (200, {"length": 10, "after": "http.disconnect"})


def test_an_announced_body_over_the_limit_is_refused_unread():
    app = Echo()
    status, answer, given = serve(BodyLimit(app, default=10), [b"x" * 11], length=11)
    assert (status, given, app.calls) == (413, 0, 0)  # nothing read, the app never ran
    assert answer == {"detail": "request body over 10 bytes (POST /v1/x)"}


def test_a_streamed_body_is_refused_as_soon_as_it_passes_the_limit():
    app = Echo()
    # no Content-Length; chunks of 4 bytes: the third brings the count to 12 > 10
    status, _, given = serve(BodyLimit(app, default=10), [b"abcd"] * 5)
    assert (status, given, app.calls) == (413, 3, 0)


def test_limits_are_per_route():
    app = Echo()
    capped = BodyLimit(app, default=10, limits={("POST", "/v1/big"): 100})
    assert serve(capped, [b"x" * 50], path="/v1/big")[0] == 200
    assert serve(capped, [b"x" * 50], path="/v1/x")[0] == 413


def test_a_client_leaving_mid_body_gets_no_answer():
    app = Echo()

    async def scenario() -> list[dict]:
        sent: list[dict] = []
        messages = iter([{"type": "http.request", "body": b"ab", "more_body": True}])

        async def receive() -> dict:
            return next(messages, {"type": "http.disconnect"})

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
        await BodyLimit(app)(scope, receive, send)
        return sent

    assert asyncio.run(scenario()) == [] and app.calls == 0
