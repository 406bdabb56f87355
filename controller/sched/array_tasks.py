"""Job arrays in the scheduler pass: a master stands for its next tasks; the ``%N`` throttle.

An array's master row (``controller.store.array_split``) is one pending row
standing for all its tasks not started yet.  :func:`slots` finds, with two
small queries (the pending masters, then their running tasks counted per
array), how many tasks each master may start now: its remainder, cut to its
``%N`` less what runs.  :func:`expand` puts that many copies of the master
into the pass (up to ``MAX_PER_PASS``), under alias ids above every real
id, so one pass starts as many tasks as there is room for; ``apply`` maps
each alias start back to the master and splits the next task off for it.
A master at its limit sits the pass out with reason ``JobArrayTaskLimit``,
as a job waiting for its dependency does.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import func, select

from controller.store.db import Database
from controller.store.models import JobRow
from slurmlite import arrays, reasons
from slurmlite.scheduler.snapshot import Plan, Snapshot

_ACTIVE = ("RUNNING", "SUSPENDED", "CONFIGURING", "COMPLETING")
MAX_PER_PASS = 64  # tasks of one array a pass may start
ALIAS_BASE = 1 << 48  # alias ids: above any job id (32 bits), master id * 2**12 + k


def slots(db: Database) -> tuple[dict[int, int], dict[int, str]]:
    """``({master id: tasks it may start now}, {master id: JobArrayTaskLimit})``."""
    with db.read() as s:
        masters = s.execute(
            select(JobRow.id, JobRow.array_pending, JobRow.array_max_tasks).where(
                JobRow.state == "PENDING", JobRow.array_pending.is_not(None)
            )
        ).all()
        limited = [m.id for m in masters if m.array_max_tasks]
        running: dict[int, int] = {}
        if limited:
            q = (
                select(JobRow.array_job_id, func.count())
                .where(JobRow.array_job_id.in_(limited), JobRow.state.in_(_ACTIVE))
                .group_by(JobRow.array_job_id)
            )
            running = {jid: n for jid, n in s.execute(q).all()}
    room: dict[int, int] = {}
    blocked: dict[int, str] = {}
    for m in masters:
        n = min(arrays.count(m.array_pending), MAX_PER_PASS)
        if m.array_max_tasks:
            n = min(n, m.array_max_tasks - running.get(m.id, 0))
        if n <= 0:
            blocked[m.id] = reasons.JOB_ARRAY_TASK_LIMIT
        else:
            room[m.id] = n
    return room, blocked


def expand(snap: Snapshot, room: dict[int, int]) -> tuple[Snapshot, dict[int, int]]:
    """``snap`` with each master in it ``room[id]`` times (aliases); ``{alias: master}``."""
    extra = []
    aliases: dict[int, int] = {}
    for job in snap.pending:
        for k in range(1, room.get(job.job_id, 1)):
            alias = ALIAS_BASE + (job.job_id << 12) + k
            aliases[alias] = job.job_id
            extra.append(replace(job, job_id=alias))
    if not extra:
        return snap, aliases
    return replace(snap, pending=(*snap.pending, *extra)), aliases


def fold(plan: Plan, aliases: dict[int, int]) -> None:
    """Drop what ``plan`` says of aliases but their starts (they wait as the master does)."""
    if not aliases:
        return
    for table in (plan.reasons, plan.unavailable_nodes, plan.estimates, plan.planned_nodes):
        for alias in aliases.keys() & table.keys():
            del table[alias]
