"""Job operations: submit, read, cancel, complete (the last in ``controller.jobs.completions``).

Thin mechanism around the store: validation that needs the configuration, the transaction,
and the orders for agents that follow from a change (e.g. a cancelled running job must be
terminated on its node).  Policy questions — can this request ever fit, what priority does
it get — are answered by the pure functions of ``slurmlite.scheduler``.

Every transition keeps Slurm's state machine (spec §1.3): a running job that
is cancelled or times out becomes CANCELLED/TIMEOUT *with* the COMPLETING
flag until its node reports that the processes are gone; only then are its
resources free.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, select

from controller.auth.callers import Caller, may_act_on
from controller.jobs import submit_keys
from controller.jobs.cancel_refs import cancel_refs
from controller.jobs.completions import CompletionRecorder
from controller.jobs.submit_keys import Attempt
from controller.jobs.validate import SubmitPlan, SubmitValidator
from controller.metrics import counters
from controller.nodes.agent_client import AgentOrder
from controller.steps.ends import running_steps
from controller.store import job_ids, job_query
from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.rows import add_flag, row_maker, split_list
from slurmlite import errors, reasons
from slurmlite.crashpoints import crash_point
from slurmlite.errors import SlurmError
from slurmlite.protocol import CancelRequest, CancelResult, JobInfo, JobSubmit, from_dict
from slurmlite.states import is_finished

# a submission's outcome: (job id, --test-only message), or why it was refused
SubmitOutcome = tuple[int, str | None] | Exception
_Accepted = tuple[int, Caller, JobSubmit, SubmitPlan]  # (index in the batch, ...)
_Numbered = tuple[int, int, JobSubmit, SubmitPlan, dict[str, Any]]  # (index, job id, ...)

log = logging.getLogger("slurmctld.jobs")
_JOBS = JobRow.__table__
# the reasons a pending job keeps when it is cancelled (any other becomes None): what it
# waited for, which sacct's Reason shows and which keeps it out of sacct's default window
# (it never became eligible)
_KEPT_AT_CANCEL = (reasons.DEPENDENCY, reasons.DEPENDENCY_NEVER_SATISFIED, reasons.BEGIN_TIME)


@dataclass
class CancelOutcome:
    results: list[CancelResult] = field(default_factory=list)
    orders: list[AgentOrder] = field(default_factory=list)


class JobService(CompletionRecorder):
    """Submit, read and cancel jobs; record their ends (``controller.jobs.completions``)."""

    def __init__(
        self, db: Database, validator: SubmitValidator, clock: Callable[[], float] = time.time
    ) -> None:
        self.db = db
        self.validator = validator
        self.clock = clock
        self.min_job_age = validator.cfg.min_job_age
        self._purger = submit_keys.Purger()
        self.drain_node: Callable[[str, str], None] | None = None  # (node, why): context's
        # (job, restarts, node): a run its agent fenced (agent.cutoff); context's
        self.lost_run: Callable[[int, int, str], None] | None = None

    # ------------------------------------------------------------ submit

    def submit(
        self, caller: Caller, req: JobSubmit, attempt: Attempt | None = None
    ) -> tuple[int, str | None]:
        """Store a new job; return its id (and the --test-only message)."""
        [outcome] = self.submit_many([(caller, req)], [attempt])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def submit_many(
        self,
        batch: list[tuple[Caller, JobSubmit]],
        attempts: list[Attempt | None] | None = None,
    ) -> list[SubmitOutcome]:
        """Store several submissions in ONE transaction (group commit); an outcome each.

        Every request is validated first; a refused one gets its exception as
        its outcome and takes no id, the others are numbered in order from one
        reservation of the id counter and inserted by one statement.  If the
        transaction itself fails (a value one database refuses, a lost
        connection), nothing of it was stored, and each request is tried again
        in a transaction of its own, so only the culprit hears of it.  E.g.
        a batch (ok, -p nosuch, ok) with the counter at 7 -> [(7, None),
        SlurmError(invalid partition), (8, None)], counter now 9, one commit.

        ``attempts`` (one per request, or None): idempotency keys and deadlines
        (``controller.jobs.submit_keys``): a key stored before is answered as
        the first time, a request past its deadline stores nothing.
        """
        now = self.clock()
        tries = attempts or [None] * len(batch)
        outcomes: list[SubmitOutcome | None] = [None] * len(batch)
        first: dict[submit_keys.Owner, int] = {}
        repeats: list[tuple[int, int]] = []  # (index, index of the key's first request)
        accepted: list[_Accepted] = []
        refused: dict[submit_keys.Owner, int] = {}  # keyed requests validation refused
        for i, (caller, req) in enumerate(batch):
            attempt = tries[i]
            if attempt is not None and attempt.key:
                owner = (caller.uid, attempt.key)
                if owner in first:
                    repeats.append((i, first[owner]))
                    continue
                first[owner] = i
            try:
                accepted.append((i, caller, req, self.validator.validate(caller, req)))
            except Exception as e:  # refused (SlurmError) before it got an id
                outcomes[i] = e
                if attempt is not None and attempt.key:
                    refused[(caller.uid, attempt.key)] = i
        if refused:  # a retry may be refused by limits its own first job now fills
            with self.db.engine.connect() as conn:
                for owner, answer in submit_keys.find(conn, set(refused)).items():
                    outcomes[refused[owner]] = submit_keys.replay(answer)
        numbered: list[_Numbered] = []
        try:
            numbered = self._insert(accepted, tries, outcomes)
        except Exception as e:
            if len(accepted) == 1:
                outcomes[accepted[0][0]] = self._stored_meanwhile(accepted[0], tries, e)
            else:
                for one in accepted:
                    try:
                        numbered += self._insert([one], tries, outcomes)
                    except Exception as err:  # this request alone: its caller hears why
                        outcomes[one[0]] = self._stored_meanwhile(one, tries, err)
        for i, job_id, req, plan, values in numbered:
            if plan.error is not None:
                outcomes[i] = plan.error  # stored FAILED (BadConstraints); the caller is refused
            elif req.test_only:
                try:
                    outcomes[i] = (job_id, self.validator.test_only_message(job_id, values, now))
                except Exception as e:
                    outcomes[i] = e
            else:
                outcomes[i] = (job_id, None)
        for i, j in repeats:  # the same key twice in one batch: one job, one answer
            answer = outcomes[j]
            outcomes[i] = submit_keys.replay(answer) if isinstance(answer, SlurmError) else answer
        return outcomes  # type: ignore[return-value]

    def _stored_meanwhile(
        self, one: _Accepted, tries: list[Attempt | None], err: Exception
    ) -> SubmitOutcome:
        """A request whose insert failed: its key's answer if another writer stored the
        key meanwhile (the primary key refused ours), else ``err``."""
        attempt = tries[one[0]]
        if attempt is None or not attempt.key:
            return err
        with self.db.engine.connect() as conn:
            return submit_keys.answer_or(conn, one[1].uid, attempt.key, err)

    def _insert(
        self,
        accepted: list[_Accepted],
        tries: list[Attempt | None],
        outcomes: list[SubmitOutcome | None],
    ) -> list[_Numbered]:
        """Number ``accepted`` and store their rows in one transaction (all or nothing).

        A request past its deadline (checked here, under the write lock, just
        before the commit) is left out, its outcome the refusal or, if its key
        was stored before, that answer.  A request whose key is stored makes
        the key's insert fail: nothing of the batch is stored, and the caller
        tries each request alone."""
        if not accepted:
            return []
        numbered: list[_Numbered] = []
        with self.db.write_rows() as s:
            now = self.clock()
            # a key stored already is not looked up here: the key's primary key refuses
            # the insert, the batch is tried again one by one, and that request gets its
            # stored answer (``_stored_meanwhile``); first attempts, nearly all of them,
            # pay no lookup
            late = [one for one in accepted if submit_keys.too_late(tries[one[0]], now)]
            if late:
                accepted = [one for one in accepted if one not in late]
                for i, caller, _req, _plan in late:  # its key's answer if stored, else refused
                    key = tries[i].key  # type: ignore[union-attr]
                    when = tries[i].deadline  # type: ignore[union-attr]
                    log.info(
                        "event=submit_too_late uid=%d deadline=%.3f now=%.3f", caller.uid, when, now
                    )
                    refusal = submit_keys.late_refusal()
                    outcomes[i] = submit_keys.answer_or(s, caller.uid, key, refusal)
                if not accepted:
                    return []
            first = self._next_id(s, len(accepted))
            rows, keys = [], []
            for k, (i, caller, req, plan) in enumerate(accepted):
                values = self.validator.build_values(first + k, caller, req, plan, now)
                numbered.append((i, first + k, req, plan, values))
                if plan.error is not None or not req.test_only:
                    rows.append(values)  # a --test-only request keeps its id, no row
                    attempt = tries[i]
                    if attempt is not None and attempt.key:
                        keys.append(
                            submit_keys.key_row(caller.uid, attempt.key, first + k, now, plan.error)
                        )
            if rows:
                s.execute(_JOBS.insert(), rows)
                counters.bump(s, {("jobs_submitted", ""): len(rows)})  # same transaction
            submit_keys.with_jobs(s, numbered, tries)  # a run's row (Attempt.with_job)
            if keys:
                submit_keys.insert(s, keys)
                self._purger.maybe(s, now)
            crash_point("ctld.submit.before_commit")
        crash_point("ctld.submit.after_commit")
        return numbered

    def _next_id(self, s: Connection, count: int = 1) -> int:
        """Reserve ``count`` consecutive job ids in this transaction (``job_ids.reserve``)."""
        return job_ids.reserve(s, count)

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
        q = job_query.JobQuery(
            job_ids=job_ids,
            users=users,
            names=names,
            partitions=partitions,
            states=states,
            all_states=all_states,
            with_steps=with_steps,
            accounting=accounting,
            start=start,
            end=end,
        )
        q = self.visible_to(caller, q)
        rows = job_query.select_jobs(self.db, q, self.clock(), self.min_job_age, q.with_steps)
        dicts = job_query.to_dicts(rows)
        return dicts if as_dicts else [from_dict(JobInfo, d) for d in dicts]

    def list_json(
        self, caller: Caller, q: job_query.JobQuery, fields: list[str] | None = None
    ) -> str:
        """The API's answer for ``q`` as JSON text: ``{"jobs": [...]}``, or with ``fields``
        ``{"fields": fields, "rows": [[...], ...]}``.  Raises ``UnknownField``."""
        if fields is not None:
            row_maker(fields)  # an unknown name is refused before any work
        q = self.visible_to(caller, q)
        steps = q.with_steps if fields is None else "steps" in fields
        rows = job_query.select_jobs(self.db, q, self.clock(), self.min_job_age, steps)
        return job_query.to_json(rows, fields)

    def visible_to(self, caller: Caller, q: job_query.JobQuery) -> job_query.JobQuery:
        """``q`` narrowed to the caller's own jobs where ``PrivateData`` hides the others.

        ``jobs`` hides other users' jobs everywhere (squeue, scontrol, sacct);
        ``usage`` hides their accounting records (sacct), slurmlite being its
        own accounting store.  Operators see everything.  E.g. PrivateData=jobs,
        bob lists -> only uid 1002's jobs; root lists -> all.
        """
        private = {word.lower() for word in self.validator.cfg.private_data}
        hidden = "jobs" in private or (q.accounting and "usage" in private)
        if caller.admin or not hidden:
            return q
        return dataclasses.replace(q, owner=caller.uid)

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
            if req.refs:
                cancel_refs(s, caller, req, now, out, self._cancel_one)
                return out
            rows = self._select_for_cancel(s, caller, req, out)
            for row in rows:
                self._cancel_one(s, caller, row, req, now, out)
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

    def _cancel_one(  # type: ignore[no-untyped-def]
        self, s, caller: Caller, row: JobRow, req: CancelRequest, now: float, out: CancelOutcome
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
            row.reason = row.reason if row.reason in _KEPT_AT_CANCEL else reasons.NONE
            out.results.append(CancelResult(row.id))
            return
        row.state, row.end_time = "CANCELLED", now
        row.system_comment = None  # this run ends by the cancel: an earlier run's cause is moot
        # an allocation has nothing on its nodes but its steps: without any it ends at once
        if not row.allocation or running_steps(s, row.id, row.restarts):
            row.flags = add_flag(row.flags, "COMPLETING")
        for node in split_list(row.nodes):
            out.orders.append(AgentOrder("terminate", row.id, node, row.restarts))
        out.results.append(CancelResult(row.id))


def _refused(job_id: int, code: int) -> CancelResult:
    """A cancel that did not happen, with Slurm's code and message."""
    return CancelResult(job_id, errors.message(code), code)
