"""Logging in to the dashboard: a one-time link, or a pasted JSON Web Token.

``slurmlite ui`` calls ``POST /v1/ui/link`` over the controller's Unix
socket; the kernel names the caller, the controller answers a login URL
``http://HOST:PORT/ui/login?token=...`` (``controller.api.ui.tokens``: random,
two minutes, single use).  Opening it exchanges the token for a session
cookie (HttpOnly, SameSite=Strict, Secure behind https) and goes on to the
overview.  From another host, ``scontrol token`` gives a JWT to paste into
the login form (``auth/jwt`` must be configured); the form checks it with
the same ``Authenticator`` the API uses.

The form has no session to carry a CSRF token yet, so a POST whose
``Origin`` is another site is refused (403): a hostile page cannot log a
visitor in as the page's author.  A refused login says why in the page
(401) and opens nothing; a JWT's
session never outlives the JWT's own expiry by more than the session TTL
(the session is the dashboard's own, like Slurm's REST tokens it is short).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from controller.api.deps import Ctl, UserCaller
from controller.api.ui.render import render
from controller.api.ui.session import COOKIE, CsrfChecked, tokens
from controller.api.ui.tokens import SESSION_TTL
from slurmlite.errors import SlurmError

router = APIRouter()
api_router = APIRouter(prefix="/v1/ui", tags=["ui"])


def base_url(ctl: Ctl) -> str:
    """Where browsers reach this controller's TCP listener."""
    cfg = ctl.cfg
    host = cfg.control_addr or cfg.control_host or "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal
    return f"http://{host}:{cfg.slurmctld_port}"


@api_router.post("/link")
async def login_link(request: Request, caller: UserCaller, ctl: Ctl) -> dict[str, object]:
    """A one-time dashboard login link for the caller (``slurmlite ui``)."""
    token, expires = tokens(request).issue_link(caller.uid, caller.gid)
    return {
        "url": f"{base_url(ctl)}/ui/login?token={token}",
        "user": caller.user,
        "expires": expires,
    }


def _signed_in(request: Request, uid: int, gid: int) -> Response:
    sid = tokens(request).open_session(uid, gid)
    done = RedirectResponse("/ui/", status_code=303)
    done.set_cookie(
        COOKIE,
        sid,
        max_age=int(SESSION_TTL),
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return done


@router.get("/login")
async def login_page(request: Request, token: str = "") -> Response:
    """The link's target (``?token=``), else the form for a pasted JWT."""
    if token:
        found = tokens(request).redeem(token)
        if found is not None:
            return _signed_in(request, *found)
        return render(
            request,
            "login.html",
            status_code=401,
            problem="This login link is unknown, used or expired: run `slurmlite ui` again.",
        )
    return render(request, "login.html")


@router.post("/login")
async def login_jwt(request: Request, ctl: Ctl, jwt: Annotated[str, Form()] = "") -> Response:
    """A pasted ``scontrol token`` value (with or without the ``SLURM_JWT=`` prefix)."""
    origin = request.headers.get("origin")
    if origin and origin != f"{request.url.scheme}://{request.url.netloc}":
        # another site's form logging the browser in as someone else (login CSRF)
        return render(request, "login.html", status_code=403, problem="Log in from this page.")
    value = jwt.strip().removeprefix("SLURM_JWT=")
    problem = "Paste the value `scontrol token` printed."
    if value:
        try:
            caller = await ctl.identify({"x-slurm-user-token": value})
        except SlurmError as e:
            caller, problem = None, f"Token refused: {e.full}"
        if caller is not None:
            return _signed_in(request, caller.uid, caller.gid)
    return render(request, "login.html", status_code=401, problem=problem)


@router.post("/logout")
async def logout(request: Request, _viewer: CsrfChecked) -> Response:
    sid = request.cookies.get(COOKIE)
    if sid:
        tokens(request).close_session(sid)
    done = RedirectResponse("/ui/login", status_code=303)
    done.delete_cookie(COOKIE, path="/ui")
    return done
