"""The live jobs in memory, exactly as committed: what squeue lists without a table scan.

Listing 10,000 pending jobs from the store costs a scan of the ``jobs``
table (its rows carry scripts and environments: ~2 KB each) before any
Python work; squeue's budget for the controller's whole answer is a few
milliseconds.  So the controller keeps the listing columns of every job
that a listing can show (live, completing, or finished within MinJobAge)
in a dict, and refreshes from the store only the rows that changed.

How it knows what changed, for every write made through SQLAlchemy
(ORM flushes, ``Session.execute``, ``Connection.execute``):

1. Before each statement reaches the database, ``_note`` looks at it: a
   statement that may write ``jobs`` adds the ids it can touch to its
   connection's pending set: an INSERT's ``id`` parameters; the ids of an
   UPDATE/DELETE whose WHERE is ``id = x`` or ``id IN (...)`` AND'ed with
   anything (the rows it changes are a subset); anything else (raw SQL,
   other WHERE shapes) marks *all* rows.
2. When the connection goes back to the pool, its transaction is over
   (committed or rolled back), and ``_release`` moves the pending ids into
   the view's ``stale`` set.
3. A reader, holding the view's lock, first takes and empties ``stale``,
   then reads those rows again (``WHERE id IN``; missing = deleted), or
   everything if all rows were marked or nothing is loaded yet.

Invariant: every job row whose id is not in ``stale`` equals its last
committed state in the store (or is absent and not listable).  Why it
holds: a change is committed before its connection is checked in, so a
re-read that starts after its id was taken from ``stale`` sees it; a commit
landing after the take puts its ids into the new ``stale`` and the next
reader reads them again (marking more than changed only costs a re-read).
Readers take the lock for the whole refresh, so an older re-read never
overwrites a newer one.  A writer's answer is sent after its check-in, so a
client that lists after its own change sees it.

What a listing may show is decided at read time (``job_query._filter``), so
time passing needs no write: a row loaded at cutoff ``c`` (now - MinJobAge)
is in memory if it is live, completing or ended at or after ``c``; any later
cutoff shows a subset of those plus rows that changed since (re-read).  A
read with an earlier cutoff (the clock stepped back, MinJobAge raised)
reloads.  Rows that can no longer be shown are pruned the same way.

Followers (``LiveJobs.followers``, e.g. the metrics' job counts,
``controller.metrics.jobcounts``) keep something derived from the rows
without going over all of them: under the lock, each re-read, added or
forgotten row is handed to them as (old, new), and a full load as ``reset``.

Assumptions, checked by the design rather than at run time: the store is
written only through this ``Database`` (one slurmctld; the view belongs to
its engine), and no code writes ``jobs`` through a raw DBAPI cursor.

Example: job 7 is cancelled -> ``UPDATE jobs ... WHERE jobs.id = 7`` notes
{7}; commit; check-in: stale = {7}; the next squeue re-reads row 7 alone
and shows it CANCELLED; the 9,999 other rows keep their encoded text.
"""

from __future__ import annotations

import math
import re
import threading
import weakref
from collections.abc import Iterable
from operator import itemgetter
from typing import Any, Protocol

from sqlalchemy import Engine, event, select
from sqlalchemy.pool import Pool
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BinaryExpression, BindParameter, BooleanClauseList, TextClause

from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.rows import LISTING_COLUMNS, split_list
from slurmlite.states import is_finished

TABLE = JobRow.__table__
COLUMNS = [TABLE.c[name] for name in LISTING_COLUMNS]
_LISTING = select(*COLUMNS)  # built once, not at every re-read (70 columns: ~0.1 ms)
LIVE_STATES = ("PENDING", "RUNNING", "SUSPENDED")
_AT = {name: i for i, name in enumerate(LISTING_COLUMNS)}
_ALL = "all"  # every row may have changed
_PENDING = "slurmlite.jobs_written"  # key in a pooled connection's info dict
_RAW_WRITE = re.compile(r"\s*(insert|update|delete|replace|alter|drop|create|with)\b", re.I)
_CHUNK = 500  # ids per re-read query
_first = itemgetter(0)  # a selected row's id


