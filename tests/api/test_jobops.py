"""The job verbs over the API: hold, release, requeue, update, and PrivateData listings.

alice (1001) owns the jobs unless a test says otherwise; bob (1002) is another
user; root is an operator.  Errnos are Slurm's: 2010 "Invalid user id" for
another user's hold/release/update, 2002 "Access/permission denied" otherwise.
"""

from __future__ import annotations

import pytest

from controller.jobs.operations import JobOps
from slurmlite import errors
from slurmlite.protocol import JobCompletion
from tests.api.conftest import ALICE, BOB, ROOT


def op(h, verb: str, **body) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    """POST /v1/jobs/<verb>; [(job_id, errno), ...]."""
    r = h.client.post(f"/v1/jobs/{verb}", json=body)
    assert r.status_code == 200, r.text
    return [(x["job_id"], x["errno"]) for x in r.json()["results"]]


def state(h, jid: int) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    job = h.job(jid)
    return job["state"], job["reason"]


# ----------------------------------------------------------------- holds


def test_owner_hold_is_a_user_hold_the_scheduler_skips_until_released(harness):
    h = harness
    jid = h.submit()["job_id"]
    assert op(h, "hold", job_ids=[jid]) == [(jid, 0)]
    job = h.job(jid)
    assert (job["state"], job["reason"], job["priority"]) == ("PENDING", "JobHeldUser", 0)
    h.tick()  # both nodes idle, yet a held job never starts
    assert state(h, jid) == ("PENDING", "JobHeldUser")
    assert op(h, "release", job_ids=[jid]) == [(jid, 0)]
    job = h.job(jid)
    # reason None until a pass looks at it; a fresh priority (not 0)
    assert (job["reason"], job["priority"] > 0) == ("None", True)
    h.tick()
    assert state(h, jid) == ("RUNNING", "None")
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_admin_hold_cannot_be_released_by_the_owner(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.as_user(ROOT)
    assert op(h, "hold", job_ids=[jid]) == [(jid, 0)]
    assert state(h, jid) == ("PENDING", "JobHeldAdmin")
    h.as_user(ALICE)
    assert op(h, "release", job_ids=[jid]) == [(jid, errors.ESLURM_ACCESS_DENIED)]
    assert op(h, "hold", job_ids=[jid]) == [(jid, 0)]  # held already: no change for her
    assert state(h, jid) == ("PENDING", "JobHeldAdmin")
    h.as_user(ROOT)
    assert op(h, "hold", job_ids=[jid], user_hold=True) == [(jid, 0)]  # uhold: switch kinds
    assert state(h, jid) == ("PENDING", "JobHeldUser")
    h.as_user(ALICE)
    assert op(h, "release", job_ids=[jid]) == [(jid, 0)]
    assert state(h, jid) == ("PENDING", "None")


def test_another_user_can_change_nothing_of_a_job(harness):
    h = harness
    jid = h.submit(time_limit=30)["job_id"]
    h.tick()
    before = h.job(jid)
    assert before["state"] == "RUNNING"
    h.as_user(BOB)
    refused = errors.ESLURM_USER_ID_MISSING
    assert op(h, "hold", job_ids=[jid]) == [(jid, refused)]
    assert op(h, "release", job_ids=[jid]) == [(jid, refused)]
    assert op(h, "update", job_ids=[jid], time_limit=5, comment="mine") == [(jid, refused)]
    assert op(h, "requeue", job_ids=[jid]) == [(jid, errors.ESLURM_ACCESS_DENIED)]
    after = h.job(jid)
    assert (after["state"], after["restarts"], after["time_limit"], after["comment"]) == (
        "RUNNING",
        0,
        30,
        None,
    )
    assert after["end_time"] == before["end_time"]
    h.agents.take("launch", 1)  # a denied requeue sends nothing
    h.agents.assert_nothing_else()


def test_unknown_and_finished_jobs(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    h.ctl.jobs.complete(
        "n1", JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=0)
    )
    assert op(h, "hold", job_ids=[jid, 999]) == [
        (jid, errors.ESLURM_JOB_FINISHED),
        (999, errors.ESLURM_INVALID_JOB_ID),
    ]
    h.pass_time(301)  # past MinJobAge=300: the controller no longer knows it
    assert op(h, "release", job_ids=[jid]) == [(jid, errors.ESLURM_INVALID_JOB_ID)]
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


# --------------------------------------------------------------- requeue


def test_requeue_of_a_running_job_terminates_the_run_and_pends_it(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    assert op(h, "requeue", job_ids=[jid]) == [(jid, 0)]
    job = h.job(jid)
    # requeue_delay=5 in the test config: BeginTime until then
    assert (job["state"], job["reason"], job["restarts"], job["nodes"]) == (
        "PENDING",
        "BeginTime",
        1,
        [],
    )
    h.tick()
    assert state(h, jid) == ("PENDING", "BeginTime")
    # the old run (restart 0) dies of the SIGTERM: its batch step says so, the job waits
    killed = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=15)
    assert h.ctl.jobs.complete("n1", killed) is True
    job = h.job(jid)
    assert (job["state"], [(s["state"], s["exit_code"]) for s in job["steps"]]) == (
        "PENDING",
        [("CANCELLED", 15)],
    )
    assert h.ctl.jobs.complete("n1", killed) is False  # a duplicate changes nothing
    h.pass_time(6)  # 6 s > requeue_delay + 1
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["restarts"]) == ("RUNNING", 1)
    assert [s["state"] for s in h.job(jid)["steps"]] == ["RUNNING"]  # the new run's step
    # a report of the old run arriving now is ignored: the step belongs to the new run
    assert h.ctl.jobs.complete("n1", killed) is False
    assert [s["state"] for s in h.job(jid)["steps"]] == ["RUNNING"]


