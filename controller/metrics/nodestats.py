"""Nodes counted by state, and their resources: ``/metrics/nodes`` and the node
half of ``/metrics/partitions``.

Input is what sinfo shows (``NodeService.infos()``: base state, flags,
allocation).  A node is counted under its base state (``alloc``, ``mixed``,
``idle``, ``down``, ``unknown``) and under each flag it has (``drain``,
``completing``, ``noresp``, ``invalid_reg``); a drained node is DRAIN with no
job left, a draining one DRAIN with jobs still running — Slurm's split
(``src/slurmctld/statistics.c``).  Counts Slurm keeps for features slurmlite
does not have (cloud, power saving, reboots, reservations, dynamic nodes)
are written as 0 so dashboards built for Slurm find every name.

Example: n1 MIXED+DRAIN, n2 IDLE -> ``slurm_nodes 2``, ``slurm_nodes_mixed 1``,
``slurm_nodes_idle 1``, ``slurm_nodes_drain 1``, ``slurm_nodes_draining 1``.
"""

from __future__ import annotations

from collections.abc import Iterable

from slurmlite.openmetrics import Exposition
from slurmlite.protocol import NodeInfo

MIB = 1024 * 1024
_BASE = {"ALLOCATED": "alloc", "MIXED": "mixed", "IDLE": "idle", "DOWN": "down"}
_BASE |= {"UNKNOWN": "unknown"}
_FLAG = {"DRAIN": "drain", "COMPLETING": "completing", "NOT_RESPONDING": "noresp"}
_FLAG |= {"INVALID_REG": "invalid_reg"}
# Slurm's node counts, in its order; (suffix, help); the partition names differ slightly
NODE_COUNTS = (
    ("alloc", "Nodes in state ALLOCATED"),
    ("blocked", "Nodes in state BLOCKED (always 0 here)"),
    ("completing", "Nodes with the COMPLETING flag"),
    ("cloud", "Cloud nodes (always 0 here)"),
    ("down", "Nodes in state DOWN"),
    ("drain", "Nodes with the DRAIN flag"),
    ("drained", "Nodes drained: DRAIN and no job left"),
    ("draining", "Nodes draining: DRAIN with jobs still running"),
    ("dyn_future", "Future dynamic nodes (always 0 here)"),
    ("dyn_normal", "Dynamic nodes (always 0 here)"),
    ("external", "External nodes (always 0 here)"),
    ("fail", "Nodes with the FAIL flag (always 0 here)"),
    ("future", "Nodes in state FUTURE (always 0 here)"),
    ("idle", "Nodes in state IDLE"),
    ("invalid_reg", "Nodes that registered with less than configured"),
    ("maint", "Nodes in maintenance (always 0 here)"),
    ("mixed", "Nodes in state MIXED"),
    ("noresp", "Nodes not responding"),
    ("planned", "Nodes planned by the backfill (always 0 here)"),
    ("power_down", "Nodes to power down (always 0 here)"),
    ("power_up", "Nodes to power up (always 0 here)"),
    ("powered_down", "Nodes powered down (always 0 here)"),
    ("powering_up", "Nodes powering up (always 0 here)"),
    ("reboot_issued", "Nodes rebooting (always 0 here)"),
    ("reboot_req", "Nodes asked to reboot (always 0 here)"),
    ("resv", "Nodes in a reservation (always 0 here)"),
    ("unknown", "Nodes in state UNKNOWN"),
)
# partition spellings of the same counts (openmetrics.c names them apart)
_PART_NAME = {"completing": "cg", "noresp": "no_resp", "reboot_req": "reboot_requested"}


def counts(nodes: Iterable[NodeInfo]) -> dict[str, int]:
    """Node counts by NODE_COUNTS suffix."""
    out: dict[str, int] = {}
    for n in nodes:
        names = [_BASE.get(n.state, "unknown"), *(_FLAG[f] for f in n.flags if f in _FLAG)]
        if "DRAIN" in n.flags:
            names.append("draining" if n.state in ("ALLOCATED", "MIXED") else "drained")
        for name in names:
            out[name] = out.get(name, 0) + 1
    return out


def write_nodes(out: Exposition, nodes: list[NodeInfo]) -> None:
    """``/metrics/nodes``: per node resources, then the counts."""
    for n in nodes:
        at = {"node": n.name}
        out.gauge("slurm_node_cpus", "CPUs of the node", n.cpus, at)
        out.gauge("slurm_node_cpus_alloc", "CPUs of the node allocated to jobs", n.alloc_cpus, at)
        out.gauge("slurm_node_cpus_effective", "CPUs of the node jobs may use", n.cpus, at)
        out.gauge("slurm_node_cpus_idle", "CPUs of the node not allocated", _idle_cpus(n), at)
        out.gauge("slurm_node_gpus", "GPUs of the node", n.gpus, at)
        out.gauge("slurm_node_gpus_alloc", "GPUs of the node allocated", len(n.alloc_gpus), at)
        out.gauge("slurm_node_memory_alloc_bytes", "Memory allocated", n.alloc_mem * MIB, at)
        out.gauge(
            "slurm_node_memory_effective_bytes", "Memory jobs may use", n.real_memory * MIB, at
        )
        out.gauge("slurm_node_memory_free_bytes", "Free memory", (n.free_mem or 0) * MIB, at)
        out.gauge("slurm_node_memory_bytes", "Memory of the node", n.real_memory * MIB, at)
    found = counts(nodes)
    out.gauge("slurm_nodes", "Nodes in total", len(nodes))
    for suffix, help_text in NODE_COUNTS:
        out.gauge(f"slurm_nodes_{suffix}", help_text, found.get(suffix, 0))


def _idle_cpus(n: NodeInfo) -> int:
    return 0 if n.state in ("DOWN", "UNKNOWN") else max(0, n.cpus - n.alloc_cpus)


def write_partition_nodes(out: Exposition, name: str, nodes: list[NodeInfo]) -> None:
    """The node half of one partition's gauges (``slurm_partition_nodes_*``...)."""
    at = {"partition": name}
    found = counts(nodes)
    for suffix, help_text in NODE_COUNTS:
        metric = f"slurm_partition_nodes_{_PART_NAME.get(suffix, suffix)}"
        out.gauge(metric, help_text, found.get(suffix, 0), at)
    cpus = sum(n.cpus for n in nodes)
    alloc = sum(n.alloc_cpus for n in nodes)
    out.gauge("slurm_partition_nodes_cpus_alloc", "CPUs allocated", alloc, at)
    out.gauge("slurm_partition_nodes_cpus_idle", "CPUs idle", sum(map(_idle_cpus, nodes)), at)
    out.gauge("slurm_partition_nodes_cpus_efctv", "CPUs jobs may use", cpus, at)
    mem = sum(n.real_memory for n in nodes) * MIB
    out.gauge(
        "slurm_partition_nodes_mem_alloc",
        "Memory allocated",
        sum(n.alloc_mem for n in nodes) * MIB,
        at,
    )
    out.gauge("slurm_partition_nodes_mem_avail", "Memory jobs may use", mem, at)
    out.gauge(
        "slurm_partition_nodes_mem_free",
        "Free memory",
        sum(n.free_mem or 0 for n in nodes) * MIB,
        at,
    )
    out.gauge("slurm_partition_nodes_mem_tot", "Memory in total", mem, at)
    out.gauge("slurm_partition_cpus", "CPUs of the partition", cpus, at)
    out.gauge("slurm_partition_gpus", "GPUs of the partition", sum(n.gpus for n in nodes), at)
    out.gauge("slurm_partition_nodes", "Nodes of the partition", len(nodes), at)
