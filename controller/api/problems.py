"""A 422 in plain words: what the API answers for a request it cannot read.

FastAPI's default answer to a malformed request is pydantic's error list,
``{"detail": [{"type": ..., "loc": ["body", "open_mode"], "msg": ...,
"input": ..., "ctx": ...}]}``: right for a program, a raw dump for a person
(sbatch used to print it whole).  Every 422 of the controller -- the
FastAPI routes (``install``) and the submission fast path
(``controller.api.fastsubmit``) -- is built here instead, the same way:

* ``detail`` keeps the list, each entry reduced to ``loc``, ``msg`` and
  ``type`` (no echo of the input: it may be a 16 MiB script);
* ``message`` says it in one line naming each field, without the
  ``body.``/``query.`` prefix, e.g. ``open_mode must be one of truncate,
  append, not 'junk'`` or ``nodes_min: Input should be a valid integer``;
  that line is what a command prints (``cli.client``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

_WHERE = {"body", "query", "path", "header", "cookie"}


def _field(loc: Sequence[Any]) -> str:
    parts = list(loc)
    if parts and parts[0] in _WHERE:
        parts = parts[1:]
    return ".".join(str(p) for p in parts) or "the request body"


def _line(err: dict[str, Any]) -> str:
    field, kind, msg = _field(err.get("loc", ())), err.get("type", ""), err.get("msg", "")
    if kind.startswith("json"):
        return f"the request body is not valid JSON ({msg})"
    if kind == "missing":
        return f"{field} is required"
    if kind == "choice":  # our own closed-vocabulary check: the message names the field
        return msg
    return f"{field}: {msg}"


def plain_words(errors: Iterable[dict[str, Any]]) -> str:
    """Every problem of a validation error list, in one line."""
    return "; ".join(_line(e) for e in errors)


def validation_answer(errors: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The 422's body: ``{"detail": [{loc, msg, type}], "message": "<plain words>"}``."""
    detail = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type", "")}
        for e in errors
    ]
    return {"detail": detail, "message": plain_words(detail)}


def install(app: FastAPI) -> None:
    """Answer every ``RequestValidationError`` of ``app`` with :func:`validation_answer`."""

    @app.exception_handler(RequestValidationError)
    async def unreadable(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content=validation_answer(exc.errors()))
