"""Splitting an array's task off its master row as the task starts (or is acted on).

An array is one row, the master (id ``N``, ``array_job_id = N``), whose
``array_pending`` holds the indices not started yet (``slurmlite.arrays``).
:func:`split_task` gives index ``i`` a row of its own: a copy of every
column of the master (whatever columns later migrations add), with a new job
id from the store's counter, ``array_task_id = i`` and no remainder; the
master loses ``i``.  When ``i`` is the master's last pending index the master
itself becomes task ``i`` (no new row), which is why the array's own id
carries its highest index, as in Slurm (spec §1.9)::

    master 30 [0-2] -> split 0: row 31 (30_0), master 30 [1-2]
                    -> split 1: row 32 (30_1), master 30 [2]
                    -> split 2: master 30 becomes 30_2
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from controller.store import job_ids
from controller.store.models import JobRow
from slurmlite import arrays

_COLUMNS = tuple(c.key for c in JobRow.__mapper__.column_attrs)


def split_task(session: Session, master: JobRow, task_id: int) -> JobRow:
    """The row of task ``task_id`` of ``master``'s array, split off (added to ``session``)."""
    pending = master.array_pending or ""
    if not arrays.contains(pending, task_id):
        raise ValueError(f"task {task_id} is not pending on array {master.id}")
    if arrays.count(pending) == 1:  # the last one: the master is it
        master.array_task_id, master.array_pending = task_id, None
        return master
    task = JobRow(**{name: getattr(master, name) for name in _COLUMNS})
    task.id = job_ids.reserve(session.connection())
    task.array_task_id, task.array_pending = task_id, None
    master.array_pending = arrays.remove(pending, task_id)
    session.add(task)
    return task


def split_next(session: Session, master: JobRow) -> JobRow:
    """The row of the master's lowest pending index, split off."""
    index = arrays.first(master.array_pending)
    if index is None:
        raise ValueError(f"array {master.id} has no pending task")
    return split_task(session, master, index)
