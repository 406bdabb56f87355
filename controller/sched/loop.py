"""The controller's loop: snapshot -> schedule_pass -> apply -> dispatch.

One asyncio task runs ``tick()`` whenever something happened (a submission,
a completion, a node registering — ``wake()``) and at least every
``TICK`` seconds.  A tick, in order:

1. liveness: nodes silent for ``SlurmdTimeout`` go DOWN; their running jobs
   are requeued (batch jobs that allow it) or end in NODE_FAIL; so are jobs
   their batch host stopped listing (``controller.nodes.reconcile``).  A long
   gap since the previous pass means the controller itself was stalled: then
   every node gets a fresh SlurmdTimeout to be heard (``controller.nodes.service``);
2. time limits: jobs that asked for ``--signal=SIG@secs`` get SIG when
   their end is that close (``controller.sched.warnsignal``);
   running jobs past their end time become TIMEOUT+COMPLETING
   and their nodes are told to terminate them (SIGTERM, ``KillWait``,
   SIGKILL), with Slurm's "DUE TO TIME LIMIT" line in the job's output;
   srun steps that will never hear from all their nodes are closed, and
   allocations whose srun/salloc fell silent end (``InactiveLimit``);
   jobs whose GPUs stay idle are flagged, then requeued or cancelled
   (``SlurmliteIdleGpuPolicy``, ``controller.sched.idlegpus``);
3. scheduling (``controller.sched.apply``): priorities are brought up to
   date, then the pure pass decides — on an event the cheap main pass, every
   ``bf_interval`` seconds (and at start-up) the full backfill pass with its
   estimates; the store records the starts, every pending job's reason and
   estimate in one transaction (only changed values are written; pending
   jobs whose columns did not change are not rebuilt,
   ``snapshot.PendingCache``); the launch orders are built and signed after
   the commit, so submissions wait less for the store.  An allocation
   without a batch script (srun, salloc) starts with no launch and no batch
   step: its command holds it (``controller.steps.allocations``);
4. dispatch: signed launch orders go to the batch hosts, concurrently, one
   request per node carrying all its orders of this pass (each order keeps
   its own credential).  The loop does not wait for the answers: while an
   agent spawns one pass's jobs, the completions it reports already start
   the next pass, so agents are kept busy (``tick()``, used by tests, does
   wait for them).  An agent that cannot be reached (nothing was sent) gives
   the job back to the queue unchanged; one that refuses fails it
   (JobLaunchFailure); one that got the order but never answered (it died
   or stalled meanwhile) leaves it RUNNING: it may run there, and the
   node's next reports say whether it does (``controller.nodes.reconcile``:
   else it is requeued once the grace is over, or when the node is DOWN).

Passes are event-driven and coalesced.  Events that arrive during a pass
are served together by the next one, which starts at least ``MIN_GAP``
after that pass ended and at least as long after as it took, so a burst of
500 submissions costs a few passes, not 500, and a deep queue (a pass over
1,000 pending jobs takes some 10-20 ms) never keeps the scheduler busy more
than half the time under a steady stream of events; e.g. a pass of 30 ms
ending at t=1.000 -> the next starts at t=1.030 at the earliest.  An event
that finds the loop idle is served within ``MAX_DELAY`` (40 ms) however
long the last pass took (a lone event after a quiet spell: at once); e.g. a
backfill pass of 200 ms ending at t=1.000, a submission at t=1.005 -> the
next pass starts at t=1.045, not t=1.200.  ``wake_latency`` is the last
event-to-pass delay, for benchmarks and logs.

Database work runs in a worker thread so the event loop keeps answering
requests.  The policy never sees the database and never reads the clock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from controller.nodes.agent_client import AgentAddress, AgentError, AgentOrder
from controller.nodes.reconcile import lost_nodes, vanished_here
from controller.sched import apply
from controller.sched.ctld_scripts import CtldScripts
from controller.sched.end_causes import lost_cause, timeout_cause
from controller.sched.idlegpus import IdleGpuCheck
from controller.sched.requeue import requeue_run
from controller.sched.warnsignal import due_warnings
from controller.steps.allocations import inactive
from controller.steps.ends import close_leftovers, running_steps, step_state
from controller.store.job_query import owner_of
from controller.store.models import JobRow, StepRow
from controller.store.rows import add_flag, drop_flag, split_list
from slurmlite import reasons
from slurmlite.crashpoints import crash_point
from slurmlite.failures import with_outcome
from slurmlite.openmetrics import Histogram
from slurmlite.protocol import LaunchSpec, NoteSpec, SignalSpec
from slurmlite.restarts import NODE_FAIL
from slurmlite.scheduler.snapshot import Plan, Snapshot
from slurmlite.timefmt import fmt_timestamp

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from controller.nodes.agent_client import AgentClient
    from controller.sched.parts import SchedParts

log = logging.getLogger("slurmctld.loop")

TICK = 1.0  # seconds between passes when nothing happens
MIN_GAP = 0.01  # seconds from the end of a pass to the start of the next, at least
MAX_DELAY = 0.04  # seconds an event that finds the loop idle waits for its pass, at most
# pass duration buckets, seconds (slurmlite_sched_pass_seconds, controller.metrics)
PASS_BOUNDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class SchedulerLoop:
    def __init__(self, parts: SchedParts, agents: AgentClient) -> None:
        self.parts = parts  # store, nodes, priorities, signer, clock, config
        self.agents = agents
        self._event = asyncio.Event()
        self._stopped = False
        self.passes = 0
        self.pass_seconds = Histogram(PASS_BOUNDS)  # steps 1-3 of each pass, wall clock
        self._last_end = 0.0
        self._last_took = 0.0  # how long the last pass ran (wall clock)
        self._deliveries: set[asyncio.Task[None]] = set()  # orders on their way (kept referenced)
        self._state = apply.PassState()  # caches, last full pass, its snapshot and plan
        self._first_event: float | None = None  # monotonic time of the first unserved wake()
        self.wake_latency: float | None = None  # event -> pass start of the last woken pass
        self.wake_idle = True  # that event found the loop idle (not during a pass)
        self.woken = 0  # passes started for an event
        self.scripts = CtldScripts(parts)  # PrologSlurmctld, EpilogSlurmctld (off this loop)
        self.idle_gpus = IdleGpuCheck(parts)  # SlurmliteIdleGpuPolicy (controller.sched.idlegpus)

    @property
    def last_snapshot(self) -> Snapshot | None:
        """The snapshot of the latest full pass (backfill's, or every pass without it)."""
        return self._state.snapshot

    @property
    def last_took(self) -> float:
        """Seconds the last pass of ``run()`` took (0 before the first)."""
        return self._last_took

    @property
    def last_end(self) -> float | None:
        """``time.monotonic()`` when the last pass of ``run()`` ended (None: none yet)."""
        return self._last_end or None

    @property
    def full_passes(self) -> tuple[int, float | None]:
        """(full passes so far, the clock at the last one) — the backfill's figures."""
        return self._state.full_passes, self._state.last_full

    @property
    def last_plan(self) -> Plan | None:
        """The plan of the latest full pass: reasons, starts, estimates, planned nodes."""
        return self._state.plan

    def wake(self) -> None:
        if self._first_event is None:
            self._first_event = time.monotonic()
        self._event.set()

    def stop(self) -> None:
        self._stopped = True
        self._event.set()

    async def run(self) -> None:
        while not self._stopped:
            try:
                await asyncio.wait_for(self._event.wait(), timeout=TICK)
            except TimeoutError:
                pass
            # coalesce: events arriving while busy are served together by the next pass,
            # after a breather as long as that pass; one that found the loop idle waits
            # MAX_DELAY at most
            ready = self._last_end + max(MIN_GAP, self._last_took)
            first = self._first_event
            if first is not None and first >= self._last_end:
                ready = min(ready, first + MAX_DELAY)
            gap = ready - time.monotonic()
            if gap > 0:
                await asyncio.sleep(gap)
            self._event.clear()
            first, self._first_event = self._first_event, None
            if self._stopped:
                break
            began = time.monotonic()
            if first is not None:
                self.wake_latency = began - first
                self.wake_idle = first >= self._last_end
                self.woken += 1
            try:
                for delivery in await self._pass():
                    # delivered in the background: the next pass need not wait for
                    # agents to spawn this one's jobs (they report back by themselves)
                    task = asyncio.create_task(_logged(delivery))
                    self._deliveries.add(task)
                    task.add_done_callback(self._deliveries.discard)
            except Exception:  # keep the controller alive; the next tick retries
                log.exception("event=tick_failed")
            self._last_end = time.monotonic()
            self._last_took = self._last_end - began
        if self._deliveries:  # stopping: let orders on their way arrive (as a tick would)
            await asyncio.wait(self._deliveries)

    async def tick(self) -> None:
        """One pass, returning once its orders have been delivered."""
        await asyncio.gather(*await self._pass())

    async def _pass(self) -> list[Coroutine[Any, Any, None]]:
        """Steps 1-3 of a tick; the deliveries of step 4, not yet started."""
        began = time.monotonic()
        orders: list[AgentOrder] = []
        orders += await asyncio.to_thread(self._liveness)
        orders += await asyncio.to_thread(self._time_limits)
        orders += await asyncio.to_thread(self._steps_and_allocations)
        orders += await asyncio.to_thread(self.idle_gpus.run)
        started = await asyncio.to_thread(self._schedule)
        if started:
            crash_point("ctld.plan.after_commit")
        # with PrologSlurmctld the started jobs are CONFIGURING: their launches wait for it
        launches, configuring, epilogs = await self.scripts.after_pass(started)
        per_node: dict[AgentAddress, list[LaunchSpec]] = {}
        for spec, addr in launches:
            per_node.setdefault(addr, []).append(spec)
        self.passes += 1
        self.pass_seconds.observe(time.monotonic() - began)
        return [
            *(self._launch(specs, addr) for addr, specs in per_node.items()),
            *(self.dispatch(o) for o in orders),
            *(self._configure(*run) for run in configuring),
            *(self.scripts.epilog(*due) for due in epilogs),
        ]

    async def _configure(self, job_id: int, restarts: int) -> None:
        """PrologSlurmctld for one started job, then its launch (``ctld_scripts``)."""
        launch = await self.scripts.configure(job_id, restarts)
        if launch is not None:
            await self._launch([launch[0]], launch[1])
        else:
            self.wake()  # requeued or failed: its resources are free

    # ------------------------------------------------------------ steps

    def _liveness(self) -> list[AgentOrder]:
        down = self.parts.nodes.check_liveness()
        now = self.parts.clock()
        vanished = self.parts.nodes.reconcile.due(now)  # jobs their node no longer lists
        orders = [
            AgentOrder("terminate", v.job_id, v.node, v.restarts)
            for v in self.parts.nodes.reconcile.take_strays()
        ]
        if not down and not vanished:
            return orders
        delay = int(self.parts.cfg.scheduler_parameters.get("requeue_delay", 120))
        with self.parts.db.write() as s:
            completing = (JobRow.flags > "") & JobRow.flags.like("%COMPLETING%")  # index range
            for row in s.scalars(select(JobRow).where(completing)):
                if row.batch_host in down or vanished_here(row, vanished):
                    # nobody is left to report the end: release what the job held
                    row.flags = drop_flag(row.flags, "COMPLETING")
                    end_batch_step(s, row, now)
            for row in s.scalars(select(JobRow).where(JobRow.state == "RUNNING")):
                lost = lost_nodes(row, down, vanished)
                if lost:
                    why = self.parts.nodes.silent_for
                    orders += fail_job(s, row, lost, now, delay, lost_cause(lost, down, now, why))
        return orders

    def _time_limits(self) -> list[AgentOrder]:
        now = self.parts.clock()
        orders: list[AgentOrder] = []
        with self.parts.db.write() as s:
            orders += due_warnings(s, now)  # --signal=SIG@secs before the limit
            q = select(JobRow).where(
                JobRow.state == "RUNNING", JobRow.end_time.is_not(None), JobRow.end_time <= now
            )
            for row in s.scalars(q):
                row.state, row.reason, row.end_time = "TIMEOUT", reasons.TIME_LIMIT, now
                row.system_comment = timeout_cause(row, now)  # SystemComment
                # an allocation holds nothing on its nodes but its steps
                if not row.allocation or running_steps(s, row.id, row.restarts):
                    row.flags = add_flag(row.flags, "COMPLETING")
                stamp = fmt_timestamp(now)
                for n in split_list(row.nodes):
                    msg = None
                    if n == row.batch_host:
                        msg = f"slurmstepd-{n}: error: *** JOB {row.id} ON {n} CANCELLED AT {stamp} DUE TO TIME LIMIT ***"
                    orders.append(AgentOrder("terminate", row.id, n, row.restarts, message=msg))
                log.info("event=timeout job=%s", row.id)
        return orders

    def _steps_and_allocations(self) -> list[AgentOrder]:
        """Steps that will never hear from all their nodes are closed; allocations
        silent past InactiveLimit end (``controller.steps.ends``, ``controller.steps.allocations``)."""
        parts = self.parts
        floor = parts.nodes.heard_floor  # after a stall of our own, fresh windows for all
        if close_leftovers(parts.db, parts.cfg, parts.clock(), floor):
            self.wake()  # an allocation may have freed its nodes
        return inactive(parts.db, parts.cfg.inactive_limit, parts.clock(), floor)

    def _schedule(self) -> list[tuple[LaunchSpec, AgentAddress]]:
        """Step 3: the pass and its plan in the store (``controller.sched.apply``)."""
        return apply.schedule(self.parts, self._state)

    # --------------------------------------------------------- dispatch

    async def _launch(self, specs: list[LaunchSpec], to: AgentAddress) -> None:
        """One request carries every start of this pass for ``to`` (each order signed)."""
        try:
            errors = await self.agents.launch_many(to, specs)
        except AgentError as e:
            errors = [e] * len(specs)
        crash_point("ctld.launch.after_send")
        failed = [(spec, e) for spec, e in zip(specs, errors, strict=True) if e is not None]
        for spec, e in failed:
            log.warning("event=launch_failed job=%s node=%s error=%r", spec.job_id, to.node, str(e))
            if e.unanswered:  # it may run: the node's next reports say (nodes.reconcile)
                continue
            await asyncio.to_thread(self._launch_failed, spec, e.refused)
        # a refused launch freed its resources: schedule again now.  An unreachable
        # agent's jobs wait for the next periodic pass (TICK), so a restarting agent
        # is not hammered with the same launches many times a second.
        if any(e.refused for _spec, e in failed):
            self.wake()

    def _launch_failed(self, spec: LaunchSpec, refused: bool) -> None:
        now = self.parts.clock()
        with self.parts.db.write() as s:
            row = s.get(JobRow, spec.job_id)
            if row is None or row.state != "RUNNING" or row.restarts != spec.restarts:
                return
            if refused:
                row.state, row.reason, row.end_time, row.exit_code = (
                    "FAILED",
                    reasons.JOB_LAUNCH_FAILURE,
                    now,
                    53,
                )
                # nothing runs on the node: its batch step ends with the job, as the
                # agent's own report of a launch failure ends it (sacct: CANCELLED)
                step = s.get(StepRow, (row.id, "batch"))
                if step is not None and step.end_time is None:
                    step.exit_code, step.end_time = row.exit_code, now
                    step.state = step_state(row.exit_code, row.state, launch_failed=True)
            else:
                # agent unreachable: nothing ran; give the job back to the queue untouched
                row.state, row.reason, row.start_time, row.end_time = (
                    "PENDING",
                    reasons.NONE,
                    None,
                    None,
                )
                row.alloc, row.nodes, row.layout, row.batch_host = "[]", "", "", None
                step = s.get(StepRow, (row.id, "batch"))
                if step is not None:
                    s.delete(step)

    async def dispatch(self, order: AgentOrder) -> None:
        parts = self.parts
        addr = await asyncio.to_thread(parts.nodes.address, order.node)
        owner = await asyncio.to_thread(owner_of, parts.db, order.job_id)
        if addr is None or owner is None:
            return
        if order.kind == "note":  # a line for the job's stderr; the job goes on
            note = NoteSpec("", order.job_id, order.restarts, order.message or "")
            parts.signer.note(note, order.node, owner[0], owner[1], parts.clock())
            try:
                await self.agents.note(addr, note)
            except AgentError as e:
                log.warning("event=note_failed job=%s node=%s error=%r next=%s", order.job_id,
                            order.node, str(e), "none: the job runs on, the line is lost")  # fmt: skip
            return
        spec = SignalSpec(
            credential="",
            job_id=order.job_id,
            restarts=order.restarts,
            signal=order.signal if order.kind == "signal" else None,
            kill_wait=parts.cfg.kill_wait,
            message=order.message,
            batch_only=order.batch_only,
            full=order.full,
        )
        parts.signer.signal(spec, order.node, owner[0], owner[1], parts.clock())
        try:
            await self.agents.signal(addr, spec)
        except AgentError as e:
            log.warning(
                "event=signal_failed job=%s node=%s error=%r", order.job_id, order.node, str(e)
            )


async def _logged(delivery: Coroutine[Any, Any, None]) -> None:
    """Run a background delivery; an unexpected error is logged, as a failed tick's is."""
    try:
        await delivery
    except Exception:
        log.exception("event=delivery_failed")


def fail_job(
    s: Session, row: JobRow, lost: set[str], now: float, delay: int, cause: str = ""
) -> list[AgentOrder]:
    """The node-failure path of running job ``row``, which lost nodes ``lost``; the orders.

    Its other nodes are told to terminate it; it is requeued (``requeue_delay``
    later) when it allows it, else it ends NODE_FAIL and its batch step, which no
    node will report any more, ends CANCELLED with it (as sacct shows it).
    ``controller.sched.invariants`` uses it too, for a job on nodes the store lacks.
    ``cause`` (which node stopped answering when) becomes its SystemComment.
    """
    log.warning("event=node_fail job=%s nodes=%s", row.id, ",".join(sorted(lost)) or "none")
    orders = [
        AgentOrder("terminate", row.id, n, row.restarts)
        for n in split_list(row.nodes)
        if n not in lost
    ]
    if row.requeue:
        requeue_run(s, row, now, delay, NODE_FAIL, "+".join(sorted(lost)))
    else:
        row.state, row.reason, row.end_time = "NODE_FAIL", reasons.NODE_DOWN, now
        end_batch_step(s, row, now)
    if cause:
        row.system_comment = with_outcome(cause, row.state == "PENDING")
    return orders


def end_batch_step(s: Session, row: JobRow, now: float) -> None:
    """Job ``row`` ended and its batch host will never report: its open batch step ends
    CANCELLED now (sacct stops showing it RUNNING; a late report is a duplicate)."""
    step = s.get(StepRow, (row.id, "batch"))
    if step is not None and step.end_time is None:
        step.state, step.end_time = "CANCELLED", max(now, step.start_time or now)
