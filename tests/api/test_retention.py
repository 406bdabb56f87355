"""PurgeJobAfter / ArchiveJobs: only old finished jobs leave, archived (and fsynced) first.

The store holds, at now = 2026-03-10 15:42 UTC with ``PurgeJobAfter=2days``
(cutoff 2026-03-07 23:59:59):

* 1, 2: COMPLETED / FAILED, ended on the 5th            -> purged (with their steps)
* 3:    COMPLETED, ended on the 8th at 00:00:00         -> kept (after the cutoff)
* 4:    CANCELLED but still COMPLETING, ended the 5th   -> kept (not finished finishing)
* 5, 6: PENDING / RUNNING, submitted long ago           -> kept (never finished)

Run on SQLite and PostgreSQL (``store_url``).
"""

from __future__ import annotations

import json
import os
import stat
import time
from calendar import timegm

import pytest
from sqlalchemy import func, insert, inspect, select

from controller.jobs import retention
from controller.jobs.retention import Retention
from controller.store.db import Database
from controller.store.models import JobRow, StepRow
from slurmlite.config import parse_config

NOW = timegm((2026, 3, 10, 15, 42, 0))
OLD = timegm((2026, 3, 5, 12, 0, 0))
JUST_AFTER = timegm((2026, 3, 8, 0, 0, 0))


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _job(jid: int, state: str, end: float | None, flags: str = "") -> dict:
    return dict(id=jid, name=f"j{jid}", uid=1001, gid=1001, user="alice", group="alice",
                account="default", qos="normal", partition="debug", state=state, flags=flags,
                submit_time=OLD - 3600, start_time=None if state == "PENDING" else OLD - 60,
                end_time=end, work_dir="/tmp", submit_dir="/tmp", submit_host="vm",
                script="#!/bin/sh\ntrue\n")  # fmt: skip


@pytest.fixture
def store(store_url):
    db = Database(store_url)
    jobs = [
        _job(1, "COMPLETED", OLD),
        _job(2, "FAILED", OLD + 1),
        _job(3, "COMPLETED", JUST_AFTER),
        _job(4, "CANCELLED", OLD, flags="COMPLETING"),
        _job(5, "PENDING", None),
        _job(6, "RUNNING", None),
    ]
    with db.write_rows() as conn:
        conn.execute(insert(JobRow.__table__), jobs)
        conn.execute(
            insert(StepRow.__table__),
            [dict(job_id=j, step_id="batch", name="batch", state="COMPLETED", end_time=OLD)
             for j in (1, 2, 3, 4)],
        )  # fmt: skip
    yield db
    db.close()


def _retention(db, tmp_path, archive: bool = True) -> Retention:
    cfg = parse_config(
        f"ClusterName=lab\nPurgeJobAfter=2days\nArchiveJobs={'yes' if archive else 'no'}\n"
        f"ArchiveDir={tmp_path}/archive\n"
    )
    return Retention(db, lambda: cfg, lambda: NOW)


def _ids(db, table=JobRow) -> list[int]:
    col = table.id if table is JobRow else table.job_id
    with db.read() as s:
        return sorted(s.scalars(select(col)))


def test_purge_removes_only_finished_jobs_ended_before_the_cutoff_and_archives_exactly_them(
    store, tmp_path
):
    done = _retention(store, tmp_path).run()
    assert done is not None and done.purged == 2
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(done.cutoff)) == "2026-03-07 23:59:59"
    assert _ids(store) == [3, 4, 5, 6]
    assert _ids(store, StepRow) == [3, 4]
    # one file for the run, named by cluster, oldest end and cutoff, owner-only
    assert done.archive is not None
    assert done.archive.name == "lab_job_archive_2026-03-05T12:00:00_2026-03-07T23:59:59.jsonl"
    assert stat.S_IMODE(os.stat(done.archive).st_mode) == 0o600
    lines = [json.loads(line) for line in done.archive.read_text().splitlines()]
    assert [(r["job"]["id"], r["job"]["state"]) for r in lines] == [(1, "COMPLETED"), (2, "FAILED")]
    assert [[s["step_id"] for s in r["steps"]] for r in lines] == [["batch"], ["batch"]]
    assert lines[0]["job"]["script"] == "#!/bin/sh\ntrue\n"  # the whole row, every column
    # nothing left to purge: a second run deletes nothing and writes no file
    again = _retention(store, tmp_path).run()
    assert again is not None and again.purged == 0 and again.archive is None


