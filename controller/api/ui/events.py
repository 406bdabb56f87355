"""``GET /ui/events``: one server-sent event, ``changed``, when jobs or nodes change.

The pages are plain HTML; ``static/live.js`` listens here and reloads the
page when something it shows may have changed (and, where EventSource is
missing or the stream breaks, polls instead).  The stream carries no data
about jobs, only a counter, so it needs no filtering by who is looking; it
still needs a ``Viewer``.

How a change is noticed: every write of the controller goes through the
store's engine, whatever the path (ORM flushes, the fast submission's bare
statements, the loop's plan).  :class:`ChangeFeed` listens on the engine:
an ``INSERT``/``UPDATE``/``DELETE`` on ``jobs``, ``steps`` or ``nodes`` marks
the connection, and that connection's commit bumps ``version`` (a rolled
back transaction changed nothing).  Each stream compares the version it
last reported, at most every ``COALESCE`` seconds, so a burst of a
thousand submissions is one reload, not a thousand.

Example: a page opens the stream at version 41 -> ``sbatch`` commits job
57 -> version 42 -> within ``COALESCE`` s the stream sends
``event: changed`` / ``data: 42``.

A stream ends after ``MAX_STREAM`` seconds and EventSource reconnects by
itself (``retry``), which also checks the session again.  Streams are kept
short on purpose: uvicorn's graceful stop waits for open responses, and a
dashboard left open must not hold up a stopping slurmctld (``slurmlite
cluster down`` kills after 15 s).  Every reconnection carries the page's
``since``, so a change between two streams is reported at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from sqlalchemy import event
from sqlalchemy.engine import Engine

from controller.api.ui.session import Viewer

COALESCE = 1.0  # seconds between two "changed" events of one stream, at least
MAX_STREAM = 10.0  # seconds a stream lasts; the browser reconnects by itself
RETRY_MS = 1000  # how long EventSource waits before reconnecting
WATCHED = ("jobs", "steps", "nodes")

router = APIRouter()


def _touches_watched(statement: str) -> bool:
    head = statement.lstrip()[:7].upper()
    if head not in ("INSERT ", "UPDATE ", "DELETE "):
        return False
    words = statement[:80].replace('"', " ").split()
    return any(w in WATCHED for w in words[1:4])  # INSERT INTO jobs / UPDATE jobs / DELETE FROM


class ChangeFeed:
    """A counter that grows with every committed change of jobs, steps or nodes."""

    def __init__(self, engine: Engine) -> None:
        self.version = 0
        self.engine = engine
        event.listen(engine, "after_cursor_execute", self._executed)
        event.listen(engine, "commit", self._committed)
        event.listen(engine, "rollback", self._rolled_back)

    def _executed(self, conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if _touches_watched(statement):
            conn.info["ui_changed"] = True

    def _committed(self, conn: Any) -> None:
        if conn.info.pop("ui_changed", False):
            self.version += 1

    def _rolled_back(self, conn: Any) -> None:
        conn.info.pop("ui_changed", None)

    def close(self) -> None:
        event.remove(self.engine, "after_cursor_execute", self._executed)
        event.remove(self.engine, "commit", self._committed)
        event.remove(self.engine, "rollback", self._rolled_back)


def feed_of(request: Request) -> ChangeFeed:
    """The app's feed, listening from the first page view on."""
    state = request.app.state
    if getattr(state, "ui_feed", None) is None:
        state.ui_feed = ChangeFeed(state.controller.db.engine)
    return state.ui_feed


async def _stream(request: Request, feed: ChangeFeed, seen: int) -> AsyncIterator[str]:
    yield f"retry: {RETRY_MS}\ndata: {seen}\n\n"
    began = time.monotonic()
    while time.monotonic() - began < MAX_STREAM:
        await asyncio.sleep(COALESCE)
        if await request.is_disconnected():
            return
        if feed.version != seen:
            seen = feed.version
            yield f"event: changed\ndata: {seen}\n\n"


@router.get("/events")
async def events(request: Request, _viewer: Viewer, since: int | None = None) -> StreamingResponse:
    """The stream; ``since`` (the version a page was rendered at) reports a change that
    happened between the page and the stream's start at once."""
    feed = feed_of(request)
    seen = feed.version if since is None else since
    return StreamingResponse(
        _stream(request, feed, seen),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.get("/version")
async def version(request: Request, _viewer: Viewer) -> dict[str, int]:
    """The polling fallback: the current version (the page reloads when it moved)."""
    return {"version": feed_of(request).version}
