"""Job verbs on array tasks by reference (``57_9``, ``57_[1-3]``), on rows made in the store."""

from __future__ import annotations

from sqlalchemy import select

from controller.store.models import JobRow
from slurmlite import errors
from tests.api.conftest import ALICE, BOB


def _array(h, pending: str = "0-9") -> int:  # type: ignore[no-untyped-def]
    jid = h.submit()["job_id"]
    with h.ctl.jobs.db.write() as s:
        row = s.get(JobRow, jid)
        row.array_job_id, row.array_pending, row.array_info = jid, pending, "10,0,9,1"
    return jid


def test_cancel_of_a_pending_task_drops_it_from_the_remainder(harness):
    h = harness
    jid = _array(h)
    r = h.client.post("/v1/jobs/cancel", json={"refs": [f"{jid}_9", f"{jid}_77"]})
    assert r.status_code == 200, r.text
    res = [(x["job"], x["errno"]) for x in r.json()["results"]]
    assert res == [(f"{jid}_9", 0), (f"{jid}_77", 2017)]
    with h.ctl.jobs.db.read() as s:
        assert s.get(JobRow, jid).array_pending == "0-8"


def test_throttle_update_sets_the_arrays_limit(harness):
    h = harness
    jid = _array(h)
    r = h.client.post("/v1/jobs/update", json={"job_ids": [str(jid)], "array_throttle": 3})
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["errno"] == 0
    with h.ctl.jobs.db.read() as s:
        assert s.get(JobRow, jid).array_max_tasks == 3


def test_another_users_cancel_or_hold_of_a_pending_task_leaves_the_array_whole(harness):
    h = harness
    jid = _array(h)  # alice's
    h.as_user(BOB)
    r = h.client.post("/v1/jobs/cancel", json={"refs": [f"{jid}_9"]})
    assert [(x["job"], x["errno"]) for x in r.json()["results"]] == [
        (f"{jid}_9", errors.ESLURM_ACCESS_DENIED)
    ]
    r = h.client.post("/v1/jobs/hold", json={"job_ids": [f"{jid}_[2-3]"]})
    assert r.status_code == 200, r.text
    assert {x["errno"] for x in r.json()["results"]} == {errors.ESLURM_ACCESS_DENIED}
    with h.ctl.jobs.db.read() as s:  # nothing split off, nothing held
        rows = s.scalars(select(JobRow).where(JobRow.array_job_id == jid)).all()
        assert [(r.id, r.array_pending, r.hold) for r in rows] == [(jid, "0-9", None)]
    h.as_user(ALICE)  # the owner's own cancel splits the task off and ends it
    r = h.client.post("/v1/jobs/cancel", json={"refs": [f"{jid}_9"]})
    assert [x["errno"] for x in r.json()["results"]] == [0]
    with h.ctl.jobs.db.read() as s:
        assert s.get(JobRow, jid).array_pending == "0-8"
