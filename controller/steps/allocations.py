"""Allocations without a batch script: what srun (outside a job) and salloc hold.

Such a job is submitted with ``JobSubmit.allocation`` and scheduled like any
other, but when it starts nothing is launched on its nodes and it has no
``batch`` step (sacct shows the job and its srun steps only, as Slurm does
for ``srun``/``salloc`` jobs).  It stays RUNNING while its command runs; the
command talks to the controller through ``POST /v1/jobs/{id}/allocation``
(``AllocationUpdate``):

* ``end=False``: a keepalive; the time is recorded (``jobs.keepalive``).
  Answered ``ESLURM_ALREADY_DONE`` once the job has ended (cancelled, timed
  out), so the command learns it lost its allocation.
* ``end=True, exit_code=S``: the command is done.  A running job ends
  COMPLETED (S = 0) or FAILED (``slurmlite.states.final_state``: non-zero exit,
  signal, OOM marker), ExitCode S; its running steps get a terminate order
  and it stays COMPLETING until their nodes report them ended.  A job that
  ended already (scancel, time limit) keeps its state and only gains the
  exit code if it had none; a pending one (the command gave up waiting) is
  CANCELLED.

``InactiveLimit`` (seconds, 0 = never, as in Slurm): a running allocation
whose command has not been heard from (keepalive, or its start) for longer
ends as Slurm ends it: TIMEOUT with reason ``InactiveLimit``, its steps
terminated (``inactive``, run by the loop).  Time limits, ``scancel`` and
node failures apply as to any job; an allocation is never requeued.

Example: ``salloc -N2 bash`` -> job 9 RUNNING, nothing sent to n1/n2;
``srun hostname`` inside -> step 9.0; ``exit 3`` -> AllocationUpdate(end,
768) -> 9 FAILED 3:0 (9.0 COMPLETED 0:0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from controller.auth.callers import Caller, may_act_on
from controller.nodes.agent_client import AgentOrder
from controller.steps.ends import running_steps
from controller.store.models import JobRow
from controller.store.rows import add_flag, split_list
from slurmlite import errors, reasons
from slurmlite.errors import SlurmError
from slurmlite.protocol import AllocationUpdate
from slurmlite.states import final_state, is_finished

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from controller.store.db import Database


def update_allocation(
    db: Database, now: float, caller: Caller, job_id: int, upd: AllocationUpdate
) -> tuple[JobRow, list[AgentOrder]]:
    """Apply a keepalive or the end of allocation ``job_id``; the row after it and the
    terminate orders for its running steps."""
    orders: list[AgentOrder] = []
    with db.write() as s:
        row = s.get(JobRow, job_id)
        if row is None:
            raise SlurmError(errors.ESLURM_INVALID_JOB_ID)
        if not may_act_on(caller, row.uid):
            raise SlurmError(errors.ESLURM_ACCESS_DENIED)
        if not row.allocation:
            raise SlurmError(errors.ESLURM_DISABLED, f"job {job_id} is a batch job")
        if not upd.end:
            if is_finished(row.state):
                raise SlurmError(errors.ESLURM_ALREADY_DONE)
            row.keepalive = now
        elif row.state == "PENDING":
            row.state, row.reason, row.end_time = "CANCELLED", reasons.NONE, now
            row.cancelled_by = caller.uid
        elif is_finished(row.state):
            if row.exit_code in (None, 0):
                row.exit_code = upd.exit_code
        else:
            row.state, row.reason = final_state(upd.exit_code)
            row.exit_code, row.end_time = upd.exit_code, now
            orders = _stop_steps(s, row)
        s.flush()
    return row, orders


def _stop_steps(s: Session, row: JobRow) -> list[AgentOrder]:
    """An allocation just ended: terminate orders for the nodes of its running steps
    (and COMPLETING until they report), else nothing."""
    nodes: set[str] = set()
    for st in running_steps(s, row.id, row.restarts):
        nodes.update(split_list(st.nodes))
    if not nodes:
        return []
    row.flags = add_flag(row.flags, "COMPLETING")
    return [
        AgentOrder("terminate", row.id, n, row.restarts)
        for n in split_list(row.nodes)
        if n in nodes
    ]


def inactive(db: Database, limit: float, now: float, heard_floor: float = 0.0) -> list[AgentOrder]:
    """End running allocations silent for longer than ``InactiveLimit``; their orders.

    Silence counts from ``heard_floor`` at the earliest: after the controller
    itself stalled (``NodeService.heard_floor``) the commands' keepalives
    queued meanwhile have not been read yet, so nobody is timed out for the
    controller's own pause.  A read finds the silent ones first, so a pass
    with none writes nothing.
    """
    if limit <= 0:
        return []
    with db.read() as s:
        q = select(JobRow.id, JobRow.keepalive, JobRow.start_time).where(
            JobRow.state == "RUNNING", JobRow.allocation.is_(True)
        )
        silent = [
            i
            for i, heard, start in s.execute(q)
            if now - max(heard or 0, start or 0, heard_floor) > limit
        ]
    orders: list[AgentOrder] = []
    if not silent:
        return orders
    with db.write() as s:
        for job_id in silent:
            row = s.get(JobRow, job_id)
            if row is None or row.state != "RUNNING":
                continue
            if now - max(row.keepalive or 0.0, row.start_time or 0.0, heard_floor) <= limit:
                continue  # heard from meanwhile
            row.state, row.reason, row.end_time = "TIMEOUT", reasons.INACTIVE_LIMIT, now
            orders += _stop_steps(s, row)
    return orders
