"""The limits behind a pending job: the ones it can never meet, and the user's own.

Two questions ``slurmlite explain`` (``slurmlite.scheduler.explain``) and a
waiting ``srun``/``salloc`` ask:

* :func:`never_limits` -- can this request ever run, even on an idle
  cluster?  If not, which limits does it exceed, each with the request that
  would fit.  The limits are checked in the order in which fixing them leads
  to running, each on the request as the earlier answers would change it:

  1. the partition's node count (``-N 4`` on a 2-node partition);
  2. what the largest node can hold: GPUs, then CPUs, then memory (a job
     asking for CPUs decides how much memory ``--mem-per-cpu`` makes);
  3. the partition's ``MaxTime``;
  4. the QOS limits no running job is needed to break: ``MaxWall``,
     ``MaxTRESPerJob``, and ``MaxTRESPerUser`` below the job's own size.

  The first answer is *the* limit to fix; the rest follow in order.

* :func:`user_limit` -- the job waits for a per-user QOS limit
  (``QOSMaxJobsPerUserLimit``, ``QOSMaxGRESPerUser``...): which limit, and
  which of the user's running jobs hold it.  Addressed to the job's owner
  ("your QOS ...") or, for anyone else, naming the owner.

Example: partition debug of two nodes with 8 GPUs each; ``-N 4
--gres=gpu:9 --time=2:00:00`` with ``MaxTime=1:00:00`` ->
``["partition debug has 2 nodes; ask for -N 2 or fewer",
"the largest node of partition debug has 8 GPUs; ask for --gpus-per-node=8 or fewer",
"partition debug allows at most 1:00:00 (MaxTime); ask for --time=1:00:00 or less"]``.

Pure: reads the snapshot and the policy only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from slurmlite import reasons
from slurmlite.scheduler.limits import LimitTracker, job_demand
from slurmlite.scheduler.select import eligible, fits_when_idle
from slurmlite.scheduler.shape import job_shape, memory_rule, min_nodes
from slurmlite.scheduler.snapshot import NodeView, PendingJob, Policy, Snapshot
from slurmlite.timefmt import fmt_limit_compact

_TRES_WORDS = {"cpu": "CPUs", "mem": "MiB of memory", "node": "nodes", "gres/gpu": "GPUs"}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _tres_words(name: str) -> str:
    if name.startswith("gres/gpu:"):
        return f"{name[9:]} GPUs"
    return _TRES_WORDS.get(name, name)


def never_limits(snapshot: Snapshot, policy: Policy, job: PendingJob) -> list[str]:
    """The limits ``job`` can never meet as asked, the one to fix first first (see above)."""
    partition = next((p for p in snapshot.partitions if p.name == job.partition), None)
    if partition is None:
        return []
    out: list[str] = []
    size = len(partition.nodes)
    members = set(partition.nodes)
    nodes = [n for n in snapshot.nodes if n.name in members]
    if size and min_nodes(job) > size:
        out.append(_node_count(job, partition.name, size))
        job = dataclasses.replace(
            job,
            nodes_min=min(job.nodes_min, size),
            nodes_max=None if job.nodes_max is None else min(job.nodes_max, size),
            ntasks_per_node=None if job.ntasks is not None else job.ntasks_per_node,
        )
    if nodes and not fits_when_idle(job, policy, nodes):
        out += _node_size(job, policy, partition.name, nodes)
    if partition.max_time is not None and (
        job.time_limit is None or job.time_limit > partition.max_time
    ):
        limit = fmt_limit_compact(partition.max_time)
        out.append(
            f"partition {partition.name} allows at most {limit} (MaxTime); "
            f"ask for --time={limit} or less"
        )
    return out + _qos_never(snapshot, policy, job)


def _node_count(job: PendingJob, partition: str, size: int) -> str:
    have = f"partition {partition} has {size} node{'s' * (size != 1)}"
    if job.nodes_min > size or not job.ntasks_per_node:
        return f"{have}; ask for -N {size} or fewer"
    most = size * job.ntasks_per_node
    return (
        f"{have} and --ntasks-per-node={job.ntasks_per_node} puts {job.ntasks} tasks on "
        f"{min_nodes(job)}; ask for -n {most} or fewer, or more tasks per node"
    )


def _node_size(
    job: PendingJob, policy: Policy, partition: str, nodes: Sequence[NodeView]
) -> list[str]:
    """What no node of the partition can hold (GPUs, CPUs, memory), each with the fix."""
    out: list[str] = []
    pool = [n for n in nodes if eligible(job, n)] or list(nodes)
    largest = f"the largest node of partition {partition} has"
    if job.wants_gpus:
        gpu_nodes = [n for n in pool if n.gpus]
        most = max((n.gpus for n in gpu_nodes), default=0)
        shape = job_shape(job)
        if most == 0:
            out.append(f"no node of partition {partition} has GPUs; ask for a partition that has")
        elif job.gpus_per_node > most:
            total = job.gpus_per_node * shape.nodes_min
            spread = _ceil(total, most)
            text = f"{largest} {most} GPUs; ask for --gpus-per-node={most} or fewer"
            if spread <= len(gpu_nodes):
                text += f", or spread with -N {spread} --gpus-per-node={_ceil(total, spread)}"
            out.append(text)
            job = dataclasses.replace(job, gpus_per_node=most)
        elif job.gpus_total and job.gpus_total > most * shape.nodes_max:
            spread = _ceil(job.gpus_total, most)
            text = f"{largest} {most} GPUs; ask for --gpus={most * shape.nodes_max} or fewer"
            if spread <= len(gpu_nodes):
                text += f", or spread with -N {spread}"
            out.append(text)
            job = dataclasses.replace(job, gpus_total=most * shape.nodes_max)
    cpus = max((n.cpus for n in pool), default=0)
    shape = job_shape(job)
    cpt = shape.cpus_per_task
    # the fewest tasks a node must take: fixed per node, or the tasks over the most nodes
    per_node = shape.per_node if shape.tasks is None else _ceil(shape.tasks, shape.nodes_max)
    per_node = per_node or 1
    if cpus and cpt > cpus:
        out.append(f"{largest} {cpus} CPUs; ask for --cpus-per-task={cpus} or fewer")
        job = dataclasses.replace(job, cpus_per_task=cpus)
        cpt = cpus
    elif cpus and per_node * cpt > cpus:
        fit = max(1, cpus // cpt)
        if shape.tasks is None:
            text = f"{largest} {cpus} CPUs; ask for --ntasks-per-node={fit} or fewer"
        else:
            text = f"{largest} {cpus} CPUs; ask for -n {fit * shape.nodes_max} or fewer"
            if _ceil(shape.tasks, fit) <= len(nodes):
                text += f", or spread with -N {_ceil(shape.tasks, fit)}"
        out.append(text)
        per_node = fit
    mem = max((n.real_memory for n in pool), default=0)
    rule = memory_rule(job, policy)
    if mem and rule.kind == "node" and rule.amount > mem:
        out.append(f"{largest} {mem} MiB of memory; ask for --mem={mem}M or less")
    elif mem and rule.kind == "cpu" and rule.amount * per_node * cpt > mem:
        fit = mem // (per_node * cpt)
        out.append(
            f"{largest} {mem} MiB of memory for {per_node * cpt} CPUs; "
            f"ask for --mem-per-cpu={fit}M or less"
        )
    elif mem and rule.kind == "gpu" and job.gpus_per_node and rule.amount * job.gpus_per_node > mem:
        fit = mem // job.gpus_per_node
        out.append(
            f"{largest} {mem} MiB of memory for {job.gpus_per_node} GPUs; "
            f"ask for --mem-per-gpu={fit}M or less"
        )
    if not out:
        out.append(f"no node of partition {partition} can hold this request, even idle")
    return out


def _qos_never(snapshot: Snapshot, policy: Policy, job: PendingJob) -> list[str]:
    """The QOS limits ``job`` breaks with none of its user's jobs running."""
    enforce = bool(getattr(policy, "enforce_limits", True))
    tracker = LimitTracker(snapshot.qos, (), enforce, partitions=snapshot.partitions)
    if not tracker.enforce:
        return []
    rules = tracker.rules(job)
    out: list[str] = []
    if rules.max_jobs is not None and rules.max_jobs[1] <= 0:
        out.append(f"QOS {rules.max_jobs[0]} allows no running job per user; ask for another --qos")
    if rules.max_wall is not None and (job.time_limit is None or job.time_limit > rules.max_wall):
        limit = fmt_limit_compact(rules.max_wall)
        qos = next((q.name for q in tracker.chain(job) if q.max_wall is not None), job.qos)
        out.append(f"QOS {qos} allows at most {limit} (MaxWall); ask for --time={limit} or less")
    demand = job_demand(job)
    for name, cap, _why in rules.per_job:
        if demand.get(name, 0) > cap:
            out.append(
                f"its QOS allows at most {cap} {_tres_words(name)} per job (MaxTRESPerJob); "
                f"this job asks for {demand[name]}: ask for {cap} or fewer"
            )
    for name, qos, cap, _why in rules.per_user:
        if demand.get(name, 0) > cap:
            out.append(
                f"QOS {qos} allows at most {cap} {_tres_words(name)} per user (MaxTRESPerUser); "
                f"this job alone asks for {demand[name]}: ask for {cap} or fewer"
            )
    return out


