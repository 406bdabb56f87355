"""QOS limits (skeleton: the QOS helper fills this module in).

Public API other modules code against:

* ``QosLimits`` — one QOS as the scheduler sees it.
* ``LimitTracker(qos, running, enforce=True)`` — what each user holds now;
  ``reason(job) -> str | None`` names the QOS limit that keeps a pending job
  waiting (``QOSMaxJobsPerUserLimit``, ``QOSMaxGRESPerUser``, ...), and
  ``charge(job, start)`` counts a job the pass has just started.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slurmlite.scheduler.snapshot import PendingJob, RunningJob, Start


@dataclass(frozen=True)
class QosLimits:
    name: str
    priority: int = 0
    usage_factor: float = 1.0
    max_wall: int | None = None  # minutes
    max_jobs_pu: int | None = None
    max_submit_pu: int | None = None
    max_tres_pu: Mapping[str, int] = field(default_factory=dict)  # "cpu" / "gres/gpu" -> n
    max_tres_pj: Mapping[str, int] = field(default_factory=dict)
    flags: frozenset[str] = frozenset()


class LimitTracker:
    def __init__(
        self, qos: Mapping[str, object], running: Iterable[RunningJob], enforce: bool = True
    ) -> None:
        self.qos = qos
        self.enforce = enforce

    def reason(self, job: PendingJob) -> str | None:
        return None

    def charge(self, job: PendingJob, start: Start) -> None:
        return None
