"""Building the scheduler's snapshot from the store (mechanism, not policy).

Reads pending jobs, node rows, what running/completing jobs hold and the
partitions, and turns them into the frozen values of
``slurmlite.scheduler.snapshot``.  Nothing here decides anything: a node is
``usable`` exactly when the node service says so, a job's request is copied
as stored.  ``PendingCache`` keeps the last pass's values, so a deep queue
is not rebuilt every pass: a job whose columns are unchanged keeps its value.
"""

from __future__ import annotations

from sqlalchemy import select

from controller.convert import split_list
from controller.nodes import NodeService
from controller.store.db import Database
from controller.store.models import JobRow
from slurmlite.config import Config
from slurmlite.scheduler.snapshot import NodeView, PartitionView, PendingJob, Snapshot


def pending_job(row: JobRow) -> PendingJob:
    return PendingJob(
        job_id=row.id,
        priority=row.priority,
        submit_time=row.submit_time,
        partition=row.partition,
        user=row.user,
        nodes_min=row.nodes_min,
        nodes_max=row.nodes_max,
        ntasks=row.ntasks,
        ntasks_per_node=row.ntasks_per_node,
        cpus_per_task=row.cpus_per_task,
        mem_per_node=row.mem_per_node,
        mem_per_cpu=row.mem_per_cpu,
        mem_per_gpu=row.mem_per_gpu,
        gpus_per_node=row.gpus_per_node,
        gpus_total=row.gpus_total,
        gpu_type=row.gpu_type,
        time_limit=row.time_limit,
        req_nodes=tuple(split_list(row.req_nodes)),
        exc_nodes=tuple(split_list(row.exc_nodes)),
        exclusive=row.exclusive,
        features=row.constraint,
        held=row.hold,
        begin_time=row.eligible_time,
    )


def node_views(
    cfg: Config, nodes: NodeService, now: float, idle: bool = False
) -> tuple[NodeView, ...]:
    """Every node as the scheduler sees it; ``idle=True`` skips what jobs hold (submit checks)."""
    use = {} if idle else nodes.usage()
    order = {n.name: i for i, n in enumerate(cfg.nodes)}
    member: dict[str, list[str]] = {}
    for p in cfg.partitions:
        for n in p.nodes:
            member.setdefault(n, []).append(p.name)
    views = []
    for row in nodes.rows():
        u = use.get(row.name)
        views.append(
            NodeView(
                name=row.name,
                index=order.get(row.name, 10**6),
                cpus=row.cpus,
                real_memory=row.real_memory,
                gpus=row.gpus,
                gpu_type=row.gpu_type,
                features=frozenset(split_list(row.features)),
                weight=row.weight,
                partitions=tuple(member.get(row.name, ())),
                usable=nodes.usable(row, now),
                alloc_cpus=u.cpus if u else 0,
                alloc_mem=u.mem if u else 0,
                alloc_gpus=frozenset(u.gpus) if u else frozenset(),
            )
        )
    return tuple(sorted(views, key=lambda v: (v.index, v.name)))


def partition_views(cfg: Config) -> tuple[PartitionView, ...]:
    return tuple(
        PartitionView(
            name=p.name,
            nodes=tuple(p.nodes),
            state=p.state,
            max_time=p.max_time,
            priority_tier=p.priority_tier,
            priority_job_factor=p.priority_job_factor,
        )
        for p in cfg.partitions
    )


# the columns a pending job's request needs (loading whole rows would drag scripts along)
PENDING_COLUMNS = (
    JobRow.id,
    JobRow.priority,
    JobRow.submit_time,
    JobRow.partition,
    JobRow.user,
    JobRow.nodes_min,
    JobRow.nodes_max,
    JobRow.ntasks,
    JobRow.ntasks_per_node,
    JobRow.cpus_per_task,
    JobRow.mem_per_node,
    JobRow.mem_per_cpu,
    JobRow.mem_per_gpu,
    JobRow.gpus_per_node,
    JobRow.gpus_total,
    JobRow.gpu_type,
    JobRow.time_limit,
    JobRow.req_nodes,
    JobRow.exc_nodes,
    JobRow.exclusive,
    JobRow.constraint,
    JobRow.hold,
    JobRow.eligible_time,
    JobRow.reason,
    JobRow.state_desc,
)


class PendingCache:
    """The last pass's ``PendingJob`` values, reused while a job's columns are unchanged.

    Building a ``PendingJob`` costs about 10 us, reading its columns far
    less; with 1,000 jobs pending, a pass then spends its time on the jobs
    that are new or changed (any column: an update, a hold, a requeue), not
    on rebuilding the whole queue.  Values are frozen, so sharing is safe.
    """

    def __init__(self) -> None:
        self._jobs: dict[int, tuple[tuple[object, ...], PendingJob]] = {}

    def jobs(self, rows: list) -> tuple[PendingJob, ...]:  # type: ignore[type-arg]
        """One ``PendingJob`` per row of ``PENDING_COLUMNS`` (the cache keeps just these)."""
        old, new = self._jobs, {}
        out = []
        for r in rows:
            request = tuple(r[:_REQUEST])
            hit = old.get(request[0])  # the job id
            job = hit[1] if hit is not None and hit[0] == request else pending_job(r)
            new[request[0]] = (request, job)
            out.append(job)
        self._jobs = new
        return tuple(out)


_REQUEST = len(PENDING_COLUMNS) - 2  # the columns a PendingJob is made of (not reason, desc)


def take(
    db: Database, cfg: Config, nodes: NodeService, now: float, cache: PendingCache | None = None
) -> tuple[Snapshot, dict[int, tuple[str, str | None]]]:
    """The snapshot, and each pending job's current (reason, description) to spot changes.

    With ``cache`` (kept from pass to pass), unchanged pending jobs are not rebuilt.
    """
    with db.read() as s:  # plain rows through the connection: no ORM work per row
        # held jobs (priority 0) never start and keep the reason their hold set, so a
        # pass leaves them out: 10,000 held jobs would otherwise be read every pass
        stmt = select(*PENDING_COLUMNS).where(JobRow.state == "PENDING", JobRow.hold.is_(None))
        rows = s.connection().execute(stmt).all()
    pending = cache.jobs(rows) if cache is not None else tuple(pending_job(r) for r in rows)  # type: ignore[arg-type]
    snap = Snapshot(
        now=now,
        nodes=node_views(cfg, nodes, now) if rows else (),
        partitions=partition_views(cfg),
        pending=pending,
    )
    return snap, {r[0]: (r[-2], r[-1]) for r in rows}  # id: (reason, state_desc)
