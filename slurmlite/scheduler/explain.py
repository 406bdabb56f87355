"""Why is my job pending?  An answer built from the plan the scheduler makes.

``explain(snapshot, policy, job_id, factors=...) -> JobExplanation`` runs the
same pure pass the scheduler runs (``explain_suggest.pass_for``: backfill,
whose plan carries estimates) on the snapshot and reads, for one pending job:

* its **priority** and, when the controller kept them (``jobs.prio_factors``),
  the weighted and normalised factors sprio would show;
* its **place in the queue** (spec §4.1 order): among all pending jobs, among
  those of its partition, and how many jobs ahead of it compete for the same
  nodes -- only those the pass starts or keeps waiting for nodes: a held job,
  one waiting for its begin time or dependency, one held back by a QOS limit
  or that can never run takes nothing from anyone;
* the plan's **reason** and **estimated start** (now when the pass starts it;
  the backfill estimate; unknown beyond ``bf_window``) and planned nodes;
* for **each node of its partition**, what it would need there (spread evenly
  over its minimum node count) and what is missing: down or drained,
  excluded, features or GPU type, CPUs, MiB, which GPUs are busy and which
  running job holds each (``explain_nodes``);
* its **blockers**: running jobs on its planned nodes that end by its
  estimate (their end is when it can start), higher pending jobs whose
  reservation overlaps the time it would need from now, higher jobs the
  pass starts now on shared nodes, and, in the main pass, the higher job
  that stops its partition (reason Priority);
* **suggestions**, each verified by re-running the pass on a changed
  snapshot (``explain_suggest``);
* for a job that can **never** run as asked, the limits it exceeds, the one to
  fix first first, each with the request that fits (``explain_limits``); such
  a job has no other blockers (no job's end would start it);
* for a job held back by its user's own QOS limit, which limit and which of
  the user's running jobs hold it (``user_limit``, addressed to ``viewer``).

Worked example.  Node n1 has 2 GPUs; job 1 runs on GPU 0 and 1 until 10:00
(now 9:00); job 2 asks ``--gres=gpu:1 --time=2:00:00``::

    explain(snap, policy, 2)
    -> reason "Resources", estimated_start 10:00, planned_nodes ["n1"],
       nodes [NodeLack("n1", fits_now=False, gpus_needed=1, gpus_free=[],
                       gpus_busy=[GpuHolder(0, 1), GpuHolder(1, 1)], ...)],
       blockers [Blocker(1, "running", nodes=["n1"], end=10:00, gpus=["n1:0", "n1:1"])],
       suggestions []   (nothing it could change starts it before 10:00)

Pure and deterministic: no clock (``snapshot.now``), no I/O; every list is
sorted (queue order, config order, job id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slurmlite import reasons
from slurmlite.protocol_policy import Blocker, JobExplanation, QueuePlace
from slurmlite.scheduler.explain_limits import never_limits, user_limit
from slurmlite.scheduler.explain_nodes import node_lacks
from slurmlite.scheduler.explain_suggest import PassFn, head_of_queue, pass_for, start_of, suggest
from slurmlite.scheduler.feasibility import wait_reason
from slurmlite.scheduler.passes import queue_order
from slurmlite.scheduler.snapshot import PendingJob, Plan, Policy, Snapshot

# What each reason (spec §1.4) means, in the words of this report.
REASON_TEXT: Mapping[str, str] = {
    reasons.NONE: "nothing stops it: the next scheduling pass starts it",
    reasons.PRIORITY: "jobs of higher priority come first on the nodes it could use",
    reasons.RESOURCES: "the CPUs, memory or GPUs it asks for are in use",
    reasons.REQ_NODE_NOT_AVAIL: "a node it asked for (--nodelist) is down, drained or taken",
    reasons.BAD_CONSTRAINTS: "no node of its partition can ever hold this request",
    reasons.JOB_HELD_USER: "its owner held it",
    reasons.JOB_HELD_ADMIN: "an administrator held it",
    reasons.BEGIN_TIME: "its --begin time has not come yet",
    reasons.DEPENDENCY: "it waits for the jobs it depends on",
    reasons.DEPENDENCY_NEVER_SATISFIED: "its dependency can never be met (scontrol update it, or cancel)",
    reasons.PARTITION_DOWN: "its partition is DOWN",
    reasons.PARTITION_INACTIVE: "its partition is INACTIVE or no longer exists",
    reasons.PARTITION_TIME_LIMIT: "its time limit is above the partition's MaxTime",
    reasons.PARTITION_NODE_LIMIT: "it asks for more nodes than its partition has",
    reasons.QOS_MAX_JOBS_PER_USER: "its user already runs as many jobs as the QOS allows",
    reasons.QOS_MAX_GRES_PER_USER: "its user already holds as many GPUs as the QOS allows",
    reasons.QOS_MAX_WALL_PER_JOB: "its time limit is above the QOS's MaxWall",
}
# reasons of jobs the passes try to place (the others sit the pass out)
WAITING_FOR_NODES = frozenset(
    {reasons.NONE, reasons.PRIORITY, reasons.RESOURCES, reasons.REQ_NODE_NOT_AVAIL}
)
FACTOR_ORDER = ("age", "assoc", "fairshare", "jobsize", "partition", "qos")


class JobNotPending(LookupError):
    """The snapshot has no pending job of that id."""


def explain(
    snapshot: Snapshot,
    policy: Policy,
    job_id: int,
    *,
    factors: Mapping[str, Any] | None = None,
    run_pass: PassFn | None = None,
    viewer: str | None = None,
) -> JobExplanation:
    """Everything the plan says about pending job ``job_id`` (see the module docstring).

    ``factors``: the stored breakdown ``{"norm": {...}, "weighted": {...},
    "direct": bool}``; ``run_pass``: the pass to ask (default ``pass_for(policy)``);
    ``viewer``: the user asking (the job's owner reads "your QOS ...").
    """
    job = next((j for j in snapshot.pending if j.job_id == job_id), None)
    if job is None:
        raise JobNotPending(job_id)
    run = run_pass or pass_for(policy)
    plan = run(head_of_queue(snapshot, job_id), policy)  # the same start, less work
    now = snapshot.now
    start = start_of(plan, job_id, now)
    started = next((s for s in plan.starts if s.job_id == job_id), None)
    reason = reasons.NONE if started else plan.reasons.get(job_id, reasons.NONE)
    planned = started.nodes if started else plan.planned_nodes.get(job_id, ())
    factors = factors or {}
    out = JobExplanation(
        job_id=job_id,
        state="PENDING",
        now=now,
        user=job.user,
        partition=job.partition,
        priority=job.priority,
        factors=flatten_factors(factors.get("weighted") or {}),
        norm_factors=flatten_factors(factors.get("norm") or {}),
        direct=bool(factors.get("direct", False)),
        queue=queue_place(snapshot, job, plan),
        reason=reason,
        reason_text=REASON_TEXT.get(reason, ""),
        starts_now=started is not None,
        estimated_start=start,
        planned_nodes=list(planned),
        time_limit=job.time_limit,
    )
    partition = next((p for p in snapshot.partitions if p.name == job.partition), None)
    if partition is not None:
        out.nodes = node_lacks(snapshot, policy, job, partition.nodes)
    out.never = never_limits(snapshot, policy, job) if not started else []
    out.user_limit = user_limit(snapshot, policy, job, reason, viewer == job.user)
    # a job that can never run waits for no job: the limits above are what blocks it
    out.blockers = [] if out.never else blockers(snapshot, job, plan, start, planned, out)
    out.suggestions = suggest(snapshot, policy, job, start, plan, run)
    out.notes = notes(job, reason, start, now, bool(out.suggestions), bool(out.never))
    return out


def flatten_factors(part: Mapping[str, Any]) -> dict[str, float]:
    """``{"age": 500, "tres": {"cpu": 3}, "nice": 0, ...}`` -> ``{"age": 500.0,
    "tres:cpu": 3.0, "nice": 0.0}`` in sprio's column order."""
    out = {k: float(part[k]) for k in FACTOR_ORDER if k in part}
    for name, value in sorted((part.get("tres") or {}).items()):
        out[f"tres:{name}"] = float(value)
    for k in ("site", "nice"):
        if k in part:
            out[k] = float(part[k])
    return out


def queue_place(snapshot: Snapshot, job: PendingJob, plan: Plan | None = None) -> QueuePlace:
    """Its 1-based position overall and in its partition, and the eligible jobs ahead
    of it on shared nodes.  Jobs that cannot run now compete with nobody: held, begin
    time to come, a dependency, and -- with the ``plan`` of the pass -- those the pass
    passes over for a QOS limit or a request no node can hold."""
    order = queue_order(snapshot)
    index = next(i for i, j in enumerate(order) if j.job_id == job.job_id)
    partitions = {p.name: p for p in snapshot.partitions}
    members = {p.name: set(p.nodes) for p in snapshot.partitions}
    mine = members.get(job.partition, set())
    same = [j for j in order if j.partition == job.partition]
    started = set(plan.started_ids) if plan is not None else set()
    ahead = sum(
        1
        for j in order[:index]
        if members.get(j.partition, set()) & mine
        and wait_reason(j, partitions.get(j.partition), snapshot.now) is None
        and (plan is None or _competes(plan, started, j.job_id))
    )
    return QueuePlace(
        position=index + 1,
        pending=len(order),
        partition_position=next(i for i, j in enumerate(same) if j.job_id == job.job_id) + 1,
        partition_pending=len(same),
        ahead_on_nodes=ahead,
    )


def _competes(plan: Plan, started: set[int], job_id: int) -> bool:
    """Does the pass start ``job_id`` or keep it waiting for nodes (not for a limit)?"""
    return job_id in started or plan.reasons.get(job_id, reasons.NONE) in WAITING_FOR_NODES


def blockers(
    snapshot: Snapshot,
    job: PendingJob,
    plan: Plan,
    start: float | None,
    planned: tuple[str, ...],
    report: JobExplanation,
) -> list[Blocker]:
    """The jobs that stand between ``job`` and its start (see the module docstring)."""
    now = snapshot.now
    if start is not None and start <= now:
        return []
    partition = next((p for p in snapshot.partitions if p.name == job.partition), None)
    where = set(planned) or set(partition.nodes if partition else ())
    out: list[Blocker] = []
    if start is not None and planned:  # the running jobs whose end lets it start
        for r in snapshot.running:
            on = set(r.nodes) & where
            if on and r.end_time is not None and r.end_time <= start:
                out.append(_running(r, on))
    elif report.nodes:  # no estimate: the running jobs on the nodes where it lacks something
        short = {n.node for n in report.nodes if not n.fits_now}
        for r in snapshot.running:
            on = set(r.nodes) & short & where
            if on:
                out.append(_running(r, on))
    order = queue_order(snapshot)
    index = next(i for i, j in enumerate(order) if j.job_id == job.job_id)
    need_until = now + job.time_limit * 60 if job.time_limit is not None else None
    starts = {s.job_id: s for s in plan.starts}
    for higher in order[:index]:
        s = starts.get(higher.job_id)
        if s is not None:
            if set(s.nodes) & where:
                gpus = [f"{a.node}:{g}" for a in s.allocs for g in a.gpus]
                end = now + higher.time_limit * 60 if higher.time_limit is not None else None
                out.append(
                    Blocker(
                        higher.job_id,
                        "starting",
                        higher.user,
                        list(s.nodes),
                        now,
                        end,
                        s.cpus,
                        gpus,
                    )
                )
            continue
        at = plan.estimates.get(higher.job_id)
        nodes = plan.planned_nodes.get(higher.job_id, ())
        if at is None or not set(nodes) & where:
            continue
        if (start is None or at <= start) and (need_until is None or at < need_until):
            end = at + higher.time_limit * 60 if higher.time_limit is not None else None
            out.append(Blocker(higher.job_id, "reservation", higher.user, list(nodes), at, end))
    if report.reason == reasons.PRIORITY and not any(b.kind != "running" for b in out):
        first = next(
            (
                j
                for j in order[:index]
                if j.partition == job.partition and plan.reasons.get(j.job_id) == reasons.RESOURCES
            ),
            None,
        )
        if first is not None:
            out.append(Blocker(first.job_id, "priority", first.user))
    return out


def _running(r: Any, on: set[str]) -> Blocker:
    gpus = [f"{a.node}:{g}" for a in r.allocs if a.node in on for g in a.gpus]
    cpus = sum(a.cpus for a in r.allocs if a.node in on)
    nodes = [a.node for a in r.allocs if a.node in on]
    return Blocker(r.job_id, "running", r.user, nodes, r.start_time, r.end_time, cpus, gpus)


def notes(
    job: PendingJob,
    reason: str,
    start: float | None,
    now: float,
    suggested: bool,
    never: bool = False,
) -> list[str]:
    """Plain-words remarks for what the report's numbers do not say."""
    out = []
    if never and not job.held:
        out.append(
            f"as asked it can never run: change the request (`scontrol update jobid={job.job_id}`"
            " or cancel and submit again)"
        )
        return out
    if job.held == reasons.JOB_HELD_USER:
        out.append(f"it is held: `scontrol release {job.job_id}` lets it be scheduled")
    elif job.held:
        out.append("it is held by an administrator: only an operator can release it")
    elif reason == reasons.BAD_CONSTRAINTS:
        out.append("no node of its partition can ever hold it: change the request")
    elif reason in reasons.USER_LIMITS:
        out.append(
            f"the scheduler passes it over while its reason ({reason}) holds: it can start "
            "once the user's jobs holding the limit end, or an administrator raises it"
        )
    elif reason not in WAITING_FOR_NODES:
        out.append(f"the scheduler passes it over while its reason ({reason}) holds")
    elif start is None:
        out.append("the plan has no start time for it (not examined, or beyond bf_window)")
    if start is not None and start > now and not suggested:
        out.append("no change to --time, GPUs, CPUs, nodes, memory or partition starts it sooner")
    return out
