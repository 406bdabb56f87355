"""Pictures of a trace replay (``slurmlite simulate --plot FILE``).

One figure, written as ``.png`` or ``.svg`` (chosen by the file's suffix),
with four panels read top to bottom:

1. **Gantt chart** of the first run inside ``window``: x is hours since the
   window start, y the CPU index (CPU ``i`` is the band ``[i, i + 1)``).  Each
   job is one rectangle per contiguous CPU range of its ``resources``; jobs
   that started before or end after the window are clipped to it.  Colours
   follow the job id, so neighbours differ.  At most ``MAX_RECTANGLES`` are
   drawn (the largest areas first) and the panel title says when some were
   left out.
2. **Jobs waiting** over time, one step line per run.
3. **Utilization** (busy CPUs / ``procs``) over time, one step line per run.
   Panels 2 and 3 share an x axis in hours of the trace's own clock; the
   Gantt window is shaded there so the two views can be matched up.
4. **Bounded slowdown ECDF**, one line per run on a log x axis: the fraction
   of jobs whose slowdown is at most x.  A line further up-left is the better
   policy; it is the panel to compare several policies.

matplotlib is optional (``pip install 'slurmlite[plot]'``): it is imported
inside ``write_plot`` only, and without it ``PlotUnavailable`` says how to get
it.  The figure is drawn on an Agg canvas of its own: pyplot and the global
backend are never touched, so calling this from a program that has its own
plots changes nothing there.

Speed: a replay of a big trace has ~100k changes per series.  ``downsample``
keeps at most ``MAX_STEPS`` steps per line by cutting the time range into
equal buckets and keeping each bucket's maxima, so peaks stay visible (the
drawn line is an upper envelope).  Gantt rectangles go into one
``PolyCollection`` rather than one patch per job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmlite.scheduler.replayed import JobRecord

MAX_STEPS = 5000
MAX_RECTANGLES = 20_000
SUFFIXES = (".png", ".svg")
HOUR = 3600.0
UNAVAILABLE = "--plot needs matplotlib: pip install 'slurmlite[plot]'"


@dataclass(frozen=True)
class PlotRun:
    """What one policy's replay contributes to the figure."""

    name: str  # policy name, e.g. "easy": the legend label
    records: Sequence[JobRecord]  # jobs of the Gantt window (may be all jobs)
    series: Sequence[tuple[float, int, int]]  # (time, jobs waiting, busy CPUs), time ascending
    slowdowns: Sequence[float]  # bounded slowdown of every job of the run


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


Step = tuple[float, int, int]


def downsample(series: Sequence[Step], max_steps: int = MAX_STEPS) -> list[Step]:
    """At most ``max_steps + 1`` steps drawing the same curve, peaks kept.

    The time range is cut into ``max_steps`` equal buckets; each bucket gives
    one step at its start whose values are the largest in effect anywhere in
    it (the value carried in from before counts).  Equal neighbours merge, and
    the last point stays so the line ends where the series ends.
    """
    if len(series) <= max_steps:
        return list(series)
    t0, t1 = series[0][0], series[-1][0]
    if t1 <= t0:
        return [(t0, max(s[1] for s in series), max(s[2] for s in series))]
    width = (t1 - t0) / max_steps
    out: list[Step] = []
    waiting, busy = series[0][1], series[0][2]
    i, n = 0, len(series)
    for k in range(max_steps):
        start = t0 + k * width
        stop = math.inf if k == max_steps - 1 else start + width
        top_w, top_b = waiting, busy
        while i < n and series[i][0] < stop:
            waiting, busy = series[i][1], series[i][2]
            top_w, top_b = max(top_w, waiting), max(top_b, busy)
            i += 1
        if not out or out[-1][1:] != (top_w, top_b):
            out.append((start, top_w, top_b))
    out.append((t1, waiting, busy))
    return out


