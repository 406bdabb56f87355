"""Nodes and partitions as ``sinfo --json`` and ``scontrol --json show node|partition`` print them.

The records follow the openapi v0.0.38 plugin of Slurm 22.05
(``src/plugins/openapi/v0.0.38/nodes.c`` and ``partitions.c``), key for key
and in its order, built from our ``NodeInfo`` and ``PartitionInfo``:

* a node's ``state`` is the base state in lower case (``idle``, ``mixed``,
  ``allocated``, ``down``) and ``state_flags`` lists the rest (``DRAIN``,
  ``NOT_RESPONDING``...), where the text commands fold both into one word
  (``drained``, ``idle*``);
* ``cpu_load`` is the load average times 100 (Slurm keeps it as an integer);
* sizes are megabytes; ``tres`` is the configured TRES string and
  ``tres_used`` what jobs hold now (``null`` when nothing is allocated);
* a partition's time limits are minutes, ``-1`` for UNLIMITED, ``null``
  for no default; ``flags`` names ``default`` for the default partition.

Worked example: an idle node n1 with 2 CPUs, 4000 MB and 2 GPUs reads
``"state": "idle"``, ``"state_flags": []``, ``"alloc_cpus": 0``,
``"idle_cpus": 2``, ``"gres": "gpu:2"``, ``"tres": "cpu=2,mem=4000M,billing=2,gres\\/gpu=2"``,
``"tres_used": null``.
"""

from __future__ import annotations

import sys

from cli.json_out import epoch
from cli.scontrol_show import _tres, partition_tres
from cli.sinfo_format import gres_used
from cli.squeue_format import node_list

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from typing import Any

    from slurmlite.protocol import NodeInfo, PartitionInfo


def node_record(node: NodeInfo, layout: tuple[int, int, int, int] | None = None) -> dict[str, Any]:
    """One node (``layout``: boards, sockets, cores per socket, threads, as scontrol's)."""
    boards, sockets, cores, threads = layout or (1, node.cpus, 1, 1)
    features = ",".join(node.features)
    used = _tres(node.alloc_cpus, node.alloc_mem, len(node.alloc_gpus), False)
    return {
        "architecture": node.arch or "",
        "burstbuffer_network_address": "",
        "boards": boards,
        "boot_time": epoch(node.boot_time),
        "comment": "",
        "cores": cores,
        "cpu_binding": 0,
        "cpu_load": int(round((node.cpu_load or 0) * 100)),
        "extra": "",
        "free_memory": node.free_mem or 0,
        "cpus": node.cpus,
        "last_busy": epoch(node.last_busy_time),
        "features": features,
        "active_features": features,
        "gres": "" if node.gres in (None, "(null)") else node.gres,
        "gres_drained": "N/A",
        "gres_used": gres_used(node),
        "mcs_label": "",
        "name": node.name,
        "next_state_after_reboot": "invalid",
        "address": node.addr,
        "hostname": node.hostname,
        "state": node.state.lower(),
        "state_flags": list(node.flags),
        "next_state_after_reboot_flags": [],
        "operating_system": node.os or "",
        "owner": None,
        "partitions": list(node.partitions),
        "port": node.port,
        "real_memory": node.real_memory,
        "reason": node.reason or "",
        "reason_changed_at": epoch(node.reason_time),
        "reason_set_by_user": node.reason_user if node.reason else None,
        "slurmd_start_time": epoch(node.slurmd_start_time),
        "sockets": sockets,
        "threads": threads,
        "temporary_disk": 0,
        "weight": node.weight,
        "tres": _tres(node.cpus, node.real_memory, node.gpus, True),
        "slurmd_version": node.version or "",
        "alloc_memory": node.alloc_mem,
        "alloc_cpus": node.alloc_cpus,
        "idle_cpus": node.cpus - node.alloc_cpus,
        "tres_used": used or None,
        "tres_weighted": float(node.alloc_cpus),
    }


def _minutes(limit: int | None) -> int:
    return -1 if limit is None else limit


def partition_record(part: PartitionInfo) -> dict[str, Any]:
    """One partition (limits in minutes, -1 for UNLIMITED)."""
    return {
        "flags": ["default"] if part.default else [],
        "preemption_mode": ["disabled"],
        "allowed_allocation_nodes": "",
        "allowed_accounts": "",
        "allowed_groups": "",
        "allowed_qos": "",
        "alternative": "",
        "billing_weights": "",
        "default_memory_per_cpu": 0,
        "default_time_limit": part.default_time,
        "denied_accounts": "",
        "denied_qos": "",
        "preemption_grace_time": 0,
        "maximum_cpus_per_node": -1,
        "maximum_memory_per_node": 0,
        "maximum_nodes_per_job": -1,
        "max_time_limit": _minutes(part.max_time),
        "min nodes per job": 0,
        "name": part.name,
        "nodes": node_list(part.nodes),
        "over_time_limit": None,
        "priority_job_factor": part.priority_job_factor,
        "priority_tier": part.priority_tier,
        "qos": getattr(part, "qos", None) or "",
        "state": part.state,
        "total_cpus": part.total_cpus,
        "total_nodes": part.total_nodes,
        "tres": partition_tres(part),
    }


def print_sinfo(client: Any, query: Any, node_filter: Any, selected: Any) -> int:
    """``sinfo --json``: the partitions ``-p`` keeps and the nodes the node filters keep
    (``selected(node, node_filter)`` is sinfo's own test), as two lists."""
    from cli import json_out
    from slurmlite.errors import SlurmError

    try:
        parts = client.get_partitions()
        nodes = client.get_nodes()
    except SlurmError as exc:
        print(f"slurm_load_partitions: {exc}", file=sys.stderr)
        return 1
    if query.partitions is not None:
        parts = [p for p in parts if p.name in query.partitions]
        inside = {n for p in parts for n in p.nodes}
        nodes = [n for n in nodes if n.name in inside]
    nodes = [n for n in nodes if selected(n, node_filter)]
    doc = json_out.document(
        "slurm",
        nodes=[node_record(n) for n in nodes],
        partitions=[partition_record(p) for p in parts],
    )
    json_out.write(doc)
    return 0
