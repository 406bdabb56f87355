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

The hook also sees ``JobRow.dep_failed`` turn true: the dependency can never
be satisfied, INVALID_DEPEND (``controller.sched.deps`` changes those rows
through the ORM for that reason, and the cancel of ``--kill-on-invalid-dep``
with them, whose END follows in the same flush).

Array tasks: with ``ARRAY_TASKS`` each task notifies on its own (``Slurm
Array Task Job_id=10_3 (13) ...``); without it, an array notifies as one
job, its first BEGIN and one summary at its last end (the rows are keyed on
the array's id; ``controller.notify.arrays``).

Statements that skip the hook (checked; they must not change ``state``):
the bulk UPDATEs of ``jobs`` write priorities, pending reasons and expected
starts, and fair-share charging marks; retention DELETEs finished jobs (an
event still undelivered goes out, without its ``seff`` body).  One gap is
left: a submission refused for BadConstraints is inserted FAILED by the
batch insert of ``JobService.submit_many`` (a bare connection), so its FAIL
is not recorded, where Slurm mails it.

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

from controller.notify import arrays
from controller.store.models import JobRow
from controller.store.models_notify import OutboxRow
from slurmlite import mailtype

log = logging.getLogger("slurmctld.notify")

Destinations = Callable[[JobRow], list[str]]
_ENDS = ("END", "FAIL")


def destinations(webhook: Callable[[], str]) -> Destinations:
    """Where a job's events go: its ``mail_user``, then the cluster's webhook (if any)."""

    def of(row: JobRow) -> list[str]:
        found = [row.mail_user or row.user]
        hook = webhook()
        if hook and hook not in found:
            found.append(hook)
        return found

    return of


def subject_of(
    row: JobRow,
    event_name: str,
    now: float,
    whole: bool = False,
    summary: mailtype.ArraySummary | None = None,
) -> str:
    """Slurm's subject line for ``row``'s event (``slurmlite.mailtype.subject``);
    ``whole``: the array's event, worded from ``summary`` at its end."""
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
        array_summary=whole,
        summary=summary,
    )


def add_events(
    s: Session,
    row: JobRow,
    events: list[str],
    now: float,
    where: Destinations,
    summary: mailtype.ArraySummary | None = None,
) -> int:
    """Insert one outbox row per (event, destination); how many were added.

    An array task without ARRAY_TASKS records the array's events (keyed on its
    id, each once: ``arrays.notifies``); ``summary`` words the array's end."""
    key, whole = row.id, arrays.as_one(row)
    if whole:
        events = [e for e in events if arrays.notifies(s, row, e)]
        key = row.array_job_id  # type: ignore[assignment]
    added = 0
    for name in events:
        text = subject_of(row, name, now, whole, summary)
        for to in where(row):
            enqueue(s, key, row.restarts, name, to, text, now)
            added += 1
    return added


def enqueue(
    s: Session, job_id: int, run: int, event: str, recipient: str, subject: str, now: float
) -> None:
    """One message into the outbox, due now, in the caller's transaction."""
    s.add(
        OutboxRow(
            job_id=job_id,
            run=run,
            event=event,
            recipient=recipient,
            subject=subject,
            created=now,
            next_try=now,
            attempts=0,
        )
    )
    log.info("event=notify_recorded job=%s what=%s to=%s", job_id, event, recipient)


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
                if row.mail_type:
                    _record(session, row, row in session.new, now, where)

    event.listen(sessions, "before_flush", before_flush)
    return before_flush


def _record(s: Session, row: JobRow, new: bool, now: float, where: Destinations) -> None:
    """The events of one changed row (``mailtype.events_for``), added to the outbox."""
    attrs = inspect(row).attrs
    history = attrs.state.history
    # a new row's dep_failed is copied (a split task), not found now
    turned = not new and True in attrs.dep_failed.history.added
    if not history.added and not turned:
        return
    old = history.deleted[0] if history.deleted else ("PENDING" if history.added else row.state)
    summary = None
    whole = arrays.as_one(row)
    if whole and mailtype.is_end(old, row.state) and mailtype.words(row.mail_type) & {*_ENDS}:
        summary = arrays.summary_if_last(s, row)
    found = mailtype.events_for(row.mail_type, old, row.state, dep_failed=turned, summary=summary)
    if whole and summary is None:  # not the array's last task: its end comes later
        found = [e for e in found if e not in _ENDS]
    if found:
        add_events(s, row, found, now, where, summary)


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