def user_limit(snapshot: Snapshot, policy: Policy, job: PendingJob, reason: str, you: bool) -> str:
    """Which per-user limit holds ``job`` back and which of the user's running jobs hold it
    (empty when ``reason`` is no such limit).  ``you``: the job's owner asks."""
    if reason not in reasons.USER_LIMITS:
        return ""
    tracker = LimitTracker.for_snapshot(snapshot, policy)
    if not tracker.enforce:
        return ""
    rules = tracker.rules(job)
    whose = "your" if you else f"{job.user}'s"
    if reason == reasons.QOS_MAX_JOBS_PER_USER and rules.max_jobs is not None:
        qos, cap = rules.max_jobs
        ids = _holding(snapshot, tracker, job, qos, None)
        jobs = f"job{'s' * (cap != 1)}"
        return (
            f"{_whose_qos(job, qos, whose)} allows {cap} running {jobs} per user; "
            f"{len(ids)} of {whose} jobs ({_ids(ids)}) {'is' if len(ids) == 1 else 'are'} running"
        )
    demand = job_demand(job, gpu_types={n.name: n.gpu_type for n in snapshot.nodes if n.gpus})
    for name, qos, cap, why in rules.per_user:
        if why != reason:
            continue
        used = tracker.usage(qos, job.user)[1].get(name, 0)
        if used + demand.get(name, 0) <= cap:
            continue
        ids = _holding(snapshot, tracker, job, qos, name)
        words = _tres_words(name)
        return (
            f"{_whose_qos(job, qos, whose)} allows {cap} {words} per user; "
            f"{len(ids)} of {whose} running jobs ({_ids(ids)}) hold {used} "
            f"and this job asks for {demand.get(name, 0)}"
        )
    return ""


