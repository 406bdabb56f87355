"""What a trace replay produced: one record per job, and the figures of a run.

``slurmlite simulate`` (``replay.replay``) fills these; the metrics, the CSV
writers and the plots (``slurmlite.simplot``) only read them.  Times are
seconds of the trace's own clock (SWF submit times start near 0).

``resources`` is where the simulator placed the job on the machine: CPU
index ranges, inclusive, lowest first, e.g. ``((0, 3), (8, 11))`` for 8 CPUs
in two runs (Batsim writes this as ``0-3 8-11``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobRecord:
    """One replayed job: its request, when it ran and on which CPUs."""

    job_id: int
    submit: float
    start: float
    end: float  # start + simulated run time (possibly cut at the estimate)
    procs: int
    estimate: float  # seconds the scheduler was told (the requested time)
    user: int = -1
    group: int = -1
    resources: tuple[tuple[int, int], ...] = ()
    killed: bool = False  # stopped at its estimate (``user`` estimates)

    @property
    def wait(self) -> float:
        return self.start - self.submit

    @property
    def run(self) -> float:
        return self.end - self.start

    def bounded_slowdown(self, tau: float = 10.0) -> float:
        """``max(1, (wait + run) / max(run, tau))``."""
        return max(1.0, (self.wait + self.run) / max(self.run, tau))


def resource_text(resources: tuple[tuple[int, int], ...]) -> str:
    """Batsim's interval-set text: ``((0, 3), (8, 8))`` -> ``"0-3 8"``."""
    return " ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in resources)
