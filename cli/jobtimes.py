"""A job's times as squeue and scontrol show them: run time, (expected) start, expected end.

Pure functions of the job's wire record (``now`` is a parameter).  For a
pending job the start is the backfill plan's estimate (``sched_start``),
else its begin time while it waits for it (reason ``BeginTime``), else
unknown; e.g. a job pending behind a 2-hour job that started at 10:00 shows
START_TIME 12:00 once backfill has planned it.
"""

from __future__ import annotations

import math

from slurmlite import states

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (see squeue_format)
if TYPE_CHECKING:  # commands must not import the wire dataclasses (start-up time)
    from slurmlite.protocol import JobInfo


def time_used(job: JobInfo, now: float) -> int:
    """Seconds a job has run: 0 while pending, up to now while running."""
    if not job.start_time or job.state == "PENDING":
        return 0
    if job.state == "SUSPENDED" and getattr(job, "pre_sus_time", None) is not None:
        return int(getattr(job, "pre_sus_time", None))
    end = now if job.state == "RUNNING" or not job.end_time else job.end_time
    return int(end) - int(job.start_time)


def start_time(job: JobInfo) -> float | None:
    """When the job started; for a pending job, when it is expected to: the
    scheduler's estimate (``sched_start``, written by backfill), else its
    begin time while it waits for it (reason BeginTime), else None (``N/A``)."""
    if job.state != "PENDING" or job.start_time:
        return job.start_time
    estimate = getattr(job, "sched_start", None)
    if estimate is None and job.reason == "BeginTime":
        return getattr(job, "eligible_time", None)
    return estimate


def expected_end(job: JobInfo) -> float | None:
    """Actual end, else start + limit (``inf`` when unlimited), else None."""
    if job.end_time:
        return job.end_time
    if job.start_time and not states.is_finished(job.state):
        return end_after(job.start_time, job.time_limit)
    return None


def end_after(start: float, time_limit: int | None) -> float:
    """When a run from ``start`` ends at the latest: start + limit, ``inf`` when unlimited."""
    return math.inf if time_limit is None else start + time_limit * 60
