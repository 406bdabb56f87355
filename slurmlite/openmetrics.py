"""The OpenMetrics 1.0 text format, written by hand: families, samples, ``# EOF``.

A scrape answer is a list of *metric families*; each family is written once,
as ``# HELP``, ``# TYPE`` and then its samples, and the answer ends with
``# EOF``.  Three types are used here:

* gauge: ``slurm_jobs_pending 27`` — a value now (every Slurm metric is one);
* counter: family ``slurmlite_jobs_submitted``, sample
  ``slurmlite_jobs_submitted_total 12`` — only ever grows (a restart that
  loses it looks like a reset to Prometheus: ours survive restarts, see
  ``controller.metrics.counters``);
* histogram: cumulative ``_bucket{le="..."}`` samples ending at ``+Inf``,
  then ``_count`` and ``_sum``.

Label values escape ``\\``, ``"`` and newlines.  Example::

    out = Exposition()
    out.gauge("slurm_node_cpus", "CPUs of the node", 8, {"node": "n1"})
    out.text()  ->  '# HELP slurm_node_cpus CPUs of the node\\n'
                    '# TYPE slurm_node_cpus gauge\\n'
                    'slurm_node_cpus{node="n1"} 8\\n# EOF\\n'

Why not ``prometheus_client``: its registry suits long-lived metric objects,
while a scrape here builds every family from the controller's live state in
one pass (a few thousand lines for 10,000 jobs); a small writer costs less
and keeps Slurm's names and ordering exactly.  The tests parse our output
with ``prometheus_client``'s OpenMetrics parser.  Reference: the
OpenMetrics 1.0 specification (openmetrics.io).
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterable, Mapping, Sequence

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
Labels = Mapping[str, str] | None


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


def number(value: float) -> str:
    """A sample value: integers without a point, ``+Inf``/``NaN`` spelled out."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


class Exposition:
    """Families in the order first named; samples grouped under their family."""

    def __init__(self) -> None:
        self._families: dict[str, tuple[str, str, list[str]]] = {}

    def _family(self, name: str, kind: str, help_text: str) -> list[str]:
        found = self._families.get(name)
        if found is None:
            found = self._families[name] = (kind, help_text, [])
        return found[2]

    def gauge(self, name: str, help_text: str, value: float, labels: Labels = None) -> None:
        self._family(name, "gauge", help_text).append(f"{name}{_labels(labels)} {number(value)}")

    def declare(self, name: str, kind: str, help_text: str) -> None:
        """A family with no samples yet (it still appears, with HELP and TYPE)."""
        self._family(name, kind, help_text)

    def counter(self, name: str, help_text: str, value: float, labels: Labels = None) -> None:
        line = f"{name}_total{_labels(labels)} {number(value)}"
        self._family(name, "counter", help_text).append(line)

    def histogram(
        self,
        name: str,
        help_text: str,
        bounds: Sequence[float],
        counts: Sequence[float],
        total: float,
        labels: Labels = None,
    ) -> None:
        """``counts[i]``: observations in bucket i (not cumulative); one more for +Inf."""
        lines = self._family(name, "histogram", help_text)
        base = dict(labels or {})
        running = 0.0
        for bound, count in zip([*bounds, math.inf], counts, strict=True):
            running += count
            le = _labels({**base, "le": number(float(bound))})
            lines.append(f"{name}_bucket{le} {number(running)}")
        lines.append(f"{name}_count{_labels(base)} {number(running)}")
        lines.append(f"{name}_sum{_labels(base)} {number(total)}")

    def names(self) -> Iterable[str]:
        return self._families.keys()

    def text(self) -> str:
        parts: list[str] = []
        for name, (kind, help_text, lines) in self._families.items():
            parts.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
            if lines:
                parts.append("\n".join(lines))
                parts.append("\n")
        parts.append("# EOF\n")
        return "".join(parts)


class Histogram:
    """Observations counted in fixed buckets, in memory (thread-safe).

    ``bounds`` are the buckets' upper ends, ascending; a value equal to a
    bound falls in that bucket (``le`` = less or equal).  Example with
    bounds (0.1, 1): observe 0.05, 0.1, 3 -> counts [2, 0, 1], sum 3.15.
    """

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(self.bounds, value)
        with self._lock:
            self.counts[i] += 1
            self.sum += value

    def write(self, out: Exposition, name: str, help_text: str, labels: Labels = None) -> None:
        with self._lock:
            counts, total = list(self.counts), self.sum
        out.histogram(name, help_text, self.bounds, counts, total, labels)


def bucket_of(bounds: Sequence[float], value: float) -> str:
    """The ``le`` label of the bucket ``value`` falls in (``+Inf`` past the last)."""
    i = bisect.bisect_left(bounds, value)
    return number(float(bounds[i])) if i < len(bounds) else "+Inf"
