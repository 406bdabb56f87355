"""Who is looking at the dashboard, and the CSRF check of its forms.

``Viewer`` (a FastAPI dependency) names the person behind a request, trying
in order:

1. the session cookie ``slurmlite_ui`` (``controller.api.ui.tokens``), opened by
   a one-time link from ``slurmlite ui`` or a pasted ``scontrol token``;
2. the Unix socket's peer credentials (a command or a test on the host);
3. a JSON Web Token as ``Authorization: Bearer <jwt>`` or
   ``X-SLURM-USER-TOKEN`` (scripts and remote hosts; ``auth/jwt``);
4. ``ANONYMOUS`` (read-only, may act on nothing) when slurm.conf says
   ``SlurmliteUiAnonymous=yes`` and the client is on a loopback address.

Nobody: a browser's page request is sent to ``/ui/login`` (303), anything
else gets 401.  The result is a ``controller.auth.callers.Caller`` like
any command's, so the pages apply the commands' own rules
(``may_act_on``, ``PrivateData``).

CSRF: a cookie travels with any request the browser makes, including one
a hostile page provokes, so every POST of a cookie session must carry the
session's ``csrf`` token in a hidden form field (``CsrfChecked``); the
cookie is also ``SameSite=Strict``.  A Bearer token or peer credentials are
never sent by a browser on its own, so those requests need no token.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Annotated

from fastapi import Depends, HTTPException, Request

from controller.api.ui.tokens import UiTokens
from controller.auth.callers import Caller
from controller.context import Controller
from slurmlite.errors import SlurmError

COOKIE = "slurmlite_ui"
ANONYMOUS = Caller(uid=-1, gid=-1, user="anonymous")


def tokens(request: Request) -> UiTokens:
    """The app's login links and sessions (made on first use)."""
    state = request.app.state
    if getattr(state, "ui_tokens", None) is None:
        state.ui_tokens = UiTokens(state.controller.clock)
    return state.ui_tokens


def is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _find(request: Request) -> tuple[Caller | None, str]:
    """The viewer and how they proved it: "session", "socket", "token", "anonymous" or ""."""
    ctl: Controller = request.app.state.controller
    sid = request.cookies.get(COOKIE)
    found = tokens(request).session(sid) if sid else None
    if found is not None:
        request.state.ui_session = found
        return ctl.admins.caller(found.uid, found.gid), "session"
    creds = getattr(request.state, "peercred", None)
    if creds:
        return ctl.admins.caller(creds[1], creds[2]), "socket"
    headers = dict(request.headers)
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        headers["x-slurm-user-token"] = bearer[7:].strip()
    try:
        caller = await ctl.identify(headers)
    except SlurmError:
        caller = None
    if caller is not None:
        return caller, "token"
    client = request.client.host if request.client else None
    if ctl.cfg.ui_anonymous and is_loopback(client):
        return ANONYMOUS, "anonymous"
    return None, ""


async def get_viewer(request: Request) -> Caller:
    """The ``Viewer`` dependency: the caller, or a redirect to the login page / 401."""
    viewer, how = await _find(request)
    if viewer is None:
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            raise HTTPException(303, "log in first", headers={"Location": "/ui/login"})
        raise HTTPException(401, "log in first: run `slurmlite ui` for a login link")
    request.state.ui_viewer = viewer
    request.state.ui_how = how
    return viewer


Viewer = Annotated[Caller, Depends(get_viewer)]


def current_viewer(request: Request) -> Caller | None:
    """The viewer ``Viewer`` found for this request (None before it ran, e.g. on /ui/login)."""
    return getattr(request.state, "ui_viewer", None)


def csrf_token(request: Request) -> str:
    """The value the page's POST forms carry in their hidden ``csrf`` field ("" without a
    cookie session: such requests are not exposed to cross-site forgery)."""
    found = getattr(request.state, "ui_session", None)
    return found.csrf if found is not None else ""


async def check_csrf(request: Request, viewer: Viewer) -> Caller:
    """``CsrfChecked``: the viewer of a POST whose form carries the session's token (403 if
    not); anonymous viewers may not post at all."""
    if request.state.ui_how == "anonymous":
        raise HTTPException(403, "anonymous dashboard access is read-only: log in")
    if request.state.ui_how == "session":
        sent = str((await request.form()).get("csrf", ""))
        if not hmac.compare_digest(sent.encode(), csrf_token(request).encode()):
            raise HTTPException(403, "CSRF token missing or wrong: reload the page and retry")
    return viewer


CsrfChecked = Annotated[Caller, Depends(check_csrf)]
