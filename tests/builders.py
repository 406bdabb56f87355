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

Running jobs hold resources; a snapshot given them derives every node's
``alloc_*`` from their allocations, by the rule the simulator uses
(``snapshot.with_allocations``), so a test never states a node's use twice::

    snap = a_snapshot(
        nodes=[a_node("n1", cpus=4, gpus=2)],
        running=[a_running_job(1, an_alloc("n1", cpus=3, gpus=[1]), ends_in=3600)],
    )
    # n1: alloc_cpus = 3, alloc_gpus = {1}: one CPU and GPU 0 are free
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from slurmlite.protocol import NodeAlloc
from slurmlite.scheduler.snapshot import (
    NodeView,
    PartitionView,
    PendingJob,
    Policy,
    RunningJob,
    Snapshot,
    with_allocations,
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


def an_alloc(node: str, cpus: int = 1, mem: int = 0, gpus: Iterable[int] = ()) -> NodeAlloc:
    """What one job holds on one node: CPUs, MiB of memory, GPU indices."""
    return NodeAlloc(node, cpus, mem, list(gpus))


def a_running_job(
    job_id: int,
    *allocs: NodeAlloc,
    start_time: float | None = None,
    ends_in: float | None = None,
    now: float = NOW,
    **kw: Any,
) -> RunningJob:
    """A running job holding ``allocs`` (default: 1 CPU on ``n1``).

    It started a minute before ``now`` unless ``start_time`` says otherwise,
    and ends ``ends_in`` seconds after ``now`` at the latest (``None``:
    UNLIMITED); ``end_time=`` gives the end as a time instead.  Any other
    ``RunningJob`` field may be given by keyword.
    """
    if "end_time" not in kw:
        kw["end_time"] = None if ends_in is None else now + ends_in
    return RunningJob(
        job_id,
        start_time=now - 60 if start_time is None else start_time,
        allocs=allocs or (an_alloc("n1"),),
        **kw,
    )


def a_snapshot(
    nodes: Sequence[NodeView] = (),
    pending: Iterable[PendingJob] = (),
    partitions: Sequence[PartitionView] | None = None,
    now: float = NOW,
    *,
    running: Iterable[RunningJob] = (),
    qos: dict[str, object] | None = None,
) -> Snapshot:
    """A snapshot; nodes get config indices and partition lists filled in.

    With ``running`` the nodes' ``alloc_*`` are what those jobs hold
    (``with_allocations``); a node must then not state its own use as well.
    """
    running = tuple(running)
    if running:
        stated = [n.name for n in nodes if n.alloc_cpus or n.alloc_mem or n.alloc_gpus]
        if stated:
            raise ValueError(f"nodes {stated} state alloc_* and running jobs are given too")
        nodes = with_allocations(nodes, running)
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
        now=now,
        nodes=tuple(numbered),
        partitions=tuple(partitions),
        pending=tuple(pending),
        running=running,
        qos=dict(qos or {}),
    )


def allocs_of(plan: Any, job_id: int) -> dict[str, tuple[int, int, list[int]]]:
    """``{node: (cpus, mem, gpus)}`` for a started job of ``plan`` (KeyError if it did not start)."""
    for start in plan.starts:
        if start.job_id == job_id:
            return {a.node: (a.cpus, a.mem, list(a.gpus)) for a in start.allocs}
    raise KeyError(f"job {job_id} did not start; reasons={plan.reasons}")
