"""The shape of a job step: how many tasks on how many nodes, and which rank runs where.

``srun`` inside an allocation has to settle two questions before any task
starts; both are pure functions of its options and the allocation:

1. **Shape** (:func:`step_shape`): the step's task and node counts.  Each of
   ``-n``, ``-N`` and ``--ntasks-per-node`` comes from the command line or,
   when absent there, from the allocation's environment (``SLURM_NTASKS``,
   ``SLURM_JOB_NUM_NODES``, ``SLURM_NTASKS_PER_NODE``): inside a batch job
   those output variables are srun's *input* variables, which is how a bare
   ``srun cmd`` inherits the job's task count.  Then, in this order:

   * a node count without a task count means one task per node, times
     ``--ntasks-per-node`` when that is known (``sbatch -N2
     --ntasks-per-node=4`` then ``srun cmd``: 2 x 4 = 8 tasks on 2 nodes);
   * a task count without a node count spreads over as many of the job's
     nodes as there are tasks (``-n1`` on a 2-node job: 1 node), or over
     ``ceil(n / ntasks-per-node)`` nodes when that option is given;
   * neither: every node of the job, one task each (``-c`` alone: as many
     tasks as the nodes' CPUs hold);
   * fewer tasks than nodes: the node count drops to the task count, with
     Slurm's warning (``srun -n1`` in a ``-N2`` batch job);
   * ``--ntasks-per-node`` that contradicts ``-n``/``-N`` is dropped (with
     Slurm's warning when it asked for fewer tasks than ``-n``); as in Slurm
     23.11+, ``srun -N1`` in an ``-N2 --ntasks-per-node=4`` job recomputes
     the inherited task count (1 x 4 = 4) instead of cramming 8 tasks onto
     one node;
   * more nodes than the allocation has is refused with srun's words
     ``Only allocated 2 nodes asked for 3``.

2. **Layout** (:func:`distribute`): which global ranks (``SLURM_PROCID``)
   run on which node.  Tasks are *dealt* like cards: one per node per round
   while a node has a free slot (``slots[i]`` = CPUs // cpus-per-task, or
   ``--ntasks-per-node``), then, once every node is full, round robin over
   all nodes (over-subscription).  The deal fixes how many tasks each node
   gets; the distribution fixes the numbering:

   * ``block``: consecutive ranks share a node (node 0 gets 0..k-1, ...);
   * ``cyclic``: rank r goes to the r-th card dealt (round robin).

   Invariant: every rank 0..ntasks-1 appears exactly once, nodes keep their
   order, and the per-node counts are the same for both distributions.
   Slurm's default (:func:`default_distribution`) is ``block`` when there
   are more tasks than nodes, else ``cyclic``.

Worked example (spec §7.2; 3 nodes with 2 CPUs each, 4 tasks)::

    deal:    round 1 -> n0 n1 n2, round 2 -> n0     counts [2, 1, 1]
    block:   [[0, 1], [2], [3]]
    cyclic:  [[0, 3], [1], [2]]
    compress_counts([2, 1, 1]) == "2,1(x2)"          (SLURM_TASKS_PER_NODE)

Reference: spec §6.6 (srun's input variables), §6.8 (compressed counts),
§7.2 (steps inside an allocation); Slurm's srun option checks and step
layout (``src/srun/libsrun/opt.c``, ``src/common/slurm_step_layout.c``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from slurmlite.states import compress_counts

__all__ = [
    "DISTRIBUTIONS",
    "compress_counts",
    "deal",
    "default_distribution",
    "distribute",
    "parse_distribution",
    "step_shape",
    "task_counts",
]

DISTRIBUTIONS = ("block", "cyclic")


def default_distribution(ntasks: int, nnodes: int) -> str:
    """Slurm's choice when ``-m`` is not given: ``block`` if ntasks > nnodes, else ``cyclic``."""
    return "block" if ntasks > nnodes else "cyclic"


def parse_distribution(text: str) -> str:
    """The node-level part of ``-m``/``--distribution``: ``"cyclic:block,Pack"`` -> ``"cyclic"``.

    ``"*"`` (Slurm's "default" placeholder) and ``""`` give ``""``: the
    caller picks :func:`default_distribution`.  ``plane`` and ``arbitrary``
    are not supported; they and anything else raise ``ValueError``.
    """
    first = text.split(",", 1)[0].split(":", 1)[0].strip().lower()
    if first in ("", "*"):
        return ""
    if first not in DISTRIBUTIONS:
        raise ValueError("Invalid --distribution specification")
    return first


def deal(ntasks: int, slots: Sequence[int]) -> list[int]:
    """Node index of each task in the order tasks are dealt (see the module docstring).

    ``deal(4, [2, 2, 2])`` -> ``[0, 1, 2, 0]``; ``deal(3, [1, 1])`` ->
    ``[0, 1, 0]`` (the third task over-subscribes node 0).
    """
    n = len(slots)
    if n == 0 or ntasks <= 0:
        return []
    counts = [0] * n
    order: list[int] = []
    while len(order) < ntasks:
        placed = False
        for i in range(n):
            if len(order) < ntasks and counts[i] < slots[i]:
                counts[i] += 1
                order.append(i)
                placed = True
        if not placed:  # every node is full: over-subscribe, round robin
            for i in range(n):
                if len(order) < ntasks:
                    counts[i] += 1
                    order.append(i)
    return order


