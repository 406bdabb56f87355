"""What a pending job lacks on each node of its partition, right now.

For every node the report gives what the job would hold there and what the
node has free, and puts each shortfall in plain words.  The shortfalls are
node selection's own (``select.node_shortfalls``: the rules it places jobs
by, each "no" a typed ``shortfall.Shortfall``); this module only chooses the
share to ask about and the words.  The job's need on
one node is its request spread evenly over its minimum node count (the
shape of ``shape.job_shape``): ``-n 4 -N 2`` needs 2 CPUs per node,
``--gres=gpu:2`` two GPUs, ``--gpus=3 -N 1`` three; ``--exclusive`` needs the
whole node idle; memory follows the job's memory rule (``shape.memory_rule``:
``--mem``, per CPU, per GPU, the defaults, else the whole RealMemory, which
only an idle node has).

In the order select checks them, each adding one line: not usable (down,
drained, not responding), excluded (``--exclude``), features
(``--constraint``), GPUs of the wrong type or none, not idle for
``--exclusive``, CPUs, memory, GPUs.
A busy GPU is named with the running job that holds it (from the snapshot's
running jobs; a GPU of a completing job nobody lists is named without one),
or as used outside slurmlite (``NodeView.outside_gpus``; ``sinfo -R`` says by whom).

Example: n1 has 2 GPUs, job 5 holds both; a ``--gres=gpu:1 -c 2`` job on
n1 with 4 free CPUs -> ``NodeLack("n1", fits_now=False, cpus_needed=2,
cpus_free=4, gpus_needed=1, gpus_free=[], gpus_busy=[GpuHolder(0, 5),
GpuHolder(1, 5)], problems=["GPUs: needs 1, none free (0: job 5, 1: job 5)"])``.
"""

from __future__ import annotations

from collections.abc import Iterable

from slurmlite.protocol_policy import GpuHolder, NodeLack
from slurmlite.scheduler import shortfall as lack
from slurmlite.scheduler.select import node_shortfalls
from slurmlite.scheduler.shape import job_shape, memory_rule, node_memory
from slurmlite.scheduler.shortfall import Shortfall
from slurmlite.scheduler.snapshot import NodeView, PendingJob, Policy, Snapshot


def node_lacks(
    snapshot: Snapshot, policy: Policy, job: PendingJob, names: Iterable[str]
) -> list[NodeLack]:
    """One ``NodeLack`` per node of ``names`` the snapshot knows, in that order."""
    nodes = {n.name: n for n in snapshot.nodes}
    holders: dict[str, dict[int, int]] = {}
    running: dict[str, list[int]] = {}
    for r in sorted(snapshot.running, key=lambda r: r.job_id):
        for a in r.allocs:
            running.setdefault(a.node, []).append(r.job_id)
            for g in a.gpus:
                holders.setdefault(a.node, {})[g] = r.job_id
    out = []
    for name in dict.fromkeys(names):
        node = nodes.get(name)
        if node is not None:
            out.append(_lack(job, policy, node, holders.get(name, {}), running.get(name, [])))
    return out


def per_node_need(job: PendingJob) -> tuple[int, int]:
    """(CPUs, GPUs) the job holds on one node when spread evenly over its fewest nodes."""
    shape = job_shape(job)
    k = max(1, shape.nodes_min)
    if shape.tasks is None:
        tasks = shape.per_node or 1
    else:
        tasks = -(-shape.tasks // k)  # ceil: 5 tasks on 2 nodes -> 3 on the fuller one
        if shape.per_node:
            tasks = min(tasks, shape.per_node)
    gpus = shape.gpus_per_node or (-(-shape.gpus_total // k) if shape.gpus_total else 0)
    return tasks * shape.cpus_per_task, gpus


def _lack(
    job: PendingJob, policy: Policy, node: NodeView, holders: dict[int, int], running: list[int]
) -> NodeLack:
    cpus, gpus = per_node_need(job)
    if job.exclusive:
        cpus = node.cpus
    rule = memory_rule(job, policy)
    mem = node_memory(rule, node, cpus, gpus)
    busy = [GpuHolder(g, holders.get(g), g in node.outside_gpus) for g in sorted(node.alloc_gpus)]
    problems = [words(s, busy, running) for s in node_shortfalls(job, rule, node, cpus, gpus)]
    return NodeLack(
        node=node.name,
        fits_now=not problems,
        problems=problems,
        cpus_needed=cpus,
        cpus_free=node.free_cpus,
        mem_needed=mem,
        mem_free=node.free_mem,
        gpus_needed=gpus,
        gpus_free=list(node.free_gpus),
        gpus_busy=busy,
        running=running,
    )


def words(s: Shortfall, busy: list[GpuHolder], running: list[int]) -> str:
    """One shortfall in the report's words, with who holds the node's busy GPUs and
    which jobs run there: ``CPUs: needs 2, 1 of 4 free``."""
    kind = s.resource
    if kind == lack.STATE:
        return "not usable: down, drained or not responding"
    if kind == lack.EXCLUDED:
        return "excluded (--exclude)"
    if kind == lack.FEATURES:
        return f"features: needs {s.asked}, has {s.have or 'none'}"
    if kind == lack.GPU_TYPE:
        if s.total == 0:
            return "has no GPUs"
        return f"GPU type: needs {s.asked}, has {s.have or 'untyped'}"
    if kind == lack.IDLE:
        return "--exclusive needs an idle node; running here: " + _jobs(running)
    if kind == lack.CPUS:
        return f"CPUs: needs {s.wanted}, {s.free} of {s.total} free"
    if kind == lack.MEMORY:
        return f"memory: needs {s.wanted} MiB, {s.free} of {s.total} free"
    held = ", ".join(f"{h.gpu}: {_holder(h)}" for h in busy)
    return f"GPUs: needs {s.wanted}, {s.free or 'none'} free ({held})"


def _holder(h: GpuHolder) -> str:
    if h.outside:
        return "in use outside slurmlite (sinfo -R)"
    return f"job {h.job_id}" if h.job_id is not None else "completing"


def _jobs(ids: list[int]) -> str:
    return ", ".join(f"job {i}" for i in ids) or "a completing job"
