"""Step 3 of the loop: choose a pass, run it, write its plan to the store.

The policy is pure (``slurmlite.scheduler``); this module is the mechanism
around it, in the order of one pass:

1. priorities: ``parts.priorities.maybe_recalc(now)`` (multifactor priorities
   and fair-share, recomputed every PriorityCalcPeriod) before the snapshot,
   so the pass sees them;
2. which pass.  With ``SchedulerType=sched/backfill`` (the default) Slurm
   runs two schedulers: a cheap main pass on every event (a submission, a
   completion) and the full backfill pass every ``bf_interval`` seconds, and
   at start-up.  slurmlite does the same inside one loop: an *event pass*
   is ``passes.main_pass``; a *full pass* is ``parts.full_pass`` (the
   backfill pass: main pass, then reservations and estimates) once
   ``bf_interval`` has gone by since the last full one.  ``bf_interval=-1``
   disables backfill (every pass is the main pass); ``sched/builtin`` runs
   its only pass every time.  Every pass of those two is a full one;
3. the snapshot (``controller.sched.gather.take``) and the pass;
4. one transaction: the starting jobs become RUNNING with their
   allocation (and a batch step unless srun/salloc holds them); every
   pending job's reason is written *if it changed*; so are the estimates —
   expected start ``sched_start`` and planned nodes ``sched_nodes`` — under
   this rule:

   * a job that starts loses its estimate;
   * a full pass is the authority: a pending job it gives no estimate loses
     the one it had (held jobs, outside the snapshot, too);
   * an event pass writes what estimates it has (the main pass has none)
     and clears nothing, so backfill's estimates survive the cheap passes
     between two backfill passes, as in Slurm.

   Example: bf_interval=30; at t=0 the full pass estimates job 9 at t=600 on
   n2 -> sched_start=600, sched_nodes="n2"; event passes at t=3, 7 leave
   them; job 9 starts at t=12 -> both cleared; at t=30 the next full pass
   writes or clears the others' estimates afresh;
5. after the commit, launch orders are built and signed (submissions wait
   less for the store) and returned to the loop for delivery.

The loop keeps ``PassState``: the pending/running cache, when the last full
pass ran, and that pass's snapshot and plan (``SchedulerLoop.last_snapshot``
/ ``last_plan``: what ``slurmlite explain`` reads).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update

from controller.nodes.agent_client import AgentAddress
from controller.sched import array_tasks, deps, gather
from controller.sched.launch import build_launch
from controller.store.array_split import split_next
from controller.store.models import JobRow, NodeRow, StepRow
from slurmlite import reasons
from slurmlite.hostlist import compress_sorted
from slurmlite.protocol import LaunchSpec
from slurmlite.scheduler.backfill import BackfillParams
from slurmlite.scheduler.passes import main_pass
from slurmlite.scheduler.registry import backfills
from slurmlite.scheduler.snapshot import Plan, Policy, Snapshot

if TYPE_CHECKING:
    from controller.sched.parts import SchedParts

log = logging.getLogger("slurmctld.loop")

_TABLE = JobRow.__table__

Launch = tuple[LaunchSpec, AgentAddress]
Estimate = tuple[float | None, str | None]  # (sched_start, sched_nodes) as stored


@dataclass
class PassState:
    """What the loop keeps from pass to pass."""

    pending: gather.PendingCache = field(default_factory=gather.PendingCache)
    last_full: float | None = None  # the clock when the last full pass ran (None: not yet)
    snapshot: Snapshot | None = None  # the last full pass's input ...
    plan: Plan | None = None  # ... and its answer
    full: bool = False  # whether the latest pass was a full one
    full_passes: int = 0


def bf_interval(policy: Policy) -> float:
    """Seconds between backfill passes (``SchedulerParameters=bf_interval=N``); -1: none."""
    return float(BackfillParams.from_policy(policy).bf_interval)


def bf_window(policy: Policy) -> float:
    """Seconds ahead that estimates are shown (``bf_window``, minutes; default 1 day)."""
    return float(BackfillParams.from_policy(policy).bf_window) * 60.0


def choose_pass(
    parts: SchedParts, state: PassState, now: float
) -> tuple[Callable[..., Plan], bool]:
    """The pass to run now and whether it is a full one (see the module doc, step 2)."""
    if not backfills(parts.policy.scheduler_type):
        return parts.full_pass, True
    interval = bf_interval(parts.policy)
    if interval < 0:
        return main_pass, True
    last = state.last_full
    # a clock stepped back counts as due: better one early pass than none for a long time
    if last is None or now - last >= interval or now < last:
        return parts.full_pass, True
    return main_pass, False


def schedule(parts: SchedParts, state: PassState) -> list[Launch]:
    """One scheduling pass: decide, record, and the launch orders to send."""
    now = parts.clock()
    try:
        parts.priorities.maybe_recalc(now)
    except Exception:  # keep scheduling on the old priorities; logged, retried next pass
        log.exception("event=priority_recalc_failed")
    run, full = choose_pass(parts, state, now)
    marks: gather.Marks = {}
    blocked = deps.evaluate(parts.db, parts.cfg, now)  # before the snapshot: freed jobs join it
    room, limited = array_tasks.slots(parts.db)  # how many tasks each array may start
    blocked.update(limited)
    snap, current = gather.take(parts.db, parts.cfg, parts.nodes, now, state.pending, marks)
    if blocked:
        snap = replace(snap, pending=gather.with_reasons(snap.pending, blocked))
    shown = snap  # what explain and squeue --start read back: no aliases
    snap, aliases = array_tasks.expand(snap, room)
    state.full = full
    if full:
        state.last_full = now
        state.full_passes += 1
    if not snap.pending:
        if full:
            state.snapshot, state.plan = snap, Plan()
            _clear_held(parts)
        return []
    plan: Plan = run(snap, parts.policy)
    array_tasks.fold(plan, aliases)
    if full:
        state.snapshot, state.plan = shown, plan
    started, node_rows = _apply(parts, snap, plan, current, marks, full, now, aliases)
    # orders are built and signed after the commit: submissions wait less for the store
    launches: list[Launch] = []
    for row in started:
        host = node_rows[row.batch_host or ""]
        spec = build_launch(parts.cfg, parts.signer, row, node_rows, now)
        launches.append((spec, AgentAddress(host.name, host.addr, host.port)))
    return launches


def _apply(
    parts: SchedParts,
    snap: Snapshot,
    plan: Plan,
    current: dict[int, tuple[str, str | None]],
    marks: gather.Marks,
    full: bool,
    now: float,
    aliases: dict[int, int] | None = None,
) -> tuple[list[JobRow], dict[str, NodeRow]]:
    """Record ``plan`` in one transaction; the started batch jobs and the node rows."""
    started: list[JobRow] = []
    with parts.db.write() as s, s.no_autoflush:
        node_rows = {r.name: r for r in s.scalars(select(NodeRow))}
        # one query for the starting jobs and one for their old batch steps
        # (requeued runs); the changes go out in one flush at commit
        alias = aliases or {}
        wanted = list(dict.fromkeys(alias.get(st.job_id, st.job_id) for st in plan.starts))
        rows = {r.id: r for r in load_rows(s, JobRow, JobRow.id, wanted)}
        steps = {
            st.job_id: st
            for st in load_rows(s, StepRow, StepRow.job_id, wanted)
            if st.step_id == "batch"
        }
        seen = {j.job_id: j.partition for j in snap.pending}
        for start in plan.starts:
            row = rows.get(alias.get(start.job_id, start.job_id))  # an alias: its array's master
            # a hold or partition change since the snapshot (scontrol) wins over the plan
            if row is None or row.state != "PENDING" or row.hold:
                continue
            if row.partition != seen.get(row.id, row.partition):
                continue
            if row.array_pending:  # an array's master: its next task starts, as a row of its own
                row = split_next(s, row)
            row.state, row.reason, row.state_desc = "RUNNING", reasons.NONE, None
            row.start_time = now
            row.end_time = now + row.time_limit * 60 if row.time_limit is not None else None
            row.alloc = json.dumps(
                [
                    {"node": a.node, "cpus": a.cpus, "mem": a.mem, "gpus": list(a.gpus)}
                    for a in start.allocs
                ]
            )
            row.layout = ",".join(str(t) for t in start.tasks)
            row.nodes = ",".join(start.nodes)
            row.num_cpus = start.cpus
            row.batch_host = start.nodes[0]
            row.last_sched_eval = now
            row.sched_start = row.sched_nodes = None  # a job that starts loses its estimate
            marks.pop(row.id, None)
            log.info("event=start job=%s nodes=%s", row.id, row.nodes)
            if row.allocation:  # srun/salloc hold it: nothing to launch, no batch step
                row.keepalive = now
                continue
            step = steps.get(row.id)
            if step is None:
                step = StepRow(job_id=row.id, step_id="batch")
                s.add(step)
            # a requeued job's old batch step is reused as a new one
            step.name, step.state, step.exit_code = "batch", "RUNNING", None
            step.start_time, step.end_time, step.nodes = now, None, row.batch_host
            step.cpus, step.mem, step.ntasks = start.allocs[0].cpus, start.allocs[0].mem, 1
            started.append(row)
        _write_reasons(s, plan, current, now)
        horizon = now + bf_window(parts.policy)
        _write_estimates(s, wanted_estimates(plan, marks, full, horizon))
    if full:
        _clear_held(parts)
    return started, node_rows


def _write_reasons(
    s: Any, plan: Plan, current: dict[int, tuple[str, str | None]], now: float
) -> None:
    """Only reasons that changed are written: a pass over a deep queue stays cheap.

    Each reason written is checked against the vocabulary first
    (``reasons.check_pending``): a word outside it is a bug of the pass, so it
    raises ``UnknownReason`` and the transaction, starts included, is rolled back
    rather than showing squeue a reason Slurm does not have.
    """
    changed: dict[tuple[str, str | None], list[int]] = {}
    for job_id, reason in plan.reasons.items():
        unavailable = plan.unavailable_nodes.get(job_id)
        desc = None
        if unavailable:
            desc = f"ReqNodeNotAvail, UnavailableNodes:{compress_sorted(unavailable)}"
        if current.get(job_id) != (reason, desc):
            changed.setdefault((reason, desc), []).append(job_id)
    for (reason, desc), ids in changed.items():
        reasons.check_pending(reason)  # once per distinct reason: nearly free
        for i in range(0, len(ids), 500):
            s.execute(
                update(JobRow)
                .where(JobRow.id.in_(ids[i : i + 500]), JobRow.state == "PENDING")
                .values(reason=reason, state_desc=desc, last_sched_eval=now)
            )


def wanted_estimates(
    plan: Plan, marks: gather.Marks, full: bool, horizon: float = math.inf
) -> dict[int, Estimate]:
    """The (sched_start, sched_nodes) to write, for the pending jobs whose value changes.

    ``marks`` holds what is stored for the jobs still pending (started ones
    were taken out).  Estimates after ``horizon`` (now + bf_window) are not
    shown: a job behind an UNLIMITED one would read "in a year" (Slurm shows
    N/A there too, golden ``50_squeue_start``).  Example: marks
    {9: (600.0, "n2"), 10: (None, None)}, a full plan estimating only 10 at
    900 on n1 -> {9: (None, None), 10: (900.0, "n1")}.
    """
    out: dict[int, Estimate] = {}
    for job_id, stored in marks.items():
        start = plan.estimates.get(job_id)
        if start is not None and start > horizon:
            start = None
        if start is None:
            if full and stored != (None, None):
                out[job_id] = (None, None)
            continue
        nodes = ",".join(plan.planned_nodes.get(job_id, ())) or None
        if stored != (start, nodes):
            out[job_id] = (start, nodes)
    return out


def _write_estimates(s: Any, changes: dict[int, Estimate]) -> None:
    if not changes:
        return
    cleared = [i for i, v in changes.items() if v == (None, None)]
    for i in range(0, len(cleared), 500):
        s.execute(
            update(JobRow)
            .where(JobRow.id.in_(cleared[i : i + 500]), JobRow.state == "PENDING")
            .values(sched_start=None, sched_nodes=None)
        )
    values = [{"jid": i, "st": v[0], "sn": v[1]} for i, v in changes.items() if v != (None, None)]
    if values:  # one statement, many parameter sets (the live view reads every "jid")
        stmt = (
            update(_TABLE)
            .where(_TABLE.c.id == bindparam("jid"), _TABLE.c.state == "PENDING")
            .values(sched_start=bindparam("st"), sched_nodes=bindparam("sn"))
        )
        s.connection().execute(stmt, values)


def _clear_held(parts: SchedParts) -> None:
    """Held jobs are outside the snapshot: their estimates go at the next full pass."""
    with parts.db.read() as s:
        q = select(JobRow.id).where(
            JobRow.state == "PENDING", JobRow.hold.is_not(None), JobRow.sched_start.is_not(None)
        )
        ids = list(s.scalars(q))
    if ids:
        with parts.db.write() as s:
            s.execute(
                update(JobRow)
                .where(JobRow.id.in_(ids), JobRow.hold.is_not(None))
                .values(sched_start=None, sched_nodes=None)
            )


def load_rows(s: Any, model: type, key: Any, ids: list[int]) -> list[Any]:
    """Rows of ``model`` whose ``key`` is in ``ids``, fetched in chunks of 500."""
    out: list[Any] = []
    for i in range(0, len(ids), 500):
        out += s.scalars(select(model).where(key.in_(ids[i : i + 500])))
    return out
