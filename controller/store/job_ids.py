"""Job ids: one counter in the meta table, advanced inside the caller's transaction."""

from __future__ import annotations

from sqlalchemy import Integer, Text, bindparam, cast, select, update
from sqlalchemy.engine import Connection

from controller.store.models import JobRow, MetaRow

_JOBS = JobRow.__table__
_META = MetaRow.__table__
_ADVANCE = (  # next_job_id += :count, returning the new value (the column is text)
    update(_META)
    .where(_META.c.key == "next_job_id")
    .values(value=cast(cast(_META.c.value, Integer) + bindparam("count"), Text))
    .returning(_META.c.value)
)


def reserve(conn: Connection, count: int = 1) -> int:
    """Reserve ``count`` consecutive job ids in this transaction; return the first.

    One statement advances the counter and reads it back (``UPDATE ...
    RETURNING``): on PostgreSQL the row stays locked until this transaction
    ends, so concurrent controllers queue here and never share an id;
    SQLite's writers are serialised already.  E.g. counter at 7, count 3 ->
    the counter becomes 10 and ids 7, 8, 9 are ours.
    """
    after = conn.execute(_ADVANCE, {"count": count}).scalar()
    if after is not None:
        return int(after) - count
    # no counter row (the migration seeds one): start after the highest id
    last = conn.scalar(select(_JOBS.c.id).order_by(_JOBS.c.id.desc()).limit(1)) or 0
    conn.execute(_META.insert(), {"key": "next_job_id", "value": str(last + 1 + count)})
    return last + 1
