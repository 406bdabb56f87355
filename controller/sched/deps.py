"""Job dependencies in the scheduler pass (spec §1.8, ``slurmlite.dependency``).

Each pass, before the snapshot is taken, :func:`evaluate` reads the pending
jobs that still have a dependency (the indexed ``jobs.dependency`` column:
a queue without dependencies costs one empty index scan) and the states of
all their targets in one more query, then:

* drops the elements that hold (``afterok:41`` once 41 COMPLETED); a job with
  nothing left becomes eligible (``dependency`` NULL, ``EligibleTime`` now);
* marks a dependency that can never hold (``afterok`` on a FAILED job) as
  failed: reason ``DependencyNeverSatisfied``, never evaluated again; with
  ``--kill-on-invalid-dep=yes`` or ``DependencyParameters=kill_invalid_depend``
  the job is cancelled instead; either change goes through the ORM, where
  the notification hook records INVALID_DEPEND (and the cancel's END);
* answers the reason of every job still waiting, which the pass shows
  (``PendingJob.external_reason``) without considering the job.

A target id the controller does not know counts as ended well (Slurm 22.05
runs such a job: golden ``41_dependency_on_unknown_job``).  A target that is
an array ``N`` means every row with ``array_job_id = N``, its master's pending
remainder included (not started nor ended while ``array_pending`` is set).
``aftercorr:N`` makes task ``i`` wait for task ``i`` of ``N``.  A dependent
array's pending remainder has no task id yet: while it waits, each pass splits
off the tasks whose own list no longer waits (their target task ended) -- up
to ``SPLIT_PER_PASS``, lowest index first -- so task ``i`` goes ahead as soon
as task ``i`` of ``N`` is done, whatever the other tasks of ``N`` do.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from controller.store.array_split import split_task
from controller.store.db import Database
from controller.store.models import JobRow
from slurmlite import arrays, reasons
from slurmlite.config import Config
from slurmlite.dependency import Dep, Deps, format_deps, stored
from slurmlite.states import is_finished

DONE, WAIT, FAIL = "done", "wait", "fail"
_ACTIVE = ("RUNNING", "SUSPENDED")
SPLIT_PER_PASS = 256  # aftercorr tasks split off one remainder in one pass, at most

_WAITING = (
    JobRow.id,
    JobRow.dependency,
    JobRow.dep_failed,
    JobRow.kill_invalid_dep,
    JobRow.name,
    JobRow.user,
    JobRow.array_task_id,
    JobRow.array_pending,
    JobRow.eligible_time,
)
_TARGET = (
    JobRow.id,
    JobRow.state,
    JobRow.start_time,
    JobRow.end_time,
    JobRow.time_limit,  # for explain's "expected to end by"
    JobRow.array_job_id,
    JobRow.array_task_id,
    JobRow.array_pending,
)


@dataclass
class Group:
    """A target's rows: one job, or every row of an array."""

    rows: list[Any] = field(default_factory=list)

    @property
    def remainder(self) -> bool:
        return any(r.array_pending for r in self.rows)

    def started_at(self) -> float | None:
        """When the last row started (a pending job cancelled counts at its end)."""
        if self.remainder:
            return None
        times = [r.start_time if r.start_time is not None else r.end_time for r in self.rows]
        if any(t is None for t in times):
            return None
        return max(times)

    def finished(self) -> bool:
        return not self.remainder and all(is_finished(r.state) for r in self.rows)

    def ok(self) -> bool:
        return all(r.state == "COMPLETED" for r in self.rows)

    def task(self, index: int) -> Group | None:
        """Task ``index`` of the array (None: still in the remainder, or none such)."""
        rows = [r for r in self.rows if r.array_task_id == index]
        return Group(rows) if rows else None


