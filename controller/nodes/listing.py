"""Nodes and partitions as users see them: the states ``sinfo`` and ``scontrol show`` print.

``NodeService`` (``controller.nodes.service``) keeps the facts -- rows, liveness,
load -- and asks this module to turn them into :class:`NodeInfo` and
:class:`PartitionInfo` answers.  A node's *base state* follows Slurm 22.05:

* ``DOWN`` if it is stored down, else ``UNKNOWN`` until its agent registers;
* ``IDLE`` when no job holds a CPU there (or only COMPLETING jobs remain);
* ``ALLOCATED`` when jobs hold all its CPUs, ``MIXED`` when they hold some.

*Flags* add to it: ``DRAIN``, ``INVALID_REG`` (registered with less than
configured), ``COMPLETING`` (only completing jobs left) and ``NOT_RESPONDING``
(silent too long, or never registered).  sinfo folds them into its short
states (``drain``, ``idle*``, ``comp``, ...).

Example: n1 has 8 CPUs, a running job holds 4 of them and its agent stopped
talking three heartbeats ago: ``state="MIXED"``, ``flags=["NOT_RESPONDING"]``,
``alloc_cpus=4``; sinfo shows ``mix*``.

:class:`Usage` is what running and completing jobs hold on one node, as
``NodeService.usage()`` counts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.nodes import outside_gpus
from controller.store.models import NodeRow
from controller.store.rows import split_list
from slurmlite.config import Config
from slurmlite.protocol import NodeInfo, PartitionInfo

if TYPE_CHECKING:
    from controller.nodes.service import NodeService


@dataclass
class Usage:
    """What running and completing jobs hold on one node."""

    cpus: int = 0
    mem: int = 0
    gpus: tuple[int, ...] = ()
    completing_only: bool = True
    jobs: int = 0


def node_infos(nodes: NodeService) -> list[NodeInfo]:
    """Every node as users see it: base state, flags, allocation and facts, config order."""
    now = nodes.clock()
    use = nodes.usage()
    order = {n.name: i for i, n in enumerate(nodes.cfg.nodes)}
    out = []
    for row in sorted(nodes.rows(), key=lambda r: (order.get(r.name, 10**6), r.name)):
        u = use.get(row.name, Usage())
        flags: list[str] = []
        if row.drain:
            flags.append("DRAIN")
        if row.invalid:
            flags.append("INVALID_REG")
        if u.jobs and u.completing_only:
            flags.append("COMPLETING")
        if not row.registered or nodes.not_responding(row.name, now):
            flags.append("NOT_RESPONDING")
        if row.down:
            base = "DOWN"
        elif not row.registered:
            base = "UNKNOWN"
        elif u.cpus == 0 or (u.jobs and u.completing_only):
            base = "IDLE"
        elif u.cpus >= row.cpus:
            base = "ALLOCATED"
        else:
            base = "MIXED"
        gres = "(null)"
        if row.gpus:
            gres = f"gpu:{row.gpu_type}:{row.gpus}" if row.gpu_type else f"gpu:{row.gpus}"
        out.append(
            NodeInfo(
                name=row.name,
                addr=row.addr,
                hostname=row.hostname,
                port=row.port,
                cpus=row.cpus,
                real_memory=row.real_memory,
                gres=gres,
                gpus=row.gpus,
                state=base,
                flags=flags,
                alloc_cpus=u.cpus,
                alloc_mem=u.mem,
                alloc_gpus=list(u.gpus),
                reason=row.reason,
                reason_user=_user_of(row.reason_uid),
                reason_time=row.reason_time,
                features=split_list(row.features),
                weight=row.weight,
                partitions=[p.name for p in nodes.cfg.partitions if row.name in p.nodes],
                boot_time=row.boot_time,
                slurmd_start_time=row.slurmd_start_time,
                last_busy_time=nodes.last_busy.get(row.name),
                version=row.version,
                arch=row.arch,
                os=row.os,
                cpu_load=nodes.cpu_load.get(row.name),
                free_mem=nodes.free_mem.get(row.name),
            )
        )
    return outside_gpus.shown(nodes.outside, out, now, nodes.cfg.gpu_outside_use)


def partition_infos(cfg: Config, node_rows: list[NodeRow]) -> list[PartitionInfo]:
    """Every configured partition, with the totals of the member nodes that have a row."""
    rows = {r.name: r for r in node_rows}
    out = []
    for p in cfg.partitions:
        members = [rows[n] for n in p.nodes if n in rows]
        out.append(
            PartitionInfo(
                name=p.name,
                nodes=list(p.nodes),
                default=p.default,
                max_time=p.max_time,
                default_time=p.default_time,
                state=p.state,
                priority_job_factor=p.priority_job_factor,
                priority_tier=p.priority_tier,
                total_cpus=sum(r.cpus for r in members),
                total_nodes=len(members),
                total_mem=sum(r.real_memory for r in members),
                total_gpus=sum(r.gpus for r in members),
                qos=p.qos or None,
            )
        )
    return out


def _user_of(uid: int | None) -> str | None:
    if uid is None:
        return None
    from controller.auth.callers import user_name

    return user_name(uid)
