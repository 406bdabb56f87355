"""Invariants of the store: each a small named rule, checked and repaired.

What the rest of the controller keeps true of every *committed* state of
the store, written down once so it can be checked rather than hoped for.
Each ``Rule`` has a name, the invariant in one line (``says``), the repair
in one line (``repair``), a ``find`` that reads the store and a ``fix`` that
mends one violation.  The rules, in the order they run (a repair may leave
work for a later rule: a job failed by rule 1 has its steps closed by 5):

1. ``running_job_missing_node``: a RUNNING job holds nodes, and each of
   them is a node the store knows.  Repair: the node-failure path
   (``loop.fail_job``): requeued when the job allows it, else NODE_FAIL
   with its batch step CANCELLED; the nodes it still has are told to
   terminate it.
2. ``job_times``: a finished job has an end time, not before its start; a
   running job has a start time (the order of start and end is re-read for
   jobs ended within ``RECENT``, a week: a lab keeps a million finished
   jobs, and every rule looks only through indexes).  Repair: a missing or early end becomes
   the start (the submit time for a job that never started), as slurmdbd
   ends a job reported without an end; a missing start becomes the submit
   time.
3. ``idle_job_holds_nodes``: a job that is not running (PENDING) holds no
   allocation: no ``alloc``, nodes, batch host or COMPLETING flag.  Repair:
   release them (what a requeue does).
4. ``completing_nobody_reports``: a finished job that is COMPLETING waits
   for something that can still happen: an allocation (srun/salloc) for a
   running step of its run; a batch job for its batch host, a node that
   exists and has not been DOWN for longer than the report window.  Repair:
   drop COMPLETING, which frees what the job held (what the loop does when
   the batch host goes DOWN).
5. ``finished_job_open_step``: no step is still open (RUNNING) in a job
   that ended longer than the report window ago and is no longer
   COMPLETING, nor in a job that no longer exists.  Repair: end the
   step CANCELLED at the job's end time with the highest status its nodes
   reported, as slurmdbd closes steps it never heard end (and as
   ``steps.ends.close_leftovers`` closes srun steps).

"Report window" is ``report_grace`` (KillWait + two heartbeats + 10 s) plus
``SETTLE`` seconds: inside it a step of a just-ended job may still be
reported by its nodes, or closed by the loop's next pass.  Every rule holds
at any committed moment, so the check may run while the controller runs
(the end of every e2e test reads the store of its cluster): within the
controller, repairs take the store's write lock, so they never race the
loop.  Array and dependency records (issue 11) get their rules in
``ARRAY_AND_DEPENDENCY_RULES`` once they exist.

When it runs: at controller start, before the loop's first pass, repairing
(``Controller.start``: one ``event=invariant_repair`` log line per repair);
on demand, through ``slurmlite check [--repair]`` (``GET /v1/check``,
``POST /v1/check/repair``, administrators only); after every e2e test.

Example: job 7 (``--no-requeue``) is RUNNING on ``n9`` and ``n9`` has no row
(it left slurm.conf while the controller was down) -> ``rule=running_job_
missing_node job=7 what="RUNNING on n9, a node the store does not know"``;
repaired: 7 NODE_FAIL, 7.batch CANCELLED.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import exists, select
from sqlalchemy.orm import defer

from controller.nodes.agent_client import AgentOrder
from controller.sched import invariants_arrays as inv_arrays
from controller.sched import invariants_deps as inv_deps
from controller.sched.loop import fail_job
from controller.steps.ends import SPECIAL, report_grace
from controller.store.models import JobRow, NodeRow, StepRow
from controller.store.rows import allocs_of, drop_flag, split_list
from slurmlite.states import is_finished

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from controller.store.db import Database
    from slurmlite.config import Config

log = logging.getLogger("slurmctld.check")

SETTLE = 5.0  # seconds past report_grace before a late report or close counts as missing
RECENT = 7 * 86400.0  # seconds back that job_times re-reads ended jobs (not all the history)
LIVE = ("PENDING", "RUNNING", "SUSPENDED")
_LIGHT = (defer(JobRow.script), defer(JobRow.environment), defer(JobRow.echo_env))


@dataclass(frozen=True)
class Facts:
    """What the rules need besides the store: the time and two numbers of the config."""

    now: float
    window: float  # the report window (module doc)
    requeue_delay: int

    @classmethod
    def of(cls, cfg: Config, now: float) -> Facts:
        delay = int(cfg.scheduler_parameters.get("requeue_delay", 120))
        return cls(now=now, window=report_grace(cfg) + SETTLE, requeue_delay=delay)


@dataclass(frozen=True)
class Violation:
    rule: str
    job: int
    what: str  # what is wrong (or, in a repair, what was done), one line
    step: str | None = None  # "7.batch", "7.0"

    def line(self) -> str:
        step = f" step={self.step}" if self.step else ""
        return f"rule={self.rule} job={self.job}{step} what={json.dumps(self.what)}"


Found = tuple[Violation, Any]  # a violation and the rows its fix needs
Fix = tuple[str, list[AgentOrder]]  # what a fix did, and the orders it needs sent


@dataclass(frozen=True)
class Rule:
    name: str
    says: str
    repair: str
    find: Callable[[Session, Facts], list[Found]]
    fix: Callable[[Session, Any, Facts], Fix]


@dataclass
class Report:
    violations: list[Violation] = field(default_factory=list)
    repairs: list[Violation] = field(default_factory=list)  # ``what`` = what was done
    orders: list[AgentOrder] = field(default_factory=list)  # to send after a repair


# ------------------------------------------------------------------ 1


def _find_missing_node(s: Session, f: Facts) -> list[Found]:
    known = set(s.scalars(select(NodeRow.name)))
    out: list[Found] = []
    q = select(JobRow).options(*_LIGHT).where(JobRow.state == "RUNNING").order_by(JobRow.id)
    for row in s.scalars(q):
        nodes = split_list(row.nodes)
        lost = sorted(set(nodes) - known)
        if not nodes:
            what = "RUNNING on no node"
        elif lost:
            what = f"RUNNING on {','.join(lost)}, a node the store does not know"
        else:
            continue
        out.append((Violation("running_job_missing_node", row.id, what), (row, set(lost))))
    return out


def _fix_missing_node(s: Session, found: tuple[JobRow, set[str]], f: Facts) -> Fix:
    row, lost = found
    orders = fail_job(s, row, lost, f.now, f.requeue_delay)
    return f"node failure: {row.state} ({row.reason})", orders


# ------------------------------------------------------------------ 2


def _times_problem(row: JobRow) -> str | None:
    if row.state == "RUNNING" and row.start_time is None:
        return "RUNNING without a start time"
    if not is_finished(row.state):
        return None
    if row.end_time is None:
        return f"{row.state} without an end time"
    if row.start_time is not None and row.end_time < row.start_time:
        return f"{row.state} ends {row.start_time - row.end_time:.0f} s before it started"
    return None


def _find_times(s: Session, f: Facts) -> list[Found]:
    """Three index lookups, never a scan of the history: running jobs (state), ended ones
    without an end (end_time NULL), and jobs ended within ``RECENT`` (end_time range)."""
    light = select(JobRow).options(*_LIGHT)
    queries = (
        light.where(JobRow.state == "RUNNING", JobRow.start_time.is_(None)),
        light.where(JobRow.end_time.is_(None), JobRow.state.not_in(LIVE)),
        light.where(JobRow.end_time >= f.now - RECENT, JobRow.end_time < JobRow.start_time),
    )
    rows = {row.id: row for q in queries for row in s.scalars(q)}
    out: list[Found] = []
    for row in sorted(rows.values(), key=lambda r: r.id):
        what = _times_problem(row)
        if what:
            out.append((Violation("job_times", row.id, what), row))
    return out


def _fix_times(s: Session, row: JobRow, f: Facts) -> Fix:
    if row.state == "RUNNING":
        row.start_time = row.submit_time
        return "start time set to the submit time", []
    started = row.start_time is not None
    row.end_time = row.start_time if started else row.submit_time
    return f"end time set to the {'start' if started else 'submit'} time", []


# ------------------------------------------------------------------ 3


def _holdings(row: JobRow) -> list[str]:
    held = []
    if allocs_of(row.alloc):
        held.append("an allocation")
    if split_list(row.nodes) or row.batch_host:
        held.append(f"nodes {row.nodes or row.batch_host}")
    if "COMPLETING" in split_list(row.flags):
        held.append("the COMPLETING flag")
    return held


def _find_idle_holds(s: Session, f: Facts) -> list[Found]:
    q = (
        select(JobRow)
        .options(*_LIGHT)
        .where(
            JobRow.state == "PENDING",
            (JobRow.alloc.not_in(("[]", "")))
            | (JobRow.nodes != "")
            | JobRow.batch_host.is_not(None)
            | JobRow.flags.like("%COMPLETING%"),
        )
    )
    out: list[Found] = []
    for row in s.scalars(q.order_by(JobRow.id)):
        held = _holdings(row)
        if held:
            what = f"{row.state} but holds {' and '.join(held)}"
            out.append((Violation("idle_job_holds_nodes", row.id, what), row))
    return out


def _fix_idle_holds(s: Session, row: JobRow, f: Facts) -> Fix:
    row.alloc, row.nodes, row.layout, row.batch_host = "[]", "", "", None
    row.flags = drop_flag(row.flags, "COMPLETING")
    return "released its allocation", []


# ------------------------------------------------------------------ 4


def _find_completing(s: Session, f: Facts) -> list[Found]:
    nodes = {r.name: r for r in s.scalars(select(NodeRow))}
    open_step = exists().where(
        StepRow.job_id == JobRow.id,
        StepRow.state == "RUNNING",
        StepRow.restarts == JobRow.restarts,
        StepRow.step_id.not_in(SPECIAL),
    )
    q = select(JobRow, open_step.label("stepping")).options(*_LIGHT)
    q = q.where(JobRow.flags > "")  # a range of the flags index: jobs with any flag (few)
    out: list[Found] = []
    for row, stepping in sorted(s.execute(q), key=lambda r: r[0].id):  # ORDER BY would scan
        if "COMPLETING" not in split_list(row.flags) or not is_finished(row.state):
            continue
        if row.allocation:
            if stepping:
                continue
            what = "COMPLETING allocation without a running step"
        else:
            host = nodes.get(row.batch_host or "")
            if host is not None and not (
                host.down and f.now - (host.reason_time or f.now) > f.window
            ):
                continue
            where = "unknown" if host is None else "DOWN"
            what = f"COMPLETING, its batch host {row.batch_host} {where}"
        out.append((Violation("completing_nobody_reports", row.id, what), row))
    return out


def _fix_completing(s: Session, row: JobRow, f: Facts) -> Fix:
    row.flags = drop_flag(row.flags, "COMPLETING")
    return "COMPLETING dropped: what it held is free", []


# ------------------------------------------------------------------ 5


def _find_open_steps(s: Session, f: Facts) -> list[Found]:
    q = (
        select(StepRow, JobRow)
        .outerjoin(JobRow, JobRow.id == StepRow.job_id)
        .options(*_LIGHT)
        .where(StepRow.state == "RUNNING")  # the state index: an ended step is never RUNNING
        .order_by(StepRow.job_id, StepRow.step_id)
    )
    out: list[Found] = []
    for step, row in s.execute(q):
        name = f"{step.job_id}.{step.step_id}"
        if row is None:
            what = f"step {name} open, its job does not exist"
        else:
            if not is_finished(row.state) or "COMPLETING" in split_list(row.flags):
                continue
            ended = row.end_time or row.start_time or row.submit_time
            if f.now - ended <= f.window:
                continue
            what = f"step {name} {step.state}, job {row.state} {f.now - ended:.0f} s ago"
        out.append((Violation("finished_job_open_step", step.job_id, what, name), (step, row)))
    return out


def _fix_open_step(s: Session, found: tuple[StepRow, JobRow | None], f: Facts) -> Fix:
    step, row = found
    reported = [r[0] for r in json.loads(step.reports or "{}").values()]
    end = row.end_time if row is not None and row.end_time is not None else f.now
    step.state, step.end_time = "CANCELLED", max(end, step.start_time or end)
    if reported:
        step.exit_code = max(reported)
    return f"step {step.job_id}.{step.step_id} ended CANCELLED at the job's end", []


# ------------------------------------------------------------------ the rules

RULES: tuple[Rule, ...] = (
    Rule(
        "running_job_missing_node",
        "a RUNNING job holds nodes, each one a node the store knows",
        "the node-failure path: requeue (if allowed) or NODE_FAIL",
        _find_missing_node,
        _fix_missing_node,
    ),
    Rule(
        "job_times",
        "a finished job has an end time not before its start; a running job a start time",
        "end := start (submit if it never started); start := submit",
        _find_times,
        _fix_times,
    ),
    Rule(
        "idle_job_holds_nodes",
        "a PENDING job holds no allocation, nodes, batch host or COMPLETING flag",
        "release them",
        _find_idle_holds,
        _fix_idle_holds,
    ),
    Rule(
        "completing_nobody_reports",
        "a COMPLETING job waits for a running step (allocation) or a live batch host",
        "drop COMPLETING",
        _find_completing,
        _fix_completing,
    ),
    Rule(
        "finished_job_open_step",
        "no step is open in a job ended longer than the report window ago",
        "end it CANCELLED at the job's end time",
        _find_open_steps,
        _fix_open_step,
    ),
)
# issue 11 adds job arrays and dependencies: their rules (an array task's parent exists and
# agrees on the array's size; a dependency names jobs that exist, and a job whose
# dependency can never be met is not left pending as if it could) go here.
ARRAY_AND_DEPENDENCY_RULES: tuple[Rule, ...] = (
    Rule(
        "started_with_dependency",
        "a job that has started has no dependency left",
        "clear the dependency record",
        lambda s, f: inv_deps.find_started_with_dependency(s, f, Violation),
        inv_deps.fix_started_with_dependency,
    ),
    Rule(
        "started_before_begin",
        "a running job did not start before its begin time",
        "begin time := start time",
        lambda s, f: inv_deps.find_started_before_begin(s, f, Violation),
        inv_deps.fix_started_before_begin,
    ),
    Rule(
        "array_task_once",
        "an array task is pending on its master or split off, never both",
        "drop the split-off index from the remainder",
        lambda s, f: inv_arrays.find_task_twice(s, f, Violation),
        inv_arrays.fix_task_twice,
    ),
)
ALL_RULES = RULES + ARRAY_AND_DEPENDENCY_RULES


def check(db: Database, cfg: Config, now: float, repair: bool = False) -> Report:
    """Every rule over ``db``'s store; with ``repair``, each violation mended and logged.

    Read-only without ``repair`` (safe beside a running controller).  With it,
    all of it is one write transaction: a later rule sees the earlier repairs.
    """
    facts = Facts.of(cfg, now)
    report = Report()
    with db.write() if repair else db.read() as s:
        for rule in ALL_RULES:
            for violation, rows in rule.find(s, facts):
                report.violations.append(violation)
                if not repair:
                    continue
                done, orders = rule.fix(s, rows, facts)
                s.flush()  # the next rule's find sees it
                fixed = Violation(rule.name, violation.job, done, violation.step)
                log.warning("event=invariant_repair %s", fixed.line())
                report.repairs.append(fixed)
                report.orders += orders
    return report
