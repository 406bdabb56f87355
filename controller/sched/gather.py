"""Building the scheduler's snapshot from the store (mechanism, not policy).

Reads pending jobs, node rows, what running/completing jobs hold and the
partitions, and turns them into the frozen values of
``slurmlite.scheduler.snapshot``.  Nothing here decides anything: a node is
``usable`` exactly when the node service says so, a job's request is copied
as stored.  ``PendingCache`` keeps the last pass's values, so a deep queue
is not rebuilt every pass: a job whose columns are unchanged keeps its value;
the same goes for running jobs (``RunningJob``: what each holds and until
when at the latest, the input of backfill's timeline), whose allocation JSON
is parsed once per job, not once per pass.

Example: job 7 runs on n1 since t=1000 with ``--time=10``; job 8 pends ->
``Snapshot(pending=(PendingJob(8, ...),), running=(RunningJob(7, start_time=1000,
end_time=1600, allocs=(NodeAlloc("n1", 2, 2000, []),)),), ...)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy import select

from controller.accounting.qos_limits import load_qos
from controller.nodes.service import NodeService
from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.rows import allocs_of, split_list
from slurmlite.config import Config
from slurmlite.scheduler.snapshot import (
    NodeView,
    PartitionView,
    PendingJob,
    RunningJob,
    Snapshot,
)


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
        # a submit-time probe (submit.RowView) may not carry these yet
        account=getattr(row, "account", None) or "",
        qos=getattr(row, "qos", None) or "normal",
    )


def with_reasons(jobs: tuple[PendingJob, ...], why: Mapping[int, str]) -> tuple[PendingJob, ...]:
    """``jobs`` with the reasons decided outside the pass (``controller.sched.deps``)."""
    return tuple(replace(j, external_reason=why[j.job_id]) if j.job_id in why else j for j in jobs)


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
    policy = cfg.gpu_outside_use
    for row in nodes.rows():
        u = use.get(row.name)
        # GPUs used outside the scheduler, or settling after it (controller.nodes.outside_gpus),
        # count as held: no job gets them, a job needing them waits for Resources
        outside = frozenset() if idle else nodes.outside.blocked(row.name, now, policy)
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
                alloc_gpus=(frozenset(u.gpus) if u else frozenset()) | outside,
                outside_gpus=outside,
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
            qos=p.qos or None,
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
    JobRow.account,
    JobRow.qos,
    # not part of the request: what the last passes wrote (to write only changes)
    JobRow.sched_start,
    JobRow.sched_nodes,
    JobRow.reason,
    JobRow.state_desc,
)

# what a running job's value is made of (held resources, limit, owner)
RUNNING_COLUMNS = (
    JobRow.id,
    JobRow.user,
    JobRow.account,
    JobRow.qos,
    JobRow.partition,
    JobRow.start_time,
    JobRow.end_time,
    JobRow.alloc,
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
        self._running: dict[int, tuple[tuple[object, ...], RunningJob]] = {}

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

    def running(self, rows: list) -> tuple[RunningJob, ...]:  # type: ignore[type-arg]
        """One ``RunningJob`` per row of ``RUNNING_COLUMNS``, reused while the row is unchanged."""
        old, new = self._running, {}
        out = []
        for r in rows:
            key = tuple(r)
            hit = old.get(key[0])
            job = hit[1] if hit is not None and hit[0] == key else running_job(r)
            new[key[0]] = (key, job)
            out.append(job)
        self._running = new
        return tuple(out)


# the columns a PendingJob is made of (not sched_start, sched_nodes, reason, desc)
_REQUEST = len(PENDING_COLUMNS) - 4


def running_job(r: Any) -> RunningJob:
    """A row of ``RUNNING_COLUMNS`` as the scheduler sees it (allocs parsed as
    ``NodeService.usage`` parses them: ``rows.allocs_of``)."""
    return RunningJob(
        job_id=r[0],
        user=r[1],
        account=r[2] or "",
        qos=r[3] or "normal",
        partition=r[4],
        start_time=r[5] or 0.0,
        end_time=r[6],  # start + limit; None = UNLIMITED; a completing job's actual end
        allocs=tuple(allocs_of(r[7])),
    )


Marks = dict[int, tuple[float | None, str | None]]  # job id -> (sched_start, sched_nodes)


def take(
    db: Database,
    cfg: Config,
    nodes: NodeService,
    now: float,
    cache: PendingCache | None = None,
    marks: Marks | None = None,
    extra: tuple[PendingJob, ...] = (),
) -> tuple[Snapshot, dict[int, tuple[str, str | None]]]:
    """The snapshot, and each pending job's current (reason, description) to spot changes.

    With ``cache`` (kept from pass to pass), unchanged pending and running jobs
    are not rebuilt.  ``marks``, when given, receives each pending job's stored
    estimate (sched_start, sched_nodes), for the same purpose.  ``extra`` jobs
    (a ``--test-only`` probe) are added to the pending ones.  Without pending
    jobs there is nothing to decide: the snapshot then has no nodes nor running jobs.
    """
    running_rows: list[Any] = []
    qos: Mapping[str, Any] = {}
    with db.read() as s:  # plain rows through the connection: no ORM work per row
        # held jobs (priority 0) never start and keep the reason their hold set, so a
        # pass leaves them out: 10,000 held jobs would otherwise be read every pass
        conn = s.connection()
        stmt = select(*PENDING_COLUMNS).where(JobRow.state == "PENDING", JobRow.hold.is_(None))
        rows = conn.execute(stmt).all()
        if rows or extra:
            # what holds resources, as NodeService.usage() counts it
            held = (JobRow.state == "RUNNING") | (JobRow.flags == "COMPLETING")
            running_rows = conn.execute(select(*RUNNING_COLUMNS).where(held)).all()
            qos = load_qos(s)
    if cache is not None:
        pending, running = cache.jobs(rows), cache.running(running_rows)  # type: ignore[arg-type]
    else:
        pending = tuple(pending_job(r) for r in rows)  # type: ignore[arg-type]
        running = tuple(running_job(r) for r in running_rows)
    snap = Snapshot(
        now=now,
        nodes=node_views(cfg, nodes, now) if rows or extra else (),
        partitions=partition_views(cfg),
        pending=pending + extra,
        running=running,
        qos=qos,
    )
    if marks is not None:
        marks.update((r[0], (r[-4], r[-3])) for r in rows)
    return snap, {r[0]: (r[-2], r[-1]) for r in rows}  # id: (reason, state_desc)