def _whose_qos(job: PendingJob, qos: str, whose: str) -> str:
    if qos == job.qos:
        return f"{whose} QOS {qos}"
    return f"the QOS {qos} of partition {job.partition}"


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids) or "none"


def _holding(
    snapshot: Snapshot, tracker: LimitTracker, job: PendingJob, qos: str, tres: str | None
) -> list[int]:
    """The running jobs of ``job``'s user counted in ``qos`` (holding ``tres``, if given)."""
    out = []
    for r in snapshot.running:
        if r.user != job.user or (r.end_time is not None and r.end_time <= snapshot.now):
            continue
        if qos not in (r.qos, tracker.part_qos.get(r.partition)):
            continue
        if tres is None or _holds(r, tres, snapshot):
            out.append(r.job_id)
    return sorted(out)


def _holds(r: object, tres: str, snapshot: Snapshot) -> bool:
    allocs = getattr(r, "allocs", ())
    if tres.startswith("gres/gpu"):
        kind = tres[9:].lower() if tres.startswith("gres/gpu:") else None
        types = {n.name: (n.gpu_type or "").lower() for n in snapshot.nodes}
        return any(a.gpus and (kind is None or types.get(a.node) == kind) for a in allocs)
    if tres == "mem":
        return any(a.mem for a in allocs)
    return bool(allocs)
