"""Queue orders a scheduling course compares, as priority plugins.

A queue discipline is only a priority: the pass sorts pending jobs by
priority (high first), then submit time, then job id (``passes.queue_order``),
so "shortest job first" is a ``PriorityType`` whose value falls as the time
limit grows.  Each order here is registered in ``registry.PRIORITY_TYPES``
under its own name, selectable in slurm.conf like ``priority/basic`` and by
``slurmlite simulate --order``:

=====================  ==========================================  ============
PriorityType           first in the queue                          value
=====================  ==========================================  ============
``priority/sjf``       shortest time limit (estimate)              TOP - secs
``priority/ljf``       longest time limit                          1 + secs
``priority/smallest``  fewest CPUs                                 TOP - cpus
``priority/largest``   most CPUs                                   1 + cpus
=====================  ==========================================  ============

``TOP`` is ``priority.TOP_PRIORITY - 1``; an UNLIMITED time limit counts as a
year.  Equal values fall back to submit order, so each order is total and a
replay is deterministic.  The value is fixed at submit time, as
``priority/basic``'s is.

Worked example: A (-n 4 -t 10), B (-n 1 -t 60), C (-n 2 -t 5), submitted in
that order.  ``sjf``: C (300 s), A (600 s), B (3,600 s); ``largest``: A, C, B;
``smallest``: B, C, A; ``ljf``: B, A, C.
"""

from __future__ import annotations

from collections.abc import Mapping

from slurmlite.protocol import JobSubmit
from slurmlite.scheduler.snapshot import PendingJob, Policy

_TOP = 0xFFFF0000 - 1  # priority.TOP_PRIORITY - 1 (imported values would import a cycle)
_YEAR = 365 * 86400


def limit_seconds(job: JobSubmit | PendingJob) -> int:
    """The job's time limit in whole seconds (UNLIMITED or unset: a year)."""
    limit = job.time_limit
    if limit is None:
        return _YEAR
    return min(_YEAR, max(0, round(limit * 60)))


def job_cpus(job: JobSubmit | PendingJob) -> int:
    """CPUs the job asks for at least: tasks x CPUs per task (one task per node when
    only a node count is given)."""
    tasks = job.ntasks
    if tasks is None:
        tasks = max(1, job.nodes_min or 1) * max(1, job.ntasks_per_node or 1)
    return max(1, tasks) * max(1, job.cpus_per_task or 1)


def _clamp(value: int) -> int:
    return max(1, min(_TOP, value))


def sjf_priority(
    job: JobSubmit | PendingJob,
    policy: Policy,
    *,
    sequence: int,
    factors: Mapping[str, float] | None = None,
) -> int:
    """Shortest time limit first."""
    return _clamp(_TOP - limit_seconds(job))


def ljf_priority(
    job: JobSubmit | PendingJob,
    policy: Policy,
    *,
    sequence: int,
    factors: Mapping[str, float] | None = None,
) -> int:
    """Longest time limit first."""
    return _clamp(1 + limit_seconds(job))


def smallest_priority(
    job: JobSubmit | PendingJob,
    policy: Policy,
    *,
    sequence: int,
    factors: Mapping[str, float] | None = None,
) -> int:
    """Fewest CPUs first."""
    return _clamp(_TOP - job_cpus(job))


def largest_priority(
    job: JobSubmit | PendingJob,
    policy: Policy,
    *,
    sequence: int,
    factors: Mapping[str, float] | None = None,
) -> int:
    """Most CPUs first."""
    return _clamp(1 + job_cpus(job))
