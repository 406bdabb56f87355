"""The dashboard's read-only pages: overview, queue, nodes, fair share.

Every page reads what the matching command reads, through the same
services, as the viewer: ``JobService.list_jobs`` (squeue; ``PrivateData``
narrows it), ``NodeService.infos`` (sinfo; outside users' names hidden
under ``PrivateData=users``), ``PriorityService.shares`` (sshare -l), and
``explain_job`` (``slurmlite explain``), whose text the queue shows in each
pending row's ``<details>`` -- rendered by the command's own
``cli.slurmlite_explain.render``, so the words are the command's.  Cells of
the queue are squeue's own (``cli.squeue_format.FIELDS``), sshare's columns
its own (``cli.sshare_format.cell``).

An explanation costs a scheduling pass and a few trial passes, so the
queue explains its first ``EXPLAIN_LIMIT`` pending jobs (in priority order)
and links the others to their job pages.  The routes are plain ``def``:
FastAPI runs them in its thread pool, never on the event loop.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from cli import squeue_format, sshare_format
from cli.slurmlite_explain import render as explain_text
from controller.accounting.usage import usage_of
from controller.api.deps import Ctl
from controller.api.ui import gpugrid
from controller.api.ui.render import render
from controller.api.ui.session import Viewer
from controller.api.ui.sparkline import history_of
from controller.auth.callers import Caller, may_act_on
from controller.nodes import outside_gpus
from controller.sched.explain_job import explain_job
from slurmlite import reasons
from slurmlite.errors import SlurmError
from slurmlite.protocol import JobInfo, NodeInfo, to_dict
from slurmlite.states import is_finished
from slurmlite.timefmt import fmt_timestamp

router = APIRouter()
EXPLAIN_LIMIT = 25  # pending jobs explained inline on the queue page
QUEUE_COLUMNS = (
    "jobarrayid",
    "partition",
    "name",
    "username",
    "statecompact",
    "timeused",
    "numnodes",
    "reasonlist",
)  # squeue's default, in its order
HELD = (reasons.JOB_HELD_USER, reasons.JOB_HELD_ADMIN)


def visible_jobs(ctl: Ctl, viewer: Caller) -> list[JobInfo]:
    """squeue's jobs as the viewer may list them."""
    return ctl.jobs.list_jobs(viewer)


def visible_nodes(ctl: Ctl, viewer: Caller) -> list[NodeInfo]:
    """sinfo's nodes, with outside GPU users' names hidden as ``GET /v1/nodes`` hides them."""
    infos = ctl.nodes.infos()
    if not viewer.admin and "users" in {w.lower() for w in ctl.cfg.private_data}:
        infos = outside_gpus.private(infos, viewer.user)
    return infos


def job_actions(viewer: Caller, job: JobInfo) -> list[str]:
    """The buttons ``viewer`` gets for ``job`` (the services still decide)."""
    if viewer.uid < 0 or not may_act_on(viewer, job.uid) or is_finished(job.state):
        return []
    held = job.state == "PENDING" and job.reason in HELD
    hold = ["release"] if held else ["hold"] if job.state == "PENDING" else []
    return ["cancel", *hold]


def when(ts: float | None, none: str = "unknown") -> str:
    return fmt_timestamp(ts) if ts else none


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, viewer: Viewer, ctl: Ctl) -> HTMLResponse:
    now = ctl.clock()
    jobs = visible_jobs(ctl, viewer)
    with ctl.db.read() as s:
        usage = usage_of(s, [j.job_id for j in jobs if j.state == "RUNNING" and j.gpus])
    history_of(request.app.state).observe(usage.values())  # the job pages' sparklines
    grid = gpugrid.gpu_cells(visible_nodes(ctl, viewer), jobs, usage)
    pending = Counter(j.reason for j in jobs if j.state == "PENDING")
    return render(
        request,
        "overview.html",
        grid=grid,
        counts=gpugrid.summary(grid),
        pending=sorted(pending.items(), key=lambda kv: (-kv[1], kv[0])),
        next_free=gpugrid.next_gpu_free(jobs, now),
        when=when,
    )


@router.get("/queue", response_class=HTMLResponse)
def queue(request: Request, viewer: Viewer, ctl: Ctl) -> HTMLResponse:
    now = ctl.clock()
    ctx = squeue_format.Ctx(now)
    jobs = visible_jobs(ctl, viewer)
    by_priority = sorted(
        (j for j in jobs if j.state == "PENDING"),
        key=lambda j: (-j.priority, j.submit_time, j.job_id),
    )
    explained = {
        j.job_id: _explain(ctl, viewer, j.job_id, now) for j in by_priority[:EXPLAIN_LIMIT]
    }
    rows = []
    for job in [*by_priority, *(j for j in jobs if j.state != "PENDING")]:
        row = squeue_format.Row.of(job)
        rows.append(
            {
                "job": job,
                "cells": [squeue_format.FIELDS[c].value(row, ctx) or "" for c in QUEUE_COLUMNS],
                "start": when(job.sched_start, "") if job.state == "PENDING" else "",
                "explain": explained.get(job.job_id),
                "actions": job_actions(viewer, job),
            }
        )
    headers = [squeue_format.FIELDS[c].header for c in QUEUE_COLUMNS]
    return render(request, "queue.html", rows=rows, headers=headers)


def _explain(ctl: Ctl, viewer: Caller, job_id: int, now: float) -> str | None:
    """``slurmlite explain``'s text for the job (None if it vanished meanwhile)."""
    try:
        answer = explain_job(ctl.db, ctl.cfg, ctl.policy, ctl.nodes, viewer, job_id, now)
    except SlurmError:
        return None
    return explain_text(to_dict(answer))


@router.get("/nodes", response_class=HTMLResponse)
def nodes(request: Request, viewer: Viewer, ctl: Ctl) -> HTMLResponse:
    from slurmlite.states import node_state_long

    rows = [
        {"node": n, "state": node_state_long(n.state, n.flags), "drained": "DRAIN" in n.flags}
        for n in visible_nodes(ctl, viewer)
    ]
    return render(request, "nodes.html", rows=rows, operator=viewer.admin, when=when)


@router.get("/fairshare", response_class=HTMLResponse)
def fairshare(request: Request, viewer: Viewer, ctl: Ctl) -> HTMLResponse:
    answer = ctl.priorities.shares(ctl.clock())
    columns = [
        c
        for c in sshare_format.default_columns(True, answer.fair_tree)
        if c.name not in ("GrpTRESMins",)  # never kept by slurmlite: always empty
    ]
    rows: list[dict[str, Any]] = [
        {
            "row": r,
            "mine": r.user == viewer.user,
            "cells": [sshare_format.cell(c, r, ctl.cfg.cluster_name).strip() for c in columns],
        }
        for r in answer.rows
    ]
    return render(request, "fairshare.html", columns=[c.name for c in columns], rows=rows)
