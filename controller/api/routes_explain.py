"""``GET /v1/jobs/{job_id}/explain``: why a job is pending (``slurmlite explain``).

The route builds a fresh snapshot at ``ctl.clock()`` (``controller.sched.gather.take``),
hands it with the job's stored priority breakdown (``jobs.prio_factors``) to the
pure ``slurmlite.scheduler.explain.explain`` and answers its ``JobExplanation``.
Held jobs, which the scheduler's snapshot leaves out, are put back into it so
that the report can say they are held.

Visibility follows the job listing: with ``PrivateData=jobs`` another user's
job is, to a non-operator, a job that does not exist -- as for an unknown id,
the answer is ``ESLURM_INVALID_JOB_ID`` ("Invalid job id specified", 404).  A
job that is not pending gets a ``JobExplanation`` carrying only its state and
a message, e.g. ``job 7 is RUNNING since 2026-11-30T12:00:00 on n[1-2]``.

The work (a pass plus up to ``explain_suggest.MAX_TRIALS`` trial passes)
runs in FastAPI's thread pool (a plain ``def`` route), never on the event loop.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any

from fastapi import APIRouter, Path

from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import JobExplanationModel
from controller.auth.callers import Caller
from controller.context import Controller
from controller.sched import gather
from controller.store.models import JobRow
from controller.store.rows import split_list
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.hostlist import compress_sorted
from slurmlite.protocol import to_dict
from slurmlite.protocol_policy import JobExplanation
from slurmlite.scheduler.explain import explain
from slurmlite.timefmt import fmt_timestamp
from slurmlite.wire_limits import INT32_MAX

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
JobIdPath = Annotated[int, Path(ge=0, le=INT32_MAX)]


@router.get("/{job_id}/explain", response_model=JobExplanationModel, operation_id="explain_job")
def explain_job(job_id: JobIdPath, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    return to_dict(explain_for(ctl, caller, job_id))


def explain_for(ctl: Controller, caller: Caller, job_id: int) -> JobExplanation:
    """The explanation of ``job_id`` as ``caller`` may see it (SlurmError if hidden)."""
    now = ctl.clock()
    with ctl.db.read() as s:
        row = s.get(JobRow, job_id)
        if row is None or not _visible(ctl, caller, row):
            raise SlurmError(errors.ESLURM_INVALID_JOB_ID)
        if row.state != "PENDING":
            return JobExplanation(
                job_id=job_id,
                state=row.state,
                now=now,
                message=_not_pending(row),
                user=row.user,
                partition=row.partition,
                priority=row.priority,
                time_limit=row.time_limit,
            )
        job = gather.pending_job(row)
        factors = _factors(row.prio_factors)
    snap, _current = gather.take(ctl.db, ctl.cfg, ctl.nodes, now)
    if all(j.job_id != job_id for j in snap.pending):  # held (or pending since the read)
        snap = dataclasses.replace(snap, pending=(*snap.pending, job))
    if not snap.nodes:  # take() skips the nodes when no job is eligible
        snap = dataclasses.replace(snap, nodes=gather.node_views(ctl.cfg, ctl.nodes, now))
    return explain(snap, ctl.policy, job_id, factors=factors)


def _visible(ctl: Controller, caller: Caller, row: JobRow) -> bool:
    """PrivateData=jobs hides other users' jobs from non-operators (as listings do)."""
    private = {word.lower() for word in ctl.cfg.private_data}
    return caller.admin or "jobs" not in private or row.uid == caller.uid


def _factors(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _not_pending(row: JobRow) -> str:
    nodes = compress_sorted(split_list(row.nodes)) if row.nodes else ""
    where = f" on {nodes}" if nodes else ""
    if row.state == "RUNNING":
        return f"job {row.id} is RUNNING since {fmt_timestamp(row.start_time)}{where}"
    if row.end_time:
        return f"job {row.id} is {row.state} since {fmt_timestamp(row.end_time)}{where}"
    return f"job {row.id} is {row.state}, not pending"
