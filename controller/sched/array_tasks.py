"""Job arrays in the scheduler pass: the ``%N`` throttle.

An array's master row (``controller.store.array_split``) is one pending job
in the snapshot, standing for its next task: when the plan starts it,
``apply`` splits that task off and starts the new row.  A master whose array
already runs its ``%N`` tasks sits the pass out with reason
``JobArrayTaskLimit`` (as ``Dependency`` does), found with two small queries:
the throttled masters, then their running tasks counted per array.
"""

from __future__ import annotations

from sqlalchemy import func, select

from controller.store.db import Database
from controller.store.models import JobRow
from slurmlite import reasons

_ACTIVE = ("RUNNING", "SUSPENDED", "CONFIGURING", "COMPLETING")


def throttled(db: Database) -> dict[int, str]:
    """``{master id: JobArrayTaskLimit}`` for each pending array at its limit."""
    with db.read() as s:
        masters = s.execute(
            select(JobRow.id, JobRow.array_max_tasks).where(
                JobRow.state == "PENDING",
                JobRow.array_pending.is_not(None),
                JobRow.array_max_tasks.is_not(None),
            )
        ).all()
        if not masters:
            return {}
        ids = [m.id for m in masters]
        running = dict(
            s.execute(
                select(JobRow.array_job_id, func.count())
                .where(JobRow.array_job_id.in_(ids), JobRow.state.in_(_ACTIVE))
                .group_by(JobRow.array_job_id)
            ).all()
        )
    return {
        m.id: reasons.JOB_ARRAY_TASK_LIMIT
        for m in masters
        if m.array_max_tasks and running.get(m.id, 0) >= m.array_max_tasks
    }
