"""Logging in to the dashboard: one-time links, sessions, JWT, logout, anonymous access."""

from __future__ import annotations

import os
import pwd

from fastapi.testclient import TestClient

from controller.auth.callers import user_name
from slurmlite import jwt
from slurmlite.config import parse_config
from tests.api.conftest import ALICE, BOB, CONF
from tests.api.ui_client import HTML, csrf_of, link_path, logged_in


def test_a_login_link_opens_a_session_cookie_that_scripts_cannot_read(harness):
    h = harness
    browser = TestClient(h.client.app)
    r = browser.get(link_path(h, ALICE), follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    page = browser.get("/ui/")  # the name is looked up again, as for a Unix-socket caller
    assert page.status_code == 200 and f'data-user="{user_name(ALICE.uid)}"' in page.text


def test_a_link_works_once_and_not_after_two_minutes(harness):
    h = harness
    path = link_path(h, ALICE)
    assert TestClient(h.client.app).get(path, follow_redirects=False).status_code == 303
    again = TestClient(h.client.app).get(path, follow_redirects=False)
    assert again.status_code == 401 and "slurmlite ui" in again.text
    late = link_path(h, ALICE)
    h.clock.advance(121)  # LINK_TTL is 120 s
    assert TestClient(h.client.app).get(late, follow_redirects=False).status_code == 401


def test_a_session_ends_after_its_lifetime(harness):
    browser = logged_in(harness, ALICE)
    harness.clock.advance(12 * 3600 + 1)
    r = browser.get("/ui/queue", headers=HTML, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"


def test_nobody_logged_in_is_sent_to_the_login_page_or_refused(harness):
    anon = TestClient(harness.client.app)
    r = anon.get("/ui/queue", headers=HTML, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    assert anon.get("/ui/events").status_code == 401  # not a page: no redirect
    assert anon.get("/ui/login").status_code == 200  # the login page itself is open
    forged = TestClient(harness.client.app, cookies={"slurmlite_ui": "made-up"})
    assert forged.get("/ui/", follow_redirects=False).status_code == 401


def test_logout_needs_the_csrf_token_and_ends_the_session(harness):
    browser = logged_in(harness, BOB)
    token = csrf_of(browser.get("/ui/").text)
    sid = browser.cookies["slurmlite_ui"]
    assert browser.post("/ui/logout", data={"csrf": "wrong"}).status_code == 403
    assert browser.get("/ui/").status_code == 200  # still logged in
    r = browser.post("/ui/logout", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    stale = TestClient(harness.client.app, cookies={"slurmlite_ui": sid})
    assert stale.get("/ui/", follow_redirects=False).status_code == 401


def _with_jwt(h, tmp_path) -> None:  # type: ignore[no-untyped-def]
    key = tmp_path / "jwt.key"
    key.write_bytes(b"k" * 32)
    key.chmod(0o600)
    extra = f"AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={key}\n"
    h.ctl.cfg = parse_config((CONF + extra).format(dir=tmp_path), path=str(tmp_path / "s.conf"))


def test_a_pasted_scontrol_token_logs_in_and_a_bad_one_says_why(harness, tmp_path):
    h = harness
    _with_jwt(h, tmp_path)
    user = next(p for p in pwd.getpwall() if p.pw_uid not in (0, os.geteuid()))
    token = jwt.make_token(b"k" * 32, user.pw_name, 600, h.clock())
    browser = TestClient(h.client.app)
    r = browser.post("/ui/login", data={"jwt": f"SLURM_JWT={token}"}, follow_redirects=False)
    assert r.status_code == 303
    assert f'data-user="{user.pw_name}"' in browser.get("/ui/").text
    elsewhere = TestClient(h.client.app).post(
        "/ui/login", data={"jwt": token}, headers={"origin": "https://evil.example"}
    )
    assert elsewhere.status_code == 403 and "slurmlite_ui" not in elsewhere.cookies
    bad = TestClient(h.client.app).post("/ui/login", data={"jwt": token[:-4] + "AAAA"})
    assert bad.status_code == 401 and "Token refused" in bad.text
    # a script may send the token itself (no cookie, so no CSRF token either)
    bearer = TestClient(h.client.app).get("/ui/queue", headers={"authorization": f"Bearer {token}"})
    assert bearer.status_code == 200 and f'data-user="{user.pw_name}"' in bearer.text


def test_anonymous_read_only_access_only_when_configured_and_only_from_loopback(harness):
    h = harness
    local = TestClient(h.client.app, client=("127.0.0.1", 50000))
    assert local.get("/ui/", follow_redirects=False).status_code == 401
    h.ctl.cfg.ui_anonymous = True
    page = local.get("/ui/")
    assert page.status_code == 200 and 'data-user="anonymous"' in page.text
    assert local.post("/ui/jobs/1/action", data={"action": "cancel"}).status_code == 403
    remote = TestClient(h.client.app, client=("192.0.2.7", 50000))
    assert remote.get("/ui/", follow_redirects=False).status_code == 401


def test_slurm_conf_turns_anonymous_access_on():
    assert not parse_config("ClusterName=c\n").ui_anonymous
    assert parse_config("ClusterName=c\nSlurmliteUiAnonymous=yes\n").ui_anonymous