def gantt_boxes(
    records: Sequence[JobRecord], window: tuple[float, float]
) -> list[tuple[int, float, float, int, int]]:
    """``(job_id, x0, x1, cpu_lo, cpu_hi + 1)`` per CPU range, clipped, x in hours."""
    w0, w1 = window
    boxes = []
    for rec in records:
        x0, x1 = max(rec.start, w0), min(rec.end, w1)
        if x1 <= x0:
            continue  # outside the window, or ran for no time
        for lo, hi in rec.resources:
            boxes.append((rec.job_id, (x0 - w0) / HOUR, (x1 - w0) / HOUR, lo, hi + 1))
    return boxes


def _window_of(records: Sequence[JobRecord]) -> tuple[float, float]:
    if not records:
        return (0.0, HOUR)
    w0 = min(r.start for r in records)
    w1 = max(r.end for r in records)
    return (w0, w1 if w1 > w0 else w0 + 1.0)


def _matplotlib() -> dict[str, Any]:
    try:
        from matplotlib import colormaps, rc_context
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator, PercentFormatter
    except ImportError as exc:
        raise PlotUnavailable(UNAVAILABLE) from exc
    return {
        "colormaps": colormaps,
        "rc_context": rc_context,
        "Canvas": FigureCanvasAgg,
        "PolyCollection": PolyCollection,
        "Figure": Figure,
        "MaxNLocator": MaxNLocator,
        "PercentFormatter": PercentFormatter,
    }


def _draw_gantt(
    ax: Any, mpl: dict[str, Any], run: PlotRun, procs: int, window: tuple[float, float]
) -> None:
    boxes = gantt_boxes(run.records, window)
    total = len(boxes)
    if total > MAX_RECTANGLES:
        boxes.sort(key=lambda b: (b[2] - b[1]) * (b[4] - b[3]), reverse=True)
        boxes = boxes[:MAX_RECTANGLES]
    palette = mpl["colormaps"]["tab20"].colors
    verts = [((x0, lo), (x1, lo), (x1, hi), (x0, hi)) for _, x0, x1, lo, hi in boxes]
    colours = [palette[(job_id * 7) % len(palette)] for job_id, *_ in boxes]
    ax.add_collection(
        mpl["PolyCollection"](verts, facecolors=colours, edgecolors="white", linewidths=0.3)
    )
    hours = (window[1] - window[0]) / HOUR
    ax.set_xlim(0.0, hours)
    ax.set_ylim(0, procs)
    ax.yaxis.set_major_locator(mpl["MaxNLocator"](integer=True))
    ax.set_xlabel(f"hours since {window[0] / HOUR:.2f} h of the trace")
    ax.set_ylabel("CPU")
    jobs = len({b[0] for b in boxes})
    shown = f"{jobs} jobs"
    if len(boxes) < total:
        shown = f"largest {len(boxes):,} of {total:,} CPU ranges"
    ax.set_title(f"{run.name}: where jobs ran ({shown}, {hours:.2f} h window)", loc="left")
    if not boxes:
        note = "no job ran in this window"
        ax.text(0.5, 0.5, note, transform=ax.transAxes, ha="center", color="grey")


def _draw_series(
    ax_wait: Any,
    ax_util: Any,
    mpl: dict[str, Any],
    runs: Sequence[PlotRun],
    procs: int,
    window: tuple[float, float] | None,
) -> None:
    for run in runs:
        steps = downsample(run.series)
        if not steps:
            continue
        t = [s[0] / HOUR for s in steps]
        ax_wait.step(t, [s[1] for s in steps], where="post", label=run.name, linewidth=1)
        ax_util.step(t, [s[2] / procs for s in steps], where="post", label=run.name, linewidth=1)
    ax_wait.set_ylabel("jobs waiting")
    ax_wait.set_ylim(bottom=0)
    ax_wait.yaxis.set_major_locator(mpl["MaxNLocator"](integer=True))
    ax_wait.set_title("queue and machine over time (peak per drawn step)", loc="left")
    ax_util.set_ylabel("utilization")
    ax_util.set_ylim(0, 1.05)
    ax_util.yaxis.set_major_formatter(mpl["PercentFormatter"](1.0))
    ax_util.set_xlabel("hours of the trace")
    if window is not None:
        ax_wait.set_title(f"{ax_wait.get_title(loc='left')}; shaded: the Gantt window", loc="left")
        for ax in (ax_wait, ax_util):
            ax.axvspan(window[0] / HOUR, window[1] / HOUR, color="grey", alpha=0.12, lw=0)
    if any(run.series for run in runs):
        ax_wait.legend(loc="upper left", fontsize="small")


