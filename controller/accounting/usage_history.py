"""GPU utilization over time, kept as the agents' summaries arrive.

The store keeps one *cumulative* summary per (job, run, node) -- samples and
the sum of utilization samples per GPU (``slurmlite.usage``), each newer
report replacing the row -- not a series.  A series comes from differences:
when :func:`controller.accounting.usage.record_usage` accepts a summary, it
hands it to :meth:`UsageHistory.add`, which remembers the last cumulative
reading of each (job, run, node, GPU) and appends the mean utilization of
the interval since that reading,

    mean = (util_sum - util_sum_before) / (samples - samples_before)

to a ring of the last ``MAX_POINTS`` points ``(time, percent)``; ``time``
is the summary's last sample (the agent's clock, epoch seconds).  Nothing
is read from the store: the readings it needs are the ones it was given.

Worked example: readings (samples 10, util_sum 900) then (20, 1100) -> the
first interval counts from the run's start, 900/10 = 90 %; the second is
(1100 - 900) / (20 - 10) = 20 %.  The same (10, 900) again adds nothing.

Counters that start again (an agent that lost its spool, a GPU first seen
by a new sampler) show as *fewer* samples with a later ``first_sample``: the
new reading is the baseline and its own mean, ``util_sum / samples``, the
interval's.  Fewer samples with the same ``first_sample`` is a late report
(a heartbeat overtaken by the completion) and changes nothing.

Bounds: ``MAX_POINTS`` per GPU; a ring not fed for ``KEEP_SECONDS`` (its
job ended, was requeued into a new run, or its node went silent) is dropped
at the next ``add`` after that, checked at most every ``PRUNE_EVERY``
seconds; at most ``MAX_GPUS`` rings, the least recently fed go first.

The history is the controller's memory: it starts when the controller
starts (a job that ran before has its run's mean only, drawn flat by the
job page) and a standby that takes over begins its own.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from slurmlite.usage import GpuUsage, UsageSummary

MAX_POINTS = 120  # intervals kept per GPU
MAX_GPUS = 20_000  # rings (job, run, node, GPU) at most
KEEP_SECONDS = 3600.0  # a ring not fed for this long is dropped
PRUNE_EVERY = 60.0  # seconds between scans for such rings

Key = tuple[int, int, str, int]  # job, run, node, GPU index
Point = tuple[float, float]  # (epoch seconds, percent)


@dataclass
class _Ring:
    samples: int  # the last cumulative reading ...
    util_sum: float
    first_sample: float | None  # ... and when its counting began
    fed: float  # controller clock at the last add
    points: deque[Point] = field(default_factory=lambda: deque(maxlen=MAX_POINTS))


def _percent(util_sum: float, samples: int) -> float:
    return min(100.0, max(0.0, util_sum / samples))


class UsageHistory:
    """Per-GPU utilization rings fed by accepted usage summaries (module doc)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._rings: OrderedDict[Key, _Ring] = OrderedDict()  # least recently fed first
        self._lock = threading.Lock()  # heartbeats and pages run in threads
        self._pruned = clock()

    def add(self, node: str, summaries: Iterable[UsageSummary]) -> None:
        """Append each GPU's interval mean since the last reading (module doc)."""
        now = self._clock()
        with self._lock:
            for s in summaries:
                for g in s.gpus:
                    if g.samples:
                        self._add((s.job_id, s.restarts, node, g.index), g, s, now)
            if now - self._pruned >= PRUNE_EVERY:
                self._prune(now)

    def _add(self, key: Key, g: GpuUsage, s: UsageSummary, now: float) -> None:
        samples, util_sum, first = g.samples, g.util_sum, s.first_sample
        ring = self._rings.get(key)
        if ring is None:
            if len(self._rings) >= MAX_GPUS:
                self._rings.popitem(last=False)
            ring = self._rings[key] = _Ring(0, 0.0, first, now)
        grown = samples - ring.samples
        if grown > 0:
            mean = _percent(util_sum - ring.util_sum, grown)
        elif grown < 0 and first is not None and first > (ring.first_sample or 0.0):
            mean = _percent(util_sum, samples)  # the counters started again
        else:
            return  # the same reading again, or a late one
        ring.samples, ring.util_sum, ring.first_sample, ring.fed = samples, util_sum, first, now
        ring.points.append((s.last_sample or now, mean))
        self._rings.move_to_end(key)

    def _prune(self, now: float) -> None:
        self._pruned = now
        while self._rings:
            key, ring = next(iter(self._rings.items()))
            if now - ring.fed < KEEP_SECONDS:
                break  # the rest were fed later
            del self._rings[key]

    def series(self, job_id: int, run: int, node: str, index: int) -> list[Point]:
        """The GPU's points, oldest first (empty: none since the controller started)."""
        with self._lock:
            ring = self._rings.get((job_id, run, node, index))
            return list(ring.points) if ring else []

    def __len__(self) -> int:
        return len(self._rings)
