"""Placing a job step inside its job's allocation: which nodes, tasks, CPUs and GPUs.

A pure function of the job's allocation, what its running steps hold, and the
step's request (``StepRequest``); the store and the clock stay outside.

Algorithm (Slurm's step rules, spec §7.2):

1. **Candidates**: the job's nodes in the job's order, minus ``-x``; with
   ``-w`` the named nodes are required (one outside the job ->
   ``ESLURM_INVALID_NODE_NAME``).
2. **Shape**: tasks = ``-n``, else nodes x ``--ntasks-per-node``, else one per
   node.  Nodes = ``-N``, else the ``-w`` list, else every candidate, capped
   by the task count (a task runs on one node; with ``--ntasks-per-node``:
   ``ceil(tasks / per node)``).  More nodes than
   candidates -> ``ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE``.  When fewer
   nodes than candidates are wanted, the required ones come first, then
   those with free CPUs, each group in job order; the chosen ones are used
   in job order.
3. **Slots**: a node takes ``--ntasks-per-node`` tasks, else
   ``CPUs // cpus_per_task`` where CPUs are the job's CPUs on the node not
   held by other running steps (``--overlap``: all of the job's CPUs).
   ``distribute`` (``slurmlite.steplayout``) numbers the tasks over the
   slots (block or cyclic); nodes left without a task are dropped.
4. **Fit**: a node whose tasks need more CPUs than the job has there ->
   ``ESLURM_TOO_MANY_REQUESTED_CPUS`` (never fits); more than are free now ->
   ``ESLURM_NODES_BUSY`` (HTTP 409: srun retries until a step ends).
5. **GPUs**: without ``--gpus-per-node``/``--gpus-per-task`` the step sees
   all of the job's GPUs on each node and holds none (so CPU-only steps
   never wait for each other over GPUs); with them it takes the lowest
   indices not held by other steps (tasks x per-task, or per-node) and holds
   them; more than the job has -> ``ESLURM_INVALID_GRES``, more than free ->
   ``ESLURM_NODES_BUSY``.  ``--overlap`` steps hold nothing and check
   nothing but the job's totals.

Worked example: job on n1, n2 with 2 CPUs and GPUs [0, 1] each; step 0
(``-n1 --gpus-per-task=1``) holds 1 CPU and GPU 0 on n1.  Step 1 ``-n3``
(block): free slots [1, 2] -> tasks [[0], [1, 2]], CPUs 1 on n1, 2 on n2, all
GPUs visible, none held.  Step 2 ``-n4`` -> 4 tasks fit the job (2 + 2) but
not its free CPUs -> ESLURM_NODES_BUSY.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import NodeAlloc, StepRequest
from slurmlite.steplayout import distribute, parse_distribution


@dataclass
class Held:
    """What running steps hold on one node."""

    cpus: int = 0
    gpus: set[int] = field(default_factory=set)


@dataclass
class Placement:
    """Where a step runs; lists are parallel to ``nodes`` (the step's node order)."""

    nodes: list[str]
    tasks: list[list[int]]  # global task ids on each node
    cpus: list[int]  # CPUs the step uses on each node
    gpus: list[list[int]]  # the GPUs each node's tasks see
    holds: dict[str, Held]  # what the step holds (empty for --overlap)
    ntasks: int


def _check_numbers(req: StepRequest) -> None:
    if not req.argv:
        raise SlurmError(errors.SLURM_UNEXPECTED_MSG_ERROR, "no command to run")
    if req.ntasks is not None and req.ntasks < 1:
        raise SlurmError(errors.ESLURM_BAD_TASK_COUNT, f"ntasks={req.ntasks}")
    if req.ntasks_per_node is not None and req.ntasks_per_node < 1:
        raise SlurmError(errors.ESLURM_BAD_TASK_COUNT, f"ntasks_per_node={req.ntasks_per_node}")
    if req.nodes is not None and req.nodes < 1:
        raise SlurmError(errors.ESLURM_INVALID_NODE_COUNT, f"nodes={req.nodes}")
    if req.cpus_per_task < 1:
        raise SlurmError(errors.ESLURM_INVALID_CPU_COUNT, f"cpus_per_task={req.cpus_per_task}")
    for name in ("gpus_per_task", "gpus_per_node"):
        value = getattr(req, name)
        if value is not None and value < 0:
            raise SlurmError(errors.ESLURM_INVALID_GRES, f"{name}={value}")
    try:
        parse_distribution(req.distribution)
    except ValueError:
        raise SlurmError(errors.ESLURM_BAD_DIST, f"distribution {req.distribution!r}") from None


def _choose_nodes(
    allocs: list[NodeAlloc], held: dict[str, Held], req: StepRequest
) -> tuple[list[NodeAlloc], int]:
    """The step's nodes (job order) and its task count (steps 1-2 of the module doc)."""
    names = [a.node for a in allocs]
    outside = [n for n in req.nodelist if n not in names]
    if outside:
        raise SlurmError(
            errors.ESLURM_INVALID_NODE_NAME, f"{','.join(outside)} not in the job's allocation"
        )
    candidates = [a for a in allocs if a.node not in req.exclude]
    required = [a for a in candidates if a.node in req.nodelist]
    if len(required) < len(set(req.nodelist)):  # a -w node also given to -x
        raise SlurmError(errors.ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE, "-w and -x overlap")
    if req.nodes is not None:
        count = req.nodes
    elif req.nodelist:
        count = len(required)
    else:
        count = len(candidates)
    if req.ntasks is not None:
        per_node = req.ntasks_per_node if req.nodes is None and not req.nodelist else None
        count = min(count, -(-req.ntasks // per_node) if per_node else req.ntasks)
    count = max(count, len(required))
    if count > len(candidates) or not candidates:
        raise SlurmError(
            errors.ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE,
            f"{count} nodes wanted, the job has {len(candidates)} to offer",
        )
    others = [a for a in candidates if a.node not in req.nodelist]
    if not req.overlap:  # nodes with a free CPU first; sorted() keeps job order within
        others = sorted(others, key=lambda a: _free_cpus(a, held) < req.cpus_per_task)
    chosen = {a.node for a in required + others[: count - len(required)]}
    nodes = [a for a in candidates if a.node in chosen]
    if req.ntasks is not None:
        ntasks = req.ntasks
    else:
        ntasks = len(nodes) * (req.ntasks_per_node or 1)
    return nodes, ntasks


def _free_cpus(a: NodeAlloc, held: dict[str, Held]) -> int:
    h = held.get(a.node)
    return a.cpus - (h.cpus if h else 0)


def _take_gpus(
    a: NodeAlloc, held: Held | None, ntasks_here: int, req: StepRequest
) -> tuple[list[int], list[int]]:
    """(GPUs the node's tasks see, GPUs the step holds there): step 5 of the module doc."""
    job_gpus = sorted(a.gpus)
    if req.gpus_per_task is not None:
        need = ntasks_here * req.gpus_per_task
    elif req.gpus_per_node is not None:
        need = req.gpus_per_node
    else:
        return job_gpus, []
    if need > len(job_gpus):
        raise SlurmError(
            errors.ESLURM_INVALID_GRES,
            f"{need} GPUs wanted on {a.node}, the job has {len(job_gpus)}",
        )
    taken = set() if req.overlap or held is None else held.gpus
    free = [g for g in job_gpus if g not in taken]
    if need > len(free):
        raise SlurmError(errors.ESLURM_NODES_BUSY)
    mine = free[:need]
    return mine, [] if req.overlap else mine


def place(allocs: list[NodeAlloc], held: dict[str, Held], req: StepRequest) -> Placement:
    """Lay out step ``req`` over ``allocs`` (the job's, in job order) next to ``held``.

    Raises ``SlurmError``: ``ESLURM_NODES_BUSY`` when only running steps are
    in the way, another code when the step can never fit this job.
    """
    _check_numbers(req)
    nodes, ntasks = _choose_nodes(allocs, held, req)
    cpt = req.cpus_per_task
    capacity = [a.cpus // cpt for a in nodes]
    free = capacity if req.overlap else [max(0, _free_cpus(a, held)) // cpt for a in nodes]
    if req.ntasks_per_node is not None:
        slots = [req.ntasks_per_node] * len(nodes)
    else:
        slots = free if sum(free) >= ntasks else capacity
    if req.ntasks_per_node is not None and ntasks > len(nodes) * req.ntasks_per_node:
        raise SlurmError(
            errors.ESLURM_BAD_TASK_COUNT,
            f"{ntasks} tasks on {len(nodes)} nodes of {req.ntasks_per_node} tasks each",
        )
    if req.ntasks_per_node is None and ntasks > sum(capacity):
        raise SlurmError(
            errors.ESLURM_TOO_MANY_REQUESTED_CPUS,
            f"{ntasks} tasks of {cpt} CPUs on {sum(a.cpus for a in nodes)} CPUs",
        )
    tasks = distribute(ntasks, slots, req.distribution)
    busy = False
    out = Placement(nodes=[], tasks=[], cpus=[], gpus=[], holds={}, ntasks=ntasks)
    for a, ids, cap, room in zip(nodes, tasks, capacity, free, strict=True):
        if not ids:
            continue
        if len(ids) > cap:
            raise SlurmError(
                errors.ESLURM_TOO_MANY_REQUESTED_CPUS,
                f"{len(ids)} tasks of {cpt} CPUs on {a.node}, where the job has {a.cpus}",
            )
        busy = busy or len(ids) > room
        if req.mem_per_node and a.mem and req.mem_per_node > a.mem:
            raise SlurmError(errors.ESLURM_INVALID_TASK_MEMORY)
        seen, holds = _take_gpus(a, held.get(a.node), len(ids), req)
        out.nodes.append(a.node)
        out.tasks.append(list(ids))
        out.cpus.append(len(ids) * cpt)
        out.gpus.append(seen)
        if not req.overlap:
            out.holds[a.node] = Held(len(ids) * cpt, set(holds))
    if busy:
        raise SlurmError(errors.ESLURM_NODES_BUSY)
    return out
