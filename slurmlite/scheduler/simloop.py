"""A small discrete-event loop over the pure scheduling pass.

``simulate(nodes, partitions, policy, workload) -> SimResult`` plays a
workload through ``passes.schedule_pass`` the way the controller would,
with a simulated clock instead of a real one.  Each workload job is a
``PendingJob`` (its ``submit_time`` is when it arrives) and the seconds it
really runs, at most its time limit.

The loop:

1. Events are arrivals (submit times), begin times (``--begin``) and
   completions (start + real run time).  Take the earliest event time ``t``.
2. At ``t``: jobs whose completion is due give their resources back, then
   jobs submitted by ``t`` join the queue.
3. If anything is pending, build the snapshot the controller would build:
   ``now = t``, the pending jobs, every running job as a ``RunningJob``
   whose ``end_time`` is start + *time limit* (what the scheduler may know,
   not the real run time), and the nodes with ``alloc_*`` summed from the
   running jobs' allocations (``snapshot.with_allocations``, the rule the
   test builders use too).  Run the pass once.
4. Start the plan's starts at ``t`` (a completion event at ``t`` + run
   time), and record each pending job's estimate (``Plan.estimates``).

Events at the same time are coalesced into one pass, as the controller
coalesces them.  The loop ends when no event is left; jobs that never
started (``BadConstraints``, ...) keep the last reason the pass gave them.
Priorities are the workload's own (they are not recomputed between passes).

Invariant: every start the loop makes is one the pass planned on a
snapshot that held every running allocation, so the pass alone decides
whether nodes are ever oversubscribed (``tests/sim`` checks that it never
does).

Worked example: one 4-CPU node; A (``-n 4 -t 10``, submitted at 0, runs
300 s) and B (``-n 2 -t 10``, submitted at 60, runs 600 s), backfill::

    t=0    pass: A starts on n1
    t=60   pass: B waits (Resources); estimate 600 (A's start + 10 min)
    t=300  A ends early; pass: B starts, 300 s before its estimate
    t=900  B ends; nothing is pending, so no pass
    -> starts {A: 0, B: 300}, ends {A: 300, B: 900},
       estimates {B: [(60, 600)]}, passes [0, 60, 300]

The property tests of the scheduler drive it over random clusters and
queues (any nodes, partitions, GPUs).  Workload traces are replayed by
``replay.py`` instead: one SWF machine, the classic simulators' event rules
(a pass per event, not per distinct time), a stream instead of a list.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from slurmlite.protocol import NodeAlloc
from slurmlite.scheduler.passes import schedule_pass
from slurmlite.scheduler.snapshot import (
    NodeView,
    PartitionView,
    PendingJob,
    Plan,
    Policy,
    RunningJob,
    Snapshot,
    with_allocations,
)


class SimulationError(ValueError):
    """The workload is malformed, or the pass planned something impossible."""


@dataclass(frozen=True)
class WorkloadJob:
    """One job of a workload: its request and how long it really runs."""

    job: PendingJob  # job.submit_time is when it arrives
    run_time: float  # seconds, > 0 and at most the time limit

    @property
    def job_id(self) -> int:
        return self.job.job_id

    @property
    def submit_time(self) -> float:
        return self.job.submit_time


@dataclass
class SimResult:
    """What happened: when each job started and ended, where, and what it was told."""

    starts: dict[int, float] = field(default_factory=dict)
    ends: dict[int, float] = field(default_factory=dict)
    allocs: dict[int, tuple[NodeAlloc, ...]] = field(default_factory=dict)
    # job id -> [(time of the pass, expected start it gave)], in pass order
    estimates: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    reasons: dict[int, str] = field(default_factory=dict)  # last reason while pending
    passes: list[float] = field(default_factory=list)  # times of the passes run

    @property
    def never_started(self) -> list[int]:
        return sorted(set(self.reasons) - set(self.starts))


PassObserver = Callable[[Snapshot, Plan], None]


def simulate(
    nodes: Iterable[NodeView],
    partitions: Iterable[PartitionView],
    policy: Policy,
    workload: Iterable[WorkloadJob],
    *,
    qos: Mapping[str, object] | None = None,
    on_pass: PassObserver | None = None,
) -> SimResult:
    """Play ``workload`` on an initially idle cluster; see the module doc.

    ``on_pass(snapshot, plan)`` is called after every pass (tests replay the
    snapshots; a replay tool can log them).
    """
    cluster = with_allocations(nodes, ())  # idle: nothing runs yet
    parts = tuple(partitions)
    jobs = _checked(workload)
    arrivals = sorted(jobs.values(), key=lambda w: (w.submit_time, w.job_id))
    events: list[float] = [w.submit_time for w in arrivals]
    events += [w.job.begin_time for w in arrivals if w.job.begin_time is not None]
    heapq.heapify(events)
    completions: list[tuple[float, int]] = []  # (end time, job id)
    pending: dict[int, PendingJob] = {}
    running: dict[int, RunningJob] = {}
    result = SimResult()
    next_arrival = 0

    while events:
        now = heapq.heappop(events)
        while events and events[0] <= now:  # coalesce events at the same time
            heapq.heappop(events)
        while completions and completions[0][0] <= now:
            end, job_id = heapq.heappop(completions)
            del running[job_id]
            result.ends[job_id] = end
        while next_arrival < len(arrivals) and arrivals[next_arrival].submit_time <= now:
            job = arrivals[next_arrival].job
            pending[job.job_id] = job
            next_arrival += 1
        if not pending:
            continue

        snapshot = Snapshot(
            now=now,
            nodes=with_allocations(cluster, running.values()),
            partitions=parts,
            pending=tuple(pending.values()),
            running=tuple(running.values()),
            qos=dict(qos or {}),
        )
        plan = schedule_pass(snapshot, policy)
        result.passes.append(now)
        if on_pass is not None:
            on_pass(snapshot, plan)

        for start in plan.starts:
            job = pending.pop(start.job_id, None)
            if job is None:
                raise SimulationError(f"pass at {now} started job {start.job_id}, not pending")
            limit = job.time_limit
            running[job.job_id] = RunningJob(
                job_id=job.job_id,
                user=job.user,
                account=job.account,
                qos=job.qos,
                partition=job.partition,
                start_time=now,
                end_time=None if limit is None else now + limit * 60,
                allocs=start.allocs,
            )
            result.starts[job.job_id] = now
            result.allocs[job.job_id] = start.allocs
            end = now + jobs[job.job_id].run_time
            heapq.heappush(completions, (end, job.job_id))
            heapq.heappush(events, end)
        for job_id in pending:
            if job_id in plan.reasons:
                result.reasons[job_id] = plan.reasons[job_id]
            if job_id in plan.estimates:
                result.estimates.setdefault(job_id, []).append((now, plan.estimates[job_id]))
    return result


def _checked(workload: Iterable[WorkloadJob]) -> dict[int, WorkloadJob]:
    jobs: dict[int, WorkloadJob] = {}
    for w in workload:
        if w.job_id in jobs:
            raise SimulationError(f"job id {w.job_id} appears twice in the workload")
        limit = w.job.time_limit
        if not w.run_time > 0 or (limit is not None and w.run_time > limit * 60):
            raise SimulationError(
                f"job {w.job_id}: run time {w.run_time} s not in (0, time limit {limit} min]"
            )
        jobs[w.job_id] = w
    return jobs