def _draw_ecdf(ax: Any, runs: Sequence[PlotRun]) -> None:
    for run in runs:
        values = sorted(run.slowdowns)
        n = len(values)
        if n == 0:
            continue
        picks = (
            range(n)
            if n <= MAX_STEPS
            else sorted({round(k * (n - 1) / MAX_STEPS) for k in range(MAX_STEPS + 1)})
        )
        x = [values[i] for i in picks]
        y = [(i + 1) / n for i in picks]
        median = values[(n - 1) // 2]
        mean = sum(values) / n
        ax.step(
            [x[0], *x],
            [0.0, *y],
            where="post",
            linewidth=1.2,
            label=f"{run.name} (mean {mean:.2f}, median {median:.2f})",
        )
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("bounded slowdown (log scale; 1 = no wait)")
    ax.set_ylabel("fraction of jobs ≤ x")
    ax.set_title("bounded slowdown distribution (up-left is better)", loc="left")
    ax.grid(True, which="major", alpha=0.3)
    if any(run.slowdowns for run in runs):
        ax.legend(loc="lower right", fontsize="small")


def write_plot(
    path: str,
    runs: Sequence[PlotRun],
    procs: int,
    window: tuple[float, float] | None = None,
    title: str = "",
) -> None:
    """Write the four-panel figure of ``runs`` on a ``procs``-CPU machine to ``path``.

    ``window`` (trace seconds) bounds the Gantt chart of ``runs[0]``; by default
    it spans that run's records.  Raises ``ValueError`` for a suffix other than
    ``.png``/``.svg``, no runs, ``procs < 1`` or an empty window, and
    ``PlotUnavailable`` without matplotlib.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(
            f"plot file {path!r} must end in .png or .svg, not {suffix or 'no suffix'!r}"
        )
    if not runs:
        raise ValueError("nothing to plot: no runs given")
    if procs < 1:
        raise ValueError(f"procs must be at least 1, not {procs}")
    if window is not None and window[1] <= window[0]:
        raise ValueError(f"empty plot window {window}: the end must come after the start")
    mpl = _matplotlib()
    fig = mpl["Figure"](figsize=(11, 13), layout="constrained")
    mpl["Canvas"](fig)  # Agg, for this figure only
    grid = fig.add_gridspec(4, 1, height_ratios=(3.2, 1.3, 1.3, 2.2))
    ax_gantt = fig.add_subplot(grid[0])
    ax_wait = fig.add_subplot(grid[1])
    ax_util = fig.add_subplot(grid[2], sharex=ax_wait)
    ax_wait.tick_params(labelbottom=False)
    ax_ecdf = fig.add_subplot(grid[3])
    _draw_gantt(ax_gantt, mpl, runs[0], procs, window or _window_of(runs[0].records))
    _draw_series(ax_wait, ax_util, mpl, runs, procs, window)
    _draw_ecdf(ax_ecdf, runs)
    if title:
        fig.suptitle(title)
    # svg.fonttype "none": labels stay <text> in the SVG (searchable, editable)
    with mpl["rc_context"]({"svg.fonttype": "none"}):
        fig.savefig(path, format=suffix[1:], dpi=100)
