"""The plan as an SVG Gantt chart: rows, bars on a time axis, a "now" line.

A pure builder: ``gantt_svg(rows, bars, now, t0, t1)`` returns the SVG text
the plan page embeds (``controller/api/ui/plan.py``); it reads no store and no
clock, so a test gives it a plan and measures where the bars land.

**Geometry.**  The chart is ``width`` units wide: a column of row labels
(``LABEL_W``), then the time area from ``t0`` to ``t1``.  A time maps to

    x(t) = LABEL_W + (t - t0) / (t1 - t0) * (width - LABEL_W - PAD_R)

clamped to the area (a running job that started before ``t0`` begins at the
left edge).  Row ``i`` is ``ROW_H`` high, its top at ``AXIS_H + i * ROW_H``.
Example: width 1000, t0 = 0, t1 = 3600: x(0) = 120, x(3600) = 990,
x(1800) = 555.

**Bars.**  A running job is a solid bar from its start to its time limit;
a planned (pending) job is a hatched bar from the backfill estimate to the
estimate plus its time limit; an UNLIMITED job runs to the right edge
(class ``open-ended``, ``data-end=""``).  Every bar is a ``<rect>`` with
``class="bar running"`` or ``class="bar planned"``, ``data-job-id``,
``data-start`` and ``data-end`` (Unix seconds, the job's real times even
where the drawing is clipped) and a ``<title>`` (job id, user, name) that
browsers show on hover.  One colour per user (a stable hash), so one
user's jobs read as a group; the hatch of a planned bar is drawn in it.

**Axis.**  Ticks fall on round local times (every 5 min ... 1 day, the
smallest step giving at most ``MAX_TICKS`` ticks), labelled ``HH:MM``, with
the date where a day begins or the span covers more than a day.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

LABEL_W = 120.0  # the row-label column
PAD_R = 10.0  # space right of the time area
AXIS_H = 30.0  # the tick labels above the rows
ROW_H = 22.0
BAR_PAD = 3.0  # gap between a bar and its row's edges
MAX_TICKS = 10
STEPS = (300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)  # seconds
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#9c755f",
)


@dataclass(frozen=True)
class Row:
    """One line of the chart: a node's GPU (``n1:0``) or a CPU-only node (``n3``)."""

    key: str
    label: str


@dataclass(frozen=True)
class Bar:
    """A job's time on one row (a job on 4 GPUs is 4 bars).  ``end`` None: UNLIMITED."""

    row: str
    job_id: int
    start: float
    end: float | None
    planned: bool
    user: str = ""
    name: str = ""


@dataclass(frozen=True)
class Axis:
    """Maps times to x in a chart of ``width`` units covering ``[t0, t1]``."""

    t0: float
    t1: float
    width: float = 1000.0

    def x(self, t: float) -> float:
        span = max(self.t1 - self.t0, 1.0)
        t = min(max(t, self.t0), self.t1)
        return LABEL_W + (t - self.t0) / span * (self.width - LABEL_W - PAD_R)


def colour(user: str) -> int:
    """The palette index of ``user`` (the same in every page and every process)."""
    return zlib.crc32(user.encode()) % len(PALETTE)


