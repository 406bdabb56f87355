"""The store's lease: one controller per job store, and the epoch that fences the rest.

Two controllers on one store would each believe the nodes are theirs: the
second hears no heartbeat for the first one's jobs and requeues them as
node failures.  So a controller takes the store's *lease* at start, before
it touches a job or a node, and holds it for the life of its process:

* **SQLite** — an exclusive ``flock`` on a file beside the database
  (``slurmlite.db.lease``), kept open.  The kernel drops it when the process
  dies, however it dies (``kill -9`` too).
* **PostgreSQL** — a *session* advisory lock (``pg_try_advisory_lock`` with
  ``LEASE_LOCK``, not the migrations' key) on a connection of its own, kept
  open.  The server drops it when that session ends: the process died, or
  its connection did (the session sets TCP keepalives so a vanished host is
  noticed in about ``KEEPALIVE_S`` seconds).

Beside the lock, the row ``controller_lease`` (``models.LeaseRow``) says who
holds it — host, pid, port, socket, since when — and the **epoch**: a
counter raised by one, and committed, at every start that takes the lease.
Only the lock holder writes that row, so the raise needs no other guard.

What a start sees::

    lock free, no row              first start:        epoch 1   event=lease_taken
    lock free, row released        after a clean stop: epoch N+1 event=lease_taken
    lock free, row not released    the holder died:    epoch N+1 event=lease_takeover
    lock busy                      LeaseHeld -> "slurmctld: fatal: ... held by <row>"

The epoch is the *fencing token*: every order the controller signs carries
it (claim ``epoch``, with ``store``, this store's id: ``controller.nodes.
agent_client.Signer``), and agents refuse an order from an older epoch than
one they have obeyed (``agent.fencing``).  So a controller that lost its
lease without noticing (a PostgreSQL session cut while the process lives on,
then a new controller took over) can no longer move a job.  It also checks
its lease every ``CHECK_EVERY_S`` seconds (``watch``): a lost lock that can be
taken back with the epoch unchanged (nobody came in between: a PostgreSQL
restart) is taken back; otherwise the controller stops at once.

Ground for active/standby: a standby is a second controller that, instead
of exiting on ``LeaseHeld``, polls ``take_lease`` every few seconds; the
first call that succeeds is its take-over, with a higher epoch that fences
the old primary off every agent.  Nothing here assumes there is only ever
one process trying.

Example (SQLite, ``/s/slurmlite.db``)::

    a = take_lease(db.engine, url, me)   # flock /s/slurmlite.db.lease, epoch 1
    take_lease(db.engine, url, other)    # LeaseHeld: "... host h pid 11 port 6817 ..."
    a.release()                          # row marked released, lock dropped
    take_lease(db.engine, url, other)    # epoch 2, event=lease_taken
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn, Protocol

from sqlalchemy import Connection, Engine, create_engine, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from controller.store.models import LeaseRow

log = logging.getLogger("slurmctld.lease")

# pg_try_advisory_lock key of the lease ("slle"); migrate.ADVISORY_LOCK is "slml".
LEASE_LOCK = 0x736C6C65
CHECK_EVERY_S = 5.0  # how often a running controller makes sure it still holds the lease
KEEPALIVE_S = 30  # about how long PostgreSQL takes to drop the session of a vanished host


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) the lease, as the lease row says."""

    host: str
    pid: int
    port: int
    socket: str
    since: float
    epoch: int = 0
    store: str = ""  # the store's id, made with its first lease
    released: float | None = None

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.since))
        return (
            f"host {self.host} pid {self.pid} port {self.port} socket {self.socket} "
            f"since {since} (epoch {self.epoch})"
        )

    def brief(self) -> str:
        return f"{self.host}:{self.pid}/port={self.port}"


def shown(url: str) -> str:
    """``url`` fit for a message or a log: its password masked."""
    return make_url(url).render_as_string(hide_password=True)


