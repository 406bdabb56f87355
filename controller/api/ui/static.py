"""The dashboard's static files: its style sheet, the live-refresh script, and the queue's
explanation loader (``explain.js``).

Served by the app itself from ``controller/api/ui/static`` (no npm, no build
step, no CDN: the pages work on a cluster without internet).  Only the
names listed in ``FILES`` are served, so no request can read another file.
All are public (the login page needs the style too) and carry nothing
secret.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

HERE = Path(__file__).parent / "static"
FILES = {
    "dashboard.css": "text/css; charset=utf-8",
    "live.js": "text/javascript; charset=utf-8",
    "explain.js": "text/javascript; charset=utf-8",
}

router = APIRouter()


@router.get("/static/{name}")
async def static_file(name: str) -> Response:
    kind = FILES.get(name)
    if kind is None:
        raise HTTPException(404, "no such file")
    return Response(
        (HERE / name).read_bytes(),
        media_type=kind,
        headers={"Cache-Control": "max-age=300", "X-Content-Type-Options": "nosniff"},
    )
