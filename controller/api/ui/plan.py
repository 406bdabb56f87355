"""The dashboard's plan (a Gantt of running and planned jobs) and what-if pages.

``GET /ui/plan``: the jobs the viewer may see (``JobService.list_jobs``, so
``PrivateData=jobs`` hides other users' jobs here as in squeue) laid out by
``plan_rows.chart`` and drawn by ``gantt.gantt_svg``: running jobs solid to
their time limit, pending jobs hatched at the start the backfill pass
stored for them (what ``squeue --start`` prints), a "now" line; below it,
the planned starts as a table, and how many pending jobs have no estimate,
by reason.  ``?hours=N`` (1 to 168, else a day) sets how far ahead the chart reaches.

``GET /ui/whatif``: a form (GPUs, time limit, partition, optionally nodes
and CPUs per task).  ``POST /ui/whatif`` (CSRF-checked, works without
JavaScript) answers on the same page from ``controller.api.ui.whatif``, a
dry run of the scheduling pass with the request added to a copy of the
state: "Starts now on n1", "About 14:30, on n2, behind jobs 12 and 15", or
why it has no start.  A mistake in the form, or a request sbatch would
refuse (an unknown partition), is answered 400 with the reason in the
page; nothing is stored either way.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from controller.api.deps import Ctl
from controller.api.ui.gantt import gantt_svg
from controller.api.ui.plan_rows import HOUR, chart, window
from controller.api.ui.render import render
from controller.api.ui.session import CsrfChecked, Viewer
from controller.api.ui.whatif import Ask, WhatIf, what_if
from controller.auth.callers import Caller
from controller.context import Controller
from slurmlite.errors import SlurmError
from slurmlite.scheduler.explain import WAITING_FOR_NODES
from slurmlite.timefmt import duration_to_minutes, fmt_limit_fixed, fmt_timestamp, parse_duration

router = APIRouter()

TIME_HELP = "a time limit as sbatch --time takes it: 30, 1:00:00, 2-00:00:00 or UNLIMITED"


@router.get("/plan")
def plan_page(
    request: Request,
    viewer: Viewer,
    ctl: Ctl,
    hours: str = "24",
) -> HTMLResponse:
    now = ctl.clock()
    span = _hours(hours)
    jobs = ctl.jobs.list_jobs(viewer, states={"PENDING", "RUNNING"})
    rows, bars = chart(ctl.nodes.infos(), jobs)
    t0, t1 = window(bars, now, span * HOUR)
    planned = sorted(
        (j for j in jobs if j.state == "PENDING" and j.sched_start is not None),
        key=lambda j: (j.sched_start, j.job_id),
    )
    unplanned = Counter(j.reason for j in jobs if j.state == "PENDING" and j.sched_start is None)
    return render(
        request,
        "plan.html",
        svg=Markup(gantt_svg(rows, bars, now, t0, t1, href="/ui/jobs/{}")),
        planned=[
            {
                "id": j.job_id,
                "user": j.user,
                "name": j.name,
                "partition": j.partition,
                "start": fmt_timestamp(j.sched_start),
                "nodes": ",".join(j.sched_nodes),
                "gpus": j.gpus,
                "limit": fmt_limit_fixed(j.time_limit),
            }
            for j in planned
        ],
        unplanned=sorted(unplanned.items()),
        hours=span,
        now=fmt_timestamp(now),
    )


def _hours(text: str) -> float:
    """``?hours=``: 1 to 168; anything else (a typo in the address) shows the default day."""
    try:
        value = float(text)
    except ValueError:
        return 24.0
    return min(max(value, 1.0), 168.0) if value == value else 24.0  # NaN: the default


@router.get("/whatif")
def whatif_form(request: Request, viewer: Viewer, ctl: Ctl) -> HTMLResponse:
    default = ctl.cfg.default_partition
    form = {"gpus": "1", "time": "1:00:00", "partition": default.name if default else ""}
    return _page(request, ctl, form)


@router.post("/whatif")
def whatif_answer(
    request: Request,
    viewer: CsrfChecked,
    ctl: Ctl,
    gpus: Annotated[str, Form()] = "0",
    time_limit: Annotated[str, Form(alias="time")] = "",
    partition: Annotated[str, Form()] = "",
    nodes: Annotated[str, Form()] = "",
    cpus: Annotated[str, Form()] = "",
) -> HTMLResponse:
    form = {"gpus": gpus, "time": time_limit, "partition": partition, "nodes": nodes, "cpus": cpus}
    try:
        ask = read_form(form)
    except ValueError as e:
        return _page(request, ctl, form, problem=str(e), status_code=400)
    try:
        answer = what_if(ctl, viewer, ask, ctl.clock())
    except SlurmError as e:  # what sbatch would be refused, in its words
        words = f"{e.detail} ({e})" if e.detail else str(e)
        problem = f"sbatch would refuse this request: {words}"
        return _page(request, ctl, form, problem=problem, status_code=400)
    return _page(request, ctl, form, ask=ask, answer=describe(ctl, viewer, answer))


def read_form(form: dict[str, str]) -> Ask:
    """The form's texts as an ``Ask`` (``ValueError`` naming the field otherwise)."""
    gpus = _count(form.get("gpus", ""), "GPUs", minimum=0) or 0
    text = form.get("time", "").strip()
    try:
        seconds = parse_duration(text) if text else None
    except ValueError:
        raise ValueError(f"Time limit: {text!r} is not {TIME_HELP}") from None
    if not text:
        raise ValueError(f"Time limit: give {TIME_HELP}")
    minutes = None if not seconds else duration_to_minutes(seconds)  # 0: UNLIMITED
    return Ask(
        gpus=gpus,
        minutes=minutes,
        partition=form.get("partition", "").strip() or None,
        nodes=_count(form.get("nodes", ""), "Nodes", minimum=1),
        cpus=_count(form.get("cpus", ""), "CPUs per task", minimum=1),
    )


