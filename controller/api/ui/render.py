"""Rendering a dashboard page: one Jinja2 environment, one ``render`` helper.

Every page is server-rendered HTML that reads without JavaScript.  Templates
live in ``controller/api/ui/templates`` and extend ``layout.html`` (blocks
``title`` and ``content``).  ``render(request, "queue.html", jobs=...)`` adds
what every page needs: ``viewer`` (who is looking, or None on the login
page), ``csrf`` (the hidden field's value for the page's POST forms),
``flash`` (one message carried over a redirect in the ``flash`` query
parameter), ``nav`` (the links of the menu) and ``version`` (the change
counter the page was rendered at, for the live refresh: ``events.py``).

Autoescaping is on for every template: a job name such as
``<script>`` shows as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).parent / "templates"

NAV = (
    ("/ui/", "Overview"),
    ("/ui/queue", "Queue"),
    ("/ui/plan", "Plan"),
    ("/ui/whatif", "What if"),
    ("/ui/nodes", "Nodes"),
    ("/ui/fairshare", "Fair share"),
)

env = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(request: Request, name: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
    """The template ``name`` filled with ``ctx`` plus the page-wide values, as a response."""
    from controller.api.ui.events import feed_of
    from controller.api.ui.session import csrf_token, current_viewer

    page = {
        "version": feed_of(request).version,
        "request": request,
        "viewer": current_viewer(request),
        "csrf": csrf_token(request),
        "flash": request.query_params.get("flash", ""),
        "nav": NAV,
        "path": request.url.path,
    }
    page.update(ctx)
    html = env.get_template(name).render(**page)
    return HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)


# no framing by other sites (clickjacking), no guessing of content types; scripts only ours
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'none'",
    "Cache-Control": "no-store",
}
