"""Idle GPUs in the controller: read the usage, flag, warn, requeue or cancel.

``SlurmliteIdleGpuPolicy`` (``slurmlite.idlegpus``) says when a running
job's GPUs count as idle and what follows; the pure state machine is
``slurmlite.idlewatch``.  This module is the mechanism around them.  Once
per ``SlurmliteHeartbeatInterval`` (the agents' usage cannot change faster)
the loop calls :meth:`IdleGpuCheck.run`, which

1. reads the running jobs whose partition or QOS has a policy (slurm.conf,
   ``sacctmgr ... set IdleGpuPolicy=``: ``slurmlite.idlegpus.policy_for``
   lays them over each other) and their runs' latest usage rows
   (``job_usage``, the agents' cumulative summaries), and hands each run's
   per-GPU counters (``(node, index) -> (util_sum, samples)``) to the watch.  Jobs without GPU figures are not judged, and
   interactive allocations (``salloc``, ``srun --pty``) are judged by the
   same GPU signal as batch jobs: their steps' samples, and, while no step
   runs, GPUs that nothing can be using (one idle sample per check);
2. applies what changed:

   * FLAGGED: the job's reason becomes ``GpusIdle`` (``squeue -o %r``,
     ``scontrol show job``'s ``Reason=``), a warning goes to the controller
     log, and ``slurmlite explain`` says since when and what happens next
     (:func:`flag_text`).  A batch job's batch host is sent a ``note``
     order (signed like a terminate order, delivered after the pass like
     every order, a failure only logged) that appends :func:`note_line` to
     the job's stderr, e.g. ``slurmstepd-n1: warning: job 7: its GPUs have
     been under 5 % for 10:00; it will be requeued at ... unless they get
     busy (SlurmliteIdleGpuPolicy)``; once per flag, since the watch says
     FLAGGED once until a busy interval clears it.  An allocation has no
     batch step, so no file to write to: it gets none.  A job with a ``--mail-type`` (any) also gets a
     ``GPUS_IDLE`` notification in the outbox (``controller.notify``), to
     its ``--mail-user`` and the cluster's webhook, e.g. ``Slurm Job_id=7
     Name=train GPUs idle since ...; will be requeued at ...``; the requeue
     or cancel that follows raises the usual REQUEUE or END events;
   * CLEARED: a busy interval; the reason goes back to ``None``;
   * DUE: ``action=requeue`` requeues the run (restart cause ``idle_gpus``,
     ``controller.sched.requeue``), ``action=cancel`` cancels it with reason
     ``GpusIdle``; either way its nodes are told to terminate it, with
     ``*** JOB 7 ON n1 CANCELLED AT ... DUE TO IDLE GPUS ***`` in the job's
     output.  A job that cannot be requeued (``--no-requeue``, or an
     allocation without a batch script) is cancelled instead.

The watch lives in memory: after a controller restart each window starts
again, and a stored ``GpusIdle`` of a run the new watch has not flagged is
set back to ``None`` at the first check.

Example (threshold 5 %, window 600 s, grace 120 s, action requeue): job 7's
GPU averages 1 % from t=0; the check at t=600 flags it (reason GpusIdle,
"will be requeued at t=720"); the check at t=720 requeues it: PENDING,
restarts 1, RestartCauses ``idle_gpus``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from sqlalchemy import select, tuple_

from controller.nodes.agent_client import AgentOrder
from controller.notify.outbox import destinations, enqueue
from controller.sched.requeue import requeue_run
from controller.steps.ends import running_steps
from controller.store.models import JobRow, QosRow
from controller.store.models_usage import JobUsageRow
from controller.store.rows import add_flag, split_list
from slurmlite import mailtype, reasons
from slurmlite.idlegpus import IdleGpuPolicy, enabled_partitions, policy_for, settings
from slurmlite.idlewatch import Change, Counters, Flag, IdleWatch
from slurmlite.restarts import IDLE_GPUS
from slurmlite.timefmt import fmt_compact, fmt_timestamp

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from controller.sched.parts import SchedParts

log = logging.getLogger("slurmctld.idlegpus")

_DONE = {"requeue": "requeued", "cancel": "cancelled"}
EVENT = "GPUS_IDLE"  # the outbox's event name of a flag (not one of Slurm's mail types)


class IdleGpuCheck:
    """The periodic check (module doc); ``watch`` holds the runs between checks."""

    def __init__(self, parts: SchedParts) -> None:
        self.parts = parts
        self.watch = IdleWatch()
        self._last: float | None = None  # when the last check ran
        # (job, run) -> checks that found the allocation without a running step
        self._idle_reads: dict[tuple[int, int], int] = {}

    def run(self) -> list[AgentOrder]:
        """Check if one is due: the terminate orders of the runs requeued or cancelled."""
        parts, now = self.parts, self.parts.clock()
        first = self._last is None
        if not first and now - self._last < parts.cfg.heartbeat_interval:  # type: ignore[operator]
            return []
        self._last = now
        with parts.db.read() as s:
            qos = _qos_layers(s)
        partitions = enabled_partitions(parts.cfg)
        if not partitions and not qos and not self.watch.runs and not first:
            return []  # off, and no flag of ours to take back
        orders: list[AgentOrder] = []
        with parts.db.write() as s:
            q = select(JobRow).where(JobRow.state == "RUNNING")
            if not qos:  # slurm.conf alone says which jobs are judged
                q = q.where(JobRow.partition.in_(partitions))
            found: dict[tuple[str, str], IdleGpuPolicy | None] = {}
            rows: dict[int, tuple[JobRow, IdleGpuPolicy]] = {}
            for row in s.scalars(q) if partitions or qos else ():
                key = (row.partition, qos.get(row.qos, ""))
                if key not in found:
                    found[key] = policy_for(parts.cfg, *key)
                if found[key] is not None:
                    rows[row.id] = (row, found[key])  # type: ignore[assignment]
            counters = _counters(s, [(row.id, row.restarts) for row, _ in rows.values()])
            self._stepless_allocations(s, rows, counters)
            for job_id, (row, policy) in rows.items():
                if job_id in counters:
                    change = self.watch.observe(job_id, row.restarts, policy, counters[job_id], now)
                    orders += self._apply(s, row, change, now)
            self.watch.keep_only({j for j, (r, _) in rows.items() if r.state == "RUNNING"})
            self._idle_reads = {k: v for k, v in self._idle_reads.items() if k[0] in rows}
            # flags this watch does not hold: set before a restart, or the policy went away
            stale = select(JobRow).where(
                JobRow.state == "RUNNING", JobRow.reason == reasons.GPUS_IDLE
            )
            for row in s.scalars(stale):
                if self.watch.flag(row.id) is None:
                    row.reason = reasons.NONE
        return orders

    def _stepless_allocations(
        self, s: Session, rows: dict[int, tuple[JobRow, IdleGpuPolicy]], counters: dict
    ) -> None:
        """An allocation with GPUs and no running step has nothing on its nodes, so its
        GPUs are idle although no agent samples them: each such check adds one idle
        sample to a counter of its own (``("", -1)``), so ``salloc`` left open over a
        shell that runs nothing is judged like a batch job whose GPUs sit at 0 %."""
        for job_id, (row, _) in rows.items():
            holds = row.gpus_per_node or row.gpus_total
            if not row.allocation or not holds or running_steps(s, job_id, row.restarts):
                continue
            key = (job_id, row.restarts)
            self._idle_reads[key] = self._idle_reads.get(key, 0) + 1
            counters.setdefault(job_id, {})[("", -1)] = (0.0, self._idle_reads[key])

    def describe(self, job_id: int) -> str | None:
        """What ``slurmlite explain`` adds for a flagged running job; None if not flagged."""
        flag = self.watch.flag(job_id)
        return flag_text(flag) if flag is not None else None

    def _apply(self, s: Session, row: JobRow, change: Change, now: float) -> list[AgentOrder]:
        if change is Change.FLAGGED:
            row.reason = reasons.GPUS_IDLE
            flag: Flag = self.watch.flag(row.id)  # type: ignore[assignment]
            text = flag_text(flag)
            log.warning(
                "event=gpus_idle job=%s user=%s nodes=%s text=%r next=%s",
                row.id, row.user, row.nodes, text,
                "use the GPUs or scancel the job if it is done",
            )  # fmt: skip
            self._notify(s, row, text, now)
            if row.batch_host and not row.allocation:  # the batch step's stderr (module doc)
                line = note_line(row.id, row.batch_host, flag)
                return [AgentOrder("note", row.id, row.batch_host, row.restarts, message=line)]
        elif change is Change.CLEARED:
            row.reason = reasons.NONE
            log.info("event=gpus_busy_again job=%s", row.id)
        elif change is Change.DUE:
            due = self.watch.flag(row.id)
            return self._act(s, row, due.policy.action if due else "cancel", now)
        return []

    def _notify(self, s: Session, row: JobRow, text: str, now: float) -> None:
        """The flag's notification, for a job that asked for mail (module doc)."""
        if not mailtype.words(row.mail_type):
            return
        subject = f"Slurm Job_id={row.id} Name={row.name} {text}"
        for to in destinations(lambda: self.parts.cfg.webhook)(row):
            enqueue(s, row.id, row.restarts, EVENT, to, subject, now)

    def _act(self, s: Session, row: JobRow, action: str, now: float) -> list[AgentOrder]:
        """Requeue or cancel the run; the orders that stop it on its nodes."""
        stamp = fmt_timestamp(now)
        orders = [
            AgentOrder(
                "terminate",
                row.id,
                node,
                row.restarts,
                message=(
                    f"slurmstepd-{node}: error: *** JOB {row.id} ON {node} CANCELLED AT "
                    f"{stamp} DUE TO IDLE GPUS ***"
                    if node == row.batch_host
                    else None
                ),
            )
            for node in split_list(row.nodes)
        ]
        if action == "requeue" and row.requeue and not row.allocation:
            delay = int(self.parts.cfg.scheduler_parameters.get("requeue_delay", 120))
            requeue_run(s, row, now, delay, IDLE_GPUS, keep_batch_step=True)
            row.state_desc, row.cancelled_by = None, None
        else:
            action = "cancel"
            row.state, row.reason, row.end_time = "CANCELLED", reasons.GPUS_IDLE, now
            # an allocation has nothing on its nodes but its steps: without any it ends at once
            if not row.allocation or running_steps(s, row.id, row.restarts):
                row.flags = add_flag(row.flags, "COMPLETING")
        log.warning("event=gpus_idle_%s job=%s user=%s", _DONE[action], row.id, row.user)
        return orders


