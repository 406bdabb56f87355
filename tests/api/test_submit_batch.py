"""Group commit: several submissions stored by one transaction, each answered alone.

``JobService.submit_many`` and the API's ``SubmitQueue`` in front of it, on
SQLite and PostgreSQL (the ``harness`` fixture): ids stay consecutive in
arrival order, a refused request takes no id and does not disturb the
others, a row the database refuses fails alone, and concurrent API callers
share one commit.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from sqlalchemy import select

from controller.jobs.submit_queue import SubmitQueue
from controller.store.models import JobRow
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import JobSubmit
from tests.api.conftest import ALICE, BOB, register


def _request(name: str = "job", **fields) -> JobSubmit:  # type: ignore[no-untyped-def]
    base = JobSubmit(
        script="#!/bin/sh\ntrue\n", name=name, work_dir="/tmp", submit_dir="/tmp", submit_host="vm"
    )
    return replace(base, **fields)


def _stored(h) -> list[tuple[int, str, str, str]]:  # type: ignore[no-untyped-def]
    with h.ctl.db.read() as s:
        rows = s.execute(select(JobRow.id, JobRow.name, JobRow.state, JobRow.reason))
        return sorted((r.id, r.name, r.state, r.reason) for r in rows)


def test_one_batch_numbers_in_order_and_refuses_only_the_bad_requests(harness):
    h = harness
    outcomes = h.ctl.jobs.submit_many(
        [
            (ALICE, _request("a")),
            (ALICE, _request("nopart", partition="nosuch")),  # refused: takes no id
            (BOB, _request("b", hold=True)),
            (ALICE, _request("toobig", gpus_per_node=5)),  # never fits: id 3, stored FAILED
            (ALICE, _request("probe", test_only=True)),  # id 4, answered, not stored
            (ALICE, _request("c")),
        ]
    )
    a, nopart, b, toobig, probe, c = outcomes
    assert (a, b, c) == ((1, None), (2, None), (5, None))
    assert isinstance(nopart, SlurmError) and nopart.code == errors.ESLURM_INVALID_PARTITION_NAME
    assert isinstance(toobig, SlurmError)
    assert toobig.code == errors.ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE
    job_id, message = probe
    assert job_id == 4 and message.startswith("Job 4 to start at ")
    assert _stored(h) == [
        (1, "a", "PENDING", "None"),
        (2, "b", "PENDING", "JobHeldUser"),
        (3, "toobig", "FAILED", "BadConstraints"),
        (5, "c", "PENDING", "None"),
    ]
    # the counter moved past every id handed out: the next job is 6
    assert h.ctl.jobs.submit(ALICE, _request("next")) == (6, None)


def test_a_row_the_database_refuses_fails_alone(harness):
    h = harness
    # nice=2**70 passes validation but fits no 64-bit INTEGER column: the
    # batch's insert fails, and each request is then stored on its own
    outcomes = h.ctl.jobs.submit_many(
        [(ALICE, _request("a")), (ALICE, _request("huge", nice=2**70)), (ALICE, _request("b"))]
    )
    assert isinstance(outcomes[1], Exception)
    # the failed batch's ids were rolled back with it; the retries number 1 and 2
    assert (outcomes[0], outcomes[2]) == ((1, None), (2, None))
    assert [(i, name) for i, name, _s, _r in _stored(h)] == [(1, "a"), (2, "b")]


def test_concurrent_api_callers_share_one_commit_and_wake_the_scheduler_once(harness):
    h = harness
    batches: list[int] = []
    wakes: list[int] = []
    submit_many = h.ctl.jobs.submit_many

    def counting(batch):  # type: ignore[no-untyped-def]
        batches.append(len(batch))
        return submit_many(batch)

    h.ctl.jobs.submit_many = counting  # type: ignore[method-assign]
    queue = SubmitQueue(h.ctl.jobs, lambda: wakes.append(1))

    async def burst() -> list[object]:
        reqs = [_request(f"j{i}") for i in range(9)] + [_request("bad", partition="nosuch")]
        calls = [queue.submit(ALICE, r) for r in reqs]
        return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(burst())
    # all ten were waiting before the writer ran: one transaction for ten requests
    assert batches == [10]
    assert wakes == [1]
    assert results[:9] == [(i, None) for i in range(1, 10)]
    assert isinstance(results[9], SlurmError)
    assert results[9].code == errors.ESLURM_INVALID_PARTITION_NAME
    # a later, lone request is written at once, in a batch of its own
    assert asyncio.run(queue.submit(ALICE, _request("late"))) == (10, None)
    assert batches == [10, 1] and wakes == [1, 1]


def test_a_batch_of_refusals_and_test_only_requests_does_not_wake_the_scheduler(harness):
    h = harness
    wakes: list[int] = []
    queue = SubmitQueue(h.ctl.jobs, lambda: wakes.append(1))

    async def burst() -> list[object]:
        calls = [
            queue.submit(ALICE, _request("probe", test_only=True)),
            queue.submit(ALICE, _request("bad", partition="nosuch")),
        ]
        return await asyncio.gather(*calls, return_exceptions=True)

    probe, bad = asyncio.run(burst())
    assert probe[0] == 1 and isinstance(bad, SlurmError)
    assert wakes == [] and _stored(h) == []  # nothing stored, nothing to schedule


def test_the_api_validates_the_raw_body_as_before(harness):
    h = harness
    # unknown keys (a newer sbatch) are ignored; the job is accepted
    assert h.post_job(some_future_option=1).json() == {"job_id": 1, "test_only_message": None}
    r = h.client.post("/v1/jobs", json={"name": 3})
    assert r.status_code == 422
    problems = {(tuple(d["loc"]), d["type"]) for d in r.json()["detail"]}
    assert (("body", "name"), "string_type") in problems
    assert (("body", "script"), "missing") in problems
    r = h.client.post(
        "/v1/jobs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    # the request body is still documented
    doc = h.client.get("/openapi.json").json()["paths"]["/v1/jobs"]["post"]["requestBody"]
    assert "script" in doc["content"]["application/json"]["schema"]["properties"]


def test_the_checks_see_a_node_that_registers_after_earlier_submissions(harness):
    h = harness
    late = _request("late", req_nodes=["n9"])
    with_n9 = h.ctl.jobs.submit_many([(ALICE, _request("a")), (ALICE, late)])
    assert isinstance(with_n9[1], SlurmError)
    assert with_n9[1].code == errors.ESLURM_INVALID_NODE_NAME  # n9 is unknown...
    register(h.ctl, "n9")  # ...until it registers (a dynamic node, in no partition)
    [again] = h.ctl.jobs.submit_many([(ALICE, late)])
    assert isinstance(again, SlurmError)
    assert again.code == errors.ESLURM_REQUESTED_NODES_NOT_IN_PARTITION


def test_a_caller_cancelled_while_waiting_is_not_stored_and_the_others_are(harness):
    h = harness
    queue = SubmitQueue(h.ctl.jobs, lambda: None)

    async def burst() -> list[object]:
        tasks = [asyncio.ensure_future(queue.submit(ALICE, _request(f"j{i}"))) for i in range(3)]
        await asyncio.sleep(0)  # all three are queued; the writer has not run yet
        tasks[1].cancel()
        return await asyncio.gather(*tasks, return_exceptions=True)

    first, cancelled, third = asyncio.run(burst())
    assert isinstance(cancelled, asyncio.CancelledError)
    assert (first, third) == ((1, None), (2, None))
    assert [name for _i, name, _s, _r in _stored(h)] == ["j0", "j2"]
