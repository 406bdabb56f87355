"""``GET /v1/reports/lab``: a lab's period per user or account (``slurmlite report``).

For each user (or account), over the period [start, end):

* **jobs**: jobs that held resources during the period;
* **CPU-hours, GPU-hours**: CPUs (GPUs) x hours held, clipped to the period
  (the one formula of ``controller.reports.held``, as sreport's);
* **mean wait**: ``start_time - eligible_time`` (submit time when never held),
  over the jobs that *started* in the period;
* **success rate**: COMPLETED / ended, over the jobs that *ended* in the
  period (FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL ... count as
  ended, not completed);
* **GPU utilization**: the agents' measured mean (``job_usage.gpu_util_avg``,
  averaged over the run's nodes), weighted by each job's GPU-hours in the
  period; jobs without a measurement are left out of the mean, and
  ``measured_gpu_hours`` says how many GPU-hours the mean covers (None: none).

Worked example: alice ran a 2-GPU job for 1 h at 80 % and a 1-GPU job for
2 h at 20 % -> GPU-hours 2 + 2 = 4, utilization (80 x 2 + 20 x 2) / 4 = 50 %.

Two aggregate queries: one pass over the jobs of the period (each figure a
``CASE`` over its own jobs), one over the measured runs; ``PrivateData=usage``
narrows a non-operator to their own.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, case, func, or_, select

from controller.auth.callers import Caller
from controller.reports.held import JOBS, RUNNING_STATES, C, gpus_held, held_seconds, overlaps
from controller.reports.utilization import check_period, own_only
from controller.store.db import Database
from controller.store.models_usage import JobUsageRow
from slurmlite import errors
from slurmlite.config import Config
from slurmlite.errors import SlurmError
from slurmlite.protocol_reports import LabReport, LabRow

GROUPS = {"user": C.user, "account": C.account}


def lab_report(
    db: Database, cfg: Config, caller: Caller, start: float, end: float, now: float, by: str
) -> LabReport:
    """The ``slurmlite report`` answer for [start, end) at ``now``, one row per ``by``."""
    check_period(start, end)
    if by not in GROUPS:
        raise SlurmError(errors.ESLURM_INVALID_ACCOUNT, f"--by must be user or account, not {by!r}")
    key = GROUPS[by]
    mine = own_only(cfg, caller)

    dialect = db.engine.dialect.name
    queries = [
        _jobs_query(key, start, end, now, dialect),
        _measured_query(key, start, end, now, dialect),
    ]
    if mine:
        queries = [q.where(C.uid == caller.uid) for q in queries]
    with db.read() as s:
        found = s.execute(queries[0].group_by(key)).all()
        measured = {r[0]: r[1:] for r in s.execute(queries[1].group_by(key))}
    rows = []
    for name, jobs, cpu_s, gpu_s, wait, ended, completed in found:
        util_s, measured_s = measured.get(name, (None, None))
        weight = float(measured_s or 0.0)
        rows.append(
            LabRow(
                name=name,
                jobs=int(jobs or 0),
                cpu_hours=float(cpu_s or 0.0) / 3600,
                gpu_hours=float(gpu_s or 0.0) / 3600,
                mean_wait_s=None if wait is None else float(wait),
                ended=int(ended or 0),
                completed=int(completed or 0),
                gpu_util=float(util_s) / weight if weight > 0 else None,
                measured_gpu_hours=weight / 3600,
            )
        )
    return LabReport(start=start, end=end, now=now, by=by, rows=rows, own_only=mine)


def _jobs_query(key: Any, start: float, end: float, now: float, dialect: str) -> Any:
    """One pass over the period's jobs: held, waited, ended, per ``key``.

    The rows are the jobs that held something in the period or ended in it;
    each figure picks its own (a job that ended unstarted holds 0 seconds).
    """
    secs = held_seconds(start, end, now, dialect)
    held = overlaps(start, end, now)
    started = and_(held, C.start_time >= start)
    ended = and_(
        C.end_time >= start, C.end_time < end, C.state.not_in((*RUNNING_STATES, "PENDING"))
    )
    waited = C.start_time - func.coalesce(C.eligible_time, C.submit_time)
    return select(
        key,
        func.sum(case((held, 1), else_=0)),
        func.sum(secs * C.num_cpus),
        func.sum(secs * gpus_held()),
        func.avg(case((started, waited), else_=None)),
        func.sum(case((ended, 1), else_=0)),
        func.sum(case((and_(ended, C.state == "COMPLETED"), 1), else_=0)),
    ).where(or_(held, ended))


def _measured_query(key: Any, start: float, end: float, now: float, dialect: str) -> Any:
    """Utilization x GPU-seconds and the GPU-seconds it covers, per ``key``.

    Driven from ``job_usage`` (only measured runs; each finds its job by
    primary key), not from the jobs: a join on every job cost a quarter more.
    """
    u = JobUsageRow.__table__.c
    util = (
        select(u.job_id, u.restart, func.avg(u.gpu_util_avg).label("util"))
        .where(u.gpu_util_avg.is_not(None))
        .group_by(u.job_id, u.restart)
        .subquery()
    )
    gpu_secs = held_seconds(start, end, now, dialect) * gpus_held()
    run = and_(util.c.job_id == C.id, util.c.restart == C.restarts)
    return (
        select(key, func.sum(util.c.util * gpu_secs), func.sum(gpu_secs))
        .select_from(util.join(JOBS, run))
        .where(overlaps(start, end, now))
    )
