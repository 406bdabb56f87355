"""Job arrays through submit and the scheduler pass (one row until tasks start; spec §1.9).

The harness cluster has two 2-CPU nodes: four one-CPU tasks run at once.
"""

from __future__ import annotations

from sqlalchemy import func, select

from controller.store.models import JobRow
from slurmlite.protocol import JobCompletion


def rows(h, jid: int) -> list[tuple[int, int | None, str, str | None]]:  # type: ignore[no-untyped-def]
    with h.ctl.jobs.db.read() as s:
        q = select(JobRow).where(JobRow.array_job_id == jid).order_by(JobRow.id)
        return [(r.id, r.array_task_id, r.state, r.array_pending) for r in s.scalars(q)]


def master(h, jid: int) -> dict:  # type: ignore[no-untyped-def]
    """The master's listing (``ids=N`` lists every task of array N, as squeue -j N)."""
    jobs = h.client.get("/v1/jobs", params={"ids": jid, "all_states": True}).json()["jobs"]
    return next(j for j in jobs if j["job_id"] == jid)


def end(h, jid: int, exit_code: int = 0) -> None:  # type: ignore[no-untyped-def]
    msg = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=exit_code)
    h.ctl.jobs.complete(h.job(jid)["batch_host"], msg)


def test_an_array_is_one_row_until_its_tasks_start(harness):
    h = harness
    with h.ctl.jobs.db.read() as s:
        before = s.scalar(select(func.count()).select_from(JobRow))
    jid = h.submit(array="0-999")["job_id"]
    with h.ctl.jobs.db.read() as s:
        assert s.scalar(select(func.count()).select_from(JobRow)) == before + 1
        row = s.get(JobRow, jid)
        assert (row.array_job_id, row.array_pending, row.array_info) == (
            jid,
            "0-999",
            "1000,0,999,1",
        )
    assert master(h, jid)["array_task_str"] == "0-999"


def test_tasks_split_off_in_index_order_and_the_master_runs_last(harness):
    h = harness
    jid = h.submit(array="0-2")["job_id"]
    for _ in range(3):
        h.tick()
    got = rows(h, jid)
    # task 0 and 1 got new ids; the master (lowest id) became the last task
    assert got == [
        (jid, 2, "RUNNING", None),
        (jid + 1, 0, "RUNNING", None),
        (jid + 2, 1, "RUNNING", None),
    ]
    launches = h.agents.take("launch", 3)
    spec = {o.spec.job_id: o.spec for o in launches}
    first = spec[jid + 1].environment
    assert (first["SLURM_ARRAY_JOB_ID"], first["SLURM_ARRAY_TASK_ID"]) == (str(jid), "0")
    assert first["SLURM_ARRAY_TASK_COUNT"] == "3" and first["SLURM_ARRAY_TASK_MAX"] == "2"
    assert first["SLURM_JOB_ID"] == str(jid + 1)
    # the default output pattern of an array is slurm-%A_%a.out
    assert spec[jid + 1].std_out == f"/tmp/slurm-{jid}_0.out"
    assert spec[jid].std_out == f"/tmp/slurm-{jid}_2.out"


def test_the_throttle_holds_tasks_back_with_job_array_task_limit(harness):
    h = harness
    jid = h.submit(array="0-4%2")["job_id"]
    for _ in range(4):
        h.tick()
    running = [r for r in rows(h, jid) if r[2] == "RUNNING"]
    assert len(running) == 2
    pending = master(h, jid)
    assert (pending["state"], pending["reason"]) == ("PENDING", "JobArrayTaskLimit")
    assert pending["array_task_str"] == "2-4%2"
    end(h, running[0][0])
    h.tick()
    assert len([r for r in rows(h, jid) if r[2] == "RUNNING"]) == 2


def test_a_bad_or_too_big_array_is_refused_with_slurms_error(harness):
    h = harness
    for text in ("abc", "0-5000"):  # the harness's MaxArraySize is the default 1001
        r = h.post_job(array=text)
        assert r.status_code >= 400
        assert r.json()["errno"] == 2081, r.text
