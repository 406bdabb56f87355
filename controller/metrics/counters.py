"""Counters that survive restarts: bumped in the transaction of what they count.

A Prometheus counter must only grow; one kept in memory restarts at zero
with the controller, and a rate over the restart is wrong until the series
recovers.  These live in the store (``metric_counters``, migration 0022) and
each bump is part of the transaction that made the change, so a commit
counts exactly once and a rollback (or ``kill -9`` before the commit) not
at all.

What is counted, and where:

* ``jobs_submitted``: ``JobService._insert`` bumps it by the rows it stores
  (its bare-connection batch insert, :func:`bump`);
* ``jobs_started`` and ``jobs_ended{state=...}``: a ``before_flush`` hook on
  the store's sessions (:func:`install`, as ``controller.notify.outbox``)
  sees each ``JobRow.state`` change: PENDING -> RUNNING is a start (a resume
  from SUSPENDED is not), a change into a finished state is an end;
* ``queue_wait_bucket{le=...}``, ``queue_wait_count``, ``queue_wait_sum``:
  at each start, the seconds from eligible (else submitted) to start, in
  ``QUEUE_WAIT_BOUNDS`` buckets: a histogram that survives restarts too;
* ``sched_passes``: the loop's passes, saved by ``Metrics.save`` (every
  ``SAVE_EVERY`` s and at stop: a kill loses at most that much of it).

Example: job 7 starts after 75 s pending -> in the start's transaction,
``jobs_started`` +1, ``queue_wait_bucket`` ``le=300`` +1, ``queue_wait_count``
+1, ``queue_wait_sum`` +75.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import event, insert, inspect, select, update
from sqlalchemy.orm import Session, sessionmaker

from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.models_metrics import MetricCounterRow
from slurmlite.openmetrics import bucket_of
from slurmlite.states import is_finished

T = MetricCounterRow.__table__
Key = tuple[str, str]  # (name, label text)
_MARK = "_slurmlite_counting"  # set on a sessionmaker whose flushes are counted
QUEUE_WAIT_BOUNDS = (1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400)


def bump(conn: Any, deltas: Mapping[Key, float]) -> None:
    """Add ``deltas`` on ``conn`` (a Session or Connection, inside its transaction).

    Every writer holds the store's write lock, so update-else-insert cannot race.
    """
    for (name, labels), delta in deltas.items():
        if not delta:
            continue
        where = (T.c.name == name) & (T.c.labels == labels)
        done = conn.execute(update(T).where(where).values(value=T.c.value + delta))
        if done.rowcount == 0:
            conn.execute(insert(T).values(name=name, labels=labels, value=float(delta)))


def state_changes(row: JobRow, old: str, deltas: dict[Key, float]) -> None:
    """What ``row``'s move from ``old`` to its state counts (added to ``deltas``)."""
    new = row.state
    if new == "RUNNING" and old == "PENDING":
        _add(deltas, ("jobs_started", ""), 1)
        since = row.eligible_time or row.submit_time
        if row.start_time is not None and since is not None:
            wait = max(0.0, row.start_time - since)
            _add(deltas, ("queue_wait_bucket", f"le={bucket_of(QUEUE_WAIT_BOUNDS, wait)}"), 1)
            _add(deltas, ("queue_wait_count", ""), 1)
            _add(deltas, ("queue_wait_sum", ""), wait)
    elif is_finished(new) and not is_finished(old):
        _add(deltas, ("jobs_ended", f"state={new}"), 1)


def _add(deltas: dict[Key, float], key: Key, value: float) -> None:
    deltas[key] = deltas.get(key, 0.0) + value


def install(sessions: sessionmaker[Session]) -> Any:
    """Count the job state changes of every flush of ``sessions``; returns the hook.

    Once per store: a second controller built on the same ``Database`` (tests do)
    gets None, so no change is counted twice.
    """
    if getattr(sessions, _MARK, False):
        return None
    setattr(sessions, _MARK, True)

    def before_flush(session: Session, _context: object, _instances: object) -> None:
        deltas: dict[Key, float] = {}
        for row in (*session.new, *session.dirty):
            if not isinstance(row, JobRow):
                continue
            history = inspect(row).attrs.state.history
            if history.added:
                state_changes(row, history.deleted[0] if history.deleted else "PENDING", deltas)
        if deltas:
            with session.no_autoflush:
                bump(session, deltas)

    event.listen(sessions, "before_flush", before_flush)
    return before_flush


def uninstall(sessions: sessionmaker[Session], hook: Any) -> None:
    if hook is not None:
        event.remove(sessions, "before_flush", hook)
        setattr(sessions, _MARK, False)


def read(db: Database) -> dict[Key, float]:
    """Every counter now (one small query)."""
    with db.read() as s:
        rows = s.execute(select(T.c.name, T.c.labels, T.c.value))
        return {(name, labels): value for name, labels, value in rows}


def save(db: Database, name: str, value: float) -> None:
    """Set counter ``name`` (no labels) to ``value`` if that is more than stored."""
    with db.write_rows() as conn:
        where = (T.c.name == name) & (T.c.labels == "")
        stored = conn.execute(select(T.c.value).where(where)).scalar()
        if stored is None:
            conn.execute(insert(T).values(name=name, labels="", value=float(value)))
        elif value > stored:
            conn.execute(update(T).where(where).values(value=float(value)))
