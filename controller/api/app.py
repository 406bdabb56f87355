"""The controller's FastAPI application factory.

The same app serves the Unix socket (users' commands, ``auth/local``) and
TCP (node agents, signed requests).  Open paths: ``/health``, the probes
``/livez``, ``/readyz``, ``/healthz`` and ``/openapi.json``; ``/metrics``
has its own gate (``routes_metrics``: MetricsAuthUsers, PrivateData);
the dashboard (``/ui``, ``controller.api.ui``) its own login (``Viewer``);
everything else goes through an authentication dependency.  ``SlurmError`` becomes a JSON error with Slurm's errno and
message and a 4xx status — a client's mistake never yields a 500; so does
a malformed hostlist (``HostlistError``: 400, ESLURM_INVALID_NODE_NAME).
Request bodies are capped (``slurmlite.bodylimit``: 1 MiB, a submission
16 MiB; 413 beyond).
``app.state.submits`` is the group-commit queue that ``POST /v1/jobs``
feeds (``controller.jobs.submit_queue``).
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from controller.api import (
    problems,
    routes_accounts,
    routes_auth,
    routes_check,
    routes_cluster,
    routes_explain,
    routes_jobops,
    routes_jobs,
    routes_metrics,
    routes_priority,
    routes_reports,
    routes_runs,
    routes_shares,
    routes_steps,
)
from controller.api.deps import get_node, get_user
from controller.api.fastsubmit import MAX_SUBMIT_BODY
from controller.api.ui import api_router as ui_api_router
from controller.api.ui import router as ui_router
from controller.context import Controller
from controller.jobs.submit_queue import SubmitQueue
from controller.runs.snapshots import PART
from slurmlite import errors
from slurmlite.bodylimit import BodyLimit
from slurmlite.errors import SlurmError, http_status
from slurmlite.hostlist import HostlistError


def create_app(ctl: Controller, run_loop: bool = True) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        if run_loop:
            await ctl.start()
        yield
        if run_loop:
            await ctl.stop()

    app = FastAPI(
        title="slurmlite slurmctld",
        version="0.1.0",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.controller = ctl
    app.state.submits = SubmitQueue(ctl.jobs, lambda: ctl.loop.wake())
    ctl.metrics.submit_latency = app.state.submits.latency  # /metrics/jobs shows it
    app.include_router(routes_cluster.open_router)
    app.include_router(routes_jobs.router, dependencies=[Depends(get_user)])
    app.include_router(routes_jobops.router, dependencies=[Depends(get_user)])
    app.include_router(routes_steps.router, dependencies=[Depends(get_user)])
    app.include_router(routes_explain.router, dependencies=[Depends(get_user)])
    app.include_router(routes_cluster.user_router, dependencies=[Depends(get_user)])
    app.include_router(routes_auth.router_for(ctl), dependencies=[Depends(get_user)])
    app.include_router(routes_shares.router, dependencies=[Depends(get_user)])
    app.include_router(routes_accounts.router, dependencies=[Depends(get_user)])
    app.include_router(routes_priority.router, dependencies=[Depends(get_user)])
    app.include_router(routes_check.router, dependencies=[Depends(get_user)])
    app.include_router(routes_runs.router, dependencies=[Depends(get_user)])
    app.include_router(routes_reports.router, dependencies=[Depends(get_user)])
    app.include_router(routes_cluster.node_router, dependencies=[Depends(get_node)])
    app.include_router(routes_metrics.router)  # MetricsType, MetricsAuthUsers: its own gate
    app.include_router(ui_api_router, dependencies=[Depends(get_user)])  # slurmlite ui
    app.include_router(ui_router)  # the web dashboard: each page asks for its Viewer

    limits = {
        ("POST", "/v1/jobs"): MAX_SUBMIT_BODY,
        ("POST", "/v1/runs"): MAX_SUBMIT_BODY,
        ("PUT", "/v1/snapshots/parts"): PART,
    }
    app.add_middleware(BodyLimit, limits=limits)

    problems.install(app)  # a 422 names the fields in plain words

    @app.exception_handler(SlurmError)
    async def slurm_error(_request: Request, exc: SlurmError) -> JSONResponse:
        return JSONResponse(
            status_code=http_status(exc.code),
            content=exc.as_answer(),
        )

    @app.exception_handler(HostlistError)
    async def bad_hostlist(request: Request, exc: HostlistError) -> JSONResponse:
        return await slurm_error(request, SlurmError(errors.ESLURM_INVALID_NODE_NAME, str(exc)))

    return app
