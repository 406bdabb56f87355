"""The outbox: a job's notification events, written with the change that raised them.

Delivery must never lose an event and never slow a scheduling pass, so the
two are split (the "transactional outbox"): whatever transaction changes a
job's state also inserts that change's events as ``notify_outbox`` rows; a
separate worker (``controller.notify.worker``) sends them later.  A crash
after the commit loses nothing (the rows are there); a rolled-back change
leaves no event behind (the rows go with it).

The recording is one SQLAlchemy ``before_flush`` hook on the store's
sessions (:func:`install`), not a call at each place a state changes: the
scheduler's starts, completions, cancels, time limits, node failures and
requeues all change ``JobRow.state`` through the ORM, and the hook sees the
attribute's old and new value.  ``slurmlite.mailtype.events_for`` says which
events the change raises; each becomes one row per destination: the job's
``--mail-user`` and, when ``SlurmliteWebhook`` is set, the cluster's webhook.
Jobs without ``--mail-type`` cost one attribute read per flushed row.

Example: job 12 (``--mail-type=END``) completes -> in the completion's
transaction, one row (12, run 0, "END", "alice", "Slurm Job_id=12 Name=train
Ended, Run time 00:01:02, COMPLETED, ExitCode 0").

Array tasks: with ``ARRAY_TASKS`` each task notifies on its own (``Slurm
Array Task Job_id=10_3 (13) ...``); without it, an array notifies as one
job, its first BEGIN and its last end (the rows are keyed on the array's id).

:func:`record_warnings` is the periodic half: running jobs that asked for
``TIME_LIMIT_50/80/90`` and have used that share of their limit get the
warning once per run (an existing row for (job, run, event) is the "once").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import event, inspect, select
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.orm.util import identity_key

from controller.store.models import JobRow
from controller.store.models_notify import OutboxRow
from slurmlite import mailtype

log = logging.getLogger("slurmctld.notify")

Destinations = Callable[[JobRow], list[str]]
_LIVE = ("PENDING", "RUNNING")


def destinations(webhook: Callable[[], str]) -> Destinations:
    """Where a job's events go: its ``mail_user``, then the cluster's webhook (if any)."""

    def of(row: JobRow) -> list[str]:
        found = [row.mail_user or row.user]
        hook = webhook()
        if hook and hook not in found:
            found.append(hook)
        return found

    return of


def subject_of(row: JobRow, event_name: str, now: float, summary: bool = False) -> str:
    """Slurm's subject line for ``row``'s event (``slurmlite.mailtype.subject``)."""
    return mailtype.subject(
        event_name,
        row.id,
        row.name,
        row.state,
        exit_code=row.exit_code,
        submit_time=row.submit_time,
        start_time=row.start_time,
        end_time=row.end_time,
        now=now,
        array_job_id=row.array_job_id,
        array_task_id=row.array_task_id,
        array_summary=summary,
    )


def add_events(s: Session, row: JobRow, events: list[str], now: float, where: Destinations) -> int:
    """Insert one outbox row per (event, destination); how many were added."""
    key, summary = row.id, False
    if row.array_job_id is not None and "ARRAY_TASKS" not in mailtype.words(row.mail_type):
        events = [e for e in events if _array_notifies(s, row, e)]
        key, summary = row.array_job_id, True
    added = 0
    for name in events:
        text = subject_of(row, name, now, summary)
        for to in where(row):
            s.add(
                OutboxRow(
                    job_id=key,
                    run=row.restarts,
                    event=name,
                    recipient=to,
                    subject=text,
                    created=now,
                    next_try=now,
                    attempts=0,
                )
            )
            added += 1
            log.info("event=notify_recorded job=%s what=%s to=%s", key, name, to)
    return added


def _array_notifies(s: Session, row: JobRow, name: str) -> bool:
    """An array without ARRAY_TASKS: its first BEGIN, and the end of its last task only."""
    array = row.array_job_id
    if any(isinstance(o, OutboxRow) and (o.job_id, o.event) == (array, name) for o in s.new):
        return False  # another task of this flush raised it already (tasks start/end together)
    if name == "BEGIN":  # none stored yet
        q = select(OutboxRow.id).where(OutboxRow.job_id == array, OutboxRow.event == "BEGIN")
        return s.execute(q.limit(1)).first() is None
    if name in ("END", "FAIL"):  # no other task left: as stored, or as changed in this flush
        live = select(JobRow.id).where(
            JobRow.array_job_id == array,
            JobRow.id != row.id,
            JobRow.state.in_(_LIVE),
        )
        for (other,) in s.execute(live):
            mine = s.identity_map.get(identity_key(JobRow, other))
            if mine is None or mine.state in _LIVE:
                return False
        return True
    return True


def install(
    sessions: sessionmaker[Session], clock: Callable[[], float], where: Destinations
) -> Any:
    """Record events in every flush of ``sessions``; returns the hook (for ``uninstall``)."""

    def before_flush(session: Session, _context: object, _instances: object) -> None:
        changed = [o for o in (*session.new, *session.dirty) if isinstance(o, JobRow)]
        if not changed:
            return
        now = clock()
        with session.no_autoflush:
            for row in changed:
                if not row.mail_type:
                    continue
                history = inspect(row).attrs.state.history
                if not history.added:
                    continue
                old = history.deleted[0] if history.deleted else "PENDING"  # a split task
                found = mailtype.events_for(row.mail_type, old, row.state)
                if found:
                    add_events(session, row, found, now, where)

    event.listen(sessions, "before_flush", before_flush)
    return before_flush


def uninstall(sessions: sessionmaker[Session], hook: Any) -> None:
    event.remove(sessions, "before_flush", hook)


_WARNED = (
    JobRow.state == "RUNNING",
    JobRow.mail_type.like("%TIME_LIMIT_%"),
    JobRow.time_limit.is_not(None),
    JobRow.start_time.is_not(None),
)


def warnings_possible(s: Session) -> bool:
    """Does any running job ask for a time-limit warning? (a read, before taking the lock)"""
    return s.execute(select(JobRow.id).where(*_WARNED).limit(1)).first() is not None


def record_warnings(s: Session, now: float, where: Destinations) -> int:
    """TIME_LIMIT_50/80/90 due now for running jobs, each once per run; how many rows."""
    added = 0
    for row in s.scalars(select(JobRow).where(*_WARNED)):
        wanted = mailtype.words(row.mail_type)
        used = (now - (row.start_time or now)) / (60.0 * (row.time_limit or 0) or 1.0)
        for name, share in mailtype.WARNINGS:
            if name not in wanted or used < share:
                continue
            seen = select(OutboxRow.id).where(
                OutboxRow.job_id == row.id, OutboxRow.run == row.restarts, OutboxRow.event == name
            )
            if s.execute(seen.limit(1)).first() is None:
                added += add_events(s, row, [name], now, where)
            break  # the highest share reached is the one that counts
    return added
