"""Changing jobs that exist: hold, release, requeue, update (``scontrol``'s job verbs).

Every operation takes the caller and a list of job ids and answers one
``OpResult`` per id (errno 0: done), all in one transaction.  Each id is
checked in Slurm's order (spec §1.7-§1.8, ``S:src/slurmctld/job_mgr.c``):

1. the job must be known: a finished job past ``MinJobAge`` is gone, as it
   is for ``scontrol show job`` -> ``ESLURM_INVALID_JOB_ID``;
2. hold, release and update refuse a finished job (``ESLURM_JOB_FINISHED``);
3. ``may_act_on`` (``controller.auth.callers``), the one authorization rule:
   another user's job is ``ESLURM_USER_ID_MISSING`` ("Invalid user id") for
   hold/release/update and ``ESLURM_ACCESS_DENIED`` for requeue, as Slurm
   answers each RPC;
4. the operation's own rules:

   * **hold** = priority 0.  An operator's ``hold`` is an admin hold
     (``JobHeldAdmin``), the owner's (or anyone's ``uhold``) a user hold
     (``JobHeldUser``).  Holding a held job only lets an operator switch
     its kind.  A running job keeps running: its hold matters if it is
     requeued.
   * **release**: an operator releases any hold, the owner only a user hold
     (an admin hold -> ``ESLURM_ACCESS_DENIED``).  The job gets a fresh
     priority and reason ``None`` until the next scheduling pass looks at
     it; releasing a job that is not held does nothing.
   * **requeue** (batch jobs that allow it, else ``ESLURM_DISABLED``; a
     pending job -> ``ESLURM_JOB_PENDING``): a running job's nodes are told
     to terminate that run, and the job goes back to PENDING as after a
     node failure (``sched.requeue``: restart count + 1, reason
     ``BeginTime`` for ``requeue_delay`` seconds, its resources free at
     once).  Unlike a node failure, the old run's batch step is kept: its
     end, reported by the agent, is recorded there (``JobService``), so
     sacct shows ``batch CANCELLED 0:15`` as Slurm does.  A finished job is
     requeued the same way.  ``requeuehold`` adds a user hold.
   * **update**: every change is checked before any is made.  TimeLimit:
     an operator sets any value; the owner may lower it, and may raise it
     only while the job is pending and within the partition's MaxTime, else
     ``ESLURM_ACCESS_DENIED``.  Partition: pending jobs only
     (``ESLURM_JOB_NOT_PENDING``), a known partition accepting jobs.
     JobName, Comment and Requeue: any job not finished.
     Priority (spec §2.1): an operator's ``Priority=N`` replaces the
     formula (``admin_priority``; the nice value goes back to 0) until a
     release; ``Priority=0`` holds the job (an operator's hold is an admin
     hold).  The owner may only hold it that way: a higher value is
     ``ESLURM_ACCESS_DENIED``, a lower one ``ESLURM_PRIO_RESET_FAIL``
     ("change nice instead"); a held job takes no other value
     (``ESLURM_JOB_HELD``).  Nice: anyone may set 0 or more (a lower
     priority), only an operator a negative value (``ESLURM_ACCESS_DENIED``);
     a job whose priority an operator set ignores it.  The new priority of
     a pending job is computed at once (``controller.accounting.priorities``).

Example: bob (uid 1002) holds alice's pending job 7 -> ``[OpResult(7,
ESLURM_USER_ID_MISSING)]``, nothing changes; alice holds it ->
``JobHeldUser``, priority 0; root then releases it -> reason ``None``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy.orm import object_session

from controller.auth.callers import Caller, may_act_on
from controller.jobs import pending_changes
from controller.jobs.service import JobService
from controller.jobs.targets import resolve
from controller.nodes.agent_client import AgentOrder
from controller.sched.gather import pending_job
from controller.sched.requeue import requeue_run
from controller.store.models import JobRow
from controller.store.rows import split_list
from slurmlite import errors, reasons
from slurmlite.jobref import JobRefError, parse_ref
from slurmlite.restarts import REQUEUE
from slurmlite.scheduler.priority import initial_priority
from slurmlite.states import is_finished
from slurmlite.timefmt import fmt_timestamp

USER_HOLD, ADMIN_HOLD = reasons.JOB_HELD_USER, reasons.JOB_HELD_ADMIN
REQUEUE_HELD = "job requeued in held state"  # scontrol show job's Reason description
YEAR_MIN = 365 * 24 * 60  # an unlimited job counts as one year when its limit changes


@dataclass
class OpResult:
    job_id: int
    errno: int = 0  # 0: done; else a slurmlite.errors code
    job: str | None = None  # the reference it answers for (``57_9``); None: ``job_id``

    @property
    def error(self) -> str | None:
        return errors.message(self.errno) if self.errno else None


@dataclass
class JobChanges:
    """``scontrol update JobId=...``: None = leave as it is."""

    time_limit: int | None = None  # minutes
    unlimited: bool = False  # TimeLimit=UNLIMITED
    name: str | None = None
    comment: str | None = None
    partition: str | None = None
    requeue: bool | None = None
    priority: int | None = None  # 0: hold
    nice: int | None = None
    # pending jobs only (``controller.jobs.pending_changes``)
    dependency: str | None = None  # "": none any more
    begin_time: float | None = None
    nodes_min: int | None = None
    nodes_max: int | None = None
    array_throttle: int | None = None  # ArrayTaskThrottle=K (0: no limit), on the array

    @property
    def limit_given(self) -> bool:
        return self.unlimited or self.time_limit is not None

    @property
    def pending_only(self) -> bool:
        fields = (self.dependency, self.begin_time, self.nodes_min, self.nodes_max)
        return any(f is not None for f in fields)


@dataclass
class OpOutcome:
    results: list[OpResult] = field(default_factory=list)
    orders: list[AgentOrder] = field(default_factory=list)  # requeue: runs to terminate


Step = Callable[[JobRow, float, OpOutcome], int]


class JobOps:
    """The job verbs over a ``JobService``'s store and configuration."""

    def __init__(self, jobs: JobService) -> None:
        self.db = jobs.db
        self.cfg = jobs.validator.cfg
        self.policy = jobs.validator.policy
        self.clock = jobs.clock
        self.min_job_age = jobs.min_job_age
        self.priorities = getattr(jobs.validator, "priorities", None)  # PriorityService

    def _each(self, caller: Caller, ids: Sequence[int | str], step: Step) -> OpOutcome:
        """Apply ``step`` to each job in one transaction; an unknown id is refused here.

        An id given as text is a job reference (``57_9``, ``57_[1-3]``, ``57`` for a
        whole array: ``controller.jobs.targets``); each row it names gets a result
        naming that row's task (``job``)."""
        now = self.clock()
        out = OpOutcome()
        with self.db.write() as s:
            for job_id in dict.fromkeys(ids):  # each id once, in the order given
                if isinstance(job_id, str):
                    self._each_ref(s, caller, job_id, step, now, out)
                    continue
                row = s.get(JobRow, job_id)
                out.results.append(OpResult(job_id, self._step(row, step, now, out)))
        return out

    def _each_ref(
        self, s, caller: Caller, text: str, step: Step, now: float, out: OpOutcome
    ) -> None:  # type: ignore[no-untyped-def]
        try:
            ref = parse_ref(text)
        except JobRefError:
            out.results.append(OpResult(0, errors.ESLURM_INVALID_JOB_ID, job=text))
            return
        for t in resolve(s, ref, lambda master: may_act_on(caller, master.uid)):
            if t.denied:
                out.results.append(OpResult(ref.job_id, errors.ESLURM_ACCESS_DENIED, job=t.label))
                continue
            code = self._step(t.row, step, now, out)
            jid = t.row.id if t.row is not None else ref.job_id
            out.results.append(OpResult(jid, code, job=t.label))

    def _step(self, row: JobRow | None, step: Step, now: float, out: OpOutcome) -> int:
        if row is None or self._gone(row, now):
            return errors.ESLURM_INVALID_JOB_ID
        return step(row, now, out)

    def _gone(self, row: JobRow, now: float) -> bool:
        """Finished, cleaned up and older than MinJobAge: unknown to the controller."""
        return (
            is_finished(row.state)
            and "COMPLETING" not in split_list(row.flags)
            and row.end_time is not None
            and now - row.end_time > self.min_job_age
        )

    # ------------------------------------------------------------ hold

    def hold(self, caller: Caller, ids: Sequence[int | str], user_hold: bool = False) -> OpOutcome:
        kind = USER_HOLD if user_hold or not caller.admin else ADMIN_HOLD

        def step(row: JobRow, now: float, _out: OpOutcome) -> int:
            if is_finished(row.state):
                return errors.ESLURM_JOB_FINISHED
            if not may_act_on(caller, row.uid):
                return errors.ESLURM_USER_ID_MISSING
            if row.hold is not None and not caller.admin:
                return 0  # held already; only an operator may change the kind
            _hold_row(row, kind, now)
            return 0

        return self._each(caller, ids, step)

    def release(self, caller: Caller, ids: Sequence[int | str]) -> OpOutcome:
        def step(row: JobRow, now: float, _out: OpOutcome) -> int:
            if is_finished(row.state):
                return errors.ESLURM_JOB_FINISHED
            if not may_act_on(caller, row.uid):
                return errors.ESLURM_USER_ID_MISSING
            if row.hold is None:
                return 0  # not held: nothing to release
            if not caller.admin and row.hold != USER_HOLD:
                return errors.ESLURM_ACCESS_DENIED
            # a release also ends an operator's Priority=N (Slurm's direct priority)
            row.hold, row.state_desc, row.admin_priority = None, None, None
            row.reason = reasons.NONE  # a pending job's until the next pass looks at it
            if row.state == "PENDING" and (row.eligible_time or 0) <= now:
                row.eligible_time = now
            self._fresh_priority(row, now)
            return 0

        return self._each(caller, ids, step)

    # --------------------------------------------------------- requeue

    def requeue(self, caller: Caller, ids: Sequence[int | str], hold: bool = False) -> OpOutcome:
        delay = int(self.cfg.scheduler_parameters.get("requeue_delay", 120))

        def step(row: JobRow, now: float, out: OpOutcome) -> int:
            if not may_act_on(caller, row.uid):
                return errors.ESLURM_ACCESS_DENIED
            if not row.requeue:
                return errors.ESLURM_DISABLED
            if row.state == "PENDING":
                return errors.ESLURM_JOB_PENDING
            if row.state in ("RUNNING", "SUSPENDED"):
                stamp = fmt_timestamp(now)
                for node in split_list(row.nodes):
                    line = None
                    if node == row.batch_host:
                        line = (
                            f"slurmstepd-{node}: error: *** JOB {row.id} ON {node} "
                            f"CANCELLED AT {stamp} DUE TO JOB REQUEUE ***"
                        )
                    out.orders.append(
                        AgentOrder("terminate", row.id, node, row.restarts, message=line)
                    )
            _requeue_row(object_session(row), row, now, delay, caller.user)
            if hold:
                row.hold, row.state_desc = USER_HOLD, REQUEUE_HELD
            if row.hold is not None:
                row.priority, row.reason = 0, row.hold
            return 0

        return self._each(caller, ids, step)

    # ---------------------------------------------------------- update

    def update(self, caller: Caller, ids: Sequence[int | str], changes: JobChanges) -> OpOutcome:
        def step(row: JobRow, now: float, _out: OpOutcome) -> int:
            if is_finished(row.state):
                return errors.ESLURM_JOB_FINISHED
            if not may_act_on(caller, row.uid):
                return errors.ESLURM_USER_ID_MISSING
            code = self._check_partition(row, changes.partition)
            if code == 0 and changes.limit_given:
                code = self._check_limit(caller, row, changes)
            if code == 0:
                code = _check_priority(caller, row, changes.priority)
            if code == 0 and changes.nice is not None and changes.nice < 0 and not caller.admin:
                code = errors.ESLURM_ACCESS_DENIED  # only an operator raises a priority so
            if code == 0 and changes.pending_only:
                code = pending_changes.check(row, changes)
            if code != 0:
                return code
            if changes.pending_only:
                pending_changes.apply(row, changes, now)
            if changes.partition is not None:
                row.partition = changes.partition
            if changes.limit_given:
                self._set_limit(row, None if changes.unlimited else changes.time_limit, now)
            if changes.name is not None:
                row.name = changes.name
            if changes.comment is not None:
                row.comment = changes.comment
            if changes.requeue is not None:
                row.requeue = changes.requeue
            if changes.priority is not None or changes.nice is not None:
                self._set_priority(caller, row, changes, now)
            if changes.array_throttle is not None:
                return _set_throttle(row, changes.array_throttle)
            return 0

        return self._each(caller, ids, step)

    def _fresh_priority(self, row: JobRow, now: float) -> None:
        """A pending job's priority now: multifactor through the service, else FIFO's."""
        if self.priorities is not None and self.priorities.multifactor:
            self.priorities.set_row(row, now)
        else:
            row.priority = initial_priority(
                dataclasses.replace(pending_job(row), held=None), self.policy, sequence=row.id
            )

    def _set_priority(self, caller: Caller, row: JobRow, changes: JobChanges, now: float) -> None:
        """Apply Priority= then Nice= (checked already, see module doc)."""
        new = changes.priority
        if new is not None:
            if new == 0:
                if row.priority != 0 or (caller.admin and row.hold != ADMIN_HOLD):
                    _hold_row(row, ADMIN_HOLD if caller.admin else USER_HOLD, now)
                return  # a held job's nice waits for its release
            if caller.admin:  # the owner got here only with the value it has
                row.nice, row.admin_priority, row.priority = 0, new, new
        nice = changes.nice
        if nice is not None and nice != row.nice and not (row.admin_priority and row.priority):
            if row.hold is None and not self._multifactor:  # FIFO moves by the difference
                row.priority = max(2, row.priority + row.nice - nice)
            row.nice = nice
        if row.hold is None and row.state == "PENDING" and self.priorities is not None:
            self.priorities.set_row(row, now)  # multifactor only: FIFO's is set above

    @property
    def _multifactor(self) -> bool:
        return self.priorities is not None and self.priorities.multifactor

    def _check_partition(self, row: JobRow, name: str | None) -> int:
        if name is None or name == row.partition:
            return 0
        if row.state != "PENDING":
            return errors.ESLURM_JOB_NOT_PENDING
        part = next((p for p in self.cfg.partitions if p.name == name), None)
        if part is None:
            return errors.ESLURM_INVALID_PARTITION_NAME
        if part.state in ("INACTIVE", "DRAIN"):
            return errors.ESLURM_PARTITION_NOT_AVAIL
        if not set(split_list(row.req_nodes)) <= set(part.nodes):
            return errors.ESLURM_REQUESTED_NODES_NOT_IN_PARTITION
        return 0

    def _check_limit(self, caller: Caller, row: JobRow, changes: JobChanges) -> int:
        """May ``caller`` set this limit?  Operators: always; the owner: see module doc."""
        new = None if changes.unlimited else changes.time_limit
        old = row.time_limit
        lower = new is not None and (old is None or new < old)
        if new == old or caller.admin or lower:
            return 0
        name = changes.partition or row.partition
        part = next((p for p in self.cfg.partitions if p.name == name), None)
        within = part is not None and (
            part.max_time is None or (new is not None and new <= part.max_time)
        )
        return 0 if row.state == "PENDING" and within else errors.ESLURM_ACCESS_DENIED

    @staticmethod
    def _set_limit(row: JobRow, new: int | None, now: float) -> None:
        """New limit; a running job's end moves by the difference (never into the past)."""
        old = row.time_limit
        row.time_limit = new
        if row.state not in ("RUNNING", "SUSPENDED") or row.start_time is None:
            return
        if new is None:
            row.end_time = None  # no limit: the time-limit check never fires
            return
        before = old if old is not None else YEAR_MIN
        end = row.end_time if row.end_time is not None else row.start_time + before * 60
        row.end_time = max(now, end + (new - before) * 60)