class Live:
    """One job's listing tuple and what filters need of it, plus its encoded forms."""

    __slots__ = (
        "values",
        "id",
        "state",
        "flags",
        "end_time",
        "live",
        "finished",
        "completing",
        "user",
        "uid",
        "name",
        "partition",
        "array_job_id",
        "encoded",
    )

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values  # LISTING_COLUMNS, then the steps (a list of step dicts)
        self.id: int = values[_AT["id"]]
        self.state: str = values[_AT["state"]]
        self.flags: str = values[_AT["flags"]]
        self.end_time: float | None = values[_AT["end_time"]]
        self.live = self.state in LIVE_STATES
        self.finished = is_finished(self.state)
        self.completing = "COMPLETING" in split_list(self.flags)
        self.user: str = values[_AT["user"]]
        self.uid: int = values[_AT["uid"]]
        self.name: str = values[_AT["name"]]
        self.array_job_id: int | None = values[_AT["array_job_id"]]  # -j N lists array N
        self.partition: str = values[_AT["partition"]]
        self.encoded: dict[Any, str] | None = None  # shape -> JSON text (listing.py)


class Follower(Protocol):
    """Something kept from the rows as they change (``controller.metrics.jobcounts``):
    told, with the view's lock held, of each change as (old row or None, new row or None),
    or that everything was loaded again."""

    def changed(self, pairs: list[tuple[Live | None, Live | None]]) -> None: ...

    def reset(self) -> None: ...


class LiveJobs:
    """The listable jobs of one store, kept equal to its committed rows (see module doc)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # held by a reader for refresh + iteration
        self._marks = threading.Lock()  # guards the two fields below, briefly
        self._stale: set[int] = set()
        self._all = True  # nothing loaded yet
        self.rows: dict[int, Live] = {}  # ascending id order when ``_sorted``
        self._sorted = True
        self.floor = math.inf  # rows shown at cutoffs >= floor are all in ``rows``
        self.version = 0  # grows whenever ``rows`` changes: readers may cache what they derive
        self.followers: list[Follower] = []  # told of every change (add with ``lock`` held)

    def mark(self, ids: Iterable[int] | str) -> None:
        with self._marks:
            if ids == _ALL:
                self._all = True
            else:
                self._stale.update(ids)  # type: ignore[arg-type]

    def refresh(self, db: Database, cutoff: float) -> dict[int, Live]:
        """Bring ``rows`` up to date for a listing at ``cutoff``; call with ``lock`` held."""
        with self._marks:
            stale, everything = self._stale, self._all or cutoff < self.floor
            self._stale, self._all = set(), False
        if everything:
            self._load(db, cutoff)
        elif stale:
            self._reread(db, sorted(stale))
        if everything or stale:
            self.version += 1
        if not self._sorted:
            self.rows = dict(sorted(self.rows.items()))
            self._sorted = True
        return self.rows

    def prune(self, ids: list[int], cutoff: float) -> None:
        """Forget rows not shown at ``cutoff`` (nor later); call with ``lock`` held."""
        gone: list[tuple[Live | None, Live | None]] = [(self.rows.pop(i), None) for i in ids]
        for f in self.followers:
            f.changed(gone)
        self.floor = max(self.floor, cutoff)
        self.version += 1

    def _load(self, db: Database, cutoff: float) -> None:
        q = select(*COLUMNS).where(
            TABLE.c.state.in_(LIVE_STATES)
            | (TABLE.c.flags == "COMPLETING")
            | (TABLE.c.end_time >= cutoff)
        )
        with db.read() as s:
            # sorted here, not by ORDER BY id: SQLite would walk the whole table in id order
            # rather than the three indexes of the OR (a million finished jobs at start-up)
            result = sorted(s.connection().execute(q), key=_first)
            self.rows = {r[0]: Live((*r, [])) for r in result}
        self._sorted, self.floor = True, cutoff
        for f in self.followers:
            f.reset()

    def _reread(self, db: Database, ids: list[int]) -> None:
        found: dict[int, tuple[Any, ...]] = {}
        with db.read() as s:
            conn = s.connection()
            for k in range(0, len(ids), _CHUNK):
                q = _LISTING.where(TABLE.c.id.in_(ids[k : k + _CHUNK]))
                found.update((r[0], (*r, [])) for r in conn.execute(q))
        last = next(reversed(self.rows), 0)
        pairs: list[tuple[Live | None, Live | None]] = []
        for i in ids:
            values = found.get(i)
            before = self.rows.get(i)
            if values is None:
                self.rows.pop(i, None)
                pairs.append((before, None))
                continue
            now = self.rows[i] = Live(values)
            pairs.append((before, now))
            if before is None:
                self._sorted = self._sorted and i > last
                last = max(last, i)
        for f in self.followers:
            f.changed(pairs)


# --------------------------------------------------------- change tracking

# one view per engine (a Database's), alive as long as the engine is
_views: weakref.WeakKeyDictionary[Engine, LiveJobs] = weakref.WeakKeyDictionary()
_views_lock = threading.Lock()


def view_of(db: Database) -> LiveJobs:
    """The live-jobs view of ``db``'s store."""
    with _views_lock:
        view = _views.get(db.engine)
        if view is None:
            view = _views[db.engine] = LiveJobs()
        return view


