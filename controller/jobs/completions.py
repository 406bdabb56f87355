"""Recording the ends agents report: a batch step, an srun step's part, a fenced run.

Agents post :class:`JobCompletion` messages in batches (``agent.completions``,
``POST /v1/nodes/{name}/completions``) and re-send until acknowledged, so
recording them must be idempotent: :meth:`CompletionRecorder.complete_many`
applies a whole batch in ONE transaction and answers one flag per message,
True when it changed something, False for a duplicate or a stale run (the
agent may then forget it either way).

What one message does, in order (``_complete_in``):

* an srun step's part (step id "0", "1", ...): ``controller.steps.ends``;
* the end of a run that was requeued meanwhile (the job is PENDING with the
  next restart count): only its batch step is closed
  (``controller.sched.requeue``);
* not this job's current run on this node: ignored;
* killed by its cut-off agent (``fenced``): the run is lost, not ended --
  ``lost_run`` requeues the job;
* a failed Prolog: nothing ran -- requeued held or FAILED
  (``controller.jobs.node_scripts``);
* otherwise the batch step ends with the raw wait status, and a RUNNING job
  takes its final state from it (``slurmlite.states.final_state``): e.g.
  ``exit 3`` (raw ``3 << 8``) is FAILED (NonZeroExitCode), death by a
  signal FAILED (RaisedSignal), the cgroup's OOM marker OUT_OF_MEMORY; a job with retries left is queued again instead
  (``controller.runs``).  A job already CANCELLED or TIMEOUT keeps its state;
  either way the COMPLETING flag is dropped, so its resources are free.

The job's ``system_comment`` (SystemComment) becomes the cause this run's
end gives (``controller.jobs.causes``): the agent's sentence for a launch
or Prolog failure, the memory used for an OOM kill, nothing for other ends.

Usage the message carries is recorded first (before any requeue), and after
the commit a node whose Prolog or Epilog failed is drained (``drain_after``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import defer

from controller.accounting.usage import record_usage
from controller.accounting.usage_history import UsageHistory
from controller.jobs.causes import oom_cause, run_cause
from controller.jobs.node_scripts import drain_after, prolog_failed
from controller.runs.service import RETRIED, retry_failed
from controller.sched.requeue import end_of_requeued_run
from controller.steps.ends import SPECIAL, end_part, step_state
from controller.store.db import Database
from controller.store.models import JobRow, StepRow
from controller.store.rows import allocs_of, drop_flag
from slurmlite import reasons
from slurmlite.crashpoints import crash_point
from slurmlite.protocol import JobCompletion
from slurmlite.states import final_state

if TYPE_CHECKING:
    from controller.jobs.validate import SubmitValidator


class CompletionRecorder:
    """The completion half of ``JobService`` (a mixin: it sets these attributes)."""

    db: Database
    validator: SubmitValidator
    clock: Callable[[], float]  # Unix seconds
    drain_node: Callable[[str, str], None] | None  # (node, why): a failed Prolog/Epilog
    lost_run: Callable[[int, int, str], None] | None  # (job, restarts, node): fenced
    usage_history: UsageHistory | None = None  # the dashboard's sparklines, fed at ingest

    def complete(self, node: str, msg: JobCompletion) -> bool:
        """Record the end of a job's batch step; idempotent.  Returns True if it changed something."""
        return self.complete_many(node, [msg])[0]

    def complete_many(self, node: str, msgs: list[JobCompletion]) -> list[bool]:
        """Record several ends reported by ``node`` in ONE transaction; idempotent.

        One flag per message, in order: True if it changed something.  A
        message repeated within the batch (same job, restart count, step)
        counts once; the repeat answers False, as a later duplicate would.
        """
        now = self.clock()
        out: list[bool] = []
        seen: set[tuple[int, int, str]] = set()
        # no autoflush: the changes go out in one flush at commit, not one per message
        with self.db.write() as s, s.no_autoflush:
            # the rows the batch touches, in a few queries (500 ids each), held here:
            # the session keeps unreferenced rows only weakly
            ids = sorted({m.job_id for m in msgs})
            rows: dict[int, JobRow] = {}
            steps: dict[tuple[int, str], StepRow] = {}
            for i in range(0, len(ids), 500):
                part = ids[i : i + 500]
                q = select(JobRow).where(JobRow.id.in_(part))
                for r in s.scalars(q.options(defer(JobRow.script), defer(JobRow.environment))):
                    rows[r.id] = r
                for st in s.scalars(select(StepRow).where(StepRow.job_id.in_(part))):
                    steps[(st.job_id, st.step_id)] = st
            usage = [m.usage for m in msgs if m.usage]
            record_usage(s, node, usage, self.usage_history)  # before any requeue
            for msg in msgs:
                key = (msg.job_id, msg.restarts, msg.step_id)
                out.append(key not in seen and self._complete_in(s, node, msg, now, rows, steps))
                seen.add(key)
            crash_point("ctld.complete.before_commit")
        crash_point("ctld.complete.after_commit")
        drain_after(node, msgs, out, self.drain_node)  # a failed Prolog/Epilog there
        return out

    def _complete_in(  # type: ignore[no-untyped-def]
        self,
        s,
        node: str,
        msg: JobCompletion,
        now: float,
        rows: dict[int, JobRow],
        steps: dict[tuple[int, str], StepRow],
    ) -> bool:
        """Apply one message to the loaded ``rows``/``steps`` (a new step is added to both)."""
        row = rows.get(msg.job_id)
        if msg.step_id not in SPECIAL:  # an srun step: one node's part of it
            return end_part(node, msg, now, row, steps)
        if row is not None and row.restarts == msg.restarts + 1 and row.state == "PENDING":
            return end_of_requeued_run(steps.get((row.id, msg.step_id)), node, msg, now)
        if row is None or row.restarts != msg.restarts or row.batch_host != node:
            return False
        if msg.fenced and row.state == "RUNNING" and self.lost_run is not None:
            # killed by its cut-off agent (agent.cutoff): lost on the node, not the job's end
            self.lost_run(row.id, row.restarts, node)
            return True
        if prolog_failed(s, self.validator.cfg, row, node, msg, now):
            return True  # nothing ran: requeued held, or FAILED (node_scripts)
        step = steps.get((row.id, msg.step_id))
        if step is not None and step.end_time is not None:
            return False  # duplicate report
        status = msg.exit_code
        end = msg.end_time or now
        if step is None:
            share = next((a for a in allocs_of(row.alloc) if a.node == node), None)
            step = StepRow(
                job_id=row.id,
                step_id=msg.step_id,
                name="batch",
                state="RUNNING",
                start_time=msg.start_time or row.start_time,
                nodes=node,
                cpus=share.cpus if share else row.num_cpus,
                mem=share.mem if share else 0,
            )
            s.add(step)
            steps[(row.id, msg.step_id)] = step
        step.exit_code, step.end_time = status, end
        step.state = step_state(status, row.state, msg.launch_failed)
        if row.state == "RUNNING":
            row.end_time = end
            row.exit_code = status
            row.system_comment = run_cause(msg)  # this run's, or None
            if msg.launch_failed:
                row.state, row.reason = "FAILED", msg.reason or reasons.JOB_LAUNCH_FAILURE
                row.state_desc = msg.detail
            else:
                row.state, row.reason = final_state(status)
                if row.state == "OUT_OF_MEMORY":
                    row.system_comment = oom_cause(row, node, msg)
                if row.state in RETRIED and retry_failed(s, row, now):
                    return True  # a run with retries left: queued again (controller.runs)
                if row.reason in (reasons.OUT_OF_MEMORY, reasons.RAISED_SIGNAL):
                    row.state_desc = None
        else:
            if row.exit_code in (None, 0):
                row.exit_code = status
        row.flags = drop_flag(row.flags, "COMPLETING")
        return True
