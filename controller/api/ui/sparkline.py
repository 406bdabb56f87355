"""The job page's GPU utilization sparkline: a list of percentages as inline SVG.

The points are the intervals of :mod:`controller.accounting.usage_history`,
which the controller fills as the agents' usage summaries arrive (each the
mean utilization since the previous summary), so a job nobody looked at has
its history too.  The history starts when the controller starts: a GPU
without points there is drawn as a flat line at its run's mean.

:func:`spark_svg` draws the points as an SVG polyline scaled 0-100 % over
the height (0 % on the bottom row, 100 % on the top one), oldest on the
left, newest on the right, with a ``<title>`` and an ``aria-label`` that
say the latest value, for screen readers and hover.

Worked example: ``spark_svg([90.0, 20.0], width=120, height=24)`` has the
points ``0.0,3.2`` (90 %: 23 - 0.9 * 22) and ``120.0,18.6`` (20 %: 23 - 0.2 * 22).
"""

from __future__ import annotations


def spark_svg(points: list[float], width: int = 120, height: int = 24) -> str:
    """An inline SVG line of utilization percentages (safe to embed: numbers only)."""
    if not points:
        return ""
    label = f"GPU utilization, last {len(points)} readings: {points[-1]:.0f} % now"
    if len(points) == 1:
        points = points * 2  # a flat line for a single reading
    step = width / (len(points) - 1)
    coords = " ".join(
        f"{i * step:.1f},{height - 1 - (p / 100.0) * (height - 2):.1f}"
        for i, p in enumerate(points)
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{label}"><title>{label}</title>'
        f'<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="{coords}"/></svg>'
    )
