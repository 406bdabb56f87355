"""The end of a job step: its nodes' reports, and steps that will never get them all.

Each node of an srun step (``controller.steps.create``) reports its part to the
controller as a ``JobCompletion`` whose ``step_id`` is the step's number and
whose status is the highest of that node's tasks (``end_part``, called by
``JobService`` in the transaction that records the agent's batch of
completions).  The row keeps the reports (``steps.reports``: ``{node:
[status, launch failed]}``); the step ends when every node has reported:
exit code = the highest raw status, state by ``step_state`` (signal ->
CANCELLED, non-zero -> FAILED, the OOM marker -> OUT_OF_MEMORY, else
COMPLETED; CANCELLED too once the job was cancelled or timed out), as sacct
shows ``69.0 false FAILED 1:0``.  What the step held is free from then on
(``running_steps`` no longer returns it).  The job itself is untouched,
except its ``DerivedExitCode`` (the highest step status) and, for an
allocation that already ended, its COMPLETING flag once no step runs.

Leftovers (``close_leftovers``, every scheduling pass): a step of an earlier
run (the job was requeued), or of a job that ended more than
``report_grace`` ago (KillWait + two heartbeats + 10 s), will never hear
from all its nodes (a node died, srun never delivered an order); it is
closed CANCELLED with the highest status reported so far, so it frees what
it holds and sacct stops showing it running.

Example: step 7.0 on n1, n2.  n1 reports 0 -> still RUNNING; n1 again ->
ignored (a duplicate); n2 reports 256 -> ``7.0 FAILED 1:0``, job 7's
DerivedExitCode 1:0, job 7 still RUNNING.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from sqlalchemy import select

from controller.store.models import JobRow, StepRow
from controller.store.rows import drop_flag, split_list
from slurmlite.protocol import JobCompletion
from slurmlite.states import OOM_STATUS, is_finished

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from controller.store.db import Database
    from slurmlite.config import Config

SPECIAL = ("batch", "extern")  # step ids that are not srun steps


def step_state(status: int, job_state: str, launch_failed: bool) -> str:
    """sacct's State of a step that ended with raw wait ``status``."""
    if launch_failed:
        return "CANCELLED"
    if status & 0xFF == OOM_STATUS:
        return "OUT_OF_MEMORY"
    if os.WIFSIGNALED(status):
        return "CANCELLED"
    if os.WEXITSTATUS(status) != 0:
        return "FAILED"
    if job_state in ("CANCELLED", "TIMEOUT"):
        return "CANCELLED"
    return "COMPLETED"


def running_steps(s: Session, job_id: int, restarts: int) -> list[StepRow]:
    """The job's srun steps of run ``restarts`` that have not ended."""
    q = select(StepRow).where(StepRow.job_id == job_id, StepRow.state == "RUNNING")
    return [st for st in s.scalars(q) if st.step_id not in SPECIAL and st.restarts == restarts]


def end_part(
    node: str,
    msg: JobCompletion,
    now: float,
    row: JobRow | None,
    steps: dict[tuple[int, str], StepRow],
) -> bool:
    """Record ``node``'s end of step ``msg.step_id``; True if it changed something.

    ``steps`` holds every step row of the job (loaded by ``JobService``).
    A duplicate, a node outside the step, or a step already ended -> False.
    """
    step = steps.get((msg.job_id, msg.step_id))
    if row is None or step is None or step.end_time is not None:
        return False
    nodes = split_list(step.nodes)
    reports = json.loads(step.reports or "{}")
    if node not in nodes or node in reports:
        return False
    reports[node] = [msg.exit_code, msg.launch_failed]
    step.reports = json.dumps(reports)
    if len(reports) < len(nodes):
        return True
    status = max(r[0] for r in reports.values())
    failed = any(r[1] for r in reports.values())
    step.exit_code, step.end_time = status, msg.end_time or now
    step.state = step_state(status, row.state, failed)
    if step.restarts == row.restarts:
        row.derived_exit_code = max(row.derived_exit_code or 0, status)
        others = [
            st
            for (job, _), st in steps.items()
            if job == row.id and st is not step and st.step_id not in SPECIAL
        ]
        _release_allocation(row, [st for st in others if st.state == "RUNNING"])
    return True


def _release_allocation(row: JobRow, still_running: list[StepRow]) -> None:
    """An ended allocation stops COMPLETING once none of its steps of this run runs."""
    if row.allocation and is_finished(row.state):
        if not any(st.restarts == row.restarts for st in still_running):
            row.flags = drop_flag(row.flags, "COMPLETING")


def report_grace(cfg: Config) -> float:
    """Seconds after a job's end within which its steps' nodes are expected to report."""
    return cfg.kill_wait + 2 * cfg.heartbeat_interval + 10


def close_leftovers(db: Database, cfg: Config, now: float, heard_floor: float = 0.0) -> bool:
    """Close steps that will never hear from all their nodes (module doc); True if any.

    The grace counts from ``heard_floor`` at the earliest: nodes' reports
    sent while the controller itself was stalled have not been read yet.

    Runs every scheduling pass: a read finds the running steps (an index
    lookup; usually none or a few), and only when one is due does a write
    transaction close it.
    """
    grace = report_grace(cfg)
    with db.read() as s:
        q = select(StepRow.job_id, StepRow.step_id, StepRow.restarts).where(
            StepRow.state == "RUNNING", StepRow.step_id.not_in(SPECIAL)
        )
        open_steps = s.execute(q).all()
        if not open_steps:
            return False
        ids = sorted({job_id for job_id, _, _ in open_steps})
        q2 = select(JobRow.id, JobRow.state, JobRow.restarts, JobRow.end_time)
        jobs = {r[0]: r[1:] for r in s.execute(q2.where(JobRow.id.in_(ids)))}
    due = []
    for job_id, step_id, restarts in open_steps:
        state, run, end = jobs.get(job_id, ("PENDING", restarts + 1, None))  # gone: closed
        ended_long_ago = is_finished(state) and now - max(end or now, heard_floor) > grace
        if restarts != run or ended_long_ago:
            due.append((job_id, step_id))
    if not due:
        return False
    with db.write() as s:
        for key in due:
            st = s.get(StepRow, key)
            if st is None or st.state != "RUNNING":
                continue
            reported = [r[0] for r in json.loads(st.reports or "{}").values()]
            st.state, st.end_time = "CANCELLED", now
            st.exit_code = max(reported) if reported else None
        for job_id in sorted({job_id for job_id, _ in due}):
            row = s.get(JobRow, job_id)
            if row is not None:
                _release_allocation(row, running_steps(s, job_id, row.restarts))
    return True
