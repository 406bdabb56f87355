"""Job listings (squeue, scontrol show job, sacct): which jobs, which fields, one JSON text.

A listing is a ``JobQuery`` (ids, users, names, partitions, states,
accounting window) answered in job-id order, in one of two shapes:

* ``{"jobs": [job_dict, ...]}``: every field (the answer older clients read);
* ``{"fields": [f1, f2], "rows": [[v1, v2], ...]}``: only the named
  ``JobInfo`` fields, each value exactly what ``job_dict`` gives for it.
  squeue's default format needs a dozen fields; 10,000 pending jobs then
  take ~1 MB instead of ~10 MB, on both sides of the socket.

Where the rows come from:

* the live-jobs view (``live_cache.LiveJobs``, exact, in memory) for what
  squeue and scontrol see: live jobs and those finished within MinJobAge;
* the store itself for sacct (the whole history, a time window) and when
  steps are asked for (they are not kept in memory).

``PrivateData=jobs`` narrows a non-admin's listing to their own jobs
(``JobQuery.owner``, set by ``JobService``), on both paths alike.

Visibility is the same function of (row, now) on both paths:

    shown  <=>  (live or flags == "COMPLETING" or end_time >= now - MinJobAge)
                and not (finished, not COMPLETING, and now - end_time > MinJobAge)

e.g. MinJobAge=300, now=1000: a job that ended at 800 is shown, one that
ended at 650 is not, a pending one always is.

Each row remembers its JSON text per shape (``Live.encoded``), so listing
10,000 unchanged pending jobs again is a filter and a string join; a row
that changes is a new ``Live`` without any.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from controller.store.db import Database
from controller.store.live_cache import COLUMNS, LIVE_STATES, TABLE, Live, view_of
from controller.store.models import JobRow, StepRow
from controller.store.rows import dict_of, row_maker, split_list, step_dict
from slurmlite.states import DEFAULT_SQUEUE_STATES, job_matches_states

# exactly json.dumps(x, separators=(",", ":")), without building an encoder per call
_encode = json.JSONEncoder(separators=(",", ":")).encode
_SHAPES_KEPT = 4  # encoded forms a row keeps (squeue formats in use at once)
_STEPS_IN = 1000  # job ids per steps query
_STEPS_ALL = 50_000  # more jobs than this: read all steps rather than many IN lists


@dataclass(frozen=True)
class JobQuery:
    """What to list; None = no restriction."""

    job_ids: list[int] | None = None
    users: list[str] | None = None
    names: list[str] | None = None
    partitions: list[str] | None = None
    states: set[str] | None = None
    all_states: bool = False
    with_steps: bool = False
    accounting: bool = False  # sacct: the whole history, no MinJobAge
    start: float | None = None  # accounting window
    end: float | None = None
    owner: int | None = None  # only this uid's jobs (PrivateData for a non-admin)


def select_jobs(
    db: Database, q: JobQuery, now: float, min_job_age: float, with_steps: bool = False
) -> list[Live]:
    """The jobs ``q`` lists at ``now``, in id order (steps filled in when ``with_steps``)."""
    cutoff = now - min_job_age
    if q.accounting or with_steps:
        return _filter(_from_store(db, q, cutoff, with_steps), q, now, min_job_age)
    view = view_of(db)
    with view.lock:
        rows = view.refresh(db, cutoff)
        if q.job_ids is not None and not _any_array(rows, q.job_ids):
            picked = [rows[i] for i in sorted(set(q.job_ids)) if i in rows]
            return _filter(picked, q, now, min_job_age)
        gone: list[int] = []
        out = _filter(rows.values(), q, now, min_job_age, gone)
        if gone:
            view.prune(gone, cutoff)
        return out


def _any_array(rows: dict[int, Live], ids: list[int]) -> bool:
    """Whether one of ``ids`` is an array's id (its tasks are other rows to list too)."""
    return any(i in rows and rows[i].array_job_id is not None for i in ids)


def to_json(rows: list[Live], fields: list[str] | None) -> str:
    """The answer's text: ``{"jobs": [...]}``, or ``{"fields": ..., "rows": ...}`` for ``fields``."""
    make: Callable[[Any], Any]
    if fields is None:
        key, make, head = None, dict_of, '{"jobs":['
    else:
        key, make = tuple(fields), row_maker(fields)
        head = '{"fields":' + _encode(list(fields)) + ',"rows":['
    parts = []
    for r in rows:
        known = r.encoded
        text = known.get(key) if known is not None else None
        if text is None:
            text = _encode(make(r.values))
            if known is None or len(known) >= _SHAPES_KEPT:
                known = r.encoded = {}
            known[key] = text
        parts.append(text)
    return head + ",".join(parts) + "]}"


def to_dicts(rows: list[Live]) -> list[dict[str, Any]]:
    return [dict_of(r.values) for r in rows]


