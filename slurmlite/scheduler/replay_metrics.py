"""What a replay is judged by, counted as jobs end, and the files it can write.

``Metrics`` is a ``ReplaySink`` that keeps sums, not jobs, so its memory
does not grow with the trace (per-user sums grow with the users):

* wait = start - submit; mean over every job, placeholders included;
* bounded slowdown = ``max(1, (wait + run) / max(run, tau))``, tau = 10 s,
  with the simulated (possibly cut) run time;
* utilization = sum(run x CPUs) / (CPUs of the machine x makespan);
* makespan = last end - first submit.

Worked example (4 CPUs): A submitted 0, runs 0-100 on 4 CPUs; B submitted
10, runs 100-120 on 2 CPUs.  Waits 0 and 90 -> mean 45; slowdowns 1 and
(90 + 20) / 20 = 5.5 -> mean 3.25; makespan 120; utilization
(400 + 40) / (4 x 120) = 0.9167.

``StartsCsv`` writes ``job_id,start`` as jobs start (the file a reference
simulator's schedule is compared with, job by job); ``BatsimCsv`` writes one
row per job as it ends, in the column layout of Batsim's ``_jobs.csv``, which
evalys (``JobSet.from_csv``) reads for its Gantt charts and metrics.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from typing import TextIO

from slurmlite.scheduler.replay import ReplaySink
from slurmlite.scheduler.replayed import JobRecord, resource_text

TAU = 10.0

BATSIM_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
    "requested_time", "success", "final_state", "starting_time", "execution_time",
    "finish_time", "waiting_time", "turnaround_time", "stretch", "allocated_resources",
    "consumed_energy", "metadata",
)  # fmt: skip


class Metrics(ReplaySink):
    """Running sums of a replay (see the module doc)."""

    def __init__(self, procs: int) -> None:
        self.procs = procs
        self.jobs = 0
        self.wait = 0.0
        self.bsld = 0.0
        self.area = 0.0
        self.first: float | None = None
        self.last = 0.0
        self.killed = 0
        self.users: dict[int, list[float]] = {}  # user -> [jobs, wait sum]

    def ended(self, record: JobRecord) -> None:
        self.jobs += 1
        wait = record.start - record.submit
        run = record.end - record.start
        self.wait += wait
        self.bsld += record.bounded_slowdown(TAU)
        self.area += run * record.procs
        if self.first is None or record.submit < self.first:
            self.first = record.submit
        if record.end > self.last:
            self.last = record.end
        self.killed += record.killed
        sums = self.users.get(record.user)
        if sums is None:
            sums = self.users[record.user] = [0, 0.0]
        sums[0] += 1
        sums[1] += wait

    @property
    def makespan(self) -> float:
        return 0.0 if self.first is None else self.last - self.first

    def summary(self) -> dict[str, float | int]:
        """The figures: jobs, mean_wait, mean_bsld, utilization, makespan (seconds)."""
        n = max(1, self.jobs)
        span = self.makespan
        return {
            "jobs": self.jobs,
            "mean_wait": self.wait / n,
            "mean_bsld": self.bsld / n,
            "utilization": self.area / (self.procs * span) if span > 0 else 0.0,
            "makespan": span,
            "killed_at_estimate": self.killed,
        }

    def per_user(self) -> list[tuple[int, int, float]]:
        """(user, jobs, mean wait) for every user, most jobs first, then user id."""
        rows = [(u, int(s[0]), s[1] / s[0]) for u, s in self.users.items()]
        return sorted(rows, key=lambda r: (-r[1], r[0]))


class Fanout(ReplaySink):
    """Several sinks as one."""

    def __init__(self, sinks: Iterable[ReplaySink]) -> None:
        self.sinks = list(sinks)

    def started(self, job_id: int, start: float) -> None:
        for sink in self.sinks:
            sink.started(job_id, start)

    def ended(self, record: JobRecord) -> None:
        for sink in self.sinks:
            sink.ended(record)

    def changed(self, now: float, waiting: int, busy: int) -> None:
        for sink in self.sinks:
            sink.changed(now, waiting, busy)


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


class StartsCsv(ReplaySink):
    """``job_id,start`` for every job, in start order."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        out.write("job_id,start\n")

    def started(self, job_id: int, start: float) -> None:
        self.out.write(f"{job_id},{_number(start)}\n")


def batsim_row(record: JobRecord, workload: str) -> Sequence[str]:
    """One ``_jobs.csv`` row: a job cut at its estimate did not succeed (Batsim's
    ``COMPLETED_WALLTIME_REACHED``); energy is unknown (-1)."""
    run = record.end - record.start
    turnaround = record.end - record.submit
    return (
        str(record.job_id), workload, "", _number(record.submit), str(record.procs),
        _number(record.estimate), "0" if record.killed else "1",
        "COMPLETED_WALLTIME_REACHED" if record.killed else "COMPLETED_SUCCESSFULLY",
        _number(record.start), _number(run), _number(record.end),
        _number(record.start - record.submit), _number(turnaround),
        repr(turnaround / run) if run > 0 else "inf", resource_text(record.resources), "-1", "",
    )  # fmt: skip


class BatsimCsv(ReplaySink):
    """Batsim's ``_jobs.csv`` layout, a row per job as it ends."""

    def __init__(self, out: TextIO, workload: str) -> None:
        self.writer = csv.writer(out, lineterminator="\n")
        self.workload = workload
        self.writer.writerow(BATSIM_COLUMNS)

    def ended(self, record: JobRecord) -> None:
        self.writer.writerow(batsim_row(record, self.workload))
