"""``POST /v1/jobs`` without the framework's per-request detours.

A submission is the API's hottest request (a burst of sbatch, a workflow
engine filling the queue), and most of its cost used to be generic
machinery rather than work: FastAPI parsing the JSON with ``json.loads``,
validating the dict into the pydantic mirror ``JobSubmitModel``, dumping it
back to a dict for ``from_dict``, then validating and encoding the answer
through the response model.  Here instead:

* the raw body is validated by pydantic-core *straight into* the
  ``JobSubmit`` dataclass (``TypeAdapter.validate_json``: one pass, same
  field types and defaults as the mirror, unknown keys ignored): ~15 us
  instead of ~65 us for a 2 kB request;
* a malformed body raises FastAPI's own ``RequestValidationError``, with
  the ``("body", ...)`` locations FastAPI would give, so the client sees the
  same 422 (in plain words: ``controller.api.problems``) either way;
* the job goes through the group commit (``controller.jobs.submit_queue``) and the
  answer is written as JSON directly;
* the ``Idempotency-Key`` and ``X-Slurmlite-Deadline`` headers
  (``slurmlite.idempotency``) travel with it: a key repeated by the same user
  is answered with the first job, a request past its deadline stores
  nothing.  A malformed one is a 422 naming the header.

Authentication is untouched: the route still declares the ``UserCaller``
dependency (401 before the body is even read), and the
request body's schema still appears in ``/openapi.json`` (``SUBMIT_BODY``).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

from controller.api.problems import validation_answer
from controller.api.schemas import JobSubmitModel
from controller.auth.callers import Caller
from controller.jobs.submit_keys import Attempt
from slurmlite.idempotency import DEADLINE_HEADER, KEY_HEADER, parse_deadline, valid_key
from slurmlite.protocol import JobSubmit
from slurmlite.scriptbytes import ScriptEncodingError, wire_bytes
from slurmlite.wire_limits import bad_choice

_SUBMISSION: TypeAdapter[JobSubmit] = TypeAdapter(JobSubmit)

# the request body as /openapi.json documents it (the route reads the body itself)
SUBMIT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": JobSubmitModel.model_json_schema()}},
    }
}


def parse_submission(body: bytes) -> JobSubmit:
    """The request body as a ``JobSubmit``; ``RequestValidationError`` (-> 422) if malformed
    or if a field with a closed vocabulary (``open_mode``, ``script_encoding``) holds
    another word."""
    try:
        req = _SUBMISSION.validate_json(body)
    except ValidationError as e:
        raise RequestValidationError(
            [
                {**err, "loc": ("body", *err["loc"])}
                for err in e.errors(include_url=False, include_input=False)
            ],
            body=body,
        ) from None
    bad = bad_choice(req)
    if bad is not None:
        field, why = bad
        raise RequestValidationError([{"loc": ("body", field), "msg": why, "type": "choice"}])
    if req.script_encoding is not None:  # base64 (a script that is not UTF-8): is it?
        try:
            wire_bytes(req.script, req.script_encoding)
        except ScriptEncodingError:
            why = "not valid base64 (script_encoding is base64)"
            raise RequestValidationError(
                [{"loc": ("body", "script"), "msg": why, "type": "value_error"}]
            ) from None
    return req


def parse_attempt(key: str | None, deadline: str | None) -> Attempt | None:
    """The two delivery headers as an ``Attempt`` (None if neither was sent);
    ``RequestValidationError`` (-> 422 naming the header) if one is malformed."""
    if key is None and deadline is None:
        return None
    problems = []
    if key is not None and not valid_key(key):
        problems.append((KEY_HEADER, "1 to 255 printable ASCII characters, no spaces"))
    when = None if deadline is None else parse_deadline(deadline)
    if deadline is not None and when is None:
        problems.append((DEADLINE_HEADER, "a Unix time in seconds"))
    if problems:
        raise RequestValidationError(
            [
                {"type": "value_error", "loc": ("header", name), "msg": f"must be {what}"}
                for name, what in problems
            ]
        )
    return Attempt(key, when)


async def submit_job(caller: Caller, request: Request) -> Response:
    """Validate, queue for the next commit, answer ``SubmitResult`` once stored."""
    headers = request.headers
    attempt = parse_attempt(headers.get(KEY_HEADER), headers.get(DEADLINE_HEADER))
    req = parse_submission(await request.body())
    job_id, message = await request.app.state.submits.submit(caller, req, attempt)
    answer = json.dumps({"job_id": job_id, "test_only_message": message})
    return Response(answer, media_type="application/json")


# a TCP submission carrying one of these is authenticated here (controller.auth.authenticate)
_AUTH_HEADERS = (b"x-slurmlite-munge", b"x-slurm-user-token")

MAX_SUBMIT_BODY = 16 * 1024 * 1024  # bytes: a 4 MiB script plus its environment, with room


class SubmitShortcut:
    """An ASGI app in front of the FastAPI one: ``POST /v1/jobs`` goes straight to
    validation and the group commit.

    The framework's routing, middleware and dependency resolution cost about half
    of a submission's CPU in the controller; a submission needs none of them.
    Everything is as the FastAPI route does it: the caller comes from the Unix
    socket's peer credentials, or over TCP from a munge credential or token
    header (``controller.auth.authenticate``, checked before the body is read; a request
    with neither goes on to FastAPI, which answers 401), a malformed body gets
    the same 422 body, a refusal its Slurm errno and 4xx status (a bad
    credential: the 401 body of ``get_user``), the answer comes after the commit.
    Every other request, and every request while tests override dependencies,
    goes to FastAPI unchanged.  Attributes (``state``, ``openapi``...) are the
    FastAPI app's.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:  # type: ignore[type-arg]
        if (
            scope["type"] == "http"
            and scope["path"] == "/v1/jobs"
            and scope["method"] == "POST"
            and not self.app.dependency_overrides
        ):
            if scope.get("state", {}).get("peercred"):
                await self._submit(scope, receive, send)
                return
            if any(name in _AUTH_HEADERS for name, _ in scope["headers"]):
                await self._submit_remote(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _submit_remote(self, scope: dict, receive: Any, send: Any) -> None:  # type: ignore[type-arg]
        """TCP with a munge credential or a token: authenticate first, then as ``_submit``."""
        from slurmlite.errors import SlurmError

        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            caller = await self.app.state.controller.identify(headers)
        except SlurmError as exc:  # the 401 body FastAPI's get_user gives
            await _answer(send, 401, {"detail": exc.as_answer()})
            return
        await self._submit(scope, receive, send, caller)

    async def _submit(
        self,
        scope: dict,  # type: ignore[type-arg]
        receive: Any,
        send: Any,
        caller: Caller | None = None,
    ) -> None:
        from slurmlite.errors import SlurmError, http_status

        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left: nothing was queued
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_SUBMIT_BODY:
                detail = f"request body over {MAX_SUBMIT_BODY} bytes"
                await _answer(send, 413, {"detail": detail})
                return
        state = self.app.state
        if caller is None:
            _pid, uid, gid = scope["state"]["peercred"]
            caller = state.controller.admins.caller(uid, gid)
        try:
            attempt = parse_attempt(*_delivery(scope["headers"]))
            req = parse_submission(body)
            job_id, msg = await state.submits.submit(caller, req, attempt)
        except RequestValidationError as exc:
            await _answer(send, 422, validation_answer(exc.errors()))
            return
        except SlurmError as exc:
            await _answer(send, http_status(exc.code), exc.as_answer())
            return
        await _answer(send, 200, {"job_id": job_id, "test_only_message": msg})


_KEY, _DEADLINE = KEY_HEADER.lower().encode(), DEADLINE_HEADER.lower().encode()


def _delivery(headers: list[tuple[bytes, bytes]]) -> tuple[str | None, str | None]:
    """The raw ``Idempotency-Key`` and ``X-Slurmlite-Deadline`` of an ASGI request."""
    key = deadline = None
    for name, value in headers:
        if name == _KEY:
            key = value.decode("latin-1")
        elif name == _DEADLINE:
            deadline = value.decode("latin-1")
    return key, deadline


async def _answer(send: Any, status: int, content: object) -> None:
    data = json.dumps(content, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
