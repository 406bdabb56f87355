"""What a job asks of each node: its shape (tasks, nodes, GPUs) and its memory rule.

Node selection (``slurmlite.scheduler.select``), backfill, the feasibility
checks and ``slurmlite explain`` all start from the same two readings of a
pending job's request, kept here so that they cannot drift apart:

* :class:`Shape` -- the request normalised for placement: a task count (or
  "a fixed number of tasks on every node used"), a per-node task cap, the
  CPUs of one task, a node range and the GPUs per node or per job.
  ``-N 2`` alone is one task per node on 2 nodes; ``-n 5`` is five tasks
  spread over 1..5 nodes; ``--ntasks-per-node=2 -N 2`` is two tasks on each
  of 2 nodes; ``--gpus=3`` may spread over up to 3 nodes.  :func:`min_nodes`
  is the cheap form of ``job_shape(job).nodes_min`` that every pass asks of
  every pending job.
* :class:`MemRule` -- how memory is charged on a node, by the first rule
  that applies (spec §5.2): ``--mem`` (0 = the whole node), ``--mem-per-cpu``,
  ``--mem-per-gpu``, DefMemPerGPU (GPU jobs), DefMemPerCPU, else the whole
  RealMemory.  :func:`node_memory` turns a rule and a share (CPUs, GPUs) into
  MiB.

Example: ``-n 5 --ntasks-per-node=2 --mem-per-cpu=1000`` with 2 CPUs per task
is ``Shape(tasks=5, per_node=2, cpus_per_task=2, nodes_min=3, nodes_max=5,
...)`` and ``MemRule("cpu", 1000)``: a node given 2 tasks holds 4 CPUs and
4000 MiB.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmlite.scheduler.snapshot import NodeView, PendingJob, Policy


@dataclass(frozen=True)
class Shape:
    """A request normalised for placement.

    ``tasks`` None means "a fixed ``per_node`` tasks on every node used";
    otherwise ``tasks`` are spread with at most ``per_node`` (None = no cap)
    on one node.
    """

    tasks: int | None
    per_node: int | None
    cpus_per_task: int
    nodes_min: int
    nodes_max: int
    gpus_per_node: int
    gpus_total: int


def min_nodes(job: PendingJob) -> int:
    """The fewest nodes ``job`` can run on (``job_shape(job).nodes_min``, built cheaply:
    every pass asks it of every pending job)."""
    # (max/min spelled out as comparisons: the same numbers, at a fraction of the cost)
    kmin = job.nodes_min
    if kmin < 1:
        kmin = 1
    tasks = job.ntasks
    if tasks is None:
        return kmin
    if tasks < 1:
        tasks = 1
    cap = job.ntasks_per_node
    if cap:
        per = -(-tasks // cap)  # ceil: 5 tasks, 2 per node -> 3 nodes
        if per > kmin:
            kmin = per
    return kmin if kmin < tasks else tasks  # never more nodes than tasks (sbatch lowers -N)


def job_shape(job: PendingJob) -> Shape:
    cpt = max(1, job.cpus_per_task)
    kmin = min_nodes(job)
    gtot = job.gpus_total or 0
    if job.ntasks is None:
        per_node = job.ntasks_per_node or 1
        # No -N upper bound: --gpus=N may spread over up to N nodes.
        kmax = job.nodes_max if job.nodes_max is not None else max(kmin, gtot)
        return Shape(None, per_node, cpt, kmin, max(kmin, kmax), job.gpus_per_node, gtot)
    tasks = max(1, job.ntasks)
    cap = job.ntasks_per_node
    kmax = job.nodes_max if job.nodes_max is not None else tasks
    kmax = min(max(kmin, kmax), tasks)
    if gtot:
        kmax = min(kmax, gtot)
    return Shape(tasks, cap, cpt, kmin, kmax, job.gpus_per_node, gtot)


@dataclass(frozen=True)
class MemRule:
    kind: str  # "node" (fixed MiB) | "whole" | "cpu" (MiB x CPUs) | "gpu" (MiB x GPUs)
    amount: int = 0


def memory_rule(job: PendingJob, policy: Policy) -> MemRule:
    """The first memory rule that applies to ``job`` (spec §5.2)."""
    if job.mem_per_node is not None:
        return MemRule("whole") if job.mem_per_node == 0 else MemRule("node", job.mem_per_node)
    if job.mem_per_cpu is not None:
        return MemRule("cpu", job.mem_per_cpu)
    if job.mem_per_gpu is not None:
        return MemRule("gpu", job.mem_per_gpu)
    if job.wants_gpus and policy.def_mem_per_gpu > 0:
        return MemRule("gpu", policy.def_mem_per_gpu)
    if policy.def_mem_per_cpu > 0:
        return MemRule("cpu", policy.def_mem_per_cpu)
    return MemRule("whole")


def node_memory(rule: MemRule, node: NodeView, cpus: int, gpus: int) -> int:
    """MiB the job is charged on ``node`` when it holds ``cpus`` and ``gpus`` there."""
    if rule.kind == "whole":
        return node.real_memory
    if rule.kind == "cpu":
        return rule.amount * cpus
    if rule.kind == "gpu":
        return rule.amount * gpus
    return rule.amount