def flag_text(flag: Flag) -> str:
    """``GPUs idle since 2026-12-06T10:02:00 (under 5 % for 2:00:00); will be requeued at
    2026-12-06T10:32:00`` -- the one wording of a flag (explain, the log)."""
    text = f"GPUs idle since {fmt_timestamp(flag.idle_since)} ({_idle_for(flag)})"
    if flag.action_at is None:
        return text + "; warned only (action=warn)"
    return text + f"; will be {_next(flag)}"


def note_line(job_id: int, node: str, flag: Flag) -> str:
    """The line a flag adds to the job's stderr, in the words of the node's kill lines:
    ``slurmstepd-n1: warning: job 12: its GPUs have been under 5 % for 2:00:00; it will
    be requeued at 2026-12-06T10:32:00 unless they get busy (SlurmliteIdleGpuPolicy)``."""
    head = f"slurmstepd-{node}: warning: job {job_id}: its GPUs have been {_idle_for(flag)}"
    if flag.action_at is None:
        return head + "; this is a warning only (SlurmliteIdleGpuPolicy)"
    return head + f"; it will be {_next(flag)} unless they get busy (SlurmliteIdleGpuPolicy)"


def _idle_for(flag: Flag) -> str:
    """``under 5 % for 2:00:00``: the policy's idea of idle."""
    return f"under {flag.policy.threshold:g} % for {fmt_compact(flag.policy.window)}"


