"""The invariant of job arrays (rule 8 of ``invariants``).

8. ``array_task_once``: an index of a pending array is either still in its
   master's remainder (``array_pending``) or split off as a row of its own
   (``array_job_id = N``, ``array_task_id = i``), never both: a task split
   off and also left pending would run twice.  Repair: the row is the truth;
   the index leaves the remainder.

It reads pending masters through the ``state`` index and their tasks
through the ``array_job_id`` index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from controller.store.models import JobRow
from slurmlite import arrays

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


def _twice(s: Session, master: JobRow) -> list[int]:
    q = select(JobRow.array_task_id).where(JobRow.array_job_id == master.id, JobRow.id != master.id)
    split = {i for i in s.scalars(q) if i is not None}
    return sorted(i for i in split if arrays.contains(master.array_pending, i))


def find_task_twice(s: Session, f: Any, violation: Any) -> list[Any]:
    q = select(JobRow).where(JobRow.state == "PENDING", JobRow.array_pending.is_not(None))
    out = []
    for master in sorted(s.scalars(q), key=lambda r: r.id):
        twice = _twice(s, master)
        if twice:
            what = f"tasks {twice} both pending on array {master.id} and split off"
            out.append((violation("array_task_once", master.id, what), master))
    return out


def fix_task_twice(s: Session, master: JobRow, f: Any) -> tuple[str, list[Any]]:
    twice = _twice(s, master)
    rest, _hit = arrays.remove_many(master.array_pending, set(twice))
    master.array_pending = rest or None
    return f"tasks {twice} removed from the pending remainder", []
