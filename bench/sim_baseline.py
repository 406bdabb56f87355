"""A minimal FCFS / EASY replay of an SWF trace: the baseline a full simulator is checked against.

The machine is one pool of ``trace.procs`` interchangeable processors, so the
whole state is a counter of free processors, a FIFO list of waiting jobs and
the running jobs' *estimated* ends.  The rules are those of the trace
folder's README (``traces/README.md``), which the classic
simulator pyss follows; ``slurmlite.scheduler.swf.read_trace`` has already
turned each log line into ``(submit, run, estimate, procs)``.

Events
    A heap of ``(time, kind, counter, job)`` tuples.  ``kind`` 0 is a
    submission, 1 a termination, so at one second every submission comes
    before every termination.  Submissions get the counters ``0..n-1`` in file
    order; a termination gets the next counter when its job starts, so
    same-second terminations come out in start order.  After *each* event
    the scheduler runs one pass at the event's time ``now``.

Estimated ends
    A pass first frees every running job whose ``start + estimate <= now``,
    even if its termination event at ``now`` is still in the heap (the
    reference builds its free-processor profile from estimates).  Since
    ``run <= estimate`` always holds, such a job has really ended by ``now``;
    when its termination event comes later it finds the job already freed
    and only triggers a pass.  A min-heap of ``(estimated end, job)`` finds
    these jobs; entries of jobs that ended early are skipped when popped.

FCFS
    Start the queue head while it fits in the free processors; stop at the
    first job that does not.

EASY (FCFS first; then, if at least two jobs wait)
    The blocked head gets a reservation: walk the running jobs by estimated
    end, adding their processors to the free count, until the head fits.
    That end is the *shadow* time; ``extra`` is what is free at the shadow
    (every job ending by it counted) minus the head's need.  Every other
    waiting job, in submit order, starts now if it fits now and either ends
    (by its estimate) by the shadow or needs at most ``extra`` processors.
    Recomputing the reservation after a start would give: the same shadow and
    extra for a job ending by the shadow (its processors are back by then),
    the same shadow and ``extra - procs`` for one that outlives it.  The
    shadow is only computed once some candidate fits now (it is wasted work
    on the many passes where nothing does).

Worked example, 4 processors, EASY, exact estimates::

    job  submit  run  procs      t=0  A starts (free 4 -> 1), ends at 10
     A     0     10     3        t=1  B waits (needs 4, 1 free): head
     B     1      5     4              shadow = 10 (A's end), extra = 4 - 4 = 0
     C     2      8     1        t=2  C fits (1 free); 2 + 8 = 10 <= shadow: starts
     D     3     20     1        t=3  D fits? 0 free: no
                                 t=10 A and C end; B starts (free 0), ends 15
                                 t=15 D starts: waits 12 s.

FCFS keeps C and D behind B: B starts at 10, C and D at 15 (mean wait 8.5 s
against 5.25 s for EASY, where C starts at 2 without delaying B).

Metrics over all jobs (placeholders included): mean wait, mean bounded
slowdown ``max(1, (wait + run) / max(run, 10))`` with the simulated run,
utilization ``sum(run * procs) / (procs * makespan)`` and makespan ``last
end - first submit``.

Run: ``python -m bench.sim_baseline TRACE [--policy fcfs|easy]
[--estimates user|exact|nokill]``.
"""

from __future__ import annotations

import argparse
import time
from heapq import heapify, heappop, heappush

from slurmlite.scheduler.swf import ESTIMATE_MODES, Trace, read_trace

POLICIES = ("fcfs", "easy")
TAU = 10.0  # seconds: the bounded-slowdown floor on the run time


