"""GPU utilization over time for the job page: a small history and an inline SVG.

The store keeps one *cumulative* usage summary per (job, run, node)
(``job_usage``: samples and the sum of utilization samples per GPU, replaced
by each newer report), not a series.  A series comes from differences:
:class:`UsageHistory` remembers, per (job, run, node, GPU), the cumulative
readings the dashboard has seen (``observe``), and the mean utilization of
each interval between two readings is ``d(util_sum) / d(samples)``.

Worked example: readings (samples 10, util_sum 900) then (20, 1100) ->
the first interval is 900/10 = 90 %, the second 200/10 = 20 %.

The history lives in the controller's memory and is fed whenever a page
reads usage (overview, job page), at most ``MAX_POINTS`` intervals per GPU;
so the line starts when someone first looked, and a restart empties it.
A GPU never seen twice shows its run's mean as a flat line.

:func:`spark_svg` draws the intervals as an SVG polyline (0-100 %, newest
on the right) with a ``<title>`` for screen readers and hover.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from slurmlite.usage import JobUsage

MAX_POINTS = 60  # intervals kept per GPU
MAX_GPUS = 4096  # GPUs (job, run, node, index) remembered at most; the oldest go first
Key = tuple[int, int, str, int]  # job, run, node, GPU index


class UsageHistory:
    def __init__(self) -> None:
        self._last: dict[Key, tuple[int, float]] = {}  # latest reading (samples, util_sum)
        self._points: dict[Key, deque[float]] = {}

    def observe(self, usages: Iterable[JobUsage]) -> None:
        """Record the readings in ``usages`` that are newer than the last seen."""
        for usage in usages:
            for node, gpu in usage.gpus:
                key = (usage.job_id, usage.restarts, node, gpu.index)
                last = self._last.get(key)
                if last is None:
                    if gpu.samples:
                        self._remember(key, (gpu.samples, gpu.util_sum), gpu.util_avg)
                    continue
                grown = gpu.samples - last[0]
                if grown > 0:
                    mean = (gpu.util_sum - last[1]) / grown
                    self._remember(key, (gpu.samples, gpu.util_sum), min(100.0, max(0.0, mean)))

    def _remember(self, key: Key, reading: tuple[int, float], mean: float) -> None:
        if key not in self._last and len(self._last) >= MAX_GPUS:
            oldest = next(iter(self._last))
            del self._last[oldest]
            self._points.pop(oldest, None)
        self._last[key] = reading
        self._points.setdefault(key, deque(maxlen=MAX_POINTS)).append(mean)

    def series(self, job_id: int, run: int, node: str, index: int) -> list[float]:
        return list(self._points.get((job_id, run, node, index), ()))


def spark_svg(points: list[float], width: int = 120, height: int = 24) -> str:
    """An inline SVG line of utilization percentages (safe to embed: numbers only)."""
    if not points:
        return ""
    if len(points) == 1:
        points = points * 2  # a flat line for a single reading
    step = width / (len(points) - 1)
    coords = " ".join(
        f"{i * step:.1f},{height - 1 - (p / 100.0) * (height - 2):.1f}"
        for i, p in enumerate(points)
    )
    label = f"GPU utilization, last {len(points)} readings: {points[-1]:.0f} % now"
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{label}"><title>{label}</title>'
        f'<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="{coords}"/></svg>'
    )


def history_of(app_state: object) -> UsageHistory:
    """The app's history (made on first use)."""
    found = getattr(app_state, "ui_usage_history", None)
    if found is None:
        found = UsageHistory()
        app_state.ui_usage_history = found  # type: ignore[attr-defined]
    return found