def _touched(context: Any) -> list[int] | str | None:
    """Ids of ``jobs`` rows a statement may write, ``_ALL``, or None (writes no job)."""
    if not (context.isinsert or context.isupdate or context.isdelete):
        compiled = context.compiled
        if compiled is not None and not context.isddl:
            if not isinstance(compiled.statement, TextClause):
                return None  # a SELECT
        sql = context.statement or ""
        return _ALL if _RAW_WRITE.match(sql) and TABLE.name in sql.lower() else None
    stmt = context.invoked_statement
    table = getattr(stmt, "table", None)
    if getattr(table, "name", None) != TABLE.name:
        return None
    params = context.compiled_parameters or [{}]
    if context.isinsert:
        if all("id" in p for p in params):
            return [p["id"] for p in params]
        return _ALL
    return _ids_in_where(stmt.whereclause, params)


def _ids_in_where(where: Any, params: list[dict[str, Any]]) -> list[int] | str:
    """The rows an UPDATE/DELETE can touch: a conjunct ``id = x`` or ``id IN (...)`` bounds them."""
    if isinstance(where, BooleanClauseList) and where.operator is operators.and_:
        conjuncts = list(where.clauses)
    else:
        conjuncts = [where]
    for c in conjuncts:
        if not isinstance(c, BinaryExpression) or not isinstance(c.right, BindParameter):
            continue
        col = c.left
        if (
            getattr(col, "key", None) != "id"
            or getattr(getattr(col, "table", None), "name", None) != TABLE.name
        ):
            continue
        bind: BindParameter[Any] = c.right
        if c.operator is operators.eq and not bind.expanding:
            if all(bind.key in p for p in params):
                return [p[bind.key] for p in params]
            if bind.value is not None and bind.callable is None:
                return [bind.value]
        elif c.operator is operators.in_op and bind.expanding:
            if (
                bind.value is not None
                and bind.callable is None
                and not any(bind.key in p for p in params)
            ):
                return list(bind.value)
    return _ALL


@event.listens_for(Engine, "before_cursor_execute")
def _note(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
    if context is None:
        return
    touched = _touched(context)
    if touched is None:
        return
    info = conn.info
    pending = info.get(_PENDING)
    if pending is None:  # noted even when no view exists yet: one may by the check-in
        pending = info[_PENDING] = (weakref.ref(conn.engine), set())
    if touched != _ALL:
        try:
            pending[1].update([int(i) for i in touched])
            return
        except (TypeError, ValueError):
            pass  # an id we cannot read: reload everything
    pending[1].add(_ALL)


def _release(connection_record: Any) -> None:
    if connection_record is None:
        return
    pending = connection_record.info.pop(_PENDING, None)
    if pending is None:
        return
    engine, ids = pending[0](), pending[1]
    view = _views.get(engine) if engine is not None else None
    if view is not None:
        view.mark(_ALL if _ALL in ids else ids)


@event.listens_for(Pool, "checkin")
def _checked_in(dbapi_connection, connection_record) -> None:  # type: ignore[no-untyped-def]
    _release(connection_record)


@event.listens_for(Pool, "invalidate")
def _invalidated(dbapi_connection, connection_record, exception) -> None:  # type: ignore[no-untyped-def]
    _release(connection_record)
