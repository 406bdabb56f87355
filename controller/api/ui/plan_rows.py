"""The plan laid out for the Gantt: nodes become rows, jobs become bars.

Pure: ``chart(nodes, jobs, now)`` takes the listings the commands read
(``NodeInfo`` as sinfo/scontrol see nodes, ``JobInfo`` as squeue sees jobs,
already narrowed by ``PrivateData``) and returns the ``gantt.Row`` and
``gantt.Bar`` values that ``gantt.gantt_svg`` draws.

**Rows.**  In the nodes' configuration order, a node with GPUs gives one
row per GPU (``n1:0``, ``n1:1``, ...); a node without GPUs one row (``n3``).
A job holding CPUs but no GPU on a GPU node gets a row ``n1:cpu`` after
that node's GPUs, made only when some bar needs it.

**Running jobs** are drawn where they are: each GPU index of their
allocation (``JobInfo.alloc``), from their start to start + time limit.

**Planned jobs.**  The backfill pass stores, for a pending job it planned,
an expected start and the nodes (``sched_start``, ``sched_nodes``: what
``squeue --start`` prints) but not which GPUs.  The chart gives each planned
job, in order of expected start, the lowest-numbered GPUs of each planned
node that no bar drawn so far occupies over its interval, ``k`` per node
(its GPUs spread evenly over its nodes, rounded up).  Should the plan's
rounding leave fewer than ``k`` free, the lowest busy ones are used: bars
overlap rather than vanish.  Example: n1 has 2 GPUs, job 5 runs on GPU 1
until 10:00, job 6 (1 GPU) is planned on n1 at 9:30 -> lane ``n1:0``; job
7 (2 GPUs) planned at 10:00 -> ``n1:0`` (free from 10:00 if job 6 ends
then) and ``n1:1``.

**Window.**  From a little before now (a fifth of the span ahead, at least
10 minutes) to the last end in view, at least one hour and at most
``horizon`` (the page's choice, by default a day) after now.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from controller.api.ui.gantt import Bar, Row
from slurmlite.protocol import JobInfo, NodeInfo

HOUR = 3600.0
DAY = 86400.0


def chart(nodes: Sequence[NodeInfo], jobs: Iterable[JobInfo]) -> tuple[list[Row], list[Bar]]:
    """The rows and bars of the running and planned ``jobs`` (see the module docstring)."""
    gpus = {n.name: n.gpus for n in nodes}
    bars: list[Bar] = []
    planned: list[JobInfo] = []
    for job in jobs:
        if job.state == "RUNNING" and job.start_time is not None:
            end = _end(job.start_time, job.time_limit)
            for a in job.alloc:
                for row in _rows_held(a.node, a.gpus, gpus.get(a.node, 0)):
                    bars.append(_bar(job, row, job.start_time, end, planned=False))
        elif job.state == "PENDING" and job.sched_start is not None and job.sched_nodes:
            planned.append(job)
    by_node: dict[str, list[Bar]] = {}  # the bars so far on each node's rows
    for b in bars:
        by_node.setdefault(b.row.partition(":")[0], []).append(b)
    planned.sort(key=lambda j: (j.sched_start, j.job_id))
    for job in planned:
        start = float(job.sched_start or 0.0)
        end = _end(start, job.time_limit)
        per_node = -(-job.gpus // len(job.sched_nodes))
        for node in job.sched_nodes:
            here = by_node.setdefault(node, [])
            for row in _lanes(node, gpus.get(node, 0), per_node, start, end, here):
                bar = _bar(job, row, start, end, planned=True)
                bars.append(bar)
                here.append(bar)
    return _rows(nodes, {b.row for b in bars}), bars


def window(bars: Iterable[Bar], now: float, horizon: float = DAY) -> tuple[float, float]:
    """``(t0, t1)``: the times the chart covers (see the module docstring)."""
    ends = [b.end for b in bars if b.end is not None] + [b.start for b in bars if b.end is None]
    last = max(ends, default=now)
    t1 = min(max(last, now + HOUR), now + max(horizon, HOUR))
    return now - max((t1 - now) / 5, 600.0), t1


def _end(start: float, limit: int | None) -> float | None:
    return None if limit is None else start + limit * 60.0


def _bar(job: JobInfo, row: str, start: float, end: float | None, planned: bool) -> Bar:
    return Bar(row, job.job_id, start, end, planned, job.user, job.name)


def _rows_held(node: str, held: Sequence[int], node_gpus: int) -> list[str]:
    """The rows of what a running job holds on ``node``."""
    if not node_gpus:
        return [node]
    return [f"{node}:{g}" for g in held] or [f"{node}:cpu"]


def _lanes(
    node: str, node_gpus: int, want: int, start: float, end: float | None, bars: list[Bar]
) -> list[str]:
    """The rows a planned job takes on ``node`` (``bars``: those drawn on it so far):
    the lowest free GPUs over its interval."""
    if not node_gpus:
        return [node]
    if want <= 0:
        return [f"{node}:cpu"]
    stop = float("inf") if end is None else end
    busy = {b.row for b in bars if b.start < stop and (b.end is None or b.end > start)}
    lanes = [f"{node}:{g}" for g in range(node_gpus)]
    free = [r for r in lanes if r not in busy]
    return (free + [r for r in lanes if r in busy])[: min(want, node_gpus)]


def _rows(nodes: Sequence[NodeInfo], used: set[str]) -> list[Row]:
    out: list[Row] = []
    for n in nodes:
        if not n.gpus:
            out.append(Row(n.name, n.name))
            continue
        out += [Row(f"{n.name}:{g}", f"{n.name}:{g}") for g in range(n.gpus)]
        if f"{n.name}:cpu" in used:
            out.append(Row(f"{n.name}:cpu", f"{n.name} CPUs"))
    return out
