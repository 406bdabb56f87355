"""Allocations without a batch script (srun outside a job, salloc) through the API.

The command submits ``allocation=True``, waits for RUNNING, runs steps in
it, keeps it alive and ends it with ``POST /v1/jobs/{id}/allocation``.
Harness cluster: n1 and n2 with 2 CPUs each; KillWait=2, heartbeat 1 s.
"""

from __future__ import annotations

from controller.steps.allocations import update_allocation
from slurmlite import errors
from slurmlite.protocol import AllocationUpdate, CancelRequest, JobCompletion
from tests.api.conftest import ALICE, BOB


def allocate(h, **fields) -> int:  # type: ignore[no-untyped-def]
    """salloc/srun's submission, started by one scheduling pass."""
    jid = h.submit(script="", name="bash", allocation=True, **fields)["job_id"]
    h.tick()
    return jid


def update(h, jid: int, **fields):  # type: ignore[no-untyped-def]
    return h.client.post(f"/v1/jobs/{jid}/allocation", json=fields)


def srun(h, jid: int, **fields):  # type: ignore[no-untyped-def]
    body = {"argv": ["hostname"], "work_dir": "/tmp", **fields}
    return h.client.post(f"/v1/jobs/{jid}/steps", json=body)


def test_an_allocation_runs_with_nothing_launched_and_no_batch_step(harness):
    h = harness
    jid = allocate(h, nodes_min=2)
    job = h.job(jid)
    assert (job["state"], job["nodes"], job["steps"]) == ("RUNNING", ["n1", "n2"], [])
    h.agents.assert_nothing_else()  # the command holds it: no launch order
    # what srun polls while it waits: the job, with its state
    [listed] = h.client.get("/v1/jobs", params={"ids": jid}).json()["jobs"]
    assert listed["state"] == "RUNNING"
    # its steps are what sacct shows under it: 9, 9.0 (no 9.batch)
    assert srun(h, jid, ntasks=2).status_code == 200
    [acct] = h.client.get("/v1/accounting", params={"ids": jid}).json()["jobs"]
    assert [s["step_id"] for s in acct["steps"]] == ["0"]


def test_keepalive_then_end_with_status_zero_completes_it(harness):
    h = harness
    jid = allocate(h)
    h.pass_time(30)
    r = update(h, jid)
    assert r.status_code == 200 and r.json() == {
        "job_id": jid,
        "state": "RUNNING",
        "reason": "None",
        "exit_code": None,
    }
    r = update(h, jid, end=True, exit_code=0)
    assert r.json()["state"] == "COMPLETED"
    job = h.job(jid)
    assert (job["state"], job["exit_code"], job["flags"]) == ("COMPLETED", 0, [])
    assert job["end_time"] == h.clock()
    # once it ended, a keepalive tells the command so
    r = update(h, jid)
    assert (r.status_code, r.json()["errno"]) == (409, errors.ESLURM_ALREADY_DONE)


def test_a_non_zero_or_signalled_command_fails_the_allocation(harness):
    h = harness
    exited, killed = allocate(h), allocate(h)
    update(h, exited, end=True, exit_code=3 << 8)
    update(h, killed, end=True, exit_code=9)
    a, b = h.job(exited), h.job(killed)
    assert (a["state"], a["reason"], a["exit_code"]) == ("FAILED", "NonZeroExitCode", 768)
    assert (b["state"], b["reason"], b["exit_code"]) == ("FAILED", "RaisedSignal", 9)


def test_ending_a_pending_allocation_cancels_it(harness):
    h = harness
    big = allocate(h, nodes_min=2, ntasks_per_node=2)  # takes every CPU
    waiting = allocate(h)
    assert h.job(waiting)["state"] == "PENDING"
    update(h, waiting, end=True)  # srun's Ctrl-C while queued
    assert h.job(waiting)["state"] == "CANCELLED"
    assert h.job(big)["state"] == "RUNNING"


def test_only_the_owner_updates_an_allocation_and_a_batch_job_has_none(harness):
    h = harness
    jid = allocate(h)
    h.as_user(BOB)
    r = update(h, jid, end=True)
    assert (r.status_code, r.json()["errno"]) == (403, errors.ESLURM_ACCESS_DENIED)
    h.as_user(ALICE)
    batch = h.submit()["job_id"]
    r = update(h, batch, end=True)
    assert r.json()["errno"] == errors.ESLURM_DISABLED
    assert h.job(jid)["state"] == "RUNNING"


