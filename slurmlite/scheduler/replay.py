"""Trace replay: a workload trace through the production scheduling pass.

``Replay(procs, setup, sink).run(jobs)`` plays SWF jobs (``swf.TraceJob``, in
file order) on one node of ``procs`` CPUs, calling ``passes.schedule_pass``
with the policy of ``setup`` (``replay_setup.py``: fcfs, easy, slurm) and a
simulated clock.  It follows the rules of the classic reference simulators
(the traces folder's README, §1), so its schedules agree job for job:

1. Events: a job's submission (at its submit time, in file order) and its
   termination (at start + simulated run time).  At the same second,
   submissions come before terminations; terminations come in the order the
   jobs started.
2. A pass runs after every submission and after every termination.
3. The pass sees a running job until its *estimated* end (start +
   estimate): at that second it is over for every pass, even before its
   termination event is handled (the profile is built from estimates; the
   job really ends then too, since a job never runs past its estimate).
4. The pass's starts happen at once; each job gets CPU indices from the
   lowest free ones (``resources``: the simulator's own placement, for the
   Gantt chart and Batsim's ``allocated_resources``).

What the replay hands the pass is exact but lean; each rule below gives the
very starts the whole snapshot would give (``tests/sim/test_replay.py``
checks it against an unpruned replay):

* no pass when nothing waits, when nothing changed since the last pass (a
  pass leaves no job that could still start), or when fewer CPUs are free
  than the smallest waiting job needs;
* ``prune="head"`` (main pass only): jobs below the first one that does not
  fit cannot start, so the pass gets the queue's head up to that job;
* ``prune="fits"`` (EASY: backfill with one reservation): a job needing more
  CPUs than are free now can neither start nor, after the first blocked job,
  reserve, so the pass gets the jobs that fit the free CPUs plus the first
  that does not;
* ``prune="none"``: every waiting job (the ``slurm`` policy's backfill
  cycle, whose reservations are conservative).

With a second policy (``ReplaySetup.backfill``: slurmctld's backfill cycle)
the cycle runs at the next multiple of ``interval`` after something changed
(a job queued or ended, priorities recomputed), not at every multiple: in
between, only the waiting jobs' ages grow.

Worked example (4 CPUs, EASY; ``id submit run estimate procs``)::

    1  0  100 100 3      t=0   1 starts (CPUs 0-2)
    2  10 100 100 4      t=10  2 waits: shadow 100, extra 0
    3  20  50  50 1      t=20  3 fits (1 free) and ends at 70 <= 100: starts (CPU 3)
    4  30  50 200 1      t=30  4 fits nothing (0 free): no pass
                         t=70  3 ends; 4 would end at 270 > 100 and 1 > extra: waits
                         t=100 1 ends; 2 starts (CPUs 0-3); 4 waits
                         t=200 2 ends; 4 starts -> waits 0, 90, 0, 170

Time and memory: the trace is read as a stream and a job is forgotten when
it ends (the sink gets its ``JobRecord``), so memory follows the queue and
the running jobs, not the trace's length.
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from slurmlite.scheduler.passes import schedule_pass
from slurmlite.scheduler.priority import initial_priority
from slurmlite.scheduler.replayed import JobRecord
from slurmlite.scheduler.snapshot import (
    NodeView,
    PartitionView,
    PendingJob,
    Policy,
    RunningJob,
    Snapshot,
)
from slurmlite.scheduler.swf import TraceJob

NODE = "trace"  # the one node of an SWF machine, and its partition
PRUNES = ("head", "fits", "none")


class ReplaySink:
    """What a replay reports; every method may be left as it is."""

    def started(self, job_id: int, start: float) -> None:
        """``job_id`` started at ``start`` (called in start order)."""

    def ended(self, record: JobRecord) -> None:
        """A job ended; ``record`` is all the replay knows of it."""

    def changed(self, now: float, waiting: int, busy: int) -> None:
        """After the events of ``now``: jobs waiting, CPUs busy (only if ``track``)."""


@dataclass
class _Live:
    job: TraceJob
    start: float
    resources: tuple[tuple[int, int], ...]
    done: bool = False


class Cpus:
    """Free CPU indices as sorted inclusive ranges; a job takes the lowest free ones.

    >>> c = Cpus(8); c.take(3), c.take(2)
    (((0, 2),), ((3, 4),))
    >>> c.give(((0, 2),)); c.take(4)
    ((0, 2), (5, 5))
    """

    def __init__(self, procs: int) -> None:
        self.free: list[tuple[int, int]] = [(0, procs - 1)]

    def take(self, count: int) -> tuple[tuple[int, int], ...]:
        got: list[tuple[int, int]] = []
        while count > 0:
            lo, hi = self.free[0]
            n = hi - lo + 1
            if n <= count:
                got.append((lo, hi))
                self.free.pop(0)
                count -= n
            else:
                got.append((lo, lo + count - 1))
                self.free[0] = (lo + count, hi)
                count = 0
        return tuple(got)

    def give(self, ranges: tuple[tuple[int, int], ...]) -> None:
        for r in ranges:
            insort(self.free, r)
        merged: list[tuple[int, int]] = []
        for lo, hi in self.free:
            if merged and merged[-1][1] + 1 == lo:
                merged[-1] = (merged[-1][0], hi)
            else:
                merged.append((lo, hi))
        self.free = merged


class PriorityModel:
    """Priorities that change while jobs wait (multifactor and fair-share): the replay
    tells it every start and end and asks it before each pass (``replay_slurm.py``)."""

    def submit_priority(self, request: PendingJob, now: float) -> int:
        raise NotImplementedError

    def recalc(self, now: float, waiting: list[PendingJob]) -> dict[int, int] | None:
        """New priorities by job id when a recalculation is due at ``now``, else None."""
        raise NotImplementedError

    def started(self, job: TraceJob, now: float) -> None: ...

    def ended(self, job: TraceJob, start: float, end: float) -> None: ...


@dataclass(frozen=True)
class ReplaySetup:
    """A named policy: the pass run after each event, and how the replay may prune what
    it hands that pass; optionally a second pass on the whole queue every ``interval``
    seconds (Slurm's backfill cycle) and a priority model."""

    name: str
    policy: Policy
    prune: str = "none"  # one of PRUNES (see the module doc)
    backfill: Policy | None = None  # run every ``interval`` s of trace time while jobs wait
    interval: float = 30.0
    priorities: PriorityModel | None = None
    settings: tuple[str, ...] = ()  # what the replay runs under, printed with the results


def pending_job(job: TraceJob, priority: int) -> PendingJob:
    """The request the pass sees for a trace job: ``procs`` tasks on the one node,
    the estimate as its time limit (fractional minutes), the trace's user and group
    as user and account."""
    return PendingJob(
        job_id=job.job_id,
        priority=priority,
        submit_time=job.submit,
        partition=NODE,
        user=str(job.user),
        account=str(job.group),
        nodes_max=1,  # -N 1: the machine is one node (and the pass need not try spreading)
        ntasks=job.procs,
        time_limit=job.estimate / 60.0,
    )


def _arrivals(jobs: Iterable[TraceJob]) -> Iterator[TraceJob]:
    """Jobs by submit time, file order kept for ties; a job listed before an earlier
    one (a placeholder moved to second 1) is held back until that one is read."""
    held: list[tuple[float, int, TraceJob]] = []
    for seq, job in enumerate(jobs):
        while held and held[0][0] < job.submit:
            yield heapq.heappop(held)[2]
        heapq.heappush(held, (job.submit, seq, job))
    while held:
        yield heapq.heappop(held)[2]


class Replay:
    """One replay of a job stream on one node of ``procs`` CPUs (see the module doc)."""

    def __init__(self, procs: int, setup: ReplaySetup, sink: ReplaySink | None = None,
                 *, track: bool = False) -> None:  # fmt: skip
        if setup.prune not in PRUNES:
            raise ValueError(f"prune must be one of {PRUNES}")
        self.procs = procs
        self.setup = setup
        self.policy = setup.policy
        self.sink = sink or ReplaySink()
        self.track = track
        self.node = NodeView(NODE, 0, procs, procs, partitions=(NODE,))
        self.partitions = (PartitionView(NODE, (NODE,)),)
        self.order: list[tuple[int, float, int]] = []  # queue keys, sorted
        self.pending: dict[int, tuple[PendingJob, TraceJob]] = {}
        self.running: dict[int, RunningJob] = {}  # what the pass sees
        self.live: dict[int, _Live] = {}  # started, termination not handled yet
        self.busy = 0  # CPUs the pass sees held
        self.cpus = Cpus(procs)
        self.retire: list[tuple[float, int]] = []  # (estimated end, job id)
        self.ends: list[tuple[float, int, int]] = []  # (end, start sequence, job id)
        self.sequence = 0  # submissions so far (priority/basic's counter)
        self.started_count = 0
        self.dirty = False  # something changed since the last pass
        self.freed = True  # CPUs were freed (or the order changed) since the last pass
        self.arrived: list[int] = []  # jobs queued since the last pass, all behind the rest
        self.passes = 0
        self.now = 0.0
        self.model = setup.priorities
        self.tick: float | None = None  # next backfill cycle
        self.bf_dirty = False  # changed since the last backfill cycle

    # -- the loop ----------------------------------------------------------------

    def run(self, jobs: Iterable[TraceJob]) -> None:
        """Replay ``jobs`` (file order) to the end; the sink hears every job."""
        arrivals = _arrivals(jobs)
        nxt = next(arrivals, None)
        ends = self.ends
        inf = float("inf")
        while nxt is not None or ends or self.tick is not None:
            t = min(
                inf if nxt is None else nxt.submit,
                ends[0][0] if ends else inf,
                inf if self.tick is None else self.tick,
            )
            self.now = t = max(t, self.now)
            self._retire(t)
            while nxt is not None and nxt.submit <= t:
                self._submit(nxt)
                self._pass()
                nxt = next(arrivals, None)
            while ends and ends[0][0] <= t:
                _, _, job_id = heapq.heappop(ends)
                self._end(job_id)
                self._pass()
            if self.tick is not None and self.tick <= t:
                self.tick = None
                self._cycle()
            if self.setup.backfill is not None and self.tick is None:
                if self.pending and self.bf_dirty:
                    step = self.setup.interval
                    self.tick = (t // step + 1) * step
            if self.track:
                self.sink.changed(t, len(self.pending), self.busy)

    def _retire(self, t: float) -> None:
        """Jobs whose estimated end is ``t`` or before are over for every pass from now."""
        while self.retire and self.retire[0][0] <= t:
            _, job_id = heapq.heappop(self.retire)
            self._free(job_id)

    def _free(self, job_id: int) -> None:
        live = self.live.get(job_id)
        if live is None or live.done:  # ended before its estimate, or freed already
            return
        live.done = True
        del self.running[job_id]
        self.busy -= live.job.procs
        self.cpus.give(live.resources)
        self.dirty = self.freed = self.bf_dirty = True

    def _submit(self, job: TraceJob) -> None:
        request = pending_job(job, 0)
        if self.model is not None:
            priority = self.model.submit_priority(request, self.now)
        else:
            priority = initial_priority(request, self.policy, sequence=self.sequence)
        self.sequence += 1
        request = pending_job(job, priority)  # (a new one is cheaper than replace())
        self.pending[job.job_id] = (request, job)
        key = (-priority, job.submit, job.job_id)
        if not self.order or key > self.order[-1]:
            self.order.append(key)
            self.arrived.append(job.job_id)
        else:
            insort(self.order, key)
            self.freed = True  # queued ahead of waiting jobs: they are looked at again
        self.dirty = self.bf_dirty = True

    def _end(self, job_id: int) -> None:
        self._free(job_id)
        live = self.live.pop(job_id)
        job = live.job
        end = live.start + job.run
        if self.model is not None:
            self.model.ended(job, live.start, end)
        self.sink.ended(
            JobRecord(
                job.job_id,
                job.submit,
                live.start,
                end,
                job.procs,
                job.estimate,
                job.user,
                job.group,
                live.resources,
                job.killed,
            )
        )

    # -- one pass ----------------------------------------------------------------

    def _candidates(self, prune: str) -> list[PendingJob] | None:
        """What the pass is handed (module doc), or None when nothing could start."""
        free = self.procs - self.busy
        pending, order = self.pending, self.order
        if prune == "head":
            picked: list[PendingJob] = []
            left = free
            for _, _, job_id in order:
                request = pending[job_id][0]
                picked.append(request)
                if request.ntasks > left:  # type: ignore[operator]
                    break
                left -= request.ntasks  # type: ignore[operator]
            return picked if picked[0].ntasks <= free else None  # type: ignore[operator]
        if prune == "none":
            if all(pending[job_id][0].ntasks > free for _, _, job_id in order):  # type: ignore[operator]
                return None
            return [pending[job_id][0] for _, _, job_id in order]
        if not self.freed:  # only arrivals, all behind: the rest cannot start (module doc)
            head = pending[order[0][2]][0]
            fits = [pending[i][0] for i in self.arrived if pending[i][0].ntasks <= free]  # type: ignore[operator]
            if not fits:
                return None
            return fits if fits[0] is head else [head, *fits]
        fits = []
        blocker: PendingJob | None = None
        for _, _, job_id in order:
            request = pending[job_id][0]
            if request.ntasks <= free:  # type: ignore[operator]
                fits.append(request)
            elif blocker is None:
                blocker = request
        if not fits:
            return None
        if blocker is not None:
            fits.append(blocker)  # its place in the order is the pass's to find
        return fits

    def _pass(self) -> None:
        """The pass after an event (skipped when it could start nothing)."""
        if not self.pending or not self.dirty:
            return
        self.dirty = False
        if self.model is not None and not self._prioritized():
            self.freed, self.arrived = False, []
            return
        jobs = self._candidates(self.setup.prune)
        self.freed, self.arrived = False, []
        if jobs is not None:
            self._run(self.policy, jobs)

    def _cycle(self) -> None:
        """A backfill cycle: the second policy on the whole queue."""
        if not self.pending or not self.bf_dirty or self.setup.backfill is None:
            return
        self.bf_dirty = False
        if self.model is not None and not self._prioritized():
            return
        jobs = self._candidates("none")
        if jobs is not None:
            self._run(self.setup.backfill, jobs)
        self.dirty = self.freed = True  # the event pass must look at the whole queue again

    def _run(self, policy: Policy, jobs: list[PendingJob]) -> None:
        node = self.node
        if self.busy != node.alloc_cpus:
            busy = self.busy  # (a new view is cheaper than replace())
            node = self.node = NodeView(NODE, 0, self.procs, self.procs, partitions=(NODE,),
                                        alloc_cpus=busy, alloc_mem=busy)  # fmt: skip
        snapshot = Snapshot(
            now=self.now,
            nodes=(node,),
            partitions=self.partitions,
            pending=tuple(jobs),
            running=tuple(self.running.values()),
        )
        plan = schedule_pass(snapshot, policy)
        self.passes += 1
        for start in plan.starts:
            self._start(start.job_id, start.allocs)

    def _start(self, job_id: int, allocs: tuple) -> None:  # type: ignore[type-arg]
        request, job = self.pending.pop(job_id)
        self.order.remove((-request.priority, job.submit, job_id))
        now = self.now
        self.running[job_id] = RunningJob(
            job_id=job_id, user=request.user, account=request.account, partition=NODE,
            start_time=now, end_time=now + job.estimate, allocs=allocs,
        )  # fmt: skip
        self.busy += job.procs
        self.live[job_id] = _Live(job, now, self.cpus.take(job.procs))
        heapq.heappush(self.retire, (now + job.estimate, job_id))
        heapq.heappush(self.ends, (now + job.run, self.started_count, job_id))
        self.started_count += 1
        if self.model is not None:
            self.model.started(job, now)
        self.sink.started(job_id, now)

    def _prioritized(self) -> bool:
        """Bring priorities up to date before a pass; False: no waiting job fits the free
        CPUs, so no pass (nor recalculation: order matters only to a pass that can start
        something, and only among two jobs or more)."""
        free = self.procs - self.busy
        if all(r.ntasks > free for r, _ in self.pending.values()):  # type: ignore[operator]
            return False
        if len(self.pending) > 1:
            self._reprioritize()
        return True

    def _reprioritize(self) -> None:
        assert self.model is not None
        new = self.model.recalc(self.now, [r for r, _ in self.pending.values()])
        if not new:
            return
        changed = False
        for job_id, (request, job) in self.pending.items():
            value = new.get(job_id, request.priority)
            if value != request.priority:
                self.pending[job_id] = (pending_job(job, value), job)
                changed = True
        if changed:
            self.freed = self.dirty = self.bf_dirty = True
            self.order = sorted(
                (-r.priority, r.submit_time, r.job_id) for r, _ in self.pending.values()
            )