def _filter(
    rows: Iterable[Live], q: JobQuery, now: float, age: float, gone: list[int] | None = None
) -> list[Live]:
    """The rows ``q`` shows at ``now``; ``gone`` collects those no later listing can show."""
    cutoff = now - age
    ids = set(q.job_ids) if q.job_ids is not None else None
    users = set(q.users) if q.users else None
    names = set(q.names) if q.names else None
    parts = set(q.partitions) if q.partitions else None
    wanted = q.states if q.states is not None else (None if q.all_states else DEFAULT_SQUEUE_STATES)
    window = q.accounting and (q.start is not None or q.end is not None)
    matches: dict[tuple[str, str], bool] = {}
    out = []
    for r in rows:
        if not q.accounting:
            if not (
                r.live
                or r.flags == "COMPLETING"
                or (r.end_time is not None and r.end_time >= cutoff)
            ):
                if gone is not None:
                    gone.append(r.id)
                continue
            # finished jobs stay visible for MinJobAge seconds, then only sacct sees them
            if (
                r.finished
                and not r.completing
                and r.end_time is not None
                and now - r.end_time > age
            ):
                continue
        if ids is not None and r.id not in ids and r.array_job_id not in ids:
            continue  # N names job N and every task of array N
        if users is not None and r.user not in users:
            continue
        if q.owner is not None and r.uid != q.owner:
            continue
        if names is not None and r.name not in names:
            continue
        if parts is not None and r.partition not in parts:
            continue
        if wanted is not None:
            ok = matches.get((r.state, r.flags))
            if ok is None:
                ok = matches[r.state, r.flags] = job_matches_states(
                    r.state, split_list(r.flags), wanted
                )
            if not ok:
                continue
        if window and not _in_window(r, q.start, q.end):
            continue
        out.append(r)
    return out


def _from_store(db: Database, q: JobQuery, cutoff: float, with_steps: bool) -> list[Live]:
    sel = select(*COLUMNS)
    if not q.accounting:
        # the controller's view: live jobs, and finished ones for MinJobAge seconds (indexed)
        sel = sel.where(
            TABLE.c.state.in_(LIVE_STATES)
            | (TABLE.c.flags == "COMPLETING")
            | (TABLE.c.end_time >= cutoff)
        )
    if q.job_ids is not None:
        sel = sel.where(TABLE.c.id.in_(q.job_ids) | TABLE.c.array_job_id.in_(q.job_ids))
    if q.users:
        sel = sel.where(TABLE.c.user.in_(q.users))
    if q.owner is not None:
        sel = sel.where(TABLE.c.uid == q.owner)
    if q.names:
        sel = sel.where(TABLE.c.name.in_(q.names))
    if q.partitions:
        sel = sel.where(TABLE.c.partition.in_(q.partitions))
    parts = _window(sel, q.start, q.end) if q.accounting else [sel]
    with db.read() as s:
        conn = s.connection()
        # id order made here: ORDER BY id would make SQLite scan the table instead of
        # using the indexes of the OR (live_cache._load says the same)
        rows = sorted((r for part in parts for r in conn.execute(part)), key=lambda r: r[0])
        steps: dict[int, list[Any]] = {}
        if with_steps and rows:
            ids = [r[0] for r in rows]
            table = StepRow.__table__
            # by primary key, _STEPS_IN ids a query; a listing of most of the table reads it all
            parts = [ids[i : i + _STEPS_IN] for i in range(0, len(ids), _STEPS_IN)]
            queries = [select(table).where(table.c.job_id.in_(p)) for p in parts]
            if len(ids) > _STEPS_ALL:
                queries = [select(table)]
            for st in queries:
                for step in conn.execute(st):
                    steps.setdefault(step.job_id, []).append(step)
    return [Live((*r, _sorted_steps(steps.get(r[0], [])))) for r in rows]


def _window(sel: Any, start: float | None, end: float | None) -> list[Any]:
    """sacct's window (``_in_window``) as SQL: the queries whose rows, together, it can list.

    Not ended before ``start`` is two disjoint queries, ``end_time IS NULL``
    and ``end_time >= start``: each is one range of ``ix_jobs_user_end_time``
    when users are named (of ``ix_jobs_end_time`` when not), where one OR
    would read every index entry of the user.  So today's sacct over two
    years of history reads today's rows.  ``_in_window`` still runs on what
    comes back; both say the same thing.
    """
    if end is not None:
        sel = sel.where(TABLE.c.submit_time <= end)
    if start is None:
        return [sel]
    return [sel.where(TABLE.c.end_time.is_(None)), sel.where(TABLE.c.end_time >= start)]


def _sorted_steps(steps: list[Any]) -> list[dict[str, Any]]:
    """batch, extern, then numbered steps in numeric order, as step dicts."""
    order = {"batch": -2, "extern": -1}
    steps = sorted(
        steps, key=lambda s: order.get(s.step_id, int(s.step_id) if s.step_id.isdigit() else 10**9)
    )
    return [step_dict(s) for s in steps]


def _in_window(row: Live, start: float | None, end: float | None) -> bool:
    """sacct's window: the job existed (submitted..ended) at some point in [start, end]."""
    began = row.values[_SUBMIT_TIME]
    finished = row.end_time if row.end_time is not None else float("inf")
    if start is not None and finished < start:
        return False
    if end is not None and began > end:
        return False
    return True


_SUBMIT_TIME = [c.key for c in COLUMNS].index("submit_time")


def owner_of(db: Database, job_id: int) -> tuple[int, int] | None:
    """(uid, gid) of job ``job_id``, or None when the store has no such job."""
    with db.read() as s:
        row = s.get(JobRow, job_id)
        return (row.uid, row.gid) if row else None