def test_ending_an_allocation_terminates_its_running_steps(harness):
    h = harness
    jid = allocate(h, nodes_min=2)
    srun(h, jid, ntasks=1)  # step 0 on n1
    _row, orders = update_allocation(
        h.ctl.db, h.ctl.clock(), ALICE, jid, AllocationUpdate(end=True)
    )
    assert [(o.kind, o.node) for o in orders] == [("terminate", "n1")]
    job = h.job(jid)
    assert (job["state"], job["flags"]) == ("COMPLETED", ["COMPLETING"])  # until n1 reports
    done = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="0", exit_code=15)
    assert h.ctl.jobs.complete("n1", done)
    job = h.job(jid)
    assert (job["state"], job["flags"]) == ("COMPLETED", [])
    assert [(s["state"], s["exit_code"]) for s in job["steps"]] == [("CANCELLED", 15)]


def test_cancelling_an_allocation_terminates_its_steps_and_one_without_ends_at_once(harness):
    h = harness
    busy, idle = allocate(h), allocate(h, nodes_min=1)
    assert srun(h, busy, ntasks=1).status_code == 200
    out = h.ctl.jobs.cancel(ALICE, CancelRequest(job_ids=[busy, idle]))
    assert [(o.kind, o.job_id) for o in out.orders] == [("terminate", busy), ("terminate", idle)]
    assert (h.job(busy)["state"], h.job(busy)["flags"]) == ("CANCELLED", ["COMPLETING"])
    assert (h.job(idle)["state"], h.job(idle)["flags"]) == ("CANCELLED", [])
    node = h.job(busy)["nodes"][0]
    h.ctl.jobs.complete(
        node, JobCompletion(node=node, job_id=busy, restarts=0, step_id="0", exit_code=15)
    )
    assert h.job(busy)["flags"] == []  # its step ended: its node is free
    # the command ends it afterwards: still CANCELLED, the command's status recorded
    update(h, busy, end=True, exit_code=1 << 8)
    assert (h.job(busy)["state"], h.job(busy)["exit_code"]) == ("CANCELLED", 256)


def test_inactive_limit_ends_an_allocation_whose_command_fell_silent(harness):
    h = harness
    h.ctl.cfg.inactive_limit = 30
    jid = allocate(h)
    h.pass_time(20)
    update(h, jid)  # heard at +20
    h.pass_time(30)  # 30 s since: not over the limit
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.pass_time(1)  # 31 s > 30
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["reason"], job["flags"]) == ("TIMEOUT", "InactiveLimit", [])


def test_without_inactive_limit_a_silent_allocation_runs_on(harness):
    h = harness
    assert h.ctl.cfg.inactive_limit == 0  # Slurm's default: never
    jid = allocate(h)
    h.pass_time(600)
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"


def test_time_limit_ends_an_allocation_at_once_when_no_step_runs(harness):
    h = harness
    jid = allocate(h, time_limit=1)
    h.pass_time(61)
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["reason"], job["flags"]) == ("TIMEOUT", "TimeLimit", [])
    h.agents.take("signal", 1)  # the time limit's terminate order
    h.agents.assert_nothing_else()


def test_an_allocation_is_not_lost_when_its_first_node_lists_nothing(harness):
    h = harness
    jid = allocate(h)
    node = h.job(jid)["nodes"][0]
    for _ in range(10):  # heartbeats without the job, well past the 5 s grace
        h.clock.advance(1)
        h.ctl.nodes.heartbeat("n1", [])
        h.ctl.nodes.heartbeat("n2", [])
    h.tick()
    assert (h.job(jid)["state"], node) == ("RUNNING", h.job(jid)["batch_host"])


def test_an_allocation_is_never_requeued(harness):
    h = harness
    jid = allocate(h)
    r = h.client.post("/v1/jobs/requeue", json={"job_ids": [jid]})
    assert r.json()["results"][0]["errno"] == errors.ESLURM_DISABLED
    assert h.job(jid)["requeue"] is False
