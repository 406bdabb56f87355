"""Which rows a job reference names: the one resolver of every job operation.

A reference (``slurmlite.jobref``) is resolved inside the operation's
transaction into ``Target``s, one per thing the answer reports on:

* ``N`` for a plain job, or for one task's own job id: that row;
* ``N`` for an array's id: the whole array, i.e. every task already split
  off (its own row, ``array_job_id=N``) and the master row itself, which
  stands for the indices not started yet (``array_pending``);
* ``N_i``: the task row of index ``i``; an index still pending on the master
  is split off first (``controller.store.array_split.split_task``) so the
  operation acts on a row of its own, as Slurm does -- but only for a caller
  the operation would allow (``may_split``): anyone else's ``scancel 57_9``
  is refused with the array left whole (``Target.denied``);
* ``N_[a-b,c]``: each index as ``N_i``.

A target whose ``row`` is None is unknown (``ESLURM_INVALID_JOB_ID``).

Example: master 57 (pending ``0-9``), ``57_9`` -> ``[Target("57_9", row of
57_9 split off)]``; ``57`` -> every row of array 57, each labelled
``57_<i>`` (the master, still pending, is labelled ``57_[0-8]``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select

from controller.store.array_split import split_task
from controller.store.models import JobRow
from slurmlite import arrays
from slurmlite.jobref import JobRef


@dataclass
class Target:
    label: str  # how the answer names it: "57", "57_9"
    row: JobRow | None
    denied: bool = False  # a pending index the caller may not split off (nor act on)


def label_of(row: JobRow) -> str:
    """A row's name in answers: ``57`` (plain job), ``57_3`` (task), ``57_[0-8%2]`` (pending)."""
    if row.array_job_id is None:
        return str(row.id)
    if row.array_task_id is not None:
        return f"{row.array_job_id}_{row.array_task_id}"
    pending = arrays.with_throttle(row.array_pending or "", row.array_max_tasks)
    return f"{row.array_job_id}_[{pending}]"


def resolve(s, ref: JobRef, may_split: Callable[[JobRow], bool]) -> list[Target]:  # type: ignore[no-untyped-def]
    """The targets of ``ref`` (see module doc); pending tasks it names are split off if
    ``may_split(master)``."""
    if ref.tasks is None:
        return _whole(s, ref.job_id)
    master = _master(s, ref.job_id)
    out = []
    for i in ref.tasks:
        label = ref.label(i)
        row = _task_row(s, ref.job_id, i)
        if row is not None:
            out.append(Target(label, row))
        elif master is not None and arrays.contains(master.array_pending, i):
            if may_split(master):
                out.append(Target(label, split_task(s, master, i)))
            else:
                out.append(Target(label, master, denied=True))
        else:
            out.append(Target(label, None))
    return out


def _whole(s, job_id: int) -> list[Target]:  # type: ignore[no-untyped-def]
    row = s.get(JobRow, job_id)
    if row is None or row.array_job_id != job_id:
        return [Target(str(job_id), row)]  # a plain job, a task by its own id, or unknown
    rows = s.scalars(
        select(JobRow).where(JobRow.array_job_id == job_id).order_by(JobRow.array_task_id)
    )
    tasks = [r for r in rows if r.id != job_id]
    return [Target(label_of(r), r) for r in (*tasks, row)]


def _master(s, job_id: int) -> JobRow | None:  # type: ignore[no-untyped-def]
    row = s.get(JobRow, job_id)
    return row if row is not None and row.array_job_id == job_id else None


def _task_row(s, job_id: int, index: int) -> JobRow | None:  # type: ignore[no-untyped-def]
    q = select(JobRow).where(JobRow.array_job_id == job_id, JobRow.array_task_id == index)
    return s.scalars(q).first()
