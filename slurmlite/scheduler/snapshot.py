"""What the scheduler sees and what it answers: the snapshot and the plan.

The scheduler is a pure function ``schedule_pass(snapshot, policy) -> plan``
(DESIGN.md §1).  This module holds the value types on both sides of it:

* ``NodeView`` — one node as the controller knows it right now: its size
  (CPUs, RealMemory, GPUs), what running jobs already hold on it, and whether
  it may receive work at all (``usable`` is False when it is DOWN, DRAINED,
  not responding, completing or never registered).
* ``PartitionView`` — a partition's nodes in slurm.conf order, its state and
  the limits the main pass checks.
* ``PendingJob`` — a pending job's request, already resolved by the controller
  (partition chosen, default time limit applied, priority computed).
* ``Policy`` — the cluster-wide knobs the policy code reads (DefMemPerCPU,
  DefMemPerGPU, SchedulerType, PriorityType, ...).
* ``RunningJob`` — a job that holds resources now and when it will give them
  back at the latest (start + time limit): backfill's timeline is built from
  these.
* ``Snapshot`` — the clock reading ``now`` plus the lists above and the QOS
  table (``limits.QosLimits`` by name).  The scheduler never reads the clock
  itself, so replaying a snapshot gives the same plan.
* ``Plan`` — the answer: jobs to start with their per-node allocations, and a
  reason (Slurm's name, spec §1.4) for every pending job that does not start.

A node's ``alloc_*`` fields are what the running jobs hold on it, summed:
``with_allocations(nodes, running)`` states that rule once, for the
simulator and the test builders (a node shared by a 2-CPU and a 1-CPU job
has ``alloc_cpus == 3``; GPU indices are united, not counted).

Worked example: two idle nodes of 4 CPUs, one pending job ``-n 2``::

    Snapshot(now=0.0, nodes=(n1, n2), partitions=(debug,), pending=(job7,))
    -> Plan(starts=[Start(7, (NodeAlloc("n1", cpus=2, mem=..., gpus=[]),),
                          tasks=(2,))], reasons={})

Memory is MiB, time limits are minutes (``None`` = UNLIMITED), times are Unix
seconds — the same conventions as ``slurmlite.protocol``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slurmlite.protocol import NodeAlloc


@dataclass(frozen=True)
class NodeView:
    """One node: configured size, current use, and whether it may take work."""

    name: str
    index: int  # position in slurm.conf; the final tie-break of node choice
    cpus: int
    real_memory: int
    gpus: int = 0
    gpu_type: str | None = None
    features: frozenset[str] = frozenset()
    weight: int = 1
    partitions: tuple[str, ...] = ()
    usable: bool = True  # False: DOWN, DRAIN, not responding, completing, unknown
    alloc_cpus: int = 0
    alloc_mem: int = 0
    alloc_gpus: frozenset[int] = frozenset()
    # of alloc_gpus, those held by no job but by use outside the scheduler (or settling
    # after it; controller.nodes.outside_gpus): named so, never waited for as a job's end
    outside_gpus: frozenset[int] = frozenset()

    @property
    def free_cpus(self) -> int:
        return max(0, self.cpus - self.alloc_cpus)

    @property
    def free_mem(self) -> int:
        return max(0, self.real_memory - self.alloc_mem)

    @property
    def free_gpus(self) -> tuple[int, ...]:
        """Indices of the GPUs nobody holds, lowest first."""
        return tuple(i for i in range(self.gpus) if i not in self.alloc_gpus)

    @property
    def idle(self) -> bool:
        """Nothing at all is allocated here (what ``--exclusive`` needs)."""
        return self.alloc_cpus == 0 and self.alloc_mem == 0 and not self.alloc_gpus


@dataclass(frozen=True)
class PartitionView:
    name: str
    nodes: tuple[str, ...]  # slurm.conf order
    state: str = "UP"  # UP | DOWN | DRAIN | INACTIVE
    max_time: int | None = None  # minutes, None = UNLIMITED
    priority_tier: int = 1
    priority_job_factor: int = 1
    qos: str | None = None  # slurm.conf QOS=: its limits apply to the partition's jobs too


@dataclass(frozen=True)
class PendingJob:
    """A pending job's request as the controller resolved it.

    ``None`` means "not asked"; the memory fields are mutually exclusive
    (``mem_per_node=0`` asks for the whole memory of each node).
    ``external_reason`` carries a reason decided outside the scheduler
    (``Dependency``, ``InvalidAccount``...): the pass skips the job with it.
    """

    job_id: int
    priority: int
    submit_time: float
    partition: str
    user: str = "nobody"
    nodes_min: int = 1
    nodes_max: int | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int = 1
    mem_per_node: int | None = None
    mem_per_cpu: int | None = None
    mem_per_gpu: int | None = None
    gpus_per_node: int = 0
    gpus_total: int | None = None
    gpu_type: str | None = None
    # minutes, None = UNLIMITED; the trace replay passes fractional minutes (estimate / 60)
    time_limit: float | None = None
    req_nodes: tuple[str, ...] = ()
    exc_nodes: tuple[str, ...] = ()
    exclusive: bool = False
    features: str | None = None  # --constraint: "a", "a&b", "a|b"
    held: str | None = None  # "JobHeldUser" | "JobHeldAdmin"
    begin_time: float | None = None
    external_reason: str | None = None
    account: str = ""
    qos: str = "normal"

    @property
    def wants_gpus(self) -> bool:
        return self.gpus_per_node > 0 or bool(self.gpus_total)


@dataclass(frozen=True)
class Policy:
    """Cluster-wide settings the policy code reads (slurm.conf keys)."""

    def_mem_per_cpu: int = 0  # 0 = unset
    def_mem_per_gpu: int = 0  # 0 = unset
    scheduler_type: str = "sched/backfill"  # Slurm's default
    priority_type: str = "priority/multifactor"  # default (spec §2.2): all weights 0
    priority_weights: Mapping[str, int] = field(default_factory=dict)  # "age" -> weight
    scheduler_parameters: Mapping[str, str] = field(default_factory=dict)
    # QOS limits are enforced unless AccountingStorageEnforce is set without limits,
    # safe or all (``qos`` alone only asks for a valid QOS); enforced when the key is
    # absent (Slurm enforces nothing then)
    enforce_limits: bool = True

    @classmethod
    def from_config(cls, config: object) -> Policy:
        """Build from a ``slurmlite.config.Config`` (read by attribute name)."""
        weights = getattr(config, "priority_weights", None) or {}
        enforce = [
            str(v).strip().lower()
            for v in getattr(config, "accounting_storage_enforce", None) or ()
        ]
        return cls(
            def_mem_per_cpu=int(getattr(config, "def_mem_per_cpu", 0) or 0),
            def_mem_per_gpu=int(getattr(config, "def_mem_per_gpu", 0) or 0),
            scheduler_type=str(getattr(config, "scheduler_type", None) or cls.scheduler_type),
            priority_type=str(getattr(config, "priority_type", None) or cls.priority_type),
            priority_weights=dict(weights),
            scheduler_parameters=dict(getattr(config, "scheduler_parameters", None) or {}),
            # slurmlite enforces by default; a site that sets the key gets Slurm's meaning
            enforce_limits=not enforce or bool({"limits", "safe", "all"} & set(enforce)),
        )


class _Holding:
    """What a job's ``allocs`` add up to (``Start`` and ``RunningJob``)."""

    allocs: tuple[NodeAlloc, ...]

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(a.node for a in self.allocs)

    @property
    def cpus(self) -> int:
        return sum(a.cpus for a in self.allocs)

    @property
    def gpus(self) -> int:
        return sum(len(a.gpus) for a in self.allocs)


