"""What would make a pending job start sooner: changes verified by the pass itself.

A suggestion is only ever a *measured* fact.  For each kind of change a user
can make to a pending job — a shorter ``--time``, fewer GPUs, fewer CPUs,
fewer nodes, less memory, another partition — a few candidate values are
tried, mildest first.  Each try replaces the job in the snapshot by the
changed one, runs the same pure pass the scheduler runs (``pass_for``) on
the changed snapshot (its queue up to the job: ``head_of_queue``), and reads the job's start from that plan
(``start_of``: now when the plan starts it, else its estimate, else
unknown).  A candidate is kept only when that start is strictly earlier
than the start without the change (unknown counts as never); the start
quoted is the one that pass returned, so ``slurmlite explain`` never
promises what the scheduler would not do.

Per kind at most two suggestions survive: the mildest change that helps,
and the mildest one reaching the earliest start any candidate reached (when
that is a different one).  At most ``MAX_TRIALS`` passes run in all.

Candidates for ``--time`` come from the availability timeline of the
baseline plan: a job that starts at ``s`` (now, or when a running job or a
reservation ends) and must be done before a higher job's reservation begins
at ``t`` fits in ``floor((t - s) / 60)`` minutes; halves of the current
limit are tried too.  Example: one node with 2 GPUs, a running job holds
GPU 0 until 10:00 (now 9:00), a higher job has 2 GPUs reserved from 10:00;
our ``--gres=gpu:1 --time=2:00:00`` job waits for that one (start 12:00).
The gap [9:00, 10:00) offers 60 minutes: with ``--time=1:00:00`` the re-run
pass starts it now, so the suggestion reads "--time=1:00:00 -> 9:00".

Deterministic: candidates are sorted, ties keep the kind order above.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from slurmlite.protocol_policy import Suggestion
from slurmlite.scheduler.feasibility import check_submit
from slurmlite.scheduler.passes import queue_order
from slurmlite.scheduler.registry import backfills, scheduler_for
from slurmlite.scheduler.select import eligible
from slurmlite.scheduler.shape import memory_rule
from slurmlite.scheduler.snapshot import PendingJob, Plan, Policy, Snapshot
from slurmlite.timefmt import fmt_limit_compact

PassFn = Callable[[Snapshot, Policy], Plan]
MAX_TRIALS = 32  # passes one explanation may run for its suggestions
_PER_KIND = {"time": 10, "gpus": 4, "cpus": 4, "nodes": 3, "mem": 4, "partition": 6}


def pass_for(policy: Policy) -> PassFn:
    """The pass whose plan carries estimates: backfill for ``sched/backfill``, else the
    registered one (``sched/builtin``: starts only, no estimates)."""
    if backfills(policy.scheduler_type):
        try:
            from slurmlite.scheduler.backfill import backfill_pass
        except ImportError:  # not written yet: the registered pass, starts only
            pass
        else:
            return backfill_pass
    return scheduler_for(policy.scheduler_type)


def start_of(plan: Plan, job_id: int, now: float) -> float | None:
    """When ``plan`` starts the job: ``now`` if it starts in this pass, its estimate, or None."""
    if job_id in plan.started_ids:
        return now
    return plan.estimates.get(job_id)


def earlier(start: float | None, than: float | None) -> bool:
    """Is ``start`` strictly earlier than ``than`` (None = unknown = never)?"""
    return start is not None and (than is None or start < than)


def with_job(snapshot: Snapshot, job: PendingJob) -> Snapshot:
    """``snapshot`` with the pending job of ``job.job_id`` replaced by ``job``."""
    pending = tuple(job if j.job_id == job.job_id else j for j in snapshot.pending)
    return dataclasses.replace(snapshot, pending=pending)


def head_of_queue(snapshot: Snapshot, job_id: int) -> Snapshot:
    """``snapshot`` keeping only the pending jobs up to ``job_id`` in queue order.

    Both passes walk the queue in this order and decide each job from what the
    jobs before it took or reserved (nodes, reservations, QOS charges, the
    bf_max_job_test/bf_max_job_user counts), so the jobs after it cannot change
    its start: the head gives the same answer for it as the whole queue, for a
    fraction of the work when it is not last.
    """
    order = queue_order(snapshot)
    index = next(i for i, j in enumerate(order) if j.job_id == job_id)
    return dataclasses.replace(snapshot, pending=tuple(order[: index + 1]))


def trial(snapshot: Snapshot, policy: Policy, job: PendingJob, run: PassFn) -> float | None:
    """The start the pass gives ``job`` when it replaces its pending namesake."""
    changed = head_of_queue(with_job(snapshot, job), job.job_id)
    return start_of(run(changed, policy), job.job_id, snapshot.now)


Candidate = tuple[str, str, PendingJob]  # (value, flag, changed job), mildest first


def suggest(
    snapshot: Snapshot,
    policy: Policy,
    job: PendingJob,
    baseline: float | None,
    plan: Plan,
    run: PassFn,
) -> list[Suggestion]:
    """Verified suggestions for ``job`` whose start without change is ``baseline``."""
    if baseline is not None and baseline <= snapshot.now:
        return []  # it starts now: nothing is earlier
    kinds = {
        "time": _time_candidates(snapshot, job, plan),
        "gpus": _gpu_candidates(snapshot, job),
        "cpus": _cpu_candidates(job),
        "nodes": _node_candidates(job),
        "mem": _mem_candidates(snapshot, policy, job),
        "partition": _partition_candidates(snapshot, policy, job),
    }
    out: list[tuple[float, int, int, Suggestion]] = []
    budget = MAX_TRIALS
    for rank, (kind, candidates) in enumerate(kinds.items()):
        tried: list[tuple[str, str, float]] = []
        for value, flag, changed in candidates[: min(_PER_KIND[kind], budget)]:
            budget -= 1
            start = trial(snapshot, policy, changed, run)
            if earlier(start, baseline):
                assert start is not None
                tried.append((value, flag, start))
                if start <= snapshot.now:
                    break  # nothing beats now; the rest are harsher changes
        if not tried:
            continue
        best = min(s for _, _, s in tried)
        keep = [tried[0]] + [next(t for t in tried if t[2] == best)]
        for order, (value, flag, start) in enumerate(dict.fromkeys(keep)):
            out.append((start, rank, order, Suggestion(kind, value, flag, start)))
    return [s for *_, s in sorted(out, key=lambda o: o[:3])]


def _time_candidates(snapshot: Snapshot, job: PendingJob, plan: Plan) -> list[Candidate]:
    partition = next((p for p in snapshot.partitions if p.name == job.partition), None)
    members = set(partition.nodes) if partition else set()
    limit = job.time_limit
    cap = partition.max_time if partition else None
    now = snapshot.now
    limits = {p.job_id: p.time_limit for p in snapshot.pending}
    frees = {now} | {
        r.end_time
        for r in snapshot.running
        if r.end_time is not None and r.end_time > now and members & set(r.nodes)
    }
    begins: set[float] = set()
    for other, at in plan.estimates.items():
        if other == job.job_id or not members & set(plan.planned_nodes.get(other, ())):
            continue
        begins.add(at)
        other_limit = limits.get(other)
        if other_limit is not None:
            frees.add(at + other_limit * 60)
    values = {int((t - s) // 60) for t in begins for s in frees if t > s}
    if cap is not None:
        values.add(cap)
    top = limit if limit is not None else cap
    half = top
    while half is not None and half > 1 and len(values) < 64:
        half //= 2
        values.add(half)
    wanted = sorted(
        (
            v
            for v in values
            if v >= 1 and (limit is None or v < limit) and (cap is None or v <= cap)
        ),
        reverse=True,
    )
    return [
        (fmt_limit_compact(v), f"--time={fmt_limit_compact(v)}", _set(job, time_limit=v))
        for v in wanted
    ]


def _fewer(n: int, extra: Iterable[int] = ()) -> list[int]:
    """Smaller counts to try for ``n``, largest first: n-1, 3n/4, n/2, n/4, 1 (+ ``extra``)."""
    values = {n - 1, n * 3 // 4, n // 2, n // 4, 1, *extra}
    return sorted((v for v in values if 1 <= v < n), reverse=True)


def _gpu_candidates(snapshot: Snapshot, job: PendingJob) -> list[Candidate]:
    free = [len(n.free_gpus) for n in snapshot.nodes if n.usable and eligible(job, n)]
    kind = f"gpu:{job.gpu_type}:" if job.gpu_type else "gpu:"
    if job.gpus_per_node > 0:
        return [
            (f"{kind}{v}", f"--gres={kind}{v}", _set(job, gpus_per_node=v))
            for v in _fewer(job.gpus_per_node, free)
        ]
    if job.gpus_total:
        prefix = f"{job.gpu_type}:" if job.gpu_type else ""
        return [
            (f"{prefix}{v}", f"--gpus={prefix}{v}", _set(job, gpus_total=v))
            for v in _fewer(job.gpus_total, [sum(free)])
        ]
    return []


def _cpu_candidates(job: PendingJob) -> list[Candidate]:
    if job.cpus_per_task > 1:
        return [
            (str(v), f"--cpus-per-task={v}", _set(job, cpus_per_task=v))
            for v in _fewer(job.cpus_per_task)
        ]
    if job.ntasks is not None and job.ntasks > 1:
        return [(str(v), f"--ntasks={v}", _set(job, ntasks=v)) for v in _fewer(job.ntasks)]
    return []


def _node_candidates(job: PendingJob) -> list[Candidate]:
    if job.nodes_min <= 1 or (job.ntasks is not None and job.ntasks_per_node):
        return []
    return [
        (str(v), f"--nodes={v}", _set(job, nodes_min=v, nodes_max=v)) for v in _fewer(job.nodes_min)
    ]


def _mem_candidates(snapshot: Snapshot, policy: Policy, job: PendingJob) -> list[Candidate]:
    free = [n.free_mem for n in snapshot.nodes if n.usable and eligible(job, n) and n.free_mem > 0]
    rule = memory_rule(job, policy)
    if rule.kind == "whole":  # the whole node by default: any explicit --mem is less
        values = sorted(set(free), reverse=True)
        return [(f"{v}M", f"--mem={v}M", _set(job, mem_per_node=v)) for v in values]
    field_of = {"node": "mem_per_node", "cpu": "mem_per_cpu", "gpu": "mem_per_gpu"}
    name = field_of[rule.kind]
    flag = {"mem_per_node": "--mem", "mem_per_cpu": "--mem-per-cpu", "mem_per_gpu": "--mem-per-gpu"}
    if getattr(job, name) is None or rule.amount <= 1:
        return []  # a cluster default (DefMemPerCPU): the user did not ask for it
    extra = free if name == "mem_per_node" else ()
    return [
        (f"{v}M", f"{flag[name]}={v}M", _set(job, **{name: v})) for v in _fewer(rule.amount, extra)
    ]


def _partition_candidates(snapshot: Snapshot, policy: Policy, job: PendingJob) -> list[Candidate]:
    nodes = {n.name: n for n in snapshot.nodes}
    out: list[Candidate] = []
    for p in snapshot.partitions:
        if p.name == job.partition or p.state != "UP":
            continue
        changed = _set(job, partition=p.name)
        flag = f"--partition={p.name}"
        if p.max_time is not None and (job.time_limit is None or job.time_limit > p.max_time):
            changed = _set(changed, time_limit=p.max_time)
            flag += f" --time={fmt_limit_compact(p.max_time)}"
        members = [nodes[n] for n in p.nodes if n in nodes]
        if members and check_submit(changed, p, members, policy) is None:
            out.append((p.name, flag, changed))
    return out


def _set(job: PendingJob, **changes: object) -> PendingJob:
    return dataclasses.replace(job, **changes)  # type: ignore[arg-type]
