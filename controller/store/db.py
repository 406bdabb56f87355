"""Opening the job store: engine, SQLite pragmas, migrations, sessions.

SQLite is the embedded default.  It runs in WAL mode (readers never block the
writer) with ``synchronous=NORMAL`` — in WAL mode a commit is still durable
against a process crash (``kill -9``), which is what "nothing accepted is ever
lost" needs; only a power cut could lose the last transactions.  Writers in
this process are serialised by one lock, so SQLite never answers "database is
locked" to our own threads; ``busy_timeout`` covers other processes.

PostgreSQL is reached by URL through the same code, with psycopg 3::

    SlurmliteStoreURL=postgresql+psycopg://slurm@/slurmlite?host=/run/postgresql
    SlurmliteStoreURL=postgresql+psycopg://slurm:secret@db.example:5432/slurmlite

(``postgresql://`` and ``postgres://`` mean the same driver.)  The write lock
is kept there too: one writer at a time in this process; the one row several
writers could contend for (the job-id counter) is advanced by a single
``UPDATE ... RETURNING``, whose row lock PostgreSQL holds until the commit,
across processes too (SQLite's writers are serialised already).

Why ``synchronous=NORMAL`` and not ``FULL``: FULL adds an fsync of the WAL
to every commit (measured here: ~1.2-2.2 ms per commit on ext4, against
~20-30 us), for protection against a power cut, not a crashed process.
Submissions are group-committed (``controller.jobs.submit_queue``), so FULL would
cost one fsync per batch rather than per job; it stays a one-line change
here if an installation wants it.

Opening a ``Database`` migrates the schema to the newest revision
(``migrate.upgrade``); the tables are never created any other way.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from controller.store.migrate import upgrade

# Driver names that mean "PostgreSQL through psycopg 3", the one we install.
_POSTGRES_ALIASES = ("postgresql", "postgres", "postgresql+psycopg")


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    parsed = make_url(url)
    if parsed.drivername in _POSTGRES_ALIASES:
        parsed = parsed.set(drivername="postgresql+psycopg")
    return create_engine(parsed, pool_pre_ping=True)


class Database:
    """Engine + session factory + the write lock; the schema is migrated on open."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        try:
            upgrade(self.engine)
        except BaseException:
            self.engine.dispose()
            raise
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock = threading.RLock()

    @property
    def sessions(self) -> sessionmaker[Session]:
        """The session factory, for hooks on every flush (``controller.notify.outbox``)."""
        return self._sessions

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._sessions() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction committed on success, rolled back on error."""
        with self._write_lock, self._sessions() as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    @contextmanager
    def write_rows(self) -> Iterator[Connection]:
        """Like ``write``, on a bare connection: for statements that need no ORM objects.

        The same lock and the same all-or-nothing transaction, without the
        session's bookkeeping (identity map, flush, events), which costs more
        than the statements of a small batch insert (``JobService.submit_many``).
        """
        with self._write_lock, self.engine.begin() as conn:
            yield conn

    def close(self) -> None:
        self.engine.dispose()
