"""A real browser for the dashboard tests: Debian's chromium driven by Playwright.

We never run ``playwright install`` (it downloads a browser build of its own,
which CI cannot fetch): Playwright's Python package drives the system
``chromium`` through ``executable_path``.  ``.ci/run`` installs the package
(apt ``chromium``) and the ``test`` extra brings ``playwright``.

Without either, ``browser_or_skip()`` skips the test saying what is missing;
``SLURMLITE_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes that an error, as
the other ``SLURMLITE_REQUIRE_*`` switches do.  ``SLURMLITE_CHROMIUM`` names
another binary.

A page that logs an error is a broken page even when it looks right: a
script that throws, a stylesheet that 404s, an inline script blocked by the
Content-Security-Policy all show only in the console.  ``ConsoleErrors``
listens to a page's ``console`` (type ``error``) and ``pageerror`` events;
the ``page`` fixture fails the test with every message it heard, each with
the URL of the page that logged it, e.g.::

    /ui/plan: console: Failed to load resource: the server responded with a
    status of 404 (Not Found) [http://127.0.0.1:41234/ui/static/gantt.js]
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

REQUIRE = "SLURMLITE_REQUIRE_BROWSER"
CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path() -> str | None:
    """The chromium binary to drive, or None: ``$SLURMLITE_CHROMIUM``, then Debian's."""
    named = os.environ.get("SLURMLITE_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    found = next((p for p in CANDIDATES if os.access(p, os.X_OK)), None)
    return found or shutil.which("chromium")


def browser_or_skip() -> str:
    """The chromium binary; skip (or fail under ``SLURMLITE_REQUIRE_BROWSER=1``) without one."""
    missing = []
    if importlib.util.find_spec("playwright") is None:
        missing.append("the playwright package (pip install -e '.[test]')")
    binary = chromium_path()
    if binary is None:
        missing.append("chromium (apt-get install chromium)")
    if missing:
        why = "no browser for the dashboard tests: " + " and ".join(missing) + " missing"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{why} ({REQUIRE}=1)")
        pytest.skip(why)
    assert binary is not None
    return binary


@dataclass
class ConsoleErrors:
    """Every console error and uncaught exception of the pages it watches."""

    messages: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        def on_console(msg: Any) -> None:
            if msg.type == "error":
                where = msg.location.get("url", "") if msg.location else ""
                self.messages.append(f"{_path(page.url)}: console: {msg.text} [{where}]")

        def on_error(exc: Any) -> None:
            self.messages.append(f"{_path(page.url)}: uncaught: {exc}")

        page.on("console", on_console)
        page.on("pageerror", on_error)

    def assert_none(self) -> None:
        """Fail with the errors heard so far; each is reported once."""
        heard, self.messages = self.messages, []
        assert not heard, "the browser logged errors:\n" + "\n".join(heard)


def _path(url: str) -> str:
    return "/" + url.split("/", 3)[3] if url.count("/") >= 3 else url


def epoch(value: str) -> float:
    """A ``data-start``/``data-end`` value as Unix seconds: a number, or ISO 8601 (naive: UTC)."""
    try:
        return float(value)
    except ValueError:
        pass
    when = datetime.fromisoformat(value)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def artifacts_dir() -> Path:
    """Where screenshots go: ``$SLURMLITE_ARTIFACTS``, default ``tests/artifacts`` (git-ignored)."""
    named = os.environ.get("SLURMLITE_ARTIFACTS")
    path = Path(named) if named else Path(__file__).resolve().parents[1] / "artifacts"
    path.mkdir(parents=True, exist_ok=True)
    return path
