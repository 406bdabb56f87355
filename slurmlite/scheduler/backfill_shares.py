"""What one backfill request needs of each node of the map, and for how long.

Backfill (``slurmlite.scheduler.backfill``) asks the map of the future
(``timeline.Timeline``) where a job could run; the map answers by node
*shares* -- ``(CPUs, MiB, GPUs)`` a node must have free -- and by a duration.
This module works those out from the request alone, so that backfill can
keep them from pass to pass for every job asking the same thing:

* :func:`duration_of` -- the job's time limit in seconds, rounded up to the
  map's grain (``bf_resolution``); UNLIMITED counts as a year;
* :func:`share_of` -- the least a node must give the job, as a cache key and
  a per-node function (None: the node can never give it).  A job whose tasks
  spread needs one task (and one GPU for ``--gpus``) from each node used; a
  job that may fit on one node also gets the *whole-job* share;
  ``--exclusive`` asks for the whole node;
* :func:`shares_of` -- both, with the job's shape and memory rule
  (``slurmlite.scheduler.shape``), which is what backfill memoises;
* :func:`may_hold` -- a quick necessary test: could these free windows
  together hold a spread job at all?  When not, node selection is not run.

Example: ``-n 4 --mem-per-cpu=1000`` (1 CPU per task) spread over nodes:
each node used must give at least ``(1, 1000, 0)``; on one node the whole
job needs ``(4, 4000, 0)``.  Two open nodes with 2 and 1 free CPUs cannot
hold it (``may_hold`` is False: 3 tasks < 4).
"""

from __future__ import annotations

from slurmlite.scheduler.shape import MemRule, Shape, job_shape, memory_rule
from slurmlite.scheduler.snapshot import NodeView, PendingJob, Policy
from slurmlite.scheduler.timeline import YEAR, Share, ShareFn, round_up


def duration_of(job: PendingJob, resolution: int) -> float:
    """Seconds ``job`` occupies in the map: its time limit rounded up (UNLIMITED = a year)."""
    # round(): the simulator passes second-grained limits as fractional minutes, and
    # 31 / 60 * 60 is 31.000000000000004 (which would round up to 32 s at bf_resolution=1)
    seconds = YEAR if job.time_limit is None else round(job.time_limit * 60.0, 6)
    return round_up(max(seconds, 1.0), resolution)


def share_of(
    job: PendingJob, shape: Shape, rule: MemRule, whole_job: bool
) -> tuple[object, ShareFn]:
    """What a node must give ``job`` at least, as a cache key and a per-node function.

    ``whole_job``: all of the job on that one node.  Otherwise the least any node
    used must give: its fixed tasks per node, or one task (and one GPU for ``--gpus``)
    when the tasks are spread.
    """
    if shape.tasks is None:
        tasks = shape.per_node or 1
    else:
        tasks = shape.tasks if whole_job else 1
    cpus = tasks * shape.cpus_per_task
    gpus = shape.gpus_per_node or (
        (shape.gpus_total if whole_job else 1) if shape.gpus_total else 0
    )

    def share(node: NodeView) -> Share | None:
        if rule.kind == "whole":
            mem = node.real_memory
        elif rule.kind == "cpu":
            mem = rule.amount * cpus
        elif rule.kind == "gpu":
            mem = rule.amount * gpus
        else:
            mem = rule.amount
        if cpus > node.cpus or mem > node.real_memory or gpus > node.gpus:
            return None
        if job.exclusive:
            return node.cpus, node.real_memory, node.gpus
        return cpus, mem, gpus

    return (cpus, gpus, rule.kind, rule.amount, job.exclusive), share


#: What ``shares_of`` makes of a request: shape, memory rule, per-node share and, when
#: the job may also fit on one node, the whole-job share.
Shares = tuple[Shape, MemRule, tuple[object, ShareFn], tuple[object, ShareFn] | None]


def shares_of(job: PendingJob, policy: Policy) -> Shares:
    """The parts of a request that depend on the request alone (and the memory defaults)."""
    shape, rule = job_shape(job), memory_rule(job, policy)
    share = share_of(job, shape, rule, whole_job=shape.nodes_max == 1)
    whole = None
    if shape.nodes_max > 1 and shape.nodes_min == 1:
        whole = share_of(job, shape, rule, whole_job=True)
    return shape, rule, share, whole


def may_hold(shape: Shape, rule: MemRule, windows: list[tuple[int, int, int, int]]) -> bool:
    """Could nodes with these free (CPUs, MiB, GPU mask) together hold a spread job?

    A necessary condition only, from upper bounds of what ``select._caps`` lets each
    node give (tasks by CPUs, ``--ntasks-per-node`` and per-CPU memory; GPUs by free
    GPUs): when it is False ``select_nodes`` would fail on them, so it is not called.
    """
    if shape.tasks is not None:
        cpt, cap = shape.cpus_per_task, shape.per_node
        per_task_mem = rule.amount * cpt if rule.kind == "cpu" and rule.amount > 0 else 0
        total = 0
        for _, cpus, mem, _ in windows:
            tasks = cpus // cpt
            if cap and cap < tasks:
                tasks = cap
            if per_task_mem and mem // per_task_mem < tasks:
                tasks = mem // per_task_mem
            total += tasks
        if total < shape.tasks:
            return False
    if shape.gpus_total:
        if sum(gmask.bit_count() for *_, gmask in windows) < shape.gpus_total:
            return False
    return True
