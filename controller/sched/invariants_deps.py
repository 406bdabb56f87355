"""The invariants of dependencies and begin times (rules 6-7 of ``invariants``).

6. ``started_with_dependency``: a job that has started (not PENDING, given
   nodes; a job cancelled while it waited keeps its dependency) has nothing
   left in its dependency: the scheduler pass drops elements as they
   hold and starts only jobs with none (``controller.sched.deps``).  Repair:
   clear the record, and say so (the job has run; there is nothing to undo).
7. ``started_before_begin``: a job started no earlier than its begin time
   (``eligible_time``).  Repair: the begin time becomes the start time.

Both look through indexes only (``dependency``, ``state``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from controller.store.models import JobRow

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


def find_started_with_dependency(s: Session, f: Any, violation: Any) -> list[Any]:
    q = select(JobRow).where(JobRow.dependency > "")  # the index: few rows have one
    started = (r for r in s.scalars(q) if r.state != "PENDING" and r.nodes)
    rows = sorted(started, key=lambda r: r.id)
    return [
        (violation("started_with_dependency", r.id, f"{r.state} with dependency {r.dependency}"), r)
        for r in rows
    ]


def fix_started_with_dependency(s: Session, row: JobRow, f: Any) -> tuple[str, list[Any]]:
    row.dependency, row.dep_failed = None, False
    return "dependency record cleared", []


def find_started_before_begin(s: Session, f: Any, violation: Any) -> list[Any]:
    q = select(JobRow).where(
        JobRow.state == "RUNNING",
        JobRow.eligible_time.is_not(None),
        JobRow.start_time < JobRow.eligible_time,
    )
    rows = sorted(s.scalars(q), key=lambda r: r.id)
    return [
        (violation("started_before_begin", r.id, "started before its begin time"), r) for r in rows
    ]


def fix_started_before_begin(s: Session, row: JobRow, f: Any) -> tuple[str, list[Any]]:
    row.eligible_time = row.start_time
    return "begin time set to the start time", []
