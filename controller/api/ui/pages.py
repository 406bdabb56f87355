"""The dashboard's read-only pages: overview, nodes, fair share (the queue: ``queue_page.py``).

Every page reads what the matching command reads, through the same
services, as the viewer: the jobs squeue lists (:func:`visible_rows`),
``NodeService.infos`` (sinfo; outside users' names hidden under
``PrivateData=users``), ``PriorityService.shares`` (sshare -l, its columns
its own: ``cli.sshare_format.cell``).  The routes are plain ``def``:
FastAPI runs them in its thread pool, never on the event loop.

Jobs: ``JobService.list_jobs`` answers squeue with one ``JobInfo`` per
job; with 10,000 pending jobs, making those (a dict, then a dataclass with
nested allocations, ~50 µs each) costs half a second before a page has done
anything.  A page needs far less: the queue orders every job by three
values and shows 200 of them, the overview counts pending jobs by reason
and draws the running ones.  So the pages read the listing rows themselves
(``job_query.select_jobs``: the live-jobs view of
``controller.store.live_cache``, in memory) with the query and the
``PrivateData`` narrowing of ``list_jobs`` (``JobService.visible_to``), pick
by the values they need (:func:`values`) and make a ``JobInfo`` only of
what they show (:func:`infos`), exactly the one ``list_jobs`` would make.
Example: 10,000 pending and 4 running jobs -> the overview makes 4
``JobInfo`` and counts ``{"Priority": 9990, "Resources": 10}``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from cli import sshare_format
from controller.accounting.usage import usage_of
from controller.api.deps import Ctl
from controller.api.ui import gpugrid
from controller.api.ui.render import render
from controller.api.ui.session import Viewer
from controller.auth.callers import Caller, may_act_on
from controller.nodes import outside_gpus
from controller.store import job_query
from controller.store.live_cache import Live
from controller.store.rows import dict_of, row_maker
from slurmlite import reasons
from slurmlite.protocol import JobInfo, NodeInfo, from_dict
from slurmlite.states import is_finished
from slurmlite.timefmt import fmt_timestamp

router = APIRouter()
HELD = (reasons.JOB_HELD_USER, reasons.JOB_HELD_ADMIN)


def visible_rows(ctl: Ctl, viewer: Caller) -> list[Live]:
    """The rows ``list_jobs(viewer)`` would list (squeue's default states), in id order."""
    q = ctl.jobs.visible_to(viewer, job_query.JobQuery())
    return job_query.select_jobs(ctl.db, q, ctl.clock(), ctl.jobs.min_job_age)


def values(*names: str) -> Callable[[Live], list[Any]]:
    """A function: row -> the ``JobInfo`` fields ``names``, as ``list_jobs`` gives them."""
    make = row_maker(names)
    return lambda row: make(row.values)


def infos(rows: Sequence[Live]) -> list[JobInfo]:
    """The rows as the ``JobInfo`` that ``list_jobs`` makes of them."""
    return [from_dict(JobInfo, dict_of(r.values)) for r in rows]


_reason = values("reason")


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
    rows = visible_rows(ctl, viewer)
    jobs = infos([r for r in rows if r.state != "PENDING"])
    with ctl.db.read() as s:
        usage = usage_of(s, [j.job_id for j in jobs if j.state == "RUNNING" and j.gpus])
    grid = gpugrid.gpu_cells(visible_nodes(ctl, viewer), jobs, usage)
    pending = Counter(_reason(r)[0] for r in rows if r.state == "PENDING")
    return render(
        request,
        "overview.html",
        grid=grid,
        counts=gpugrid.summary(grid),
        pending=sorted(pending.items(), key=lambda kv: (-kv[1], kv[0])),
        next_free=gpugrid.next_gpu_free(jobs, now),
        when=when,
    )


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
