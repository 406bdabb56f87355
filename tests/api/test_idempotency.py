"""A lost reply never makes a second job: ``Idempotency-Key`` and ``X-Slurmlite-Deadline``.

The harness's clock is fake (t0 = 1,800,000,000), so deadlines are given
relative to it; the controller commits a new job only while
``now < deadline - COMMIT_MARGIN`` (1 s).  Every case runs on SQLite and
PostgreSQL, through FastAPI's route (the harness) and, where it says so,
through the submission shortcut with the socket's peer credentials.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from controller.api.app import create_app
from controller.api.fastsubmit import SubmitShortcut
from controller.jobs import submit_keys
from controller.jobs.submit_keys import Attempt
from controller.store.models import JobRow, SubmitKeyRow
from slurmlite import errors
from slurmlite.idempotency import KEY_TTL
from slurmlite.protocol import JobSubmit
from tests.api.conftest import ALICE, BOB
from tests.api.test_submit_shortcut import body, with_peercred


def post(h, key: str | None = None, deadline: float | None = None, **fields):  # type: ignore[no-untyped-def]
    headers = {}
    if key is not None:
        headers["Idempotency-Key"] = key
    if deadline is not None:
        headers["X-Slurmlite-Deadline"] = repr(deadline)
    return h.client.post("/v1/jobs", json=body(**fields), headers=headers)


def jobs_stored(h) -> int:  # type: ignore[no-untyped-def]
    with h.ctl.db.read() as s:
        return s.scalar(select(func.count()).select_from(JobRow))


def keys_stored(h) -> int:  # type: ignore[no-untyped-def]
    with h.ctl.db.read() as s:
        return s.scalar(select(func.count()).select_from(SubmitKeyRow))


def test_the_same_key_twice_from_one_user_is_one_job(harness):
    h = harness
    first = post(h, "k-1")
    again = post(h, "k-1")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()  # same body: same id, same (absent) message
    assert jobs_stored(h) == 1
    other = post(h, "k-2")
    assert other.json()["job_id"] == first.json()["job_id"] + 1  # a new key: a new job


def test_another_users_key_of_the_same_text_is_a_job_of_their_own(harness):
    h = harness
    alices = post(h, "shared-text").json()["job_id"]
    h.as_user(BOB)
    bobs = post(h, "shared-text").json()["job_id"]
    assert bobs != alices  # and bob learns nothing of alice's job
    assert h.job(bobs)["user"] == "bob"
    assert jobs_stored(h) == 2


def test_a_submission_past_its_deadline_creates_nothing(harness):
    h = harness
    now = h.clock()
    late = post(h, "k-late", deadline=now - 5)
    assert late.status_code == 408
    assert late.json()["errno"] == errors.SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT
    assert late.json()["error"] == "Socket timed out on send/recv operation"
    # within the margin (0.5 s left < 1 s): refused as well, the command is about to give up
    assert post(h, "k-edge", deadline=now + 0.5).status_code == 408
    assert jobs_stored(h) == 0 and keys_stored(h) == 0
    # with time left it is stored; a repeat of its key after the deadline still gets it
    ok = post(h, "k-ok", deadline=now + 10)
    assert ok.status_code == 200
    h.clock.advance(60)
    assert post(h, "k-ok", deadline=now + 10).json() == ok.json()
    assert jobs_stored(h) == 1


def test_a_late_submission_without_a_key_creates_nothing_either(harness):
    h = harness
    assert post(h, deadline=h.clock() - 1).status_code == 408
    assert jobs_stored(h) == 0


def test_a_refused_first_attempt_leaves_no_key(harness):
    h = harness
    refused = post(h, "k-bad", partition="nosuch")
    assert refused.status_code == 400
    assert post(h, "k-bad", partition="nosuch").json() == refused.json()
    assert keys_stored(h) == 0 and jobs_stored(h) == 0


@pytest.mark.parametrize(
    ("header", "value"),
    [("Idempotency-Key", "has space"), ("Idempotency-Key", "x" * 256),
     ("X-Slurmlite-Deadline", "soon"), ("X-Slurmlite-Deadline", "inf")],
)  # fmt: skip
def test_a_malformed_header_is_a_422_naming_it_on_both_paths(harness, header, value):
    app = create_app(harness.ctl, run_loop=False)
    with (
        TestClient(with_peercred(SubmitShortcut(app))) as fast,
        TestClient(with_peercred(app)) as slow,
    ):
        a = fast.post("/v1/jobs", json=body(), headers={header: value})
        b = slow.post("/v1/jobs", json=body(), headers={header: value})
    assert a.status_code == b.status_code == 422
    assert a.json() == b.json()
    assert a.json()["detail"][0]["loc"] == ["header", header]
    assert jobs_stored(harness) == 0


def test_the_shortcut_and_the_route_share_the_keys(harness):
    app = create_app(harness.ctl, run_loop=False)
    with (
        TestClient(with_peercred(SubmitShortcut(app))) as fast,
        TestClient(with_peercred(app)) as slow,
    ):
        first = fast.post("/v1/jobs", json=body(), headers={"Idempotency-Key": "k-x"})
        again = slow.post("/v1/jobs", json=body(), headers={"Idempotency-Key": "k-x"})
        late = fast.post(
            "/v1/jobs",
            json=body(),
            headers={"Idempotency-Key": "k-y", "X-Slurmlite-Deadline": "1000.0"},
        )
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert late.status_code == 408
    assert jobs_stored(harness) == 1


def _request(name: str) -> JobSubmit:
    return JobSubmit(script="#!/bin/sh\ntrue\n", name=name, work_dir="/tmp",
                     submit_dir="/tmp", submit_host="h")  # fmt: skip


def test_one_key_twice_in_one_batch_is_one_job(harness):
    jobs = harness.ctl.jobs
    batch = [(ALICE, _request("a")), (ALICE, _request("a")), (BOB, _request("b"))]
    same = Attempt("k-dup", None)
    out = jobs.submit_many(batch, [same, same, same])
    assert out[0] == out[1]  # alice's retry, in the same batch as her first attempt
    assert out[2] != out[0]  # bob's key of the same text: his own job
    assert jobs_stored(harness) == 2


def test_a_stored_key_is_found_by_its_primary_key_not_by_a_lookup_first(harness, monkeypatch):
    """First attempts pay no lookup; a repeated key makes the key's insert fail, the
    batch is rolled back and retried alone, and the request gets the stored job."""
    jobs = harness.ctl.jobs
    real, calls = submit_keys.find, []

    def counted(conn, owners):  # type: ignore[no-untyped-def]
        calls.append(owners)
        return real(conn, owners)

    monkeypatch.setattr(submit_keys, "find", counted)
    batch = [(ALICE, _request("a")), (ALICE, _request("b"))]
    [(job_id, _), (other, _)] = jobs.submit_many(batch, [Attempt("k-race"), Attempt("k-2")])
    assert calls == []  # nothing looked up for first attempts
    again = [(ALICE, _request("a")), (ALICE, _request("c"))]
    out = jobs.submit_many(again, [Attempt("k-race"), Attempt("k-3")])
    assert out[0] == (job_id, None) and out[1][0] not in (job_id, other)
    assert calls == [{(ALICE.uid, "k-race")}]  # only the request whose key was stored
    assert jobs_stored(harness) == 3


def test_keys_older_than_a_day_are_purged(harness):
    h = harness
    post(h, "k-old")
    h.clock.advance(KEY_TTL + submit_keys.PURGE_EVERY + 1)
    post(h, "k-new")  # its transaction purges what is over a day old
    assert keys_stored(h) == 1
    h.as_user(ALICE)
    assert post(h, "k-new").json()["job_id"] == 2  # the young key still answers
