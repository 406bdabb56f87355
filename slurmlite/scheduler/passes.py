"""The main scheduling pass: one walk down the queue, a plan at the end.

``schedule_pass(snapshot, policy) -> Plan`` is what the controller calls
every cycle (DESIGN.md §1).  It picks the pass named by ``SchedulerType``
(``registry.SCHEDULER_TYPES``): ``sched/builtin`` is ``main_pass`` below,
Slurm's main scheduler (spec §4.2); ``sched/backfill`` (the default) runs it
first and then ``backfill.backfill_pass`` over what is still pending.

1. Order the pending jobs (spec §4.1): partition PriorityTier high first,
   then priority high first, then submit time, then job id — every tie is
   broken, so the order is total.
2. Walk the queue.  A job that cannot run for a reason of its own (held,
   begin time, dependency, partition down or over its limits) gets that
   reason and blocks nobody (``feasibility.wait_reason``); so does a job
   over a QOS limit (``limits.LimitTracker.reason``: what its user already
   runs, counting the jobs this pass has started).
3. A job of a partition already *blocked* in this pass gets ``Priority``.
4. Otherwise try to place it on the partition's usable nodes that no blocked
   job holds back (``select.select_nodes``).  Success: the job starts and its
   CPUs, memory and GPUs are taken at once, so later jobs see them used.
5. Failure:
   * the request could not fit even on idle nodes -> ``BadConstraints``
     (the controller sets its priority to 0); nothing is blocked;
   * a ``-w`` node is down, drained, or held back -> ``ReqNodeNotAvail``;
     only the requested nodes are held back;
   * ``-w`` nodes covering the job's node count are busy -> ``Resources``;
     only those nodes are held back;
   * otherwise ``Resources``: the partition is blocked (its later jobs get
     ``Priority``) and all its nodes are held back for the rest of the pass,
     so a job of an overlapping partition cannot jump ahead on them either.

Example: nodes n1, n2 (2 CPUs each) in ``debug``; queue A(-N 2) B(-n 1).
n1 is half used, so A cannot start -> A ``Resources``, debug blocked,
B ``Priority`` although one CPU is free: strict priority order, no
backfill.

Reference: ``S:src/slurmctld/job_scheduler.c`` (``schedule``,
``sort_job_queue2``), behaviour only.
"""

from __future__ import annotations

from slurmlite.reasons import BAD_CONSTRAINTS, PRIORITY, REQ_NODE_NOT_AVAIL, RESOURCES
from slurmlite.scheduler.feasibility import wait_reason
from slurmlite.scheduler.limits import LimitTracker
from slurmlite.scheduler.registry import scheduler_for
from slurmlite.scheduler.select import consume, fits_when_idle, select_nodes
from slurmlite.scheduler.snapshot import NodeView, PendingJob, Plan, Policy, Snapshot


def schedule_pass(snapshot: Snapshot, policy: Policy) -> Plan:
    """Run the pass ``policy.scheduler_type`` names over ``snapshot``."""
    return scheduler_for(policy.scheduler_type)(snapshot, policy)


def queue_order(snapshot: Snapshot) -> list[PendingJob]:
    """Pending jobs in scheduling order (spec §4.1)."""
    tiers = {p.name: p.priority_tier for p in snapshot.partitions}

    def key(job: PendingJob) -> tuple[int, int, float, int]:
        return (-tiers.get(job.partition, 0), -job.priority, job.submit_time, job.job_id)

    return sorted(snapshot.pending, key=key)


def limit_tracker(snapshot: Snapshot, policy: Policy) -> LimitTracker:
    """The QOS limit bookkeeping for one pass (what running jobs already hold)."""
    return LimitTracker.for_snapshot(snapshot, policy)


def main_pass(snapshot: Snapshot, policy: Policy) -> Plan:
    """Slurm's main scheduler: strict order, stop a partition at its first blocked job."""
    return run_main_pass(snapshot, policy, limit_tracker(snapshot, policy))


def run_main_pass(
    snapshot: Snapshot,
    policy: Policy,
    tracker: LimitTracker,
    order: list[PendingJob] | None = None,
) -> Plan:
    """``main_pass`` with a caller's limit tracker (backfill goes on with the same one)
    and, if it has it already, the queue order."""
    partitions = {p.name: p for p in snapshot.partitions}
    nodes: dict[str, NodeView] = {n.name: n for n in snapshot.nodes}  # updated as jobs start
    held_back: set[str] = set()  # nodes no later job of this pass may use
    blocked: set[str] = set()  # partitions whose lower jobs get Priority
    # Per partition, the names of its nodes that may still take a task: usable, not held
    # back, a CPU free.  Within a pass nodes only fill up and held_back only grows, so
    # each list only shrinks: it is filtered again before each use instead of rebuilt
    # from the whole partition.  (A node without a free CPU can give no job anything,
    # so leaving it out changes no placement.)
    open_names: dict[str, list[str]] = {}
    plan = Plan()

    for job in queue_order(snapshot) if order is None else order:
        partition = partitions.get(job.partition)
        reason = wait_reason(job, partition, snapshot.now)
        if reason is not None:
            plan.reasons[job.job_id] = reason
            continue
        assert partition is not None  # wait_reason names a missing partition
        reason = tracker.reason(job)
        if reason is not None:  # a QOS limit: the job waits, blocking nobody
            plan.reasons[job.job_id] = reason
            continue
        if partition.name in blocked:
            plan.reasons[job.job_id] = PRIORITY
            continue

        names = open_names.get(partition.name)
        if names is None:
            names = [name for name in partition.nodes if name in nodes and nodes[name].usable]
        names = open_names[partition.name] = [
            name
            for name in names
            if name not in held_back and nodes[name].alloc_cpus < nodes[name].cpus
        ]
        start = select_nodes(job, policy, [nodes[name] for name in names])
        if start is not None and (limited := tracker.reason(job, start)) is not None:
            plan.reasons[job.job_id] = limited  # the placement itself breaks a limit
            continue
        if start is not None:
            for alloc in start.allocs:
                nodes[alloc.node] = consume(nodes[alloc.node], alloc)
            plan.starts.append(start)
            tracker.charge(job, start)
            continue

        members = [nodes[name] for name in partition.nodes if name in nodes]
        if not fits_when_idle(job, policy, members):
            plan.reasons[job.job_id] = BAD_CONSTRAINTS
            continue
        wanted = tuple(dict.fromkeys(job.req_nodes))
        if wanted:
            missing = tuple(
                name
                for name in wanted
                if name not in nodes or not nodes[name].usable or name in held_back
            )
            if missing:
                plan.reasons[job.job_id] = REQ_NODE_NOT_AVAIL
                plan.unavailable_nodes[job.job_id] = missing
                held_back.update(wanted)
                continue
            if len(wanted) >= job.nodes_min:
                plan.reasons[job.job_id] = RESOURCES
                held_back.update(wanted)
                continue
        plan.reasons[job.job_id] = RESOURCES
        blocked.add(partition.name)
        held_back.update(partition.nodes)
    return plan
