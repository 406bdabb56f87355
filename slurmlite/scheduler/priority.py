"""A job's priority when it is submitted (or released from a hold).

Priority orders the queue (spec §4.1): higher first, then older, then lower
job id.  Priority 0 means "held": the job never starts until released, and a
released job gets a freshly computed value.

Two plugins, chosen by ``PriorityType`` through ``registry.PRIORITY_TYPES``:

* ``priority/basic`` — plain FIFO.  Every new job gets one less than the job
  before, starting just below ``0xFFFF0000``; a positive nice lowers it by
  that much more (unless that would reach 0), a negative one raises it::

      sequence 0 -> 4294901759,  sequence 1 -> 4294901758, ...
      sequence 1 with --nice=100 -> 4294901658

  The caller passes ``sequence`` (how many priorities were handed out
  before), so this stays a pure function.
* ``priority/multifactor`` — a weighted sum of factors in [0, 1]
  (spec §2.1), minus the job's nice value, never below 1::

      priority = sum(weight[f] * factor[f] for f in factors) - nice

  With every weight 0 (slurm.conf sets none) each job gets 1, so the queue
  falls back to submit time, then job id: FIFO again.  Here the factors
  arrive ready-made through ``factors``; :func:`multifactor.multifactor`
  computes every one of them from the job, the cluster and the time, and
  keeps the breakdown (``sprio``, ``slurmlite explain``).

Reference: ``S:src/plugins/priority/basic/priority_basic.c``,
``S:src/plugins/priority/multifactor/priority_multifactor.c`` (behaviour only).
"""

from __future__ import annotations

from collections.abc import Mapping

from slurmlite.protocol import JobSubmit
from slurmlite.scheduler.multifactor import (
    ClusterFacts,
    Factors,
    JobFacts,
    JobPriority,
    PartitionFacts,
    PriorityParams,
    clamp_priority,
    multifactor,
)
from slurmlite.scheduler.registry import priority_for
from slurmlite.scheduler.snapshot import PendingJob, Policy

TOP_PRIORITY = 0xFFFF0000  # 4294901760; basic gives TOP_PRIORITY - 1 - sequence
HELD = 0

#: The factor names multifactor understands (and ``Policy.priority_weights`` keys).
FACTORS = ("age", "assoc", "fairshare", "jobsize", "partition", "qos", "tres")


def is_held(job: JobSubmit | PendingJob) -> bool:
    """``sbatch -H`` on a submission, or a hold reason on a pending job."""
    if isinstance(job, JobSubmit):
        return job.hold
    return job.held is not None


def _nice(job: JobSubmit | PendingJob) -> int:
    return job.nice if isinstance(job, JobSubmit) else 0


def basic_priority(
    job: JobSubmit | PendingJob,
    policy: Policy,
    *,
    sequence: int,
    factors: Mapping[str, float] | None = None,
) -> int:
    """FIFO: each job one below the previous one, moved by nice (never below 1)."""
    value = TOP_PRIORITY - 1 - sequence
    nice = _nice(job)
    if nice <= 0 or value > nice + 1:
        value -= nice
    return max(1, value)


def multifactor_priority(
    job: JobSubmit | PendingJob,
    policy: Policy,
    *,
    sequence: int,
    factors: Mapping[str, float] | None = None,
) -> int:
    """Weighted factor sum minus nice, clamped to [1, 2**32 - 1] (all weights 0 -> 1)."""
    factors = factors or {}
    total = 0.0
    for name, weight in policy.priority_weights.items():
        value = min(1.0, max(0.0, float(factors.get(name, 0.0))))
        total += weight * value
    return clamp_priority(total - _nice(job))


def initial_priority(
    job: JobSubmit | PendingJob,
    policy: Policy,
    *,
    sequence: int = 0,
    factors: Mapping[str, float] | None = None,
) -> int:
    """Priority for a new (or just released) job under ``policy.priority_type``.

    Held jobs get 0 whatever the plugin.  Raises ``UnknownPluginError`` for a
    PriorityType slurmlite does not know.
    """
    compute = priority_for(policy.priority_type)
    if is_held(job):
        return HELD
    return int(compute(job, policy, sequence=sequence, factors=factors))


__all__ = [
    "FACTORS", "HELD", "TOP_PRIORITY", "ClusterFacts", "Factors", "JobFacts", "JobPriority",
    "PartitionFacts", "PriorityParams", "basic_priority", "clamp_priority", "initial_priority",
    "is_held", "multifactor", "multifactor_priority",
]  # fmt: skip