def replay(trace: Trace, policy: str) -> dict[int, float]:
    """Replay ``trace`` under ``policy`` ("fcfs" or "easy"); return job_id -> start time."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (use fcfs or easy)")
    easy = policy == "easy"
    jobs = trace.jobs
    n = len(jobs)
    submit = [j.submit for j in jobs]
    run = [j.run for j in jobs]
    est = [j.estimate for j in jobs]
    procs = [j.procs for j in jobs]
    start = [0.0] * n
    events = [(submit[i], 0, i, i) for i in range(n)]  # (time, kind, counter, job)
    heapify(events)
    counter = n
    free = trace.procs
    queue: list[int] = []  # waiting jobs, submit order
    running: dict[int, float] = {}  # job -> estimated end
    ends: list[tuple[float, int]] = []  # heap of (estimated end, job), stale entries skipped

    def launch(i: int, now: float) -> None:
        nonlocal free, counter
        free -= procs[i]
        start[i] = now
        running[i] = now + est[i]
        heappush(ends, (now + est[i], i))
        heappush(events, (now + run[i], 1, counter, i))
        counter += 1

    while events:
        now, kind, _, i = heappop(events)
        if kind == 0:
            queue.append(i)
        elif i in running:
            del running[i]
            free += procs[i]
        while ends and ends[0][0] <= now:  # estimated end reached: free it for this pass
            i = heappop(ends)[1]
            if i in running:
                del running[i]
                free += procs[i]
        k = 0
        while k < len(queue) and procs[queue[k]] <= free:  # FCFS from the head
            launch(queue[k], now)
            k += 1
        if k:
            del queue[:k]
        if not easy or len(queue) < 2 or free == 0:
            continue
        shadow = -1.0  # not computed yet
        extra = 0
        kept = [queue[0]]
        for i in queue[1:]:
            p = procs[i]
            if p > free:
                kept.append(i)
                continue
            if shadow < 0:  # the head's reservation, from estimated ends
                need, avail = procs[queue[0]], free
                for e, j in sorted((e, j) for j, e in running.items()):
                    if avail >= need and e > shadow:
                        break
                    avail += procs[j]
                    shadow = e
                extra = avail - need
            if now + est[i] <= shadow:
                launch(i, now)
            elif p <= extra:
                launch(i, now)
                extra -= p
            else:
                kept.append(i)
        queue = kept
    return {jobs[i].job_id: start[i] for i in range(n)}


def metrics(trace: Trace, starts: dict[int, float]) -> dict[str, float]:
    """Mean wait, mean bounded slowdown, utilization and makespan of a replay."""
    waits = bsld = work = 0.0
    first, last = float("inf"), float("-inf")
    for j in trace.jobs:
        wait = starts[j.job_id] - j.submit
        waits += wait
        bsld += max(1.0, (wait + j.run) / max(j.run, TAU))
        work += j.run * j.procs
        first = min(first, j.submit)
        last = max(last, starts[j.job_id] + j.run)
    n = len(trace.jobs)
    span = last - first
    return {
        "jobs": n,
        "mean_wait": waits / n,
        "mean_bsld": bsld / n,
        "utilization": work / (trace.procs * span),
        "makespan": span,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.sim_baseline", description=__doc__.split("\n")[0]
    )
    p.add_argument("trace", help="SWF file, optionally .gz")
    p.add_argument("--policy", choices=POLICIES, default="easy")
    p.add_argument("--estimates", choices=ESTIMATE_MODES, default="user")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    trace = read_trace(args.trace, args.estimates)
    t1 = time.perf_counter()
    starts = replay(trace, args.policy)
    t2 = time.perf_counter()
    m = metrics(trace, starts)
    print(
        f"{args.trace} {args.policy} ({args.estimates}): jobs {m['jobs']:,}  "
        f"mean wait {m['mean_wait']:,.4f} s  mean bsld {m['mean_bsld']:,.4f}  "
        f"utilization {m['utilization']:.4f}  makespan {m['makespan']:,.0f} s"
    )
    print(f"parse {t1 - t0:.2f} s  replay {t2 - t1:.2f} s")


if __name__ == "__main__":
    main()
