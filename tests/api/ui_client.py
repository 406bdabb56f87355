"""Dashboard test helpers: a browser-like client logged in the way a user logs in.

``logged_in(h, caller)`` asks for a login link as ``caller`` (``POST
/v1/ui/link``, the harness standing in for the Unix socket's peer
credentials), opens it with a fresh client (its own cookie jar, like a
second browser) and returns that client, whose cookie now carries the
session.  ``csrf_of(html)`` reads the hidden field a page's forms carry.
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from controller.auth.callers import Caller

HTML = {"accept": "text/html"}


def link_path(h, caller: Caller) -> str:  # type: ignore[no-untyped-def]
    """The path of a fresh login link for ``caller``."""
    h.as_user(caller)
    r = h.client.post("/v1/ui/link")
    assert r.status_code == 200, r.text
    url = r.json()["url"]
    return url[url.index("/ui/login") :]


def logged_in(h, caller: Caller) -> TestClient:  # type: ignore[no-untyped-def]
    browser = TestClient(h.client.app)
    r = browser.get(link_path(h, caller), follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/", r.text
    return browser


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]*)"', html)
    assert found, "no form with a CSRF field on the page"
    return found.group(1)