class LeaseHeld(Exception):
    """Another live controller holds the lease; ``holder`` is its row (None: not yet written)."""

    def __init__(self, store: str, holder: Holder | None) -> None:
        store = shown(store)
        who = holder.describe() if holder else "a controller that has not written its lease yet"
        super().__init__(
            f"the job store {store} is in use by another slurmctld: {who}; "
            "stop that one first, or give this one another store"
        )
        self.holder = holder


class LeaseLost(Exception):
    """This controller no longer holds the lease it took."""


class _Lock(Protocol):
    def acquire(self) -> bool: ...
    def held(self) -> bool: ...
    def release(self) -> None: ...


class FileLock:
    """``flock(LOCK_EX | LOCK_NB)`` on ``path``, kept open: the SQLite store's lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def held(self) -> bool:
        """Still ours: our file is the one at ``path`` (nobody removed or replaced it)."""
        if self._fd is None:
            return False
        try:
            return os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
        except OSError:
            return False

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


class AdvisoryLock:
    """A PostgreSQL session advisory lock on a connection of its own, kept open."""

    def __init__(self, url: str) -> None:
        # NullPool: the connection is ours alone, closed when we let go of it
        self._engine = create_engine(
            make_url(url).set(drivername="postgresql+psycopg"), poolclass=NullPool
        )
        self._conn: Connection | None = None

    def acquire(self) -> bool:
        conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        for setting in (  # notice a vanished host; never time the idle lease session out
            "SET tcp_keepalives_idle = 10",
            "SET tcp_keepalives_interval = 5",
            "SET tcp_keepalives_count = 4",
            "SET idle_session_timeout = 0",
        ):
            try:
                conn.execute(text(setting))
            except SQLAlchemyError:
                pass  # an older server without the setting
        got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": LEASE_LOCK}).scalar()
        if not got:
            conn.close()
            return False
        self._conn = conn
        return True

    def held(self) -> bool:
        if self._conn is None:
            return False
        try:
            mine = self._conn.execute(
                text(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                    " AND pid = pg_backend_pid() AND objid = :k"
                ),
                {"k": LEASE_LOCK},
            ).scalar()
        except SQLAlchemyError:
            self.release()  # the session is gone, and the lock with it
            return False
        return bool(mine)

    def release(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()  # ending the session drops the lock
            except SQLAlchemyError:
                pass
            self._conn = None

    def dispose(self) -> None:
        self._engine.dispose()


def lock_for(url: str) -> _Lock:
    """The lock that guards the store at ``url``."""
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:///")
        if not path or path == ":memory:":
            return _NoLock()  # a private in-memory store: nobody else can open it
        return FileLock(Path(path + ".lease"))
    return AdvisoryLock(url)


class _NoLock:
    def acquire(self) -> bool:
        return True

    def held(self) -> bool:
        return True

    def release(self) -> None:
        pass


class Lease:
    """The lease this process holds: its lock, its row, its epoch."""

    def __init__(
        self, engine: Engine, url: str, lock: _Lock, holder: Holder, before: Holder | None
    ) -> None:
        self.engine = engine
        self.url = url
        self.lock = lock
        self.holder = holder
        self.before = before  # the row as this start found it (None: the first lease)

    @property
    def took_over(self) -> bool:
        """The previous holder died holding the lease (it never marked it released)."""
        return self.before is not None and self.before.released is None

    def announce(self) -> None:
        """Log how the lease was taken (the daemon calls it once its log is set up)."""
        if self.took_over:
            assert self.before is not None
            log.warning(
                "event=lease_takeover previous_holder=%s previous_since=%.0f epoch=%s store=%s",
                self.before.brief(),
                self.before.since,
                self.epoch,
                shown(self.url),
            )
        else:
            log.info("event=lease_taken epoch=%s store=%s", self.epoch, shown(self.url))

    def rewrite_pid(self) -> None:
        """Record the holder's pid again (it changes when the daemon detaches)."""
        table = LeaseRow.__table__
        with self.engine.begin() as conn:
            conn.execute(
                table.update()
                .where(table.c.id == 1, table.c.epoch == self.epoch)
                .values(pid=self.holder.pid)
            )

    @property
    def epoch(self) -> int:
        return self.holder.epoch

    @property
    def store(self) -> str:
        return self.holder.store

    def check(self) -> None:
        """``LeaseLost`` unless the lease is still ours (see the module doc)."""
        if self.lock.held():
            return
        self.lock.release()
        if not self.lock.acquire():
            raise LeaseLost(
                f"the lock of the job store {shown(self.url)} is held by another process"
            )
        row = read_holder(self.engine)
        if row is None or row.epoch != self.epoch or row.pid != self.holder.pid:
            self.lock.release()
            raise LeaseLost(f"another slurmctld took the job store over: {row and row.describe()}")
        log.warning("event=lease_retaken epoch=%s store=%s", self.epoch, shown(self.url))

    def release(self) -> None:
        """Mark the row released (a clean stop), then drop the lock."""
        try:
            if self.lock.held():
                table = LeaseRow.__table__
                with self.engine.begin() as conn:
                    conn.execute(
                        table.update()
                        .where(table.c.id == 1, table.c.epoch == self.epoch)
                        .values(released=time.time())
                    )
        except SQLAlchemyError as e:
            log.warning("event=lease_release_failed error=%r", str(e))
        finally:
            self.lock.release()
            if isinstance(self.lock, AdvisoryLock):
                self.lock.dispose()
            self.engine.dispose()


