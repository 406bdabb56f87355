"""``/ui/events``: a real HTTP server streams "changed" after a submission.

The app runs in uvicorn on a loopback port (a thread of the test), a
browser-like httpx client logs in with a one-time link and reads the
stream; the submission goes through the API as ``sbatch`` sends it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from tests.api.conftest import ALICE
from tests.api.ui_client import link_path


@pytest.fixture
def served(harness) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The harness's app on 127.0.0.1:PORT, stopped at the end even if the test fails."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(harness.client.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def read_events(stream: httpx.Response, deadline: float) -> Iterator[tuple[str, str]]:
    """(event, data) pairs of a server-sent-events stream, until ``deadline``."""
    name, data = "message", ""
    for line in stream.iter_lines():
        assert time.monotonic() < deadline, "no event in time"
        if line == "":
            if data:
                yield name, data
            name, data = "message", ""
        elif line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = line[6:]


def test_the_stream_says_changed_after_a_submission(harness, served):
    h = harness
    with httpx.Client(base_url=served, timeout=10) as browser:
        assert browser.get(link_path(h, ALICE)).status_code == 303  # the cookie is set
        with browser.stream("GET", "/ui/events") as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = read_events(stream, time.monotonic() + 10)
            first = next(events)
            assert first[0] == "message"  # the version the stream started at
            h.as_user(ALICE)
            h.submit()
            name, version = next(events)
            assert name == "changed" and int(version) > int(first[1])


def test_a_page_rendered_before_a_change_learns_of_it_at_once(harness, served):
    h = harness
    with httpx.Client(base_url=served, timeout=10) as browser:
        browser.get(link_path(h, ALICE))
        page = browser.get("/ui/queue").text
        since = page.split('data-version="', 1)[1].split('"', 1)[0]
        h.as_user(ALICE)
        h.submit()
        assert int(browser.get("/ui/version").json()["version"]) > int(since)
        with browser.stream("GET", f"/ui/events?since={since}") as stream:
            events = read_events(stream, time.monotonic() + 10)
            next(events)
            assert next(events)[0] == "changed"
