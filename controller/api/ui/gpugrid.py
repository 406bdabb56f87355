"""The overview's GPU grid: one cell per GPU, in one of five states.

Each cell is a node's GPU (``node:index``, the node's global index as
``CUDA_VISIBLE_DEVICES`` shows it) and its state, decided in this order:

1. ``unavailable``: used outside the scheduler, or freed from such use less
   than the settle time ago (``NodeInfo.outside_gpus``,
   ``controller.nodes.outside_gpus``) -- unless a job holds it;
2. ``allocated-idle``: held by a job that the idle-GPU check flagged
   (reason ``GpusIdle``, ``controller.sched.idlegpus``), or whose measured
   utilization of this GPU over its run so far is at most ``IDLE_UTIL``
   percent (``job_usage``: the agents' summaries; a GPU not sampled yet is
   not called idle);
3. ``allocated``: held by a job (``NodeInfo.alloc_gpus``);
4. ``down``: a free GPU on a node that is DOWN, drained, draining or not
   responding: no job will get it now;
5. ``idle``: free, and a job could get it.

Each cell's ``title`` says who holds it: ``job 7 (alice), 3 % busy`` -- the
job and user only where the viewer may see that job (``PrivateData=jobs``
hides other users' jobs: the cell then says ``allocated``).

Worked example: n1 has 4 GPUs; job 7 holds 0,1 and used GPU 1 at 0.4 %;
GPU 3 runs someone's process outside Slurm; the node is up -> n1:0
allocated, n1:1 allocated-idle, n1:2 idle, n1:3 unavailable.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmlite.protocol import JobInfo, NodeInfo
from slurmlite.reasons import GPUS_IDLE
from slurmlite.usage import JobUsage

IDLE_UTIL = 1.0  # percent: a held GPU at or under this mean is shown idle (seff's "used" line)
UNUSABLE_FLAGS = {"DRAIN", "NOT_RESPONDING", "DRAINING", "DRAINED"}


@dataclass(frozen=True)
class GpuCell:
    node: str
    index: int
    state: str  # idle | allocated | allocated-idle | down | unavailable
    title: str
    job_id: int | None = None


def node_unusable(node: NodeInfo) -> bool:
    return node.state in ("DOWN", "UNKNOWN") or bool(UNUSABLE_FLAGS & set(node.flags))


def holders(jobs: list[JobInfo]) -> dict[tuple[str, int], JobInfo]:
    """(node, GPU index) -> the visible running job holding it."""
    out: dict[tuple[str, int], JobInfo] = {}
    for job in jobs:
        if job.state in ("RUNNING", "SUSPENDED") or "COMPLETING" in job.flags:
            for alloc in job.alloc:
                for index in alloc.gpus:
                    out[(alloc.node, index)] = job
    return out


def gpu_cells(
    nodes: list[NodeInfo], jobs: list[JobInfo], usage: dict[int, JobUsage]
) -> list[list[GpuCell]]:
    """The cells of every node with GPUs, one list per node, in node order."""
    held_by = holders(jobs)
    util = {
        (job_id, node, g.index): g for job_id, u in usage.items() for node, g in u.gpus if g.samples
    }
    grid = []
    for node in nodes:
        if node.gpus:
            grid.append(
                [_cell(node, i, held_by.get((node.name, i)), util) for i in range(node.gpus)]
            )
    return grid


def _cell(node: NodeInfo, index: int, job: JobInfo | None, util: dict) -> GpuCell:  # type: ignore[type-arg]
    name = f"{node.name}:{index}"
    if index in node.alloc_gpus or job is not None:
        if job is None:
            return GpuCell(node.name, index, "allocated", f"{name}: allocated")
        who = f"{name}: job {job.job_id} ({job.user})"
        measured = util.get((job.job_id, node.name, index))
        busy = f", {measured.util_avg:.0f} % busy" if measured is not None else ""
        idle = job.reason == GPUS_IDLE or (measured is not None and measured.util_avg <= IDLE_UTIL)
        state = "allocated-idle" if idle else "allocated"
        return GpuCell(
            node.name, index, state, who + busy + (" (idle)" if idle else ""), job.job_id
        )
    if index in node.outside_gpus:
        return GpuCell(
            node.name, index, "unavailable", f"{name}: {node.reason or 'used outside Slurm'}"
        )
    if node_unusable(node):
        why = f" ({node.reason})" if node.reason else ""
        flags = "+".join([node.state, *node.flags])
        return GpuCell(node.name, index, "down", f"{name}: node {flags}{why}")
    return GpuCell(node.name, index, "idle", f"{name}: idle")


def summary(grid: list[list[GpuCell]]) -> dict[str, int]:
    """How many GPUs are in each state (every state present, 0 if none)."""
    counts = dict.fromkeys(("idle", "allocated", "allocated-idle", "down", "unavailable"), 0)
    for row in grid:
        for cell in row:
            counts[cell.state] += 1
    return counts


def next_gpu_free(jobs: list[JobInfo], now: float) -> tuple[float, JobInfo] | None:
    """When the first running GPU job's time limit ends, and that job (None: no GPU job
    with a limit).  A job may end sooner; this is the latest the first GPU frees."""
    ends = [
        (j.end_time, j.job_id, j)
        for j in jobs
        if j.state == "RUNNING" and j.gpus and j.end_time is not None and j.time_limit is not None
    ]
    if not ends:
        return None
    end, _id, job = min(ends, key=lambda e: (e[0], e[1]))
    return max(end, now), job
