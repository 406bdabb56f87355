"""Putting a run back in the queue: the one requeue every path shares.

A job is requeued when its node fails (``loop.fail_job``), when a user asks
(``scontrol requeue``, ``controller.jobs.operations``), and when a prolog
fails (the node's ``Prolog``, ``controller.jobs.service``; the controller's
``PrologSlurmctld``, ``controller.sched.ctld_scripts``).  Each goes back to
PENDING the same way (spec §1.7): restart count + 1, reason ``BeginTime``
until ``requeue_delay`` seconds have passed (plus one, as Slurm), its
allocation released at once -- and, slurmlite's addition, the cause of
this restart appended to ``restart_causes`` (``slurmlite.restarts``).

A run that never started because a prolog failed (``requeue_failed_launch``)
is requeued *held* by an administrator (``JobHeldAdmin``, "launch failed
requeued held"), as Slurm does, unless the job's launches already failed
``MaxBatchRequeue`` times: then it ends FAILED (``JobLaunchFailure``).

Example: job 7 RUNNING on n1 (restarts 0), n1 goes DOWN at t=100 with
``requeue_delay=120`` -> PENDING, reason BeginTime, eligible at t=221,
restarts 1, causes ``node_fail:n1``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.steps.ends import step_state
from controller.store.models import JobRow, StepRow
from controller.store.models_runs import JobRunRow
from slurmlite import reasons
from slurmlite.restarts import ENDED_AS, add_cause, launch_failures

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from slurmlite.config import Config
    from slurmlite.protocol import JobCompletion

LAUNCH_HELD = "launch failed requeued held"  # the held job's reason description (Slurm's)


def requeue_run(
    s: Session,
    row: JobRow,
    now: float,
    delay: int,
    cause: str,
    detail: str = "",
    *,
    keep_batch_step: bool = False,
) -> None:
    """Back to PENDING for another run, recording ``cause`` (module doc).

    ``keep_batch_step``: the old run's processes are still being stopped and
    their agent will report how the batch step ended (a user's requeue);
    otherwise the step is dropped (nothing will report it).  The run that ends here is
    kept in the job's history (``job_runs``: ``slurmlite get run`` lists it)."""
    s.add(
        JobRunRow(
            job_id=row.id,
            restart=row.restarts,
            start_time=row.start_time,
            end_time=row.end_time or now,
            nodes=row.nodes,
            state=ENDED_AS.get(cause, row.state),
            exit_code=row.exit_code,
            cause=f"{cause}:{detail}" if detail else cause,
        )
    )
    row.state, row.reason, row.flags = "PENDING", reasons.BEGIN_TIME, ""
    row.restarts += 1
    row.restart_causes = add_cause(row.restart_causes, cause, detail)
    row.eligible_time = now + delay + 1
    row.start_time = row.end_time = None
    row.alloc, row.nodes, row.layout, row.batch_host = "[]", "", "", None
    row.ctld_epilog = None  # a requeued run owes no EpilogSlurmctld
    if not keep_batch_step:
        step = s.get(StepRow, (row.id, "batch"))
        if step is not None:
            s.delete(step)


def requeue_failed_launch(
    s: Session, cfg: Config, row: JobRow, now: float, cause: str, detail: str, failure: str
) -> None:
    """A prolog kept the run from starting: requeue it held, or fail it (module doc).

    ``failure`` says what failed, for the FAILED job's description."""
    if launch_failures(row.restart_causes) >= cfg.max_batch_requeue:
        row.state, row.reason, row.end_time = "FAILED", reasons.JOB_LAUNCH_FAILURE, now
        row.flags = ""
        row.state_desc = f"{failure}, MaxBatchRequeue={cfg.max_batch_requeue} reached"
        step = s.get(StepRow, (row.id, "batch"))
        if step is not None and step.end_time is None:  # it never ran (sacct: CANCELLED)
            step.state, step.end_time = "CANCELLED", now
        return
    delay = int(cfg.scheduler_parameters.get("requeue_delay", 120))
    requeue_run(s, row, now, delay, cause, detail)
    row.hold, row.priority = reasons.JOB_HELD_ADMIN, 0
    row.reason, row.state_desc = reasons.JOB_HELD_ADMIN, LAUNCH_HELD


def end_of_requeued_run(step: StepRow | None, node: str, msg: JobCompletion, now: float) -> bool:
    """The run before a ``scontrol requeue`` ended: its batch step records how (the job,
    PENDING for its next run, is untouched), as sacct shows it.  Only while the job
    waits: once it runs again, the step row is the new run's."""
    if step is None or step.end_time is not None or step.nodes != node:
        return False
    step.exit_code, step.end_time = msg.exit_code, msg.end_time or now
    step.state = step_state(msg.exit_code, "PENDING", msg.launch_failed)
    return True