def element_state(dep: Dep, group: Group | None, now: float, task: int | None) -> str:
    """DONE, WAIT or FAIL for one element (singleton is answered by the caller)."""
    if group is None:  # unknown to the controller: ended long ago
        return DONE
    if dep.kind == "aftercorr" and task is not None and any(r.array_job_id for r in group.rows):
        one = group.task(task)
        if one is None:
            return WAIT if group.remainder else DONE
        group = one
    if dep.kind == "after":
        at = group.started_at()
        return DONE if at is not None and now >= at + dep.minutes * 60 else WAIT
    if not group.finished():
        return WAIT
    if dep.kind == "afterany":
        return DONE
    ok = group.ok()
    if dep.kind == "afternotok":
        return FAIL if ok else DONE
    return DONE if ok else FAIL  # afterok, aftercorr


def combine(deps: Deps, states: Sequence[str]) -> tuple[str, Deps]:
    """The whole list's state and the elements still waited for."""
    left = tuple(e for e, st in zip(deps.elements, states, strict=True) if st == WAIT)
    if deps.any_of:
        if DONE in states:
            return DONE, Deps((), True)
        if all(st == FAIL for st in states):
            return FAIL, deps
        return WAIT, Deps(left, True)
    if FAIL in states:
        return FAIL, deps
    return (WAIT if left else DONE), Deps(left, False)


def target_groups(conn: Any, ids: Iterable[int]) -> dict[int, Group]:
    """Each target id's rows (an array id: all its rows), in queries of 500 ids."""
    ids = sorted(set(ids))
    out: dict[int, Group] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        q = select(*_TARGET).where(or_(JobRow.id.in_(chunk), JobRow.array_job_id.in_(chunk)))
        for r in conn.execute(q):
            keys = {r.id, r.array_job_id} if r.array_job_id else {r.id}
            for k in keys:
                out.setdefault(k, Group()).rows.append(r)
    return out


def _singletons(conn: Any, jobs: list[Any]) -> dict[tuple[str, str], list[Any]]:
    """Other unfinished jobs of each (name, user) some waiting job is a singleton of."""
    names = {j.name for j in jobs}
    if not names:
        return {}
    q = select(JobRow.id, JobRow.name, JobRow.user, JobRow.state).where(
        JobRow.name.in_(sorted(names)), JobRow.state.in_(("PENDING", *_ACTIVE))
    )
    out: dict[tuple[str, str], list[Any]] = {}
    for r in conn.execute(q):
        out.setdefault((r.name, r.user), []).append(r)
    return out


def _singleton_state(job: Any, others: list[Any]) -> str:
    for r in others:
        if r.id != job.id and (r.state in _ACTIVE or r.id < job.id):
            return WAIT
    return DONE


def _states(
    job: Any,
    deps: Deps,
    groups: dict[int, Group],
    peers: dict[Any, list[Any]],
    now: float,
    task: int | None,
) -> list[str]:
    """Each element's state for ``job`` as task ``task`` (None: not an array task)."""
    return [
        _singleton_state(job, peers.get((job.name, job.user), []))
        if e.kind == "singleton"
        else element_state(e, groups.get(e.job_id), now, task)
        for e in deps.elements
    ]


def _corr_ready(
    job: Any, deps: Deps, groups: dict[int, Group], peers: dict[Any, list[Any]], now: float
) -> list[int]:
    """The pending indices of ``job``'s remainder whose list no longer waits when
    evaluated as that task (done, or never to be met), lowest first, at most
    ``SPLIT_PER_PASS``.  Only indices some aftercorr target has settled can be such:
    a target task that has ended, or an index a target without a remainder lacks."""
    pending = job.array_pending
    candidates: set[int] = set()
    for e in deps.elements:
        group = groups.get(e.job_id) if e.kind == "aftercorr" else None
        if group is None:
            continue
        ended = {r.array_task_id for r in group.rows if is_finished(r.state)}
        candidates |= {i for i in ended if i is not None and arrays.contains(pending, i)}
        if not group.remainder:
            known = {r.array_task_id for r in group.rows}
            lacking = (i for i in arrays.indices(pending) if i not in known)
            candidates |= set(itertools.islice(lacking, SPLIT_PER_PASS))
    ready: list[int] = []
    for i in sorted(candidates):
        if combine(deps, _states(job, deps, groups, peers, now, i))[0] != WAIT:
            ready.append(i)
            if len(ready) >= SPLIT_PER_PASS:
                break
    return ready