def test_requeue_orders_the_old_run_to_terminate_with_slurms_line(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    outcome = JobOps(h.ctl.jobs).requeue(ROOT, [jid])
    [order] = outcome.orders
    assert (order.kind, order.job_id, order.node, order.restarts) == ("terminate", jid, "n1", 0)
    assert order.message.startswith(f"slurmstepd-n1: error: *** JOB {jid} ON n1 CANCELLED AT ")
    assert order.message.endswith(" DUE TO JOB REQUEUE ***")
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_requeue_refusals_and_requeuehold(harness):
    h = harness
    pending = h.submit(hold=True)["job_id"]
    no_requeue = h.submit(requeue=False)["job_id"]
    assert op(h, "requeue", job_ids=[pending]) == [(pending, errors.ESLURM_JOB_PENDING)]
    h.tick()
    assert state(h, no_requeue)[0] == "RUNNING"
    assert op(h, "requeue", job_ids=[no_requeue]) == [(no_requeue, errors.ESLURM_DISABLED)]
    runs = h.submit()["job_id"]
    h.tick()
    assert op(h, "requeue", job_ids=[runs], hold=True) == [(runs, 0)]
    job = h.job(runs)
    assert (job["state"], job["reason"], job["state_desc"], job["priority"]) == (
        "PENDING",
        "JobHeldUser",
        "job requeued in held state",
        0,
    )
    h.pass_time(6)
    h.tick()
    assert state(h, runs) == ("PENDING", "JobHeldUser")  # held: stays after the delay


# ---------------------------------------------------------------- update


def test_owner_may_lower_a_running_jobs_limit_but_not_raise_it(harness):
    h = harness
    jid = h.submit(time_limit=30)["job_id"]
    h.tick()
    start = h.job(jid)["start_time"]
    assert op(h, "update", job_ids=[jid], time_limit=10) == [(jid, 0)]
    job = h.job(jid)
    assert (job["time_limit"], job["end_time"]) == (10, start + 10 * 60)
    assert op(h, "update", job_ids=[jid], time_limit=20) == [(jid, errors.ESLURM_ACCESS_DENIED)]
    assert op(h, "update", job_ids=[jid], time_limit="UNLIMITED") == [
        (jid, errors.ESLURM_ACCESS_DENIED)
    ]
    assert h.job(jid)["time_limit"] == 10
    h.as_user(ROOT)  # an operator may raise it: the end moves by 50 minutes
    assert op(h, "update", job_ids=[jid], time_limit=60) == [(jid, 0)]
    assert h.job(jid)["end_time"] == start + 60 * 60
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_owner_may_raise_a_pending_jobs_limit_up_to_the_partitions_max(harness):
    h = harness
    jid = h.submit(partition="long", time_limit=30, hold=True)["job_id"]
    # partition long: MaxTime=60
    assert op(h, "update", job_ids=[jid], time_limit=60) == [(jid, 0)]
    assert op(h, "update", job_ids=[jid], time_limit=90) == [(jid, errors.ESLURM_ACCESS_DENIED)]
    assert op(h, "update", job_ids=[jid], partition="debug", time_limit=90) == [(jid, 0)]
    job = h.job(jid)
    assert (job["partition"], job["time_limit"]) == ("debug", 90)  # debug: UNLIMITED


def test_lowered_limit_below_the_run_time_times_the_job_out_at_once(harness):
    h = harness
    jid = h.submit(time_limit=30)["job_id"]
    h.tick()
    h.pass_time(5 * 60)
    assert op(h, "update", job_ids=[jid], time_limit=2) == [(jid, 0)]  # ran 5 min already
    h.tick()
    assert state(h, jid) == ("TIMEOUT", "TimeLimit")
    h.agents.take("launch", 1)
    h.agents.take("signal", 1)
    h.agents.assert_nothing_else()


def test_update_name_comment_partition_and_requeue(harness):
    h = harness
    pending = h.submit(hold=True)["job_id"]
    body = {"name": "renamed", "comment": "why", "partition": "long", "requeue": False}
    assert op(h, "update", job_ids=[pending], **body) == [(pending, 0)]
    job = h.job(pending)
    assert (job["name"], job["comment"], job["partition"], job["requeue"]) == (
        "renamed",
        "why",
        "long",
        False,
    )
    assert op(h, "update", job_ids=[pending], partition="nosuch") == [
        (pending, errors.ESLURM_INVALID_PARTITION_NAME)
    ]
    running = h.submit()["job_id"]
    h.tick()
    assert op(h, "update", job_ids=[running], partition="long") == [
        (running, errors.ESLURM_JOB_NOT_PENDING)
    ]
    # every change is checked first: the refused partition left the comment alone
    assert op(h, "update", job_ids=[running], comment="x", partition="long")[0][1] != 0
    assert h.job(running)["comment"] is None
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


@pytest.mark.parametrize(
    ("verb", "body"),
    [
        ("hold", {"job_ids": []}),
        ("hold", {"job_ids": [1], "bogus": 1}),
        ("release", {"job_ids": ["x"]}),
        ("requeue", {"job_ids": [2**40]}),
        ("update", {"job_ids": [1], "time_limit": 0}),
        ("update", {"job_ids": [1], "time_limit": "forever"}),
        ("update", {"job_ids": [1], "name": "a\x00b"}),
    ],
)
def test_malformed_requests_are_422_never_500(harness, verb, body):
    assert harness.client.post(f"/v1/jobs/{verb}", json=body).status_code == 422


# ----------------------------------------------------------- PrivateData


def test_private_data_jobs_shows_users_only_their_own_jobs(harness):
    h = harness
    mine = h.submit()["job_id"]
    h.as_user(BOB)
    bobs = h.submit()["job_id"]

    def listed(path: str, **params) -> list[int]:  # type: ignore[no-untyped-def]
        data = h.client.get(path, params=params).json()
        if "rows" in data:
            return [row[0] for row in data["rows"]]
        return [j["job_id"] for j in data["jobs"]]

    views = [
        ("/v1/jobs", {}),
        ("/v1/jobs", {"fields": "job_id,state"}),  # squeue's projection
        ("/v1/jobs", {"steps": True}),  # read from the store, not the live view
        ("/v1/accounting", {}),
    ]
    for path, params in views:  # default: everyone sees everything
        assert listed(path, **params) == [mine, bobs], (path, params)
    h.ctl.cfg.private_data = ["Jobs"]
    for path, params in views:
        assert listed(path, **params) == [bobs], (path, params)
    h.as_user(ROOT)
    for path, params in views:
        assert listed(path, **params) == [mine, bobs], (path, params)
    h.ctl.cfg.private_data = ["usage"]  # hides accounting records only
    h.as_user(BOB)
    assert listed("/v1/jobs") == [mine, bobs]
    assert listed("/v1/accounting") == [bobs]
