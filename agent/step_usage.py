"""What a job's steps use on this node, so that one summary covers all of the job here.

A job's processes on a node are its batch run (on the batch host only) and
the tasks of its steps (``srun``: on every node of the step).  The usage
sampler (``agent.sampling``) keeps one summary per (job, run) on the node;
this module says how the steps' share is read without counting anything
twice.  Each task leads a session (``agent.tasks``), so a task's processes
are that session's members; the task itself is the agent's child.

Where a step's processes are counted:

=========================  ==================================  ======================
the step lives in          while its tasks run                 once a task is reaped
=========================  ==================================  ======================
the batch cgroup, v2       the batch reading (``cpu.stat``,    nothing: ``cpu.stat``
                           memory): all of it                  still counts it
the batch cgroup, v1       the batch reading (the cgroup's     its CPU (below) is
                           members' CPU, the cgroup's memory)  kept by the sampler
its own cgroup (an         CPU: the tasks' sessions in         the same
allocation, a batch job's  ``/proc``; memory: the cgroup's
other node) or none        (none: the sessions' resident set)
=========================  ==================================  ======================

A live task's CPU is ``utime + stime + cutime + cstime`` of its stat line
(the last two: children it reaped) plus its session's other live members.
A reaped task's pid may already name another process, so it is not read
again: ``wait4`` gave its CPU time (``Task.cpu_seconds``, its reaped
children included).  What it left running is not read either (the step
kills it when its last task ends): the end sample of a step walks
``/proc`` only for the job's tasks still running.  When a step ends, the
sampler keeps what its reaped tasks used (``kept_cpu``) before it forgets
the step: the job's CPU figure never goes back.

Worked example: ``srun -N2 -n2 spin`` in an ``salloc`` on n1 and n2, each
task spinning 3 s: each node's summary reads about 3 s while the task runs,
the task's ``wait4`` says 3.0 s when it ends, the step's completion carries
the node's summary with ``cpu_seconds`` 3.0; ``sacct`` adds the nodes: 6 s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.usage_probe import JobReading, ProcTable, read_cgroup, read_procs

if TYPE_CHECKING:
    from pathlib import Path

    from agent.cgroups import JobCgroup
    from agent.steps import StepRun

__all__ = ["add_readings", "covered", "kept_cpu", "read_steps"]


def covered(step: StepRun, batch: JobCgroup | None) -> bool:
    """Does the batch run's cgroup hold the step (the batch reading counts its live tasks)?"""
    return batch is not None and step.cgroup is not None and step.cgroup.path == batch.path


def read_steps(steps: list[StepRun], batch: JobCgroup | None, procs: ProcTable) -> JobReading:
    """The steps' share that the batch reading does not hold (module doc); ``None`` figures:
    no such step."""
    cpu, rss, seen = 0.0, 0, False
    cgroups: dict[Path, JobCgroup] = {}
    for step in steps:
        if covered(step, batch):
            if batch is not None and batch.version != 2:  # v1: a reaped task left its members
                cpu += sum(t.cpu_seconds or 0.0 for t in step.tasks)
                seen = seen or any(t.cpu_seconds is not None for t in step.tasks)
            continue
        seen = True
        if step.cgroup is not None:
            cgroups[step.cgroup.path] = step.cgroup
        for t in step.tasks:
            if t.status is not None or t.cpu_seconds is not None:  # reaped (module doc)
                cpu += t.cpu_seconds or 0.0
                continue
            live = read_procs(t.pid, procs.session(t.pid))
            cpu += live.cpu_seconds or 0.0
            rss += live.mem_bytes or 0
    if not seen:
        return JobReading(None, None)
    mem, peak = _cgroup_memory(list(cgroups.values()))
    return JobReading(cpu, rss if mem is None else mem, peak)


def _cgroup_memory(cgroups: list[JobCgroup]) -> tuple[int | None, int | None]:
    """Memory now and peak of the steps' cgroups (None: no cgroup, or one cannot say)."""
    if not cgroups:
        return None, None
    readings = [read_cgroup(cg.path, cg.version) for cg in cgroups]
    if any(r.mem_bytes is None for r in readings):
        return None, None
    peaks = [r.mem_peak_bytes for r in readings if r.mem_peak_bytes is not None]
    return sum(r.mem_bytes or 0 for r in readings), max(peaks) if peaks else None


def kept_cpu(step: StepRun, batch: JobCgroup | None) -> float:
    """The CPU time of the ended step that no reading will see again (module doc's table)."""
    if covered(step, batch) and batch is not None and batch.version == 2:
        return 0.0  # the batch cgroup's cpu.stat keeps counting it
    return sum(t.cpu_seconds or 0.0 for t in step.tasks)


def add_readings(a: JobReading, b: JobReading) -> JobReading:
    """Two disjoint sets of processes read as one: CPU and memory add up, peaks are the
    larger (the sum of two peaks taken at different times would overstate)."""

    def total(x: float | int | None, y: float | int | None) -> float | int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    peaks = [p for p in (a.mem_peak_bytes, b.mem_peak_bytes) if p is not None]
    return JobReading(
        total(a.cpu_seconds, b.cpu_seconds),  # type: ignore[arg-type]
        total(a.mem_bytes, b.mem_bytes),  # type: ignore[arg-type]
        max(peaks) if peaks else None,
    )