def _set_throttle(row: JobRow, limit: int) -> int:
    """``ArrayTaskThrottle=K`` on any row of an array sets its master's ``%K`` (0: none)."""
    if row.array_job_id is None:
        return errors.ESLURM_INVALID_ARRAY  # not an array: Slurm refuses so too
    s = object_session(row)
    master = row if row.id == row.array_job_id else s.get(JobRow, row.array_job_id)  # type: ignore[union-attr]
    if master is not None:
        master.array_max_tasks = limit or None
    return 0


def _hold_row(row: JobRow, kind: str, now: float) -> None:
    """Priority 0 with the hold's reason; a pending job is eligible again once released."""
    row.hold, row.priority, row.reason, row.state_desc = kind, 0, kind, None
    if row.state == "PENDING" and (row.eligible_time or 0) <= now:
        row.eligible_time = None


def _check_priority(caller: Caller, row: JobRow, new: int | None) -> int:
    """May ``caller`` set ``Priority=new``?  0 or Slurm's refusal (see module doc)."""
    if new is None or new == row.priority:
        return 0
    if row.priority == 0:
        return errors.ESLURM_JOB_HELD  # held: only a release gives it a priority again
    if caller.admin or new == 0:
        return 0
    return errors.ESLURM_PRIO_RESET_FAIL if new < row.priority else errors.ESLURM_ACCESS_DENIED


def _requeue_row(s, row: JobRow, now: float, delay: int, by: str) -> None:  # type: ignore[no-untyped-def]
    """Back to PENDING for another run (``requeue_run``, keeping the batch step)."""
    requeue_run(s, row, now, delay, REQUEUE, by, keep_batch_step=True)
    row.state_desc, row.cancelled_by = None, None
