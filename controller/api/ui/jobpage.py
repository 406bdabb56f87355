"""``/ui/jobs/{id}``: one job -- timeline, priority, explanation, GPUs, output, actions.

What the page shows, and from where:

* the job as ``squeue``/``scontrol show job`` list it
  (``JobService.list_jobs``; a job gone from the queue is read from the
  accounting history, as ``sacct`` reads it).  A job the viewer may not see
  (``PrivateData=jobs``) or that does not exist is one 404 page, so a
  page never tells which of the two it was;
* a timeline: submitted, eligible, (expected) start, (expected) end;
* the explanation and the priority factors: ``explain_job``'s answer,
  rendered by ``slurmlite explain``'s own ``render``;
* each GPU the job holds, with its mean and peak utilization over the run
  (``job_usage``) and a sparkline of its utilization, interval by interval,
  as the agents reported it (``controller.accounting.usage_history``, fed
  at ingest; drawn by ``controller.api.ui.sparkline``);
* the tail of its output, to its owner only: read on this host, else asked of
  the batch host's agent (``controller.api.ui.output_tail``);
* the actions the viewer may take (``pages.job_actions``).

``/ui/jobs/{id}/explain`` is the explanation alone, as plain text: what the
queue page's ``explain.js`` puts into a row opened by the viewer (the same
404 for a hidden or unknown job).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, PlainTextResponse
from markupsafe import Markup

from cli.slurmlite_explain import render as explain_text
from controller.accounting.usage import usage_of
from controller.api.deps import Ctl
from controller.api.ui.output_tail import output_tail
from controller.api.ui.pages import job_actions, when
from controller.api.ui.render import SECURITY_HEADERS, render
from controller.api.ui.session import Viewer
from controller.api.ui.sparkline import spark_svg
from controller.auth.callers import Caller
from controller.sched.explain_job import explain_job
from controller.store.models import JobRow
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import JobInfo, to_dict
from slurmlite.wire_limits import INT32_MAX

router = APIRouter()


def find_job(ctl: Ctl, viewer: Caller, job_id: int) -> JobInfo | None:
    """The job as the viewer may see it: in the queue, else in the history."""
    for accounting in (False, True):
        found = ctl.jobs.list_jobs(viewer, job_ids=[job_id], all_states=True, accounting=accounting)
        if found:
            return found[0]  # type: ignore[no-any-return]
    return None


def timeline(job: JobInfo) -> list[tuple[str, str]]:
    steps = [("Submitted", when(job.submit_time))]
    if job.eligible_time:
        steps.append(("Eligible", when(job.eligible_time)))
    if job.state == "PENDING":
        steps.append(("Expected start", when(job.sched_start, "not planned yet")))
    elif job.start_time:
        steps.append(("Started", when(job.start_time)))
    if job.end_time:
        ended = job.state not in ("PENDING", "RUNNING", "SUSPENDED")
        steps.append(("Ended" if ended else "Time limit ends", when(job.end_time)))
    return steps


def explanation(ctl: Ctl, viewer: Caller, job_id: int) -> dict[str, Any] | None:
    """``explain_job``'s answer as a dict (None: hidden, unknown or purged meanwhile)."""
    try:
        return to_dict(
            explain_job(ctl.db, ctl.cfg, ctl.policy, ctl.nodes, viewer, job_id, ctl.clock())
        )
    except SlurmError:
        return None


@router.get("/jobs/{job_id}/explain", response_class=PlainTextResponse)
def explain_only(
    job_id: Annotated[int, Path(ge=0, le=INT32_MAX)], viewer: Viewer, ctl: Ctl
) -> PlainTextResponse:
    """``slurmlite explain``'s text for the job, or 404 ("Invalid job id specified")."""
    answer = explanation(ctl, viewer, job_id)
    if answer is None:
        missing = errors.message(errors.ESLURM_INVALID_JOB_ID)
        return PlainTextResponse(missing, 404, headers=SECURITY_HEADERS)
    return PlainTextResponse(explain_text(answer), headers=SECURITY_HEADERS)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(
    request: Request, job_id: Annotated[int, Path(ge=0, le=INT32_MAX)], viewer: Viewer, ctl: Ctl
) -> HTMLResponse:
    job = find_job(ctl, viewer, job_id)
    if job is None:
        return render(request, "job_missing.html", status_code=404, job_id=job_id)
    answer = explanation(ctl, viewer, job_id)
    owner = viewer.uid == job.uid
    tails: list[tuple[str, str]] = []
    where = ""
    with ctl.db.read() as s:
        usage = usage_of(s, [job_id]).get(job_id)
        row = s.get(JobRow, job_id)
        if row is not None:
            s.expunge(row)
    if owner and row is not None:  # outside the read: the batch host may take a moment
        tails, where = output_tail(ctl, row)
    gpus = []
    if usage is not None:
        for node, g in usage.gpus:
            ring = ctl.usage_history.series(job_id, usage.restarts, node, g.index)
            points = [p for _, p in ring] or [g.util_avg]  # none since the controller started
            gpus.append({"node": node, "gpu": g, "spark": Markup(spark_svg(points))})
    return render(
        request,
        "job.html",
        job=job,
        timeline=timeline(job),
        explanation=explain_text(answer) if answer else "",
        factors=(answer or {}).get("factors") or {},
        gpus=gpus,
        owner=owner,
        tails=tails,
        tail_where=where,
        actions=job_actions(viewer, job),
    )
