"""Test data builders for the scheduler's snapshot types.

Every builder gives a sensible default for each field, so a test spells out
only what it is about::

    snap = a_snapshot(
        nodes=[a_node("n1", cpus=4, mem=8000), a_node("n2", cpus=4, mem=8000, gpus=2)],
        pending=[a_job(1, ntasks=2), a_job(2, gpus_per_node=1)],
    )
    plan = main_pass(snap, a_policy(def_mem_per_cpu=1000))

Defaults: nodes are up, idle, weight 1, in config order of the list given to
``a_snapshot``; jobs ask for one task on one node in partition ``debug``,
priority 1, submitted at ``1000.0 + job id`` (so FIFO by id unless a test
says otherwise); ``a_snapshot`` without partitions makes one ``debug``
partition holding every node; ``now`` is 10_000.0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from slurmlite.scheduler.snapshot import (
    NodeView,
    PartitionView,
    PendingJob,
    Policy,
    Snapshot,
)

NOW = 10_000.0


def a_node(
    name: str,
    cpus: int = 4,
    mem: int = 8000,
    gpus: int = 0,
    *,
    index: int = -1,
    features: Iterable[str] = (),
    weight: int = 1,
    usable: bool = True,
    alloc_cpus: int = 0,
    alloc_mem: int = 0,
    alloc_gpus: Iterable[int] = (),
    gpu_type: str | None = None,
    partitions: Sequence[str] = (),
) -> NodeView:
    """A node; ``index=-1`` lets ``a_snapshot`` number it by list position."""
    return NodeView(
        name=name,
        index=index,
        cpus=cpus,
        real_memory=mem,
        gpus=gpus,
        gpu_type=gpu_type,
        features=frozenset(features),
        weight=weight,
        partitions=tuple(partitions),
        usable=usable,
        alloc_cpus=alloc_cpus,
        alloc_mem=alloc_mem,
        alloc_gpus=frozenset(alloc_gpus),
    )


def a_busy_node(name: str, cpus: int = 4, mem: int = 8000, gpus: int = 0, **kw: Any) -> NodeView:
    """A node whose CPUs, memory and GPUs are all held by running jobs."""
    return a_node(
        name, cpus, mem, gpus, alloc_cpus=cpus, alloc_mem=mem, alloc_gpus=range(gpus), **kw
    )


def a_job(job_id: int, partition: str = "debug", **kw: Any) -> PendingJob:
    """A pending job; any ``PendingJob`` field may be given by keyword.

    ``req_nodes``/``exc_nodes`` accept any iterable of names.
    """
    kw.setdefault("priority", 1)
    kw.setdefault("submit_time", 1000.0 + job_id)
    for key in ("req_nodes", "exc_nodes"):
        if key in kw:
            kw[key] = tuple(kw[key])
    return PendingJob(job_id=job_id, partition=partition, **kw)


def a_partition(
    name: str = "debug",
    nodes: Iterable[str] = (),
    *,
    state: str = "UP",
    max_time: int | None = None,
    priority_tier: int = 1,
    priority_job_factor: int = 1,
) -> PartitionView:
    return PartitionView(
        name=name,
        nodes=tuple(nodes),
        state=state,
        max_time=max_time,
        priority_tier=priority_tier,
        priority_job_factor=priority_job_factor,
    )


def a_policy(**kw: Any) -> Policy:
    """Slurm's defaults (no DefMemPerCPU: a job takes a node's whole memory)."""
    return Policy(**kw)


def a_snapshot(
    nodes: Sequence[NodeView] = (),
    pending: Iterable[PendingJob] = (),
    partitions: Sequence[PartitionView] | None = None,
    now: float = NOW,
) -> Snapshot:
    """A snapshot; nodes get config indices and partition lists filled in."""
    if partitions is None:
        partitions = [a_partition("debug", [n.name for n in nodes])]
    numbered = []
    for position, node in enumerate(nodes):
        member_of = tuple(p.name for p in partitions if node.name in p.nodes)
        numbered.append(
            dataclasses.replace(
                node,
                index=position if node.index < 0 else node.index,
                partitions=node.partitions or member_of,
            )
        )
    return Snapshot(
        now=now, nodes=tuple(numbered), partitions=tuple(partitions), pending=tuple(pending)
    )


def allocs_of(plan: Any, job_id: int) -> dict[str, tuple[int, int, list[int]]]:
    """``{node: (cpus, mem, gpus)}`` for a started job of ``plan`` (KeyError if it did not start)."""
    for start in plan.starts:
        if start.job_id == job_id:
            return {a.node: (a.cpus, a.mem, list(a.gpus)) for a in start.allocs}
    raise KeyError(f"job {job_id} did not start; reasons={plan.reasons}")