@dataclass(frozen=True)
class RunningJob(_Holding):
    """A running (or completing) job: what it holds and when it ends at the latest."""

    job_id: int
    user: str = "nobody"
    account: str = ""
    qos: str = "normal"
    partition: str = ""
    start_time: float = 0.0
    end_time: float | None = None  # start + time limit; None = UNLIMITED (never)
    allocs: tuple[NodeAlloc, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    now: float
    nodes: tuple[NodeView, ...]
    partitions: tuple[PartitionView, ...]
    pending: tuple[PendingJob, ...]  # any order; the pass sorts (spec §4.1)
    running: tuple[RunningJob, ...] = ()  # what holds the nodes' alloc_* values
    qos: Mapping[str, object] = field(default_factory=dict)  # name -> limits.QosLimits


@dataclass(frozen=True)
class Start(_Holding):
    """Start ``job_id`` now on these nodes (config order; first = batch host)."""

    job_id: int
    allocs: tuple[NodeAlloc, ...]
    tasks: tuple[int, ...] = ()  # tasks per node, parallel to ``allocs``


@dataclass
class Plan:
    """The scheduler's answer for one pass.

    ``reasons`` names why each pending job that is not in ``starts`` waits,
    in queue order, with a word of ``slurmlite.reasons.PENDING`` (the
    controller refuses any other when it writes the plan).  ``unavailable_nodes`` lists, for ReqNodeNotAvail jobs,
    the requested nodes that are down, drained or held back (squeue shows
    them as ``ReqNodeNotAvail, UnavailableNodes:n[1-2]``).
    """

    starts: list[Start] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)
    unavailable_nodes: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # backfill's answer for pending jobs it examined: expected start (Unix seconds) and
    # the nodes it planned them on (squeue --start, scontrol StartTime=/SchedNodeList=)
    estimates: dict[int, float] = field(default_factory=dict)
    planned_nodes: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def started_ids(self) -> list[int]:
        return [s.job_id for s in self.starts]


def with_allocations(
    nodes: Iterable[NodeView], running: Iterable[RunningJob]
) -> tuple[NodeView, ...]:
    """``nodes`` with ``alloc_*`` set to exactly what ``running`` holds on each.

    CPUs and memory are summed over every allocation on the node, GPU
    indices united; a node no job holds gets zeros (and is returned as it
    is when it already has them).  Allocations on a node not in ``nodes``
    are ignored.  Example: jobs holding ``n1: 2 CPUs, GPU 0`` and ``n1: 1
    CPU, GPU 3`` give n1 ``alloc_cpus=3, alloc_gpus={0, 3}``.
    """
    cpus: dict[str, int] = {}
    mem: dict[str, int] = {}
    gpus: dict[str, set[int]] = {}
    for job in running:
        for a in job.allocs:
            cpus[a.node] = cpus.get(a.node, 0) + a.cpus
            mem[a.node] = mem.get(a.node, 0) + a.mem
            gpus.setdefault(a.node, set()).update(a.gpus)
    out = []
    for n in nodes:
        held = (cpus.get(n.name, 0), mem.get(n.name, 0), frozenset(gpus.get(n.name, ())))
        if held != (n.alloc_cpus, n.alloc_mem, n.alloc_gpus):
            n = dataclasses.replace(n, alloc_cpus=held[0], alloc_mem=held[1], alloc_gpus=held[2])
        out.append(n)
    return tuple(out)