def task_counts(ntasks: int, slots: Sequence[int]) -> list[int]:
    """Tasks per node after the deal: ``task_counts(4, [2, 2, 2])`` -> ``[2, 1, 1]``."""
    counts = [0] * len(slots)
    for i in deal(ntasks, slots):
        counts[i] += 1
    return counts


def distribute(ntasks: int, slots: list[int], distribution: str = "block") -> list[list[int]]:
    """Global task ids per node, in node order (nodes without a task get ``[]``).

    ``distribute(4, [2, 2, 2])`` -> ``[[0, 1], [2], [3]]``;
    ``distribute(4, [2, 2, 2], "cyclic")`` -> ``[[0, 3], [1], [2]]``.
    ``distribution`` is ``"block"`` or ``"cyclic"`` (anything
    :func:`parse_distribution` accepts; ``""`` means Slurm's default).
    """
    dist = parse_distribution(distribution) or default_distribution(ntasks, len(slots))
    order = deal(ntasks, slots)
    tasks: list[list[int]] = [[] for _ in slots]
    if dist == "cyclic":
        for rank, node in enumerate(order):
            tasks[node].append(rank)
        return tasks
    rank = 0
    for node, count in enumerate(task_counts(ntasks, slots)):
        tasks[node] = list(range(rank, rank + count))
        rank += count
    return tasks


def _env_int(env: Mapping[str, str], *names: str) -> int | None:
    """The first of ``names`` in ``env`` that holds a positive integer (garbage is ignored)."""
    for name in names:
        text = env.get(name, "").strip()
        if text.isdigit() and int(text) > 0:
            return int(text)
    return None


def step_shape(
    ntasks: int | None,
    nodes: int | None,
    ntasks_per_node: int | None,
    job_nodes: int,
    env: dict[str, str],
    *,
    cpus_per_task: int = 1,
    node_cpus: Sequence[int] | None = None,
    warnings: list[str] | None = None,
) -> tuple[int, int]:
    """``(ntasks, nnodes)`` of a step (see the module docstring for the rules).

    ``ntasks``/``nodes``/``ntasks_per_node`` are srun's command-line values
    (``None``: not given); ``env`` is srun's environment, read only for
    ``SLURM_NTASKS`` (else ``SLURM_NPROCS``), ``SLURM_JOB_NUM_NODES`` (else
    ``SLURM_NNODES``) and ``SLURM_NTASKS_PER_NODE`` -- pass ``{}`` when the
    environment is not this job's.  ``cpus_per_task`` and ``node_cpus``
    (the job's CPUs per node) matter only for ``-c`` without any count.
    srun's informational lines (``Warning: ...``, printed after ``srun: ``)
    are appended to ``warnings``.

    Raises ``ValueError`` with Slurm's text: ``Only allocated 2 nodes asked
    for 3``, ``Task count specification invalid`` (``-n 0``), ``Node count
    specification invalid`` (``-N 0``).

    >>> step_shape(None, None, None, 2, {"SLURM_NTASKS": "8", "SLURM_JOB_NUM_NODES": "2"})
    (8, 2)
    """
    say = warnings if warnings is not None else []
    if ntasks is not None and ntasks < 1:
        raise ValueError("Task count specification invalid")
    if nodes is not None and nodes < 1:
        raise ValueError("Node count specification invalid")
    n_env = _env_int(env, "SLURM_NTASKS", "SLURM_NPROCS")
    nodes_env = _env_int(env, "SLURM_JOB_NUM_NODES", "SLURM_NNODES")
    n = ntasks if ntasks is not None else n_env
    big_n = nodes if nodes is not None else nodes_env
    tpn = ntasks_per_node if ntasks_per_node is not None else _env_int(env, "SLURM_NTASKS_PER_NODE")
    n_from_env = ntasks is None and n is not None
    nodes_from_env = nodes is None and big_n is not None

    if nodes_from_env and big_n is not None and big_n > job_nodes:
        say.append(
            "error: SLURM_JOB_NUM_NODES environment variable conflicts with allocated node "
            f"count ({big_n} != {job_nodes})."
        )
        big_n = job_nodes
        if n_from_env:  # the inherited task count belonged to that other node count
            n = None
    if tpn is not None and n_from_env and big_n is not None and not nodes_from_env:
        n = None  # `srun -N1` in a `-N2 --ntasks-per-node=4` job: 1 x 4 tasks, not 8

    if big_n is not None and n is None:
        n = big_n * (tpn or 1)
    elif big_n is not None and n is not None:
        if n < big_n:
            say.append(f"Warning: can't run {n} processes on {big_n} nodes, setting nnodes to {n}")
            big_n = n
        if tpn is not None and n != big_n * tpn and n > tpn:
            say.append(
                f"Warning: can't honor --ntasks-per-node set to {tpn} which doesn't match the "
                f"requested tasks {n} with the number of requested nodes {big_n}. "
                "Ignoring --ntasks-per-node."
            )
    elif n is not None:  # tasks only: as many of the job's nodes as the tasks need
        wanted = -(-n // tpn) if tpn else n
        big_n = max(1, min(job_nodes, wanted))
    else:  # neither: the whole allocation
        big_n = job_nodes
        if tpn:
            n = big_n * tpn
        elif cpus_per_task > 1 and node_cpus:
            n = max(big_n, sum(c // cpus_per_task for c in node_cpus[:big_n]))
        else:
            n = big_n

    if big_n > job_nodes:
        raise ValueError(f"Only allocated {job_nodes} nodes asked for {big_n}")
    return n, big_n
