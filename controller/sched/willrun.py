"""``sbatch --test-only``: when and where would this job start if queued now?

Slurm answers with a *will-run* test and prints
``Job N to start at <time> using C processors on nodes <hostlist> in partition P``
(nothing is queued).  slurmlite asks the scheduler itself: the request
becomes a pending job exactly as it would be queued (its priority, submit
time now), is added to a fresh snapshot of the cluster (running jobs with
their time limits, every pending job), and the same pure pass the loop runs
every ``bf_interval`` (backfill: main pass, then reservations and
estimates) decides:

* the pass starts it -> "to start at" now, on the nodes it chose;
* the pass estimates it -> that expected start and the planned nodes;
* neither (an UNLIMITED job holds what it needs, the partition is down,
  its start lies beyond ``bf_window``) -> ``SlurmError``, which sbatch prints
  as ``allocation failure: <error>`` (exit 1).

So, unlike Slurm's test (which looks at running jobs only), the estimate
counts the jobs queued ahead of it, as the real pass would.  The pass must
examine the probe even behind a deep queue: ``bf_max_job_test`` is raised
to reach it for this one run.

Example: n1, n2 (2 CPUs) both busy with ``--time=10`` jobs started at
t=1000; at t=1200, ``sbatch --test-only -n1`` -> "Job 23 to start at
<t=1600> using 1 processors on nodes n1 in partition debug".
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from controller.sched import gather
from controller.sched.gather import pending_job
from slurmlite import errors, reasons
from slurmlite.errors import SlurmError
from slurmlite.hostlist import compress
from slurmlite.scheduler.backfill import backfill_pass
from slurmlite.scheduler.passes import queue_order
from slurmlite.scheduler.snapshot import Policy, Snapshot
from slurmlite.timefmt import fmt_timestamp

if TYPE_CHECKING:
    from controller.nodes.service import NodeService
    from controller.store.db import Database
    from slurmlite.config import Config

# reasons that name why the job can never start as things are, with Slurm's error
_ERRORS = {
    reasons.PARTITION_DOWN: errors.ESLURM_PARTITION_DOWN,
    reasons.PARTITION_INACTIVE: errors.ESLURM_PARTITION_DOWN,
}


def test_only_message(
    db: Database,
    cfg: Config,
    nodes: NodeService,
    policy: Policy,
    job_id: int,
    values: dict[str, Any],
    now: float,
) -> str:
    """The "to start at" line for the request ``values`` (a job row's columns)."""
    row = SimpleNamespace(**values)  # read as pending_job reads a job row
    probe = dataclasses.replace(pending_job(row), held=None, begin_time=None)
    snap, _ = gather.take(db, cfg, nodes, now, extra=(probe,))
    plan = backfill_pass(snap, examining(snap, probe.job_id, policy))
    part = values["partition"]
    start = next((s for s in plan.starts if s.job_id == job_id), None)
    if start is not None:
        when, nodes, cpus = now, start.nodes, start.cpus
    elif job_id in plan.estimates:
        when, nodes = plan.estimates[job_id], plan.planned_nodes.get(job_id, ())
        cpus = int(values.get("num_cpus") or 1)
        if probe.exclusive:  # whole nodes
            size = {n.name: n.cpus for n in snap.nodes}
            cpus = sum(size.get(n, 0) for n in nodes) or cpus
    else:
        reason = plan.reasons.get(job_id, reasons.RESOURCES)
        code = _ERRORS.get(reason, errors.ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE)
        raise SlurmError(code, f"no start time within the scheduling window ({reason})")
    return (
        f"Job {job_id} to start at {fmt_timestamp(max(when, now))} using {cpus} processors "
        f"on nodes {compress(list(nodes))} in partition {part}"
    )


def examining(snap: Snapshot, job_id: int, policy: Policy) -> Policy:
    """``policy`` with ``bf_max_job_test`` high enough for the pass to reach ``job_id``."""
    order = [j.job_id for j in queue_order(snap)]
    needed = order.index(job_id) + 1
    params = dict(policy.scheduler_parameters)
    configured = int(params.get("bf_max_job_test", 500) or 500)
    if needed <= configured:
        return policy
    params["bf_max_job_test"] = str(needed)
    return dataclasses.replace(policy, scheduler_parameters=params)
