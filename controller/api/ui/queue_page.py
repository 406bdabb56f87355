"""``/ui/queue``: the jobs as squeue shows them, a page of rows at a time.

Order: pending jobs first, highest priority first (ties: earlier
submission, then lower id -- the scheduler's own tie-breaks), then the
others in job-id order.  The rows are cut into pages of ``PAGE_SIZE``
(``?page=2`` is rows 201-400); the page says how many jobs there are and
links to the previous, next and last pages, so a queue of 10,000 pending
jobs costs one page's rows, not 10,000.

What a page costs, and why it stays under 100 ms with 10,000 pending jobs
(issue 16's target; ``bench/ui_queue.py`` measures it):

* the rows come from the live cache, not the store (``pages.visible_rows``): the
  order needs three values per job, read from each cached row; only the
  page's 200 rows become ``JobInfo``;
* the cells are squeue's own (``cli.squeue_format.FIELDS``), for those 200;
* no explanation is worked out here.  ``slurmlite explain`` runs a
  scheduling pass over a snapshot of the whole queue (~0.34 s with 10,000
  pending jobs), so each pending row's *Why is job N pending?* opens onto a
  link to the job page's explanation; with JavaScript, ``explain.js`` loads
  the text into the row when it is opened (``GET /ui/jobs/N/explain``,
  ``jobpage.py``), one job at a time.

Example: 10,004 jobs, ``?page=51`` -> rows 10,001-10,004, "Jobs 10,001-10,004
of 10,004", links to pages 1 and 50.  A page past the end shows the last one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from cli import squeue_format
from controller.api.deps import Ctl
from controller.api.ui.pages import infos, job_actions, values, visible_rows, when
from controller.api.ui.render import render
from controller.api.ui.session import Viewer
from controller.store.live_cache import Live

router = APIRouter()
PAGE_SIZE = 200
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
_priority_key = values("priority", "submit_time")


def queue_order(rows: list[Live]) -> list[Live]:
    """Pending jobs by priority (then submit time, id), then the others by id."""

    def key(row: Live) -> tuple[float, float, int]:
        priority, submitted = _priority_key(row)
        return -priority, submitted, row.id

    pending = sorted((r for r in rows if r.state == "PENDING"), key=key)
    return [*pending, *(r for r in rows if r.state != "PENDING")]


def page_of(total: int, asked: int) -> tuple[int, int]:
    """(page shown, number of pages): ``asked`` clamped to 1..last (a page even when empty)."""
    pages = max(1, -(-total // PAGE_SIZE))
    return min(max(asked, 1), pages), pages


@router.get("/queue", response_class=HTMLResponse)
def queue(
    request: Request,
    viewer: Viewer,
    ctl: Ctl,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> HTMLResponse:
    ordered = queue_order(visible_rows(ctl, viewer))
    shown, pages = page_of(len(ordered), page)
    first = (shown - 1) * PAGE_SIZE
    ctx = squeue_format.Ctx(ctl.clock())
    rows = []
    for job in infos(ordered[first : first + PAGE_SIZE]):
        row = squeue_format.Row.of(job)
        rows.append(
            {
                "job": job,
                "cells": [squeue_format.FIELDS[c].value(row, ctx) or "" for c in QUEUE_COLUMNS],
                "start": when(job.sched_start, "") if job.state == "PENDING" else "",
                "actions": job_actions(viewer, job),
            }
        )
    return render(
        request,
        "queue.html",
        rows=rows,
        headers=[squeue_format.FIELDS[c].header for c in QUEUE_COLUMNS],
        paging={
            "page": shown,
            "pages": pages,
            "first": first + 1,
            "last": first + len(rows),
            "total": len(ordered),
            "later": max(0, len(ordered) - first - len(rows)),
        },
    )
