"""Job operations: submit, read, cancel, complete.

Thin mechanism around the store: validation that needs the configuration,
the transaction, and the orders for agents that follow from a change (e.g. a
cancelled running job must be terminated on its node).  Policy questions —
can this request ever fit, what priority does it get — are answered by the
pure functions of ``slurmlite.scheduler``.

Every transition keeps Slurm's state machine (spec §1.3): a running job that
is cancelled or times out becomes CANCELLED/TIMEOUT *with* the COMPLETING
flag until its node reports that the processes are gone; only then are its
resources free.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import defer

from controller.auth import Caller, may_act_on
from controller.convert import add_flag, allocs_of, drop_flag, job_dict, job_info, split_list
from controller.store.db import Database
from controller.store.models import JobRow, MetaRow, StepRow
from controller.submit import SubmitValidator
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import CancelRequest, CancelResult, JobCompletion, JobSubmit
from slurmlite.states import DEFAULT_SQUEUE_STATES, is_finished, job_matches_states


@dataclass
class AgentOrder:
    """Something an agent must be told after a commit."""

    kind: str  # "terminate" | "signal"
    job_id: int
    node: str
    restarts: int
    signal: int | None = None
    message: str | None = None
    batch_only: bool = False
    full: bool = False


@dataclass
class CancelOutcome:
    results: list[CancelResult] = field(default_factory=list)
    orders: list[AgentOrder] = field(default_factory=list)


class JobService:
    def __init__(
        self, db: Database, validator: SubmitValidator, clock: Callable[[], float] = time.time
    ) -> None:
        self.db = db
        self.validator = validator
        self.clock = clock
        self.min_job_age = validator.cfg.min_job_age

    # ------------------------------------------------------------ submit

    def submit(self, caller: Caller, req: JobSubmit) -> tuple[int, str | None]:
        """Store a new job; return its id (and the --test-only message)."""
        now = self.clock()
        plan = self.validator.validate(caller, req)
        with self.db.write() as s:
            job_id = self._next_id(s)
            row = self.validator.build_row(job_id, caller, req, plan, now)
            if plan.error is not None:
                # Slurm keeps the id of a request that can never run and shows
                # it FAILED (BadConstraints); the submitter gets the error.
                row.state, row.reason, row.exit_code = "FAILED", "BadConstraints", 1 << 8
                row.end_time = now
                s.add(row)
            elif req.test_only:
                pass
            else:
                s.add(row)
        if plan.error is not None:
            raise plan.error
        if req.test_only:
            return job_id, self.validator.test_only_message(job_id, row, now)
        return job_id, None

    def _next_id(self, s) -> int:  # type: ignore[no-untyped-def]
        # FOR UPDATE: concurrent submitters on PostgreSQL wait here (a no-op on SQLite)
        meta = s.get(MetaRow, "next_job_id", with_for_update=True)
        if meta is None:
            last = s.scalar(select(JobRow.id).order_by(JobRow.id.desc()).limit(1)) or 0
            meta = MetaRow(key="next_job_id", value=str(last + 1))
            s.add(meta)
        job_id = int(meta.value)
        meta.value = str(job_id + 1)
        return job_id

    # -------------------------------------------------------------- read

    def list_jobs(
        self,
        caller: Caller,
        job_ids: list[int] | None = None,
        users: list[str] | None = None,
        names: list[str] | None = None,
        partitions: list[str] | None = None,
        states: set[str] | None = None,
        all_states: bool = False,
        with_steps: bool = False,
        accounting: bool = False,
        start: float | None = None,
        end: float | None = None,
        as_dicts: bool = False,
    ) -> list[Any]:
        """Jobs as ``JobInfo`` (or, with ``as_dicts``, their JSON-ready dicts)."""
        make = job_dict if as_dicts else job_info
        now = self.clock()
        with self.db.read() as s:
            # scripts and environments are never shown: leave them in the store
            q = select(JobRow).options(defer(JobRow.script), defer(JobRow.environment))
            if not accounting:
                # the controller's view: live jobs, and finished ones for MinJobAge seconds
                # (indexed; a long history does not slow squeue down)
                q = q.where(
                    JobRow.state.in_(LIVE_STATES)
                    | (JobRow.flags == "COMPLETING")
                    | (JobRow.end_time >= now - self.min_job_age)
                )
            if job_ids is not None:
                q = q.where(JobRow.id.in_(job_ids))
            if users:
                q = q.where(JobRow.user.in_(users))
            if names:
                q = q.where(JobRow.name.in_(names))
            if partitions:
                q = q.where(JobRow.partition.in_(partitions))
            rows = list(s.scalars(q.order_by(JobRow.id)))
            steps: dict[int, list[StepRow]] = {}
            if with_steps and rows:
                ids = [r.id for r in rows]
                for st in s.scalars(select(StepRow).where(StepRow.job_id.in_(ids))):
                    steps.setdefault(st.job_id, []).append(st)
        out: list[Any] = []
        wanted = states if states is not None else (None if all_states else DEFAULT_SQUEUE_STATES)
        for r in rows:
            flags = split_list(r.flags)
            if not accounting and is_finished(r.state) and "COMPLETING" not in flags:
                # finished jobs stay visible for MinJobAge seconds, then only sacct sees them
                if r.end_time is not None and now - r.end_time > self.min_job_age:
                    continue
            if wanted is not None and not job_matches_states(r.state, flags, wanted):
                continue
            if accounting and (start is not None or end is not None):
                if not _in_window(r, start, end):
                    continue
            out.append(make(r, _sorted_steps(steps.get(r.id, []))))
        return out

    def get_script(self, caller: Caller, job_id: int) -> str:
        with self.db.read() as s:
            row = s.get(JobRow, job_id)
            if row is None:
                raise SlurmError(errors.ESLURM_INVALID_JOB_ID)
            if not may_act_on(caller, row.uid):
                raise SlurmError(errors.ESLURM_ACCESS_DENIED)
            return row.script

    # ------------------------------------------------------------ cancel

    def cancel(self, caller: Caller, req: CancelRequest) -> CancelOutcome:
        now = self.clock()
        out = CancelOutcome()
        with self.db.write() as s:
            rows = self._select_for_cancel(s, caller, req, out)
            for row in rows:
                self._cancel_one(caller, row, req, now, out)
        return out

    def _select_for_cancel(
        self, s, caller: Caller, req: CancelRequest, out: CancelOutcome
    ) -> list[JobRow]:  # type: ignore[no-untyped-def]
        if req.job_ids:
            rows = []
            for jid in req.job_ids:
                row = s.get(JobRow, jid)
                if row is None:
                    out.results.append(_refused(jid, errors.ESLURM_INVALID_JOB_ID))
                    continue
                rows.append(row)
        else:
            q = select(JobRow).where(JobRow.state.in_(["PENDING", "RUNNING", "SUSPENDED"]))
            if not caller.admin:
                q = q.where(JobRow.uid == caller.uid)
            rows = list(s.scalars(q.order_by(JobRow.id)))
        keep = []
        for row in rows:
            if req.user and row.user != req.user and str(row.uid) != req.user:
                continue
            if req.name and row.name != req.name:
                continue
            if req.partition and row.partition != req.partition:
                continue
            if req.states and row.state not in req.states:
                continue
            keep.append(row)
        return keep

    def _cancel_one(
        self, caller: Caller, row: JobRow, req: CancelRequest, now: float, out: CancelOutcome
    ) -> None:
        if not may_act_on(caller, row.uid):
            out.results.append(_refused(row.id, errors.ESLURM_ACCESS_DENIED))
            return
        if is_finished(row.state):
            out.results.append(_refused(row.id, errors.ESLURM_ALREADY_DONE))
            return
        if req.signal is not None:
            if row.state != "RUNNING" or not row.batch_host:
                # a signal to a job that is not running: Slurm answers with an error
                out.results.append(_refused(row.id, errors.ESLURM_JOB_PENDING))
                return
            for node in split_list(row.nodes):
                out.orders.append(
                    AgentOrder(
                        "signal",
                        row.id,
                        node,
                        row.restarts,
                        signal=req.signal,
                        batch_only=req.batch_only,
                        full=req.full,
                    )
                )
            out.results.append(CancelResult(row.id))
            return
        row.cancelled_by = caller.uid
        if row.state == "PENDING":
            row.state, row.end_time = "CANCELLED", now
            row.reason = row.reason if row.reason in ("Dependency", "BeginTime") else "None"
            out.results.append(CancelResult(row.id))
            return
        row.state, row.end_time = "CANCELLED", now
        row.flags = add_flag(row.flags, "COMPLETING")
        for node in split_list(row.nodes):
            out.orders.append(AgentOrder("terminate", row.id, node, row.restarts))
        out.results.append(CancelResult(row.id))

    # ---------------------------------------------------------- complete

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
        with self.db.write() as s:
            if len(msgs) > 1:
                # two queries load every row the batch touches; the gets below hit the session
                ids = sorted({m.job_id for m in msgs})
                q = select(JobRow).where(JobRow.id.in_(ids))
                list(s.scalars(q.options(defer(JobRow.script), defer(JobRow.environment))))
                list(s.scalars(select(StepRow).where(StepRow.job_id.in_(ids))))
            for msg in msgs:
                key = (msg.job_id, msg.restarts, msg.step_id)
                out.append(key not in seen and self._complete_in(s, node, msg, now))
                seen.add(key)
        return out

    def _complete_in(self, s, node: str, msg: JobCompletion, now: float) -> bool:  # type: ignore[no-untyped-def]
        row = s.get(JobRow, msg.job_id)
        if row is None or row.restarts != msg.restarts or row.batch_host != node:
            return False
        step = s.get(StepRow, (row.id, msg.step_id))
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
        step.exit_code, step.end_time = status, end
        step.state = _step_state(status, row.state, msg.launch_failed)
        if row.state == "RUNNING":
            row.end_time = end
            row.exit_code = status
            if msg.launch_failed:
                row.state, row.reason = "FAILED", msg.reason or "JobLaunchFailure"
            elif os.WIFSIGNALED(status):
                row.state, row.reason = "FAILED", "RaisedSignal"
                row.state_desc = None
            elif os.WEXITSTATUS(status) != 0:
                row.state, row.reason = "FAILED", "NonZeroExitCode"
            else:
                row.state, row.reason = "COMPLETED", "None"
        else:
            if row.exit_code in (None, 0):
                row.exit_code = status
        row.flags = drop_flag(row.flags, "COMPLETING")
        return True


LIVE_STATES = ("PENDING", "RUNNING", "SUSPENDED")


def _refused(job_id: int, code: int) -> CancelResult:
    """A cancel that did not happen, with Slurm's code and message."""
    return CancelResult(job_id, errors.message(code), code)


def _step_state(status: int, job_state: str, launch_failed: bool) -> str:
    if launch_failed:
        return "CANCELLED"
    if os.WIFSIGNALED(status):
        return "CANCELLED"
    if os.WEXITSTATUS(status) != 0:
        return "FAILED"
    if job_state in ("CANCELLED", "TIMEOUT"):
        return "CANCELLED"
    return "COMPLETED"


def _sorted_steps(steps: list[StepRow]) -> list[StepRow]:
    order = {"batch": -2, "extern": -1}
    return sorted(
        steps, key=lambda s: order.get(s.step_id, int(s.step_id) if s.step_id.isdigit() else 10**9)
    )


def _in_window(row: JobRow, start: float | None, end: float | None) -> bool:
    """sacct's window: the job existed (eligible..end) at some point in [start, end]."""
    began = row.submit_time
    finished = row.end_time if row.end_time is not None else float("inf")
    if start is not None and finished < start:
        return False
    if end is not None and began > end:
        return False
    return True
