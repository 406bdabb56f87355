"""Reading a workload trace in the Standard Workload Format (SWF).

SWF is the format of the Parallel Workloads Archive: ``;`` header lines
(``; MaxProcs: 128``), then one job per line, 18 whitespace-separated fields,
``-1`` for "unknown".  ``read_trace(path, estimates)`` returns the machine
size and the jobs converted by the rules the classic reference simulators
follow (the trace folder's README, "What an SWF replay must do"):

* fields used: 1 job number, 2 submit, 4 run time, 5 allocated processors,
  9 requested time, 12 user, 13 group, 15 queue; jobs stay in file order,
  which is submit order in the archive's cleaned logs;
* a job that never ran (run time <= 0) or holds no processor becomes a 1 s
  placeholder on ``max(1, allocated)`` processors submitted at
  ``max(submit, 1)``: it is kept and counts in every mean;
* processors = the *allocated* count clipped to the machine;
* ``estimates``: ``user`` — the requested time (the run time where the log
  has none) and the job is killed at it, as real sites do; ``nokill`` — the
  same estimate, never killed; ``exact`` — the estimate is the run time.

Worked example (``; MaxProcs: 4``)::

    1  0  -1  100  2  -1  -1  -1   60  -1 1 7 3 -1 -1 -1 -1 -1
    2  5  -1   -1  0  -1  -1  -1   -1  -1 5 7 3 -1 -1 -1 -1 -1

    user:   job 1 estimate 100 (max of 60, 100), runs 60 (killed at 60);
            job 2 placeholder: 1 s on 1 processor
    nokill: job 1 estimate 100, runs 100
    exact:  job 1 estimate 100, runs 100

A file that is not SWF (a line with fewer than 18 fields, a field that is
not a number, no machine size and none given) raises ``TraceError`` naming
the line.  ``.gz`` files are read through gzip.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ESTIMATE_MODES = ("user", "exact", "nokill")
FIELDS = 18


class TraceError(ValueError):
    """The trace cannot be read as SWF."""


@dataclass(frozen=True)
class TraceJob:
    """One job as the replay sees it (times in seconds of the trace's clock)."""

    job_id: int
    submit: float
    run: float  # the seconds it runs in the replay (cut at the estimate in ``user`` mode)
    estimate: float  # what the scheduler is told: the job's time limit
    procs: int
    user: int = -1
    group: int = -1
    queue: int = -1
    logged_wait: float = -1.0  # field 3: only to compare with the logged schedule
    placeholder: bool = False
    killed: bool = False  # ``user`` mode: the log's run time passed the estimate


@dataclass(frozen=True)
class Trace:
    """A machine of ``procs`` CPUs, a header, and its jobs in submit order."""

    procs: int
    jobs: tuple[TraceJob, ...]
    header: dict[str, str]
    path: str = ""


def _number(text: str, line_no: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise TraceError(f"line {line_no}: {text!r} is not a number") from None


def convert(fields: list[float], machine: int, estimates: str) -> TraceJob:
    """One data line's numbers -> a ``TraceJob`` (the rules in the module doc)."""
    job_id, submit, wait, run, alloc = (fields[0], fields[1], fields[2], fields[3], fields[4])
    requested = fields[8]
    user, group, queue = int(fields[11]), int(fields[12]), int(fields[14])
    common = {"user": user, "group": group, "queue": queue, "logged_wait": wait}
    if run <= 0 or alloc <= 0:
        procs = min(machine, max(1, int(alloc)))
        return TraceJob(int(job_id), max(submit, 1.0), 1.0, 1.0, procs, placeholder=True, **common)
    procs = max(1, min(int(alloc), machine))
    if estimates == "exact":
        return TraceJob(int(job_id), submit, run, run, procs, **common)
    if requested < 0:
        requested = run
    if estimates == "nokill":
        return TraceJob(int(job_id), submit, run, max(requested, run), procs, **common)
    estimate = max(requested, run, 1.0)
    simulated = max(min(requested, run), 1.0)
    return TraceJob(
        int(job_id), submit, simulated, estimate, procs, killed=simulated < run, **common
    )


class TraceStream:
    """An SWF file read as it is replayed: the header at once, the jobs one by one.

    ``procs`` is the machine size (``MaxProcs``, else ``MaxNodes``, else the
    caller's); ``jobs()`` yields each job converted, in file order, and can be
    called once.  ``fraction`` is how much of the file has been read (for a
    progress bar).  Memory does not grow with the file.
    """

    def __init__(self, path: str | Path, estimates: str = "user", procs: int | None = None):
        if estimates not in ESTIMATE_MODES:
            raise TraceError(
                f"unknown estimate mode {estimates!r} (use one of {', '.join(ESTIMATE_MODES)})"
            )
        self.path = Path(path)
        self.estimates = estimates
        self.header: dict[str, str] = {}
        try:
            self._raw = self.path.open("rb")
            self._size = max(1, self.path.stat().st_size)
            stream = gzip.open(self._raw) if self.path.suffix == ".gz" else self._raw
            self._text = io.TextIOWrapper(stream, encoding="ascii", errors="replace")
        except OSError as e:
            raise TraceError(f"cannot read {path}: {e.strerror or e}") from None
        self._line_no = 0
        self._first: str | None = None  # the first data line, read with the header
        self._read_header()
        machine = procs or machine_size(self.header)
        if machine is None or machine <= 0:
            self.close()
            raise TraceError(f"{path}: no MaxProcs or MaxNodes in the header (give --procs N)")
        self.procs = machine

    @property
    def fraction(self) -> float:
        try:
            return min(1.0, self._raw.tell() / self._size)
        except (OSError, ValueError):
            return 1.0

    def _next_line(self) -> str | None:
        try:
            line = self._text.readline()
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise TraceError(f"cannot read {self.path}: {e}") from None
        if not line:
            return None
        self._line_no += 1
        return line

    def _read_header(self) -> None:
        while (line := self._next_line()) is not None:
            text = line.strip()
            if not text:
                continue
            if not text.startswith(";"):
                self._first = text
                return
            key, sep, value = text[1:].partition(":")
            if sep:
                self.header.setdefault(key.strip(), value.strip())

    def jobs(self) -> Iterator[TraceJob]:
        """Every job of the file, converted (``convert``), in file order."""
        text, machine, mode = self._first, self.procs, self.estimates
        self._first = None
        try:
            while text is not None:
                if text and not text.startswith(";"):
                    parts = text.split()
                    if len(parts) < FIELDS:
                        raise TraceError(
                            f"line {self._line_no}: {len(parts)} fields, SWF has {FIELDS}"
                        )
                    fields = [_number(p, self._line_no) for p in parts[:FIELDS]]
                    yield convert(fields, machine, mode)
                line = self._next_line()
                text = None if line is None else line.strip()
        finally:
            self.close()

    def close(self) -> None:
        self._raw.close()


def read_trace(path: str | Path, estimates: str = "user", procs: int | None = None) -> Trace:
    """Read all of ``path`` (SWF, optionally gzipped); ``procs`` overrides the machine size."""
    stream = TraceStream(path, estimates, procs)
    return Trace(stream.procs, tuple(stream.jobs()), stream.header, str(path))


def machine_size(header: dict[str, str]) -> int | None:
    """``MaxProcs`` of an SWF header, else ``MaxNodes``, else None."""
    for key in ("MaxProcs", "MaxNodes"):
        value = header.get(key, "").split()
        if value and value[0].lstrip("-").isdigit() and int(value[0]) > 0:
            return int(value[0])
    return None