def ticks(t0: float, t1: float) -> list[float]:
    """Round local times in ``[t0, t1]``: the finest step of ``STEPS`` giving at most
    ``MAX_TICKS`` (e.g. a 2-hour span -> every 15 minutes, on :00, :15, ...)."""
    span = max(t1 - t0, 1.0)
    step = next((s for s in STEPS if span / s <= MAX_TICKS), STEPS[-1])
    offset = time.localtime(t0).tm_gmtoff  # align on the local clock, not on UTC
    first = -(-(t0 + offset) // step) * step - offset
    out, t = [], first
    while t <= t1:
        out.append(float(t))
        t += step
    return out


def tick_label(t: float, t0: float, t1: float) -> str:
    """``HH:MM``; with the day (``Sun 06 00:00``) at midnight or when the span passes a day."""
    tm = time.localtime(t)
    if t1 - t0 > 86400 or (tm.tm_hour, tm.tm_min) == (0, 0):
        return time.strftime("%a %d %H:%M", tm)
    return time.strftime("%H:%M", tm)


def gantt_svg(
    rows: Sequence[Row],
    bars: Sequence[Bar],
    now: float,
    t0: float,
    t1: float,
    width: float = 1000.0,
    href: str | None = None,
) -> str:
    """The chart as one ``<svg>`` element (see the module docstring); with ``href``
    (e.g. ``/ui/jobs/{}``) each bar links to the page of its job."""
    axis = Axis(t0, t1, width)
    height = AXIS_H + max(len(rows), 1) * ROW_H + 4
    index = {r.key: i for i, r in enumerate(rows)}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="gantt" viewBox="0 0 {width:g} '
        f'{height:g}" width="100%" role="img" aria-label="Running and planned jobs per GPU">',
        _defs(),
    ]
    for i, row in enumerate(rows):
        y = AXIS_H + i * ROW_H
        shade = ' class="row odd"' if i % 2 else ' class="row"'
        out.append(f'<rect{shade} x="0" y="{y:g}" width="{width:g}" height="{ROW_H:g}"/>')
        out.append(
            f'<text class="row-label" x="6" y="{y + ROW_H - 7:g}">{escape(row.label)}</text>'
        )
    for t in ticks(t0, t1):
        x = axis.x(t)
        out.append(
            f'<line class="tick" x1="{x:.1f}" y1="{AXIS_H - 4:g}" x2="{x:.1f}" y2="{height:g}"/>'
        )
        if LABEL_W + 20 <= x <= width - 30:  # a label cut by an edge is left out
            label = escape(tick_label(t, t0, t1))
            out.append(f'<text class="tick-label" x="{x:.1f}" y="{AXIS_H - 10:g}">{label}</text>')
    for bar in bars:
        if bar.row in index and _visible(bar, t0, t1):
            drawn = _bar(bar, axis, AXIS_H + index[bar.row] * ROW_H)
            if href is not None:
                drawn = f'<a href="{escape(href.format(bar.job_id))}">{drawn}</a>'
            out.append(drawn)
    if t0 <= now <= t1:
        x = axis.x(now)
        out.append(
            f'<line class="now" data-time="{now:.0f}" x1="{x:.1f}" y1="{AXIS_H - 4:g}" '
            f'x2="{x:.1f}" y2="{height:g}"/>'
        )
        out.append(f'<text class="now-label" x="{x + 3:.1f}" y="{AXIS_H - 1:g}">now</text>')
    out.append("</svg>")
    return "\n".join(out)


def _visible(bar: Bar, t0: float, t1: float) -> bool:
    end = t1 if bar.end is None else bar.end
    return end >= t0 and bar.start <= t1


def _bar(bar: Bar, axis: Axis, y: float) -> str:
    x0, x1 = axis.x(bar.start), axis.x(axis.t1 if bar.end is None else bar.end)
    w = max(x1 - x0, 2.0)  # a job ending now still shows
    kind = "planned" if bar.planned else "running"
    extra = " open-ended" if bar.end is None else ""
    c = colour(bar.user)
    fill = f"url(#hatch-{c})" if bar.planned else PALETTE[c]
    end = "" if bar.end is None else f"{bar.end:.0f}"
    what = "planned" if bar.planned else "running"
    title = escape(f"job {bar.job_id} ({bar.user}) {bar.name} — {what}")
    rect = (
        f'<rect class="bar {kind}{extra}" data-job-id="{bar.job_id}" '
        f'data-start="{bar.start:.0f}" data-end="{end}" x="{x0:.1f}" y="{y + BAR_PAD:g}" '
        f'width="{w:.1f}" height="{ROW_H - 2 * BAR_PAD:g}" fill="{fill}" '
        f'stroke="{PALETTE[c]}"><title>{title}</title></rect>'
    )
    if w < 34:
        return rect
    label = f'<text class="bar-label" x="{x0 + 4:.1f}" y="{y + ROW_H - 7:g}">{bar.job_id}</text>'
    return rect + label


def _defs() -> str:
    """One diagonal hatch per palette colour, and the chart's own styles."""
    patterns = "".join(
        f'<pattern id="hatch-{i}" patternUnits="userSpaceOnUse" width="6" height="6" '
        f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="{c}" stroke-width="3"/></pattern>'
        for i, c in enumerate(PALETTE)
    )
    style = (
        "<style>.gantt .row{fill:#fff}.gantt .row.odd{fill:#f4f6f8}"
        ".gantt .tick{stroke:#d0d4d9;stroke-width:1}.gantt .tick-label{text-anchor:middle}.gantt .now{stroke:#d62728;stroke-width:2}"
        ".gantt text{font:11px sans-serif;fill:#333}.gantt .now-label{fill:#d62728;font-size:9px}"
        ".gantt .bar-label{fill:#fff;pointer-events:none}"
        ".gantt .planned + .bar-label{fill:#222}</style>"
    )
    return f"<defs>{patterns}</defs>{style}"
