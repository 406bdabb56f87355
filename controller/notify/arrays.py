"""An array that notifies as one job: its first BEGIN, and one summary when its last task ends.

Without ``ARRAY_TASKS`` in ``--mail-type``, Slurm words an array's events
with the array's own record and sends the END/FAIL only when no task is
left (``job_completion_logger``'s ``test_job_array_finished``); the summary
then reports every task (``slurmlite.mailtype.ArraySummary``).  The outbox's
hook asks two things here, in the flush that changes a task:

* :func:`notifies` -- does this event still need a row?  BEGIN goes once
  per array (none stored yet, none added in this flush); any event goes
  once per flush (tasks that start or end in one agent report raise it
  together);
* :func:`summary_if_last` -- is the ending task the array's last one, and
  if so, what do all its tasks sum up to?  "Last" and the tasks' states are
  read as stored, overridden by this flush's own changes (the identity map:
  tasks ending in the same transaction count as ended).

Example: array 20, tasks 20_0 (row 21) FAILED with exit 3 and 20_1 (row 20)
COMPLETED.  21 ends first: 20 still runs, no END.  20 ends: none live, the
summary is (COMPLETED, lowest 0, highest 3 << 8) -> ``Slurm Array Summary
Job_id=20_* (20) Name=sweep Failed, Mixed, ExitCode [0-3]`` when FAIL was
asked for.

Cost: the liveness query returns the other live tasks' ids only, so the
whole array is read once, at its last end.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlalchemy.orm.util import identity_key

from controller.store.models import JobRow
from controller.store.models_notify import OutboxRow
from slurmlite import mailtype

_LIVE = ("PENDING", "RUNNING", "SUSPENDED")


def as_one(row: JobRow) -> bool:
    """Is ``row`` an array task whose events are the whole array's?"""
    return row.array_job_id is not None and "ARRAY_TASKS" not in mailtype.words(row.mail_type)


def notifies(s: Session, row: JobRow, name: str) -> bool:
    """Does event ``name`` of task ``row`` still need an outbox row (see the docstring)?"""
    array = row.array_job_id
    if any(isinstance(o, OutboxRow) and (o.job_id, o.event) == (array, name) for o in s.new):
        return False  # another task of this flush raised it already
    if name == "BEGIN":
        q = select(OutboxRow.id).where(OutboxRow.job_id == array, OutboxRow.event == "BEGIN")
        return s.execute(q.limit(1)).first() is None
    return True


def _current(s: Session, job_id: int) -> JobRow | None:
    """This session's own copy of a row (with the flush's changes), if it holds one."""
    return s.identity_map.get(identity_key(JobRow, job_id))  # type: ignore[return-value]


def summary_if_last(s: Session, row: JobRow) -> mailtype.ArraySummary | None:
    """The array's summary when ``row`` ends as its last live task; None while others live."""
    array = row.array_job_id
    live = select(JobRow.id).where(
        JobRow.array_job_id == array, JobRow.id != row.id, JobRow.state.in_(_LIVE)
    )
    for (other,) in s.execute(live):
        mine = _current(s, other)
        if mine is None or mine.state in _LIVE:
            return None
    cols = (JobRow.id, JobRow.state, JobRow.exit_code, JobRow.restarts)
    tasks: dict[int, tuple[str, int | None, int]] = {}
    for job_id, state, status, restarts in s.execute(
        select(*cols).where(JobRow.array_job_id == array)
    ):
        mine = _current(s, job_id)
        tasks[job_id] = (
            (mine.state, mine.exit_code, mine.restarts) if mine else (state, status, restarts)
        )
    for o in s.new:  # tasks split off in this flush are not stored yet
        if isinstance(o, JobRow) and o.array_job_id == array:
            tasks[o.id] = (o.state, o.exit_code, o.restarts or 0)
    tasks[row.id] = (row.state, row.exit_code, row.restarts or 0)
    master = tasks.get(array or 0, (row.state, None, 0))[0]
    return mailtype.array_summary(master, tasks.values())
