"""A checked workload -> the batch script that runs it, and the checks that need the cluster.

A run is a normal batch job.  Its script is an ordinary ``sbatch`` script
(``#SBATCH`` lines, then bash) that anyone can read, ``sbatch`` by hand, or
keep instead of the YAML; ``slurmlite run --dry-run`` prints it.  For
``compute: {accelerator_type: GPU_8xH100, num_accelerators: 16}``,
``timeout_minutes: 90`` on a cluster whose nodes say ``gpu:h100:8``::

    #!/bin/bash
    #SBATCH --job-name=llama-ft
    #SBATCH --nodes=2
    #SBATCH --ntasks-per-node=1
    #SBATCH --gres=gpu:h100:8
    #SBATCH --time=90
    #SBATCH --chdir=/tmp
    #SBATCH --output=/dev/null
    export SLURMLITE_GPUS_PER_NODE=8  # LOCAL_WORLD_SIZE
    export SLURMLITE_SNAPSHOT=9f2c...   # the code snapshot, by its SHA-256
    export SLURMLITE_COMMAND="$(cat <<'SLURMLITE_END_OF_COMMAND'
    torchrun --nproc_per_node=8 $CODE_SOURCE_PATH/train.py
    SLURMLITE_END_OF_COMMAND
    )"
    exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 slurmlite node-run

* nodes = total GPUs / GPUs per node, one task per node (the command runs
  once per node; ``-K``: a node whose command fails ends the attempt);
* ``gpu:<type>:<n>`` per node, the type spelled as the nodes spell it
  (matched without regard to case: ``GPU_8xH100`` finds ``gpu:h100:8``);
  ``GPU_<n>x`` alone asks for any type (``gpu:<n>``);
* ``--time`` = ``timeout_minutes``; ``--qos`` from ``compute.priority_class``
  through ``SlurmlitePriorityClassQOS`` (``NORMAL`` unmapped: the user's
  default QOS); ``--partition`` from ``partition`` (or ``compute.pool_id``);
* the batch step runs in /tmp with its output discarded: there is no shared
  file system to assume, and each node's output goes to that node's log
  (``slurmlite logs``) instead;
* ``slurmlite node-run`` (``slurmlite.workload.noderun``) does the per-node
  part: rendezvous variables, snapshot, environment, secrets, log.

Checks here, against the nodes the controller lists: a GPU type no node has,
more GPUs per node than any node of that type has, a priority class without a
QOS.  Each is a :class:`~slurmlite.workload.spec.WorkloadError` naming the key.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from slurmlite.workload.spec import Workload, WorkloadError

__all__ = ["END_OF_COMMAND", "Translation", "node_gpus", "translate"]

END_OF_COMMAND = "SLURMLITE_END_OF_COMMAND"


@dataclass
class Translation:
    script: str
    nodes: int
    gpus_per_node: int
    gres: str  # "gpu:h100:8"; "" without GPUs
    time_limit: int | None  # minutes
    partition: str | None
    qos: str | None


def node_gpus(gres: str) -> list[tuple[str, int]]:
    """A node's ``Gres`` text -> [(type, count)]; type "" when untyped.

    ``gpu:a100:4`` -> [("a100", 4)], ``gpu:2`` -> [("", 2)], ``(null)`` -> []."""
    out = []
    for part in gres.split(","):
        fields = part.split("(")[0].strip().split(":")
        if fields[0] != "gpu" or len(fields) < 2:
            continue
        kind, count = (fields[1], fields[2]) if len(fields) >= 3 else ("", fields[1])
        if count.isdigit():
            out.append((kind, int(count)))
    return out


def _match_type(w: Workload, nodes: Iterable[tuple[str, str]]) -> str:
    """The nodes' spelling of the requested GPU type ("" = any); WorkloadError if no node
    (of the partition) has that type with at least ``gpus_per_node`` of them."""
    seen: dict[str, int] = {}  # type as spelled -> most on one node
    for _name, gres in nodes:
        for kind, count in node_gpus(gres):
            seen[kind] = max(seen.get(kind, 0), count)
    want = w.gpu_type.lower()
    fits = [k for k, n in seen.items() if (not want or k.lower() == want) and n >= w.gpus_per_node]
    if fits:
        return sorted(fits)[0] if want else ""
    has = ", ".join(f"{n} x {k or 'gpu'}" for k, n in sorted(seen.items())) or "no GPUs"
    key = "compute.accelerator_type"
    if want and not any(k.lower() == want for k in seen):
        raise WorkloadError([f"{key}: no node has GPUs of type {w.gpu_type} (nodes have {has})"])
    raise WorkloadError(
        [f"{key}: no node has {w.gpus_per_node} GPUs{' of type ' + w.gpu_type if want else ''} "
         f"(at most: {has} per node)"]
    )  # fmt: skip


def _qos(w: Workload, mapping: Mapping[str, str]) -> str | None:
    if w.priority_class is None:
        return None
    qos = mapping.get(w.priority_class)
    if qos is None and w.priority_class != "NORMAL":
        raise WorkloadError(
            [f"compute.priority_class: {w.priority_class} has no QOS on this cluster "
             f"(an administrator maps it with SlurmlitePriorityClassQOS= in slurm.conf)"]
        )  # fmt: skip
    return qos


def translate(
    w: Workload,
    nodes: Iterable[tuple[str, str, list[str]]],
    class_qos: Mapping[str, str] | None = None,
    snapshot: str = "",
) -> Translation:
    """The batch job of ``w`` on a cluster of ``nodes`` ((name, gres, partitions)).

    ``class_qos``: priority class -> QOS name; ``snapshot``: the code's SHA-256 ("" none)."""
    usable = [(n, g) for n, g, parts in nodes if w.partition is None or w.partition in parts]
    gpu_type = _match_type(w, usable)
    gres = f"gpu:{gpu_type}:{w.gpus_per_node}" if gpu_type else f"gpu:{w.gpus_per_node}"
    qos = _qos(w, class_qos or {})
    lines = ["#!/bin/bash", f"#SBATCH --job-name={w.experiment_name}", f"#SBATCH --nodes={w.nodes}"]
    lines += ["#SBATCH --ntasks-per-node=1", f"#SBATCH --gres={gres}"]
    if w.timeout_minutes is not None:
        lines.append(f"#SBATCH --time={w.timeout_minutes}")
    if w.partition:
        lines.append(f"#SBATCH --partition={w.partition}")
    if qos:
        lines.append(f"#SBATCH --qos={qos}")
    lines += ["#SBATCH --chdir=/tmp", "#SBATCH --output=/dev/null"]
    lines.append(
        f"# slurmlite run: the workload {w.experiment_name!r}; its command runs once per node "
        "(slurmlite node-run)"
    )
    lines.append(f"export SLURMLITE_GPUS_PER_NODE={w.gpus_per_node}  # LOCAL_WORLD_SIZE")
    if snapshot:
        lines.append(f"export SLURMLITE_SNAPSHOT={snapshot}")
    if w.dependencies:
        lines.append(f"export SLURMLITE_DEPENDENCIES={shlex.quote(json.dumps(w.dependencies))}")
    for name, value in w.env_variables.items():
        lines.append(f"export {name}={shlex.quote(value)}")
    delimiter = END_OF_COMMAND
    while delimiter in w.command:
        delimiter += "_"
    lines.append(f"export SLURMLITE_COMMAND=\"$(cat <<'{delimiter}'")
    lines += [w.command.rstrip("\n"), delimiter, ')"']
    lines.append("exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 slurmlite node-run")
    return Translation(
        script="\n".join(lines) + "\n",
        nodes=w.nodes,
        gpus_per_node=w.gpus_per_node,
        gres=gres,
        time_limit=w.timeout_minutes,
        partition=w.partition,
        qos=qos,
    )
