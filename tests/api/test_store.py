"""The job store on SQLite and PostgreSQL: migrations, id allocation, durability, types.

Every test runs on both backends (the ``store_url`` fixture), except the one
that needs several independent connections writing at once, which only
PostgreSQL supports (a SQLite store has one controller process, whose writes
one lock serialises).
"""

from __future__ import annotations

import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import func, select, text

from controller.auth.callers import Caller
from controller.context import Controller
from controller.jobs.service import JobService
from controller.store.db import Database, make_engine
from controller.store.migrate import current_revision, head_revision
from controller.store.models import Base, JobRow, MetaRow
from slurmlite.protocol import JobSubmit
from tests.api.conftest import ALICE, KEY
from tests.recording_agents import RecordingAgentClient


def _request(name: str = "job") -> JobSubmit:
    return JobSubmit(
        script="#!/bin/sh\ntrue\n", name=name, work_dir="/tmp", submit_dir="/tmp", submit_host="vm"
    )


def _schema_differences(db: Database) -> list:
    with db.engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn), Base.metadata)


def _meta(db: Database, key: str) -> str | None:
    with db.read() as s:
        row = s.get(MetaRow, key)
        return row.value if row else None


# ------------------------------------------------------------------ migrations


def test_a_new_store_is_migrated_to_exactly_the_models_and_reopening_is_a_no_op(store_url):
    db = Database(store_url)
    try:
        with db.engine.connect() as conn:
            assert current_revision(conn) == head_revision() == "0023"
        assert _schema_differences(db) == []
        assert _meta(db, "next_job_id") == "1"  # seeded by 0001
        with db.write() as s:
            s.get(MetaRow, "next_job_id").value = "42"  # as if 41 jobs had been submitted
    finally:
        db.close()
    again = Database(store_url)
    try:
        with again.engine.connect() as conn:
            assert current_revision(conn) == head_revision()
            versions = conn.execute(text("SELECT count(*) FROM alembic_version")).scalar()
        assert versions == 1
        assert _schema_differences(again) == []
        assert _meta(again, "next_job_id") == "42"  # no revision ran again to reseed it
    finally:
        again.close()


def test_a_store_created_before_migrations_existed_is_adopted_with_its_data(store_url):
    # the old way of creating the store: tables straight from the models, no version table
    engine = make_engine(store_url)
    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(MetaRow.__table__.insert().values(key="next_job_id", value="7"))
    engine.dispose()
    db = Database(store_url)
    try:
        with db.engine.connect() as conn:
            assert current_revision(conn) == head_revision()
        assert _schema_differences(db) == []
        assert _meta(db, "next_job_id") == "7"
    finally:
        db.close()


# ---------------------------------------------------------------- job ids


def _submit_concurrently(services: list[JobService], per_thread: int) -> list[int]:
    """Each service submits from its own thread, all starting together."""
    ids: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(len(services))

    def work(svc: JobService) -> None:
        try:
            start.wait(timeout=30)
            for _ in range(per_thread):
                jid, _msg = svc.submit(ALICE, _request())
                with lock:
                    ids.append(jid)
        except BaseException as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(svc,)) for svc in services]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    return ids


def test_eight_threads_submitting_at_once_get_distinct_consecutive_ids(harness):
    h = harness
    ids = _submit_concurrently([h.ctl.jobs] * 8, per_thread=5)
    # 8 threads x 5 submissions = 40 jobs, numbered 1..40 without gaps or repeats
    assert sorted(ids) == list(range(1, 41))
    with h.ctl.db.read() as s:
        assert s.scalar(select(func.count()).select_from(JobRow)) == 40


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_independent_connections_allocating_ids_never_collide_on_postgresql(harness, store_url):
    # Eight Database objects = eight connection pools, each with its own write
    # lock, as eight controller processes would have: only the row lock of
    # SELECT ... FOR UPDATE on meta.next_job_id keeps their ids apart.
    h = harness
    dbs = [Database(store_url) for _ in range(8)]
    try:
        services = [JobService(db, h.ctl.validator, h.clock) for db in dbs]
        ids = _submit_concurrently(services, per_thread=5)
    finally:
        for db in dbs:
            db.close()
    assert sorted(ids) == list(range(1, 41))


# -------------------------------------------------------------- durability


def test_an_accepted_submission_survives_a_new_database_object(harness, store_url):
    h = harness
    jid = h.submit(name="keepme")["job_id"]
    h.ctl.db.close()  # the controller goes away...
    agents = RecordingAgentClient()
    ctl = Controller(h.ctl.cfg, KEY, db=Database(store_url), agents=agents, clock=h.clock)
    try:  # ...and a new one opens the same store
        [job] = ctl.jobs.list_jobs(ALICE, job_ids=[jid])
        assert (job.name, job.state, job.user) == ("keepme", "PENDING", "alice")
        assert ctl.jobs.get_script(ALICE, jid) == "#!/bin/sh\ntrue\n"
        nxt, _ = ctl.jobs.submit(ALICE, _request())
        assert nxt == jid + 1  # the id counter was committed with the job
        agents.assert_nothing_else()  # reopening and submitting order no agent about
    finally:
        ctl.db.close()


# ------------------------------------------------------------------- types


def test_values_at_the_edges_of_the_column_types_round_trip(harness):
    h = harness
    # uid 4294967294 (2**32 - 2, "nobody" on some systems) does not fit a 32-bit INTEGER
    h.as_user(Caller(uid=4294967294, gid=4294967294, user="far"))
    h.clock.advance(0.123456)  # submit_time 1800000000.123456: needs double precision
    long_name = "n" * 300  # longer than any VARCHAR(256) PostgreSQL would enforce
    jid = h.submit(name=long_name, comment="c" * 5000)["job_id"]
    with h.ctl.db.write() as s:
        # priority/basic starts at 0xFFFF0000 - 1 = 4294901759, past 2**31 - 1
        s.get(JobRow, jid).priority = 4294901759
    job = h.job(jid)
    assert job["name"] == long_name and job["comment"] == "c" * 5000
    assert job["uid"] == 4294967294 and job["priority"] == 4294901759
    assert job["submit_time"] == 1_800_000_000.123456
