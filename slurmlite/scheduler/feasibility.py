"""Can this job run: never, not now, or now?  Three different answers.

* **Never** (``check_submit``, at submit time): the request cannot fit on any
  node of its partition even when every node is up and idle — more GPUs or
  memory or CPUs per node than any node has.  Slurm rejects such a
  submission with ``Requested node configuration is not available``; a
  ``-w`` node outside the partition gets ``Requested nodes not in this
  partition`` and a ``--constraint`` no node of the partition satisfies
  ``Invalid feature specification``.  When memory alone is
  what no node can give, sbatch also prints ``Memory specification can not
  be satisfied`` (the ``detail`` of the rejection).  Asking for more nodes
  than the partition has is *not* a rejection: the job is accepted and pends
  with PartitionNodeLimit (golden ``41_sbatch_N3_pending_reason.txt``).
* **Not now** (``wait_reason``, every pass): a reason that keeps a job out of
  the pass without blocking anyone — held, begin time in the future, a
  dependency, partition DOWN/INACTIVE, time limit above the partition's
  MaxTime, more nodes than the partition has.  Checked in that order, the
  first one found is the job's reason.
* **Now** (``will_run_now``, for ``sbatch --test-only``): the placement the
  job would get if it were alone at the head of the queue right now.

Example: partition of two nodes with 2 GPUs each; ``--gres=gpu:5`` is never
(5 > 2 on every node); ``-N 3`` is not now (PartitionNodeLimit, 3 > 2 nodes);
``--gres=gpu:1`` with one GPU free is now.

Reference: spec §1.4 (reasons), §4.2 step 1 and 5, §5.2;
golden ``40_sbatch_too_many_gpus.txt``, ``40_sbatch_too_much_mem.txt``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from slurmlite import errors, reasons
from slurmlite.scheduler import shortfall as lack
from slurmlite.scheduler.select import (
    as_idle,
    constraint_matches,
    eligible,
    fits_when_idle,
    select_nodes,
    share_shortfalls,
)
from slurmlite.scheduler.shape import job_shape, memory_rule, min_nodes
from slurmlite.scheduler.snapshot import NodeView, PartitionView, PendingJob, Policy, Start

MEMORY_DETAIL = "Memory specification can not be satisfied"


@dataclass(frozen=True)
class Rejection:
    """Why a submission is refused: an error code of ``slurmlite.errors``."""

    code: int
    detail: str | None = None  # an extra line sbatch prints before the error


def wait_reason(job: PendingJob, partition: PartitionView | None, now: float) -> str | None:
    """The reason ``job`` sits this pass out without blocking others, or None."""
    if job.held:
        return job.held
    if job.begin_time is not None and job.begin_time > now:
        return reasons.BEGIN_TIME
    if job.external_reason:
        return job.external_reason
    if partition is None or partition.state == "INACTIVE":
        return reasons.PARTITION_INACTIVE  # a partition removed from slurm.conf counts as inactive
    if partition.state == "DOWN":
        return reasons.PARTITION_DOWN
    if partition.max_time is not None and (
        job.time_limit is None or job.time_limit > partition.max_time
    ):
        return reasons.PARTITION_TIME_LIMIT
    if min_nodes(job) > len(partition.nodes):
        return reasons.PARTITION_NODE_LIMIT
    return None


def _clamped_to(job: PendingJob, size: int) -> PendingJob:
    """``job`` with its node count cut to ``size`` (too many nodes only pends)."""
    nodes_min = min(job.nodes_min, max(1, size))
    nodes_max = None if job.nodes_max is None else max(nodes_min, min(job.nodes_max, size))
    return dataclasses.replace(job, nodes_min=nodes_min, nodes_max=nodes_max)


def _memory_ever_fits(job: PendingJob, policy: Policy, node: NodeView) -> bool:
    """Would the smallest per-node share of ``job`` fit in this node's RealMemory
    (select's memory rule finds no memory shortfall on the node idle)?"""
    shape = job_shape(job)
    cpus = (shape.per_node or 1) * shape.cpus_per_task
    gpus = shape.gpus_per_node or (1 if shape.gpus_total else 0)
    lacks = share_shortfalls(job, memory_rule(job, policy), as_idle(node), cpus, gpus)
    return all(s.resource != lack.MEMORY for s in lacks)


def check_submit(
    job: PendingJob,
    partition: PartitionView,
    nodes_of_partition: Sequence[NodeView],
    policy: Policy,
) -> Rejection | None:
    """None if the job may be queued; else the rejection sbatch reports."""
    if partition.state in ("DRAIN", "INACTIVE"):
        return Rejection(errors.ESLURM_PARTITION_NOT_AVAIL)
    unavailable = Rejection(errors.ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE)
    members = {n.name for n in nodes_of_partition}
    if any(name not in members for name in job.req_nodes):
        return Rejection(errors.ESLURM_REQUESTED_NODES_NOT_IN_PARTITION)
    if any(name in job.exc_nodes for name in job.req_nodes):
        return unavailable
    if not any(constraint_matches(job.features, n.features) for n in nodes_of_partition):
        return Rejection(errors.ESLURM_INVALID_FEATURE)
    if fits_when_idle(_clamped_to(job, len(nodes_of_partition)), policy, nodes_of_partition):
        return None
    candidates = [n for n in nodes_of_partition if eligible(job, n)]
    if candidates and not any(_memory_ever_fits(job, policy, n) for n in candidates):
        return dataclasses.replace(unavailable, detail=MEMORY_DETAIL)
    return unavailable


def will_run_now(
    job: PendingJob,
    partition: PartitionView,
    nodes_of_partition: Sequence[NodeView],
    policy: Policy,
    now: float,
) -> Start | None:
    """The placement ``job`` would get right now on the nodes as they are, or None."""
    if wait_reason(job, partition, now) is not None:
        return None
    return select_nodes(job, policy, [n for n in nodes_of_partition if n.usable])
