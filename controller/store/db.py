"""Opening the job store: engine, SQLite pragmas, sessions.

SQLite is the embedded default.  It runs in WAL mode (readers never block the
writer) with ``synchronous=NORMAL`` — in WAL mode a commit is still durable
against a process crash (``kill -9``), which is what "nothing accepted is ever
lost" needs; only a power cut could lose the last transactions.  Writers in
this process are serialised by one lock, so SQLite never answers "database is
locked" to our own threads; ``busy_timeout`` covers other processes.

PostgreSQL is reached by URL (``SlurmliteStoreURL=postgresql+psycopg://...``)
through the same code.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from controller.store.models import Base


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
    return create_engine(url, pool_pre_ping=True)


class Database:
    """Engine + session factory + the write lock."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        Base.metadata.create_all(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock = threading.RLock()

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

    def close(self) -> None:
        self.engine.dispose()