def _count(text: str, field: str, minimum: int) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit() or not minimum <= int(text) <= 100_000:
        raise ValueError(f"{field}: {text!r} is not a whole number of at least {minimum}")
    return int(text)


def describe(ctl: Controller, viewer: Caller, answer: WhatIf) -> dict[str, object]:
    """The answer in words: a headline, the jobs in its way, the suggestions."""
    nodes = ",".join(answer.nodes)
    if answer.never is not None:
        head = f"It could never run as asked: {answer.never}"
    elif answer.starts_now:
        head = f"Starts now on {nodes}."
    elif answer.start is not None:
        head = f"About {clock_time(answer.start, answer.now)}, on {nodes}{behind(ctl, viewer, answer)}."
    elif answer.reason not in WAITING_FOR_NODES:  # the pass would pass it over
        head = f"It would wait without a start: {answer.reason} ({answer.reason_text})."
    else:
        head = (
            f"No start within the scheduling window ({answer.reason}: {answer.reason_text})"
            f"{behind(ctl, viewer, answer)}."
        )
    return {
        "head": head,
        "start": fmt_timestamp(answer.start) if answer.start else None,
        "partition": answer.partition,
        "suggestions": [(s.flag, clock_time(s.start, answer.now)) for s in answer.suggestions],
    }


def behind(ctl: Controller, viewer: Caller, answer: WhatIf) -> str:
    """``, behind jobs 12 and 15``: the jobs in its way the viewer may see (as squeue
    lists them: ``JobService.list_jobs``); under PrivateData=jobs the others are only
    counted (``, behind job 12 and 2 jobs of other users``)."""
    ids = list(dict.fromkeys(b.job_id for b in answer.behind))
    if not ids:
        return ""
    visible = {j.job_id for j in ctl.jobs.list_jobs(viewer, job_ids=ids)}
    mine = [str(i) for i in ids if i in visible]
    others = len(ids) - len(mine)
    parts = []
    if mine:
        listed = mine[0] if len(mine) == 1 else f"{', '.join(mine[:-1])} and {mine[-1]}"
        parts.append(f"job{'s' if len(mine) > 1 else ''} {listed}")
    if others:
        parts.append("a job of another user" if others == 1 else f"{others} jobs of other users")
    return ", behind " + " and ".join(parts)


def clock_time(t: float, now: float) -> str:
    """``14:30`` today, ``Mon 07 Dec 14:30`` another day (local time, as the commands)."""
    tm = time.localtime(t)
    same_day = time.localtime(now)[:3] == tm[:3]
    return time.strftime("%H:%M" if same_day else "%a %d %b %H:%M", tm)


def _page(
    request: Request,
    ctl: Controller,
    form: dict[str, str],
    status_code: int = 200,
    **ctx: object,
) -> HTMLResponse:
    partitions = [p.name for p in ctl.cfg.partitions]
    return render(
        request,
        "whatif.html",
        status_code=status_code,
        form=form,
        partitions=partitions,
        **ctx,
    )
