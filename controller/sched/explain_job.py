"""Why a job is pending (``slurmlite explain``, ``GET /v1/jobs/{id}/explain``).

:func:`explain_job` reads the job, builds a fresh snapshot at ``now``
(``controller.sched.gather.take``) and hands it with the job's stored
priority breakdown (``jobs.prio_factors``) to the pure
``slurmlite.scheduler.explain.explain``, whose ``JobExplanation`` is the
answer.  Held jobs, which the scheduler's snapshot leaves out, are put back
into it so that the report can say they are held; jobs still waiting for a
dependency get the reason the last pass gave them (``Dependency``), as the
scheduler's own pass does (``controller.sched.deps``), so that they count as
ahead of nobody and reserve nothing.

Visibility follows the job listing: with ``PrivateData=jobs`` another user's
job is, to a non-operator, a job that does not exist -- as for an unknown id,
the answer is ``ESLURM_INVALID_JOB_ID`` ("Invalid job id specified", 404).  A
job that is not pending gets a ``JobExplanation`` carrying only its state and
a message, e.g. ``job 7 is RUNNING since 2026-11-30T12:00:00 on n[1-2]``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from sqlalchemy import select

from controller.accounting.usage import efficiency_summary
from controller.auth.callers import Caller
from controller.nodes.service import NodeService
from controller.sched import gather
from controller.sched.explain_ended import ended_lines
from controller.sched.explain_waits import waits_for
from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.rows import split_list
from slurmlite import errors, reasons
from slurmlite.config import Config
from slurmlite.errors import SlurmError
from slurmlite.hostlist import compress_sorted
from slurmlite.protocol_policy import JobExplanation
from slurmlite.scheduler.explain import REASON_TEXT, explain
from slurmlite.scheduler.snapshot import Policy
from slurmlite.timefmt import fmt_timestamp


def explain_job(
    db: Database,
    cfg: Config,
    policy: Policy,
    nodes: NodeService,
    caller: Caller,
    job_id: int,
    now: float,
) -> JobExplanation:
    """The explanation of ``job_id`` at ``now`` as ``caller`` may see it (SlurmError if
    hidden or unknown)."""
    with db.read() as s:
        row = s.get(JobRow, job_id)
        if row is None or not _visible(cfg, caller, row):
            raise SlurmError(errors.ESLURM_INVALID_JOB_ID)
        if row.state != "PENDING":
            return JobExplanation(
                job_id=job_id,
                state=row.state,
                now=now,
                message=_not_pending(row) + ended_lines(row) + _efficiency(s, row),
                user=row.user,
                partition=row.partition,
                priority=row.priority,
                time_limit=row.time_limit,
            )
        job = gather.pending_job(row)
        factors = _factors(row.prio_factors)
        waits = waits_for(s, row, now)
        dep_reason = row.reason if row.dependency else None  # the pass's reason for it
        waiting = _dependency_reasons(s)
    snap, _current = gather.take(db, cfg, nodes, now)
    if waiting:
        snap = dataclasses.replace(snap, pending=gather.with_reasons(snap.pending, waiting))
    if all(j.job_id != job_id for j in snap.pending):  # held (or pending since the read)
        snap = dataclasses.replace(snap, pending=(*snap.pending, job))
    if not snap.nodes:  # take() skips the nodes when no job is eligible
        snap = dataclasses.replace(snap, nodes=gather.node_views(cfg, nodes, now))
    answer = explain(snap, policy, job_id, factors=factors, viewer=caller.user)
    if dep_reason in (reasons.DEPENDENCY, reasons.DEPENDENCY_NEVER_SATISFIED):
        text = REASON_TEXT.get(dep_reason, "")
        answer = dataclasses.replace(answer, reason=dep_reason, reason_text=text, starts_now=False)
    return dataclasses.replace(answer, waits_for=waits)


def _dependency_reasons(s: Any) -> dict[int, str]:
    """Pending jobs whose dependency is not met yet (a met one is cleared from the row)."""
    waiting = (JobRow.state == "PENDING") & (JobRow.dependency > "")
    rows = s.execute(select(JobRow.id, JobRow.dep_failed).where(waiting)).all()
    never = reasons.DEPENDENCY_NEVER_SATISFIED
    return {r[0]: never if r[1] else reasons.DEPENDENCY for r in rows}


def _visible(cfg: Config, caller: Caller, row: JobRow) -> bool:
    """PrivateData=jobs hides other users' jobs from non-operators (as listings do)."""
    private = {word.lower() for word in cfg.private_data}
    return caller.admin or "jobs" not in private or row.uid == caller.uid


def _factors(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _efficiency(s: Any, row: JobRow) -> str:
    """A finished job's efficiency lines (seff's, controller.accounting.usage), indented."""
    if row.state == "RUNNING" or not row.end_time or not row.start_time:
        return ""
    return "".join(f"\n  {line}" for line in efficiency_summary(s, row))


def _not_pending(row: JobRow) -> str:
    nodes = compress_sorted(split_list(row.nodes)) if row.nodes else ""
    where = f" on {nodes}" if nodes else ""
    if row.state == "RUNNING":
        return f"job {row.id} is RUNNING since {fmt_timestamp(row.start_time)}{where}"
    if row.end_time:
        return f"job {row.id} is {row.state} since {fmt_timestamp(row.end_time)}{where}"
    return f"job {row.id} is {row.state}, not pending"