def kills(cfg: Config, flag: bool | None) -> bool:
    if flag is not None:
        return flag
    return "kill_invalid_depend" in cfg.dependency_parameters


def evaluate(db: Database, cfg: Config, now: float) -> dict[int, str]:
    """Update what the pending jobs wait for; the reason of each still waiting."""
    with db.read() as s:
        conn = s.connection()
        waiting = (JobRow.dependency > "") & (JobRow.state == "PENDING")
        jobs = conn.execute(select(*_WAITING).where(waiting)).all()
        if not jobs:
            return {}
        live = [j for j in jobs if not j.dep_failed]
        parsed = {j.id: stored(j.dependency) for j in live}
        targets = {e.job_id for d in parsed.values() if d for e in d.elements if e.job_id}
        groups = target_groups(conn, targets) if targets else {}
        single = [j for j in live if any(e.kind == "singleton" for e in parsed[j.id].elements)]  # type: ignore[union-attr]
        peers = _singletons(conn, single)
    blocked = {j.id: reasons.DEPENDENCY_NEVER_SATISFIED for j in jobs if j.dep_failed}
    changes: dict[int, dict[str, Any]] = {}
    splits: dict[int, list[int]] = {}  # aftercorr: remainder -> indices to split off
    for j in live:
        deps = parsed[j.id]
        assert deps is not None
        states = _states(j, deps, groups, peers, now, j.array_task_id)
        whole, left = combine(deps, states)
        if whole != DONE and j.array_pending and any(e.kind == "aftercorr" for e in deps.elements):
            # a remainder waiting task by task: never failed as a whole (one target task
            # failing fails only its own task, once split off)
            blocked[j.id] = reasons.DEPENDENCY
            if ready := _corr_ready(j, deps, groups, peers, now):
                splits[j.id] = ready
            continue
        if whole == DONE:
            eligible = j.eligible_time if j.eligible_time and j.eligible_time > now else now
            changes[j.id] = {"dependency": None, "eligible_time": eligible}
        elif whole == FAIL:
            blocked[j.id] = reasons.DEPENDENCY_NEVER_SATISFIED
            if kills(cfg, j.kill_invalid_dep):
                changes[j.id] = {"state": "CANCELLED", "end_time": now, "dep_failed": True}
                blocked.pop(j.id)
            else:
                changes[j.id] = {"dep_failed": True}
            changes[j.id]["reason"] = reasons.DEPENDENCY_NEVER_SATISFIED
        else:
            blocked[j.id] = reasons.DEPENDENCY
            text = format_deps(left)
            if text != j.dependency:
                changes[j.id] = {"dependency": text}
    if splits:
        with db.write() as s:
            for master_id, ready in splits.items():
                master = s.get(JobRow, master_id)
                for i in ready:
                    if master is not None and arrays.contains(master.array_pending, i):
                        # its own list is evaluated next pass; this pass it waits
                        blocked[split_task(s, master, i).id] = reasons.DEPENDENCY
    if changes:
        with db.write() as s:
            _apply(s, changes)
    return blocked


def _apply(s: Session, changes: dict[int, dict[str, Any]]) -> None:
    """Write the changes of jobs still PENDING.  A dependency found never satisfiable
    (``dep_failed``, and the cancel that may come with it) goes through the ORM, so
    the notification hook sees it (INVALID_DEPEND, END: ``controller.notify.outbox``);
    the rest, which raises no event, as one statement per job."""
    failed = [job_id for job_id, values in changes.items() if values.get("dep_failed")]
    for i in range(0, len(failed), 500):
        q = select(JobRow).where(JobRow.id.in_(failed[i : i + 500]), JobRow.state == "PENDING")
        for row in s.scalars(q):
            for name, value in changes[row.id].items():
                setattr(row, name, value)
    for job_id, values in changes.items():
        if not values.get("dep_failed"):
            s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.state == "PENDING")
                .values(**values)
            )