def test_a_failed_archive_write_deletes_nothing(store, tmp_path, monkeypatch):
    def full_disk(out, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Retention, "write", staticmethod(full_disk))
    with pytest.raises(OSError, match="No space left"):
        _retention(store, tmp_path).run()
    assert _ids(store) == [1, 2, 3, 4, 5, 6]
    assert _ids(store, StepRow) == [1, 2, 3, 4]


def test_without_archive_jobs_nothing_is_written_and_batches_cover_everything(
    store, tmp_path, monkeypatch
):
    monkeypatch.setattr(retention, "BATCH", 1)  # 2 purgeable jobs: batches of 1, then an empty one
    done = _retention(store, tmp_path, archive=False).run()
    assert done is not None and done.purged == 2 and len(done.batch_ms) == 2
    assert done.archive is None and not (tmp_path / "archive").exists()
    assert _ids(store) == [3, 4, 5, 6]


def test_no_purge_job_after_keeps_everything(store, tmp_path):
    cfg = parse_config("ClusterName=lab\nArchiveJobs=yes\n")
    assert Retention(store, lambda: cfg, lambda: NOW).run() is None
    with store.read() as s:
        assert s.scalar(select(func.count()).select_from(JobRow)) == 6


def test_the_history_index_exists_after_migration(store):
    indexes = {i["name"]: i["column_names"] for i in inspect(store.engine).get_indexes("jobs")}
    assert indexes["ix_jobs_user_end_time"] == ["user", "end_time"]
    assert indexes["ix_jobs_end_time"] == ["end_time"]  # the purge walks it from the oldest


def test_slurmlite_archive_show_prints_the_archived_jobs_and_steps(store, tmp_path):
    from click.testing import CliRunner

    from cli.slurmlite import main

    done = _retention(store, tmp_path).run()
    assert done is not None and done.archive is not None
    out = CliRunner().invoke(main, ["archive", "show", str(done.archive)])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].split() == ["JobID", "JobName", "Partition", "Account", "User", "State",
                                "ExitCode", "Start", "End"]  # fmt: skip
    assert [line.split()[0] for line in lines[2:]] == ["1", "1.batch", "2", "2.batch"]
    assert lines[2].split()[:6] == ["1", "j1", "debug", "default", "alice", "COMPLETED"]
    assert lines[4].split()[-1] == "2026-03-05T12:00:01"  # job 2 ended at OLD + 1 (UTC)
    jobs = CliRunner().invoke(main, ["archive", "show", "-X", str(done.archive)])
    assert [line.split()[0] for line in jobs.output.splitlines()[2:]] == ["1", "2"]


def test_the_controller_purges_at_start(tmp_path, store_url):
    import asyncio

    from controller.context import Controller
    from tests.api.conftest import CONF, KEY
    from tests.recording_agents import RecordingAgentClient

    text = CONF.format(dir=tmp_path) + "PurgeJobAfter=1days\nArchiveJobs=no\n"
    cfg = parse_config(text, path=str(tmp_path / "slurm.conf"))
    db = Database(store_url)
    with db.write_rows() as conn:  # ended 10 days before the controller's clock; one running
        conn.execute(insert(JobRow.__table__), [_job(1, "COMPLETED", NOW - 10 * 86400),
                                                _job(2, "RUNNING", None)])  # fmt: skip
    ctl = Controller(cfg, KEY, db=db, agents=RecordingAgentClient(), clock=lambda: NOW)

    async def start_then_stop() -> None:
        await ctl.start()
        try:
            for _ in range(200):  # up to 10 s: the first run starts at once
                if _ids(db) == [2]:
                    return
                await asyncio.sleep(0.05)
        finally:
            await ctl.stop()

    asyncio.run(start_then_stop())
    assert _ids(db) == [2]
