"""``/metrics/...`` (OpenMetrics) and the probes ``/livez``, ``/readyz``, ``/healthz``.

Metrics follow Slurm 25.11 (``src/slurmctld/http.c``, doc ``metrics.shtml``):

* off unless ``MetricsType=metrics/openmetrics``: then every ``/metrics``
  path is 404;
* open unless access is *restricted*: ``MetricsAuthUsers`` is set, or
  ``PrivateData`` is set without ``MetricsParameters=ignore_private_data``.
  Open means open to any authenticated user, and to anonymous scrapes from
  the controller's own host (loopback, the Unix socket); anonymous scrapes
  from other hosts only with ``MetricsParameters=open`` (slurmlite's: Slurm
  serves them to anyone, but the per-GPU series name users and jobs);
* restricted: the caller must prove who they are — peer credentials on the
  Unix socket, or a JWT from ``scontrol token`` as ``Authorization: Bearer``
  (Prometheus' way) or ``X-SLURM-USER-TOKEN`` (Slurm's) — and be root, the
  SlurmUser, an operator (``SlurmliteAdminUsers``) or listed in
  ``MetricsAuthUsers``.  No proof: 401; the wrong user: 403; a refusal is
  Slurm's text (``slurmctld HTTP server request for 'GET /metrics/jobs':``
  then ``Failed: ...``).

Probes, as slurmctld answers them: ``/livez`` and ``/healthz`` 204 while the
controller runs; ``/readyz`` 204 when the store answers and the scheduling
loop has run a pass recently, else 500 ("not ready"); ``/readyz?verbose``
(root, SlurmUser and operators only) 200 with one line per check.  Probes
need no credentials, as in Slurm: they say nothing about jobs.

The endpoints are plain ``def``: FastAPI runs them in its thread pool, so a
scrape's store reads never stall the event loop, and none takes the
scheduler's pass (see ``controller.metrics.service``).
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool

from controller.api.deps import Ctl
from controller.auth.authenticate import HEADER_TOKEN
from controller.auth.callers import Caller
from controller.context import Controller
from controller.metrics.service import ENDPOINTS
from slurmlite.errors import SlurmError
from slurmlite.openmetrics import CONTENT_TYPE

router = APIRouter(tags=["metrics"], include_in_schema=False)
LOOP_STALE = 30.0  # seconds without a finished pass after which the controller is not ready


def _refuse(request: Request, status: int, why: str) -> PlainTextResponse:
    what = f"slurmctld HTTP server request for '{request.method} {request.url.path}':\n"
    return PlainTextResponse(f"{what}Failed: {why}\n", status_code=status)


def restricted(ctl: Controller) -> bool:
    """Whether metrics need a caller who may see them (see the module doc)."""
    cfg = ctl.cfg
    if cfg.metrics_auth_users:
        return True
    ignore = "ignore_private_data" in {p.lower() for p in cfg.metrics_parameters}
    return bool(cfg.private_data) and not ignore


async def _caller(request: Request, ctl: Controller) -> Caller | None:
    creds = getattr(request.state, "peercred", None)
    if creds:
        return ctl.admins.caller(creds[1], creds[2])
    headers = dict(request.headers)
    bearer = headers.get("authorization", "")
    if HEADER_TOKEN not in headers and bearer[:7].lower() == "bearer ":
        headers[HEADER_TOKEN] = bearer[7:].strip()
    return await ctl.identify(headers)


async def _gate(request: Request, ctl: Controller) -> Response | None:
    """None when the request may read metrics, else the refusal to send."""
    if ctl.cfg.metrics_type.lower() != "metrics/openmetrics":
        return _refuse(
            request, 404, "metrics are off (slurm.conf: MetricsType=metrics/openmetrics)"
        )
    limited = restricted(ctl)
    if not limited and _anonymous_ok(request, ctl):
        return None
    try:
        caller = await _caller(request, ctl)
    except SlurmError as e:
        return _refuse(request, 401, e.message)
    if caller is None:
        return _refuse(request, 401, "Authentication failure: send a JWT (scontrol token)")
    if not limited or caller.admin or caller.user in ctl.cfg.metrics_auth_users:
        return None
    return _refuse(request, 403, "Operation not permitted")


def _anonymous_ok(request: Request, ctl: Controller) -> bool:
    """An open endpoint's anonymous scrape: from this host, or anyone's with
    ``MetricsParameters=open``."""
    if "open" in {p.lower() for p in ctl.cfg.metrics_parameters}:
        return True
    if getattr(request.state, "peercred", None):
        return True  # the Unix socket: this host
    host = request.client.host if request.client else ""
    return host == "::1" or host.startswith("127.")


def _answer(body: str) -> Response:
    return Response(body, media_type=CONTENT_TYPE)


@router.get("/metrics")
async def index(request: Request, ctl: Ctl) -> Response:
    refused = await _gate(request, ctl)
    if refused is not None:
        return refused
    lines = "".join(f"  '{path}': {what}\n" for path, what in ENDPOINTS)
    return PlainTextResponse("slurmctld index of metrics endpoints:\n" + lines)


def _endpoint(path: str, build_name: str) -> None:
    async def serve(request: Request, ctl: Ctl) -> Response:
        refused = await _gate(request, ctl)
        if refused is not None:
            return refused
        build = getattr(ctl.metrics, build_name)
        return _answer(await run_in_threadpool(build))

    serve.__name__ = f"metrics_{build_name}"
    router.add_api_route(path, serve, methods=["GET"])


for _path, _build in (
    ("/metrics/jobs", "jobs"),
    ("/metrics/nodes", "nodes"),
    ("/metrics/partitions", "partitions"),
    ("/metrics/jobs-users-accts", "users_accounts"),
    ("/metrics/scheduler", "scheduler"),
):
    _endpoint(_path, _build)


# ------------------------------------------------------------------ probes


@router.get("/livez")
@router.get("/healthz")
def live() -> Response:
    return Response(status_code=204)


def readiness(ctl: Controller) -> list[tuple[str, bool, str]]:
    """(check, passed, detail) for the store and the scheduling loop."""
    checks = []
    try:
        with ctl.db.read() as s:
            s.execute(text("SELECT 1"))
        checks.append(("store", True, "reachable"))
    except Exception as e:  # any failure to answer is "not ready"
        checks.append(("store", False, f"unreachable: {type(e).__name__}"))
    ended = ctl.loop.last_end
    ago = time.monotonic() - ended if ended is not None else None
    if not ctl.loop_running:
        checks.append(("scheduler", False, "loop not running"))
    elif ago is not None and ago > LOOP_STALE:
        checks.append(("scheduler", False, f"no pass for {ago:.0f} s"))
    else:
        done = "no pass yet" if ago is None else f"last pass {ago:.1f} s ago"
        checks.append(("scheduler", True, f"running, {done}"))
    return checks


@router.get("/readyz")
async def ready(request: Request, ctl: Ctl) -> Response:
    verbose = request.url.query.lower() == "verbose"
    if verbose:
        caller = None
        try:
            caller = await _caller(request, ctl)
        except SlurmError as e:
            return _refuse(request, 401, e.message)
        if caller is None:
            return _refuse(request, 401, "Authentication failure")
        if not caller.admin:
            return _refuse(request, 403, "Operation not permitted")
    checks = await run_in_threadpool(readiness, ctl)
    ok = all(passed for _name, passed, _detail in checks)
    if not verbose:
        return Response(status_code=204 if ok else 500)
    body = "".join(f"{name}: {'ok' if passed else 'FAILED'}: {d}\n" for name, passed, d in checks)
    return PlainTextResponse(body, status_code=200 if ok else 500)