def read_holder(engine: Engine) -> Holder | None:
    """The lease row, or None before any controller took the lease."""
    with engine.connect() as conn:
        row = conn.execute(select(LeaseRow).where(LeaseRow.id == 1)).mappings().first()
    if row is None:
        return None
    return Holder(
        host=row["host"],
        pid=row["pid"],
        port=row["port"],
        socket=row["socket"],
        since=row["started"],
        epoch=row["epoch"],
        store=row["store"],
        released=row["released"],
    )


def take_lease(engine: Engine, url: str, me: Holder) -> Lease:
    """Take the lease of the store behind ``engine`` for ``me``, raising the epoch by one.

    ``LeaseHeld`` when another live controller holds it.  ``me.epoch`` is
    ignored; the returned lease's holder has the new one.
    """
    lock = lock_for(url)
    if not lock.acquire():
        if isinstance(lock, AdvisoryLock):
            lock.dispose()
        raise LeaseHeld(url, read_holder(engine))
    try:
        before = read_holder(engine)
        epoch = (before.epoch if before else 0) + 1
        store = before.store if before and before.store else uuid.uuid4().hex
        mine = replace(me, epoch=epoch, store=store, released=None)
        values = {
            "epoch": epoch,
            "store": store,
            "host": mine.host,
            "pid": mine.pid,
            "port": mine.port,
            "socket": mine.socket,
            "started": mine.since,
            "released": None,
        }
        table = LeaseRow.__table__
        with engine.begin() as conn:
            if before is None:
                conn.execute(table.insert().values(id=1, **values))
            else:
                conn.execute(table.update().where(table.c.id == 1).values(**values))
    except BaseException:
        lock.release()
        raise
    return Lease(engine, url, lock, mine, before)


def give_up(why: str) -> NoReturn:
    """Stop this controller now, without writing anything more: it is not the store's."""
    log.critical("event=lease_lost error=%r", why)
    print(f"slurmctld: fatal: {why}", file=sys.stderr, flush=True)
    logging.shutdown()
    os._exit(1)


async def watch(
    lease: Lease, every: float = CHECK_EVERY_S, on_lost: Callable[[str], None] = give_up
) -> None:
    """Check ``lease`` every ``every`` seconds for the life of the server."""
    while True:
        await asyncio.sleep(every)
        try:
            await asyncio.to_thread(lease.check)
        except LeaseLost as e:
            on_lost(str(e))
            return
        except SQLAlchemyError as e:  # the store is unreachable: not proof that we lost it
            log.warning("event=lease_check_failed error=%r", str(e))