def _next(flag: Flag) -> str:
    """``requeued at 2026-12-06T10:32:00``: what an acting flag leads to, and when."""
    return f"{_DONE[flag.policy.action]} at {fmt_timestamp(flag.action_at)}"  # type: ignore[arg-type]


def _qos_layers(s: Session) -> dict[str, str]:
    """The QOS that carry an idle-GPU setting: name -> setting (a bad one is skipped)."""
    q = select(QosRow.name, QosRow.idle_gpu_policy).where(QosRow.idle_gpu_policy != "")
    out = {}
    for name, text in s.execute(q):
        try:
            settings(text)
        except ValueError as e:
            log.warning("event=bad_qos_idle_gpu_policy qos=%s error=%r next=%s", name, str(e),
                        "set it again with sacctmgr modify qos")  # fmt: skip
            continue
        out[name] = text
    return out


def _counters(s: Session, runs: list[tuple[int, int]]) -> dict[int, Counters]:
    """Each run's per-GPU counters from its nodes' latest usage rows (runs without any
    GPU figure are left out)."""
    out: dict[int, Counters] = {}
    for i in range(0, len(runs), 500):
        part = runs[i : i + 500]
        q = select(JobUsageRow).where(tuple_(JobUsageRow.job_id, JobUsageRow.restart).in_(part))
        for usage in s.scalars(q):
            for gpu in _gpus(usage.gpus):
                key = (usage.node, int(gpu["index"]))
                sample = (float(gpu.get("util_sum", 0.0)), int(gpu.get("samples", 0)))
                out.setdefault(usage.job_id, {})[key] = sample
    return out


def _gpus(text: str | None) -> list[dict]:  # type: ignore[type-arg]
    """The ``gpus`` JSON of a usage row; an unreadable one counts as no GPU."""
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    return [g for g in value if isinstance(g, dict) and isinstance(g.get("index"), int)]
