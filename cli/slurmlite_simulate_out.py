"""What ``slurmlite simulate`` shows: the results table, the progress bar, the
plot's data, and ``--window`` parsing.

``table(runs)`` prints one row per policy with the figures to the digits the
traces' reference table uses (4 decimals for wait, slowdown and utilization),
then the settings each policy ran under and, for ``slurm``, the mean wait of
the ten users with the most jobs (``--json`` has them all).

``parse_window("2d:3d")`` -> ``(172800.0, 259200.0)``: seconds from the
trace's first submission; units s, m, h, d; an empty end means "to the end".
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Any

from slurmlite.scheduler.replay import ReplaySink
from slurmlite.scheduler.replayed import JobRecord

UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DEFAULT_WINDOW = (0.0, 2 * 86400.0)  # the plot's Gantt without --window: the first two days
SHOWN_USERS = 10


def _seconds(text: str) -> float:
    text = text.strip().lower()
    unit = text[-1:] if text[-1:] in UNITS and not text[-1:].isdigit() else ""
    number = text[: len(text) - len(unit)]
    try:
        value = float(number) * UNITS[unit]
    except ValueError:
        raise ValueError(
            f"--window: {text!r} is not a time (examples: 3600, 90m, 36h, 2d)"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--window: {text!r} is not a time from the trace's start")
    return value


def parse_window(text: str) -> tuple[float, float]:
    """``START:END`` -> seconds from the first submission (``END`` empty: no end)."""
    start, sep, end = text.partition(":")
    if not sep:
        raise ValueError(f"--window {text!r}: give START:END, e.g. 2d:3d or 0:36h")
    lo = _seconds(start) if start.strip() else 0.0
    hi = _seconds(end) if end.strip() else math.inf
    if hi <= lo:
        raise ValueError(f"--window {text!r}: the end must come after the start")
    return lo, hi


class PlotSink(ReplaySink):
    """Keeps what the plot needs: the window's jobs, the series, every slowdown."""

    def __init__(self, name: str, window: tuple[float, float] | None) -> None:
        self.name = name
        self.relative = window or DEFAULT_WINDOW
        self.origin: float | None = None
        self.records: list[JobRecord] = []
        self.series: list[tuple[float, int, int]] = []
        self.slowdowns: list[float] = []

    @property
    def window(self) -> tuple[float, float]:
        """The window in the trace's own seconds."""
        origin = self.origin or 0.0
        lo, hi = self.relative
        last = self.series[-1][0] if self.series else origin
        return origin + lo, origin + min(hi, max(lo + 1.0, last - origin))

    def changed(self, now: float, waiting: int, busy: int) -> None:
        if self.origin is None:
            self.origin = now
        self.series.append((now, waiting, busy))

    def ended(self, record: JobRecord) -> None:
        self.slowdowns.append(record.bounded_slowdown())
        origin = self.origin or 0.0
        lo, hi = origin + self.relative[0], origin + self.relative[1]
        if record.end > lo and record.start < hi:
            self.records.append(record)

    def run(self) -> Any:
        from slurmlite.simplot import PlotRun

        return PlotRun(self.name, self.records, self.series, self.slowdowns)


class Progress(ReplaySink):
    """A one-line bar on stderr while a replay runs (only on a terminal)."""

    def __init__(self, stream: Any, name: str, every: int = 2000) -> None:
        self.stream, self.name, self.every = stream, name, every
        self.on = sys.stderr.isatty()
        self.count = 0

    def ended(self, record: JobRecord) -> None:
        self.count += 1
        if self.count % self.every == 0:
            done = self.stream.fraction
            bar = "#" * int(done * 30)
            sys.stderr.write(f"\r{self.name:<6} [{bar:<30}] {done:4.0%} {self.count:,} jobs")
            sys.stderr.flush()

    def done(self) -> None:
        if self.on:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


def table(runs: list[dict[str, Any]]) -> Iterator[str]:
    """The results as text: a row per policy, the settings, the busiest users."""
    yield ""
    yield (
        f"{'policy':<7}{'jobs':>8}{'mean wait (s)':>17}{'mean bsld':>13}"
        f"{'utilization':>13}{'makespan (s)':>14}{'replay':>10}{'jobs/s':>9}"
    )
    for r in runs:
        rate = r["jobs_per_second"]
        yield (
            f"{r['policy']:<7}{r['jobs']:>8}{r['mean_wait']:>17.4f}{r['mean_bsld']:>13.4f}"
            f"{r['utilization']:>13.4f}{r['makespan']:>14.0f}{r['replay_seconds']:>8.2f} s"
            f"{'-' if rate is None else f'{rate:,.0f}':>9}"
        )
    for r in runs:
        yield ""
        yield f"{r['policy']}: " + "; ".join(r["settings"])
        if r.get("killed_at_estimate"):
            killed = r["killed_at_estimate"]
            if killed == 1:
                yield "  1 job was stopped at its estimate"
            else:
                yield f"  {killed} jobs were stopped at their estimate"
        users = r.get("per_user")
        if users:
            shown = min(SHOWN_USERS, len(users))
            yield f"  mean wait per user, the {shown} with the most jobs of {len(users)}"
            yield "  (--json lists every user):"
            for u in users[:SHOWN_USERS]:
                yield f"    user {u['user']:>5}  {u['jobs']:>6} jobs  {u['mean_wait']:>14.1f} s"
