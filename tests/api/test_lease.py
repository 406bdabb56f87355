"""The store's lease (``controller.store.lease``), on SQLite and on PostgreSQL.

One process plays several controllers: a flock is held per open file and a
PostgreSQL advisory lock per session, so a second ``take_lease`` here meets
the first one's lock exactly as a second slurmctld would.  "Dying" is
dropping the lock without marking the row released, which is what the
kernel (or the server) does for a killed process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from controller.store.db import Database
from controller.store.lease import Holder, LeaseHeld, LeaseLost, read_holder, take_lease


def holder(pid: int, port: int = 6817) -> Holder:
    return Holder(host="h1", pid=pid, port=port, socket=f"/run/c{pid}.sock", since=1.8e9)


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    d = Database(store_url)
    yield d
    d.close()


def test_a_second_controller_is_refused_while_the_first_holds_the_lease(db, store_url):
    first = take_lease(db.engine, store_url, holder(111))
    assert first.epoch == 1 and first.before is None and not first.took_over
    with pytest.raises(LeaseHeld) as refused:
        take_lease(db.engine, store_url, holder(222, port=7000))
    # the message names the holder: what an admin needs to find it
    assert "in use by another slurmctld: host h1 pid 111 port 6817" in str(refused.value)
    assert refused.value.holder is not None and refused.value.holder.epoch == 1
    assert read_holder(db.engine).pid == 111  # the refused one wrote nothing
    first.release()


def test_a_clean_stop_lets_the_next_start_in_with_the_next_epoch(db, store_url):
    first = take_lease(db.engine, store_url, holder(111))
    first.release()
    assert read_holder(db.engine).released is not None
    second = take_lease(db.engine, store_url, holder(222))
    # 1 + 1: every start raises the epoch, a clean one too; not a take-over
    assert second.epoch == 2 and not second.took_over
    assert second.store == first.store  # the store keeps its id
    row = read_holder(db.engine)
    assert (row.pid, row.epoch, row.released) == (222, 2, None)
    second.release()


def test_a_dead_holder_is_taken_over_and_the_epoch_rises(db, store_url, caplog):
    first = take_lease(db.engine, store_url, holder(111))
    first.lock.release()  # killed: the OS drops the lock, the row stays unreleased
    second = take_lease(db.engine, store_url, holder(222))
    assert second.took_over and second.before is not None and second.before.pid == 111
    assert second.epoch == 2
    caplog.set_level("INFO", logger="slurmctld.lease")
    second.announce()
    assert "event=lease_takeover previous_holder=h1:111/port=6817" in caplog.text
    assert "epoch=2" in caplog.text
    third_try = pytest.raises(LeaseHeld)
    with third_try:
        take_lease(db.engine, store_url, holder(333))
    second.release()


def test_a_held_lease_checks_out(db, store_url):
    lease = take_lease(db.engine, store_url, holder(111))
    lease.check()  # still ours: nothing raised
    lease.release()


def test_sqlite_a_replaced_lock_file_is_a_lost_lease(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/slurmlite.db"
    db = Database(url)
    try:
        first = take_lease(db.engine, url, holder(111))
        (tmp_path / "slurmlite.db.lease").unlink()  # someone removed the lock file...
        second = take_lease(db.engine, url, holder(222))  # ...so another could start
        with pytest.raises(LeaseLost, match="held by another process"):
            first.check()  # the first one notices and must stop
        assert second.epoch == 2
        second.release()
    finally:
        db.close()


@pytest.fixture
def pg_db(pg_server) -> Iterator[tuple[Database, str]]:
    name, url = pg_server.create_database()
    d = Database(url)
    yield d, url
    d.close()
    pg_server.drop_database(name)


def test_postgres_a_cut_session_is_retaken_unless_another_came_in(pg_db):
    db, store_url = pg_db
    first = take_lease(db.engine, store_url, holder(111))

    def cut_first_session() -> None:
        with db.engine.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks"
                    " WHERE locktype = 'advisory' AND objid = 1936485477"  # LEASE_LOCK
                )
            )

    cut_first_session()
    first.check()  # nobody came in between: taken back, epoch unchanged
    assert first.epoch == 1 and first.lock.held()
    cut_first_session()
    second = take_lease(db.engine, store_url, holder(222))
    with pytest.raises(LeaseLost, match="held by another process"):
        first.check()
    assert second.epoch == 2
    second.release()
