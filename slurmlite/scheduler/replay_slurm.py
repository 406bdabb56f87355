"""Multifactor priority and fair-share for a trace replay (``--policy slurm``).

The controller recomputes pending priorities every ``PriorityCalcPeriod``
from decayed usage (``usage.py``), the fair-share tree (``fairshare.py``) and
the factors (``multifactor.py``).  ``TraceMultifactor`` does the same on the
trace's clock with those very functions:

* associations: one account per SWF group (field 13, ``g<N>``), one user per
  SWF user (field 12, ``u<N>``) under the group of the first job seen, every
  one with ``FairShare=1``; an unknown (-1) group is account ``g-1``;
* usage: CPU-seconds (billing = CPUs, as without TRESBillingWeights).  At each
  recalculation every usage decays by ``D ** elapsed``
  (``usage.decay_factor(PriorityDecayHalfLife)``) and each running job adds the
  CPU-seconds it ran since the last one; a job that ends adds the rest of its
  run then, so nothing is charged twice or lost;
* a recalculation is due before a pass when ``PriorityCalcPeriod`` has passed
  since the last one; then every waiting job gets ``multifactor_many``'s
  value (age since submit, fair-share factor, job size over the machine's
  CPUs); a new job gets its value when it is submitted.

Worked example (weights Fairshare=10000, no decay, one period between):
users u1 and u2 in group g1 with equal shares; u1 has used 3,000 CPU-seconds,
u2 1,000; Fair Tree ranks u2 above u1, so u2's factor is 1.0 and u1's 0.5:
a job of u2 gets 10000, one of u1 5000 — u2's jobs go first.

Reference: ``S:src/plugins/priority/multifactor/priority_multifactor.c``
(``_decay_thread``), behaviour only.
"""

from __future__ import annotations

from slurmlite.scheduler.fairshare import FairShareTree, account, root, user
from slurmlite.scheduler.multifactor import (
    ClusterFacts,
    JobFacts,
    PartitionFacts,
    PriorityParams,
    multifactor_many,
)
from slurmlite.scheduler.replay import PriorityModel
from slurmlite.scheduler.snapshot import PendingJob
from slurmlite.scheduler.swf import TraceJob
from slurmlite.scheduler.usage import decay_factor


def assoc_of(job: TraceJob | PendingJob) -> tuple[str, str]:
    """(account, user) names of a trace job: ``g<group>``, ``u<user>``."""
    if isinstance(job, TraceJob):
        return f"g{job.group}", f"u{job.user}"
    return f"g{job.account}", f"u{job.user}"


class TraceMultifactor(PriorityModel):
    """Decayed usage, fair-share factors and multifactor priorities on trace time."""

    def __init__(
        self,
        params: PriorityParams,
        procs: int,
        *,
        half_life: float,
        period: float,
        dampening: float = 1.0,
    ) -> None:
        self.params = params
        self.decay = decay_factor(half_life)
        self.period = max(1.0, period)
        self.dampening = dampening
        self.cluster = ClusterFacts(nodes=1, cpus=procs)
        self.partition = PartitionFacts(name="trace", tres_total={"cpu": procs, "node": 1})
        self.home: dict[str, str] = {}  # user -> the account of its first job
        # (account, user) -> decayed CPU-seconds, keyed as FairShareTree.factors reads it
        self.usage: dict[tuple[str, str], float] = {}
        self.running: dict[int, list[float]] = {}  # job id -> [cpus, charged until]
        self.users: dict[int, tuple[str, str]] = {}  # running job id -> (account, user)
        self.factors: dict[tuple[str, str], float] = {}
        self.last: float | None = None
        self.recalcs = 0
        self._shape: tuple[int, FairShareTree] | None = None  # (users, the tree built for them)

    # -- usage ---------------------------------------------------------------------

    def _know(self, acct: str, name: str) -> str:
        if name not in self.home:
            self.home[name] = acct
            self.usage[(acct, name)] = 0.0
            self.factors[(acct, name)] = self._fresh_factor()
        return self.home[name]

    def _fresh_factor(self) -> float:
        return 1.0 if not self.factors else max(self.factors.values())

    def started(self, job: TraceJob, now: float) -> None:
        acct, name = assoc_of(job)
        self.running[job.job_id] = [float(job.procs), now]
        self.users[job.job_id] = (self.home.get(name, acct), name)

    def ended(self, job: TraceJob, start: float, end: float) -> None:
        cpus, since = self.running.pop(job.job_id)
        key = self.users.pop(job.job_id)
        self.usage[key] += cpus * max(0.0, end - since)

    # -- priorities ----------------------------------------------------------------

    def submit_priority(self, request: PendingJob, now: float) -> int:
        self._know(*assoc_of(request))
        return self._values(now, [request])[0]

    def recalc(self, now: float, waiting: list[PendingJob]) -> dict[int, int] | None:
        if self.last is not None and now < self.last + self.period:
            return None
        elapsed = 0.0 if self.last is None else now - self.last
        self.last = now
        self.recalcs += 1
        if elapsed > 0 and self.decay < 1.0:
            kept = self.decay**elapsed
            usage = self.usage
            for key in usage:
                usage[key] *= kept
        for job_id, held in self.running.items():
            cpus, since = held
            self.usage[self.users[job_id]] += cpus * (now - since)
            held[1] = now
        self._refresh()
        values = self._values(now, waiting)
        return {job.job_id: value for job, value in zip(waiting, values, strict=True)}

    def _refresh(self) -> None:
        shape = self._shape
        if shape is None or shape[0] != len(self.home):  # built again when users join
            groups: dict[str, list[str]] = {}
            for name, acct in self.home.items():
                groups.setdefault(acct, []).append(name)
            tree = root(
                *(account(acct, 1, *(user(n, 1) for n in names)) for acct, names in groups.items())
            )
            shape = self._shape = (len(self.home), FairShareTree(tree))
        self.factors = shape[1].factors(
            self.usage, fair_tree=self.params.fair_tree, dampening=self.dampening
        )

    def _values(self, now: float, jobs: list[PendingJob]) -> list[int]:
        facts = [
            JobFacts(
                min_nodes=1,
                cpus=job.ntasks or 1,
                accrue_time=job.submit_time,
                submit_time=job.submit_time,
                time_limit=None if job.time_limit is None else int(job.time_limit),
            )
            for job in jobs
        ]
        fairshares = [
            self.factors.get(
                (self.home.get(f"u{job.user}", f"g{job.account}"), f"u{job.user}"), 0.0
            )
            for job in jobs
        ]
        return multifactor_many(
            facts,
            self.params,
            now=now,
            cluster=self.cluster,
            partitions=[self.partition] * len(jobs),
            fairshares=fairshares,
        )
