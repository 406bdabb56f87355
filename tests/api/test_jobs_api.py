"""Submit, schedule, launch, complete, cancel and time out through the API."""

from __future__ import annotations

import os

from slurmlite import errors
from slurmlite.credential import node_key, orders_key, verify_credential
from slurmlite.protocol import JobCompletion
from tests.api.conftest import BOB, KEY, ROOT


def launches(h, n: int):  # type: ignore[no-untyped-def]
    """The ``n`` launch orders sent so far (taken: ``assert_nothing_else`` sees the rest)."""
    return [spec for _kind, _node, spec in h.agents.take("launch", n)]


def test_submit_then_tick_starts_job_and_sends_one_signed_launch(harness):
    h = harness
    jid = h.submit(name="hello", environment={"PATH": "/usr/bin"})["job_id"]
    assert h.job(jid)["state"] == "PENDING"
    h.tick()
    job = h.job(jid)
    assert job["state"] == "RUNNING" and job["nodes"] == ["n1"] and job["batch_host"] == "n1"
    [spec] = launches(h, 1)
    claims = verify_credential(orders_key(node_key(KEY, "n1")), spec.credential, h.clock())
    assert claims["op"] == "launch" and claims["job"] == jid and claims["nodes"] == ["n1"]
    assert claims["node"] == "n1"  # signed for the batch host alone
    assert claims["uid"] == 1001 and spec.uid == 1001
    assert spec.environment["SLURM_JOB_ID"] == str(jid)
    assert spec.environment["SLURM_MEM_PER_CPU"] == "1000"  # DefMemPerCPU applied at submit
    assert spec.std_out == f"/tmp/slurm-{jid}.out"
    h.agents.assert_nothing_else()


def test_completion_sets_final_state_and_is_idempotent(harness):
    h = harness
    ok = h.submit()["job_id"]
    bad = h.submit()["job_id"]
    h.tick()
    done = JobCompletion(node="n1", job_id=ok, restarts=0, step_id="batch", exit_code=0)
    assert h.ctl.jobs.complete("n1", done) is True
    assert h.ctl.jobs.complete("n1", done) is False  # duplicate report changes nothing
    node = h.job(bad)["batch_host"]
    h.ctl.jobs.complete(
        node, JobCompletion(node=node, job_id=bad, restarts=0, step_id="batch", exit_code=3 << 8)
    )
    assert (h.job(ok)["state"], h.job(ok)["exit_code"]) == ("COMPLETED", 0)
    failed = h.job(bad)
    assert (failed["state"], failed["reason"], failed["exit_code"]) == (
        "FAILED",
        "NonZeroExitCode",
        768,
    )
    assert [(s["step_id"], s["state"]) for s in failed["steps"]] == [("batch", "FAILED")]
    h.agents.take("launch", 2)
    h.agents.assert_nothing_else()


def test_completion_from_the_wrong_node_is_ignored(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    other = "n2" if h.job(jid)["batch_host"] == "n1" else "n1"
    assert not h.ctl.jobs.complete(
        other, JobCompletion(node=other, job_id=jid, restarts=0, step_id="batch", exit_code=0)
    )
    assert h.job(jid)["state"] == "RUNNING"
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_gpu_jobs_share_nodes_and_third_waits_for_resources(harness):
    h = harness
    # 2 nodes x 2 GPUs: two 2-GPU jobs fill both nodes, the third pends (Resources)
    ids = [h.submit(gpus_per_node=2, tres_per_node="gres:gpu:2")["job_id"] for _ in range(3)]
    h.tick()
    states = [h.job(i)["state"] for i in ids]
    assert states == ["RUNNING", "RUNNING", "PENDING"]
    assert h.job(ids[2])["reason"] == "Resources"
    gpus = sorted((a["node"], tuple(a["gpus"])) for i in ids[:2] for a in h.job(i)["alloc"])
    assert gpus == [("n1", (0, 1)), ("n2", (0, 1))]
    env = launches(h, 2)[0].environment
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1" and env["SLURM_JOB_GPUS"] == "0,1"
    h.agents.assert_nothing_else()


def test_bad_partition_account_qos_and_impossible_requests_are_refused(harness):
    h = harness
    r = h.post_job(partition="nosuch")
    assert r.status_code == 404 or r.status_code == 400
    assert r.json()["errno"] == errors.ESLURM_INVALID_PARTITION_NAME
    assert r.json()["detail"] == "invalid partition specified: nosuch"
    r = h.post_job(account="nosuch")
    assert r.json()["errno"] == errors.ESLURM_INVALID_ACCOUNT
    r = h.post_job(gpus_per_node=5)
    assert r.json()["errno"] == errors.ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE
    # like Slurm, the refused request used a job id and shows as FAILED (BadConstraints)
    failed = h.client.get("/v1/jobs", params={"all_states": True}).json()["jobs"]
    assert [(j["state"], j["reason"]) for j in failed] == [("FAILED", "BadConstraints")]


def test_too_many_nodes_pends_with_partition_node_limit(harness):
    h = harness
    jid = h.submit(nodes_min=3)["job_id"]
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("PENDING", "PartitionNodeLimit")


def test_time_limit_over_partition_max_pends(harness):
    h = harness
    jid = h.submit(partition="long", time_limit=120)["job_id"]
    h.tick()
    assert h.job(jid)["reason"] == "PartitionTimeLimit"
    default = h.submit(partition="long")["job_id"]
    assert h.job(default)["time_limit"] == 60  # partition MaxTime when no DefaultTime


def test_users_cancel_only_their_own_jobs(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.as_user(BOB)
    [res] = h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]}).json()["results"]
    assert res["errno"] == errors.ESLURM_ACCESS_DENIED
    assert h.job(jid)["state"] == "PENDING"
    h.as_user(ROOT)
    [res] = h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]}).json()["results"]
    assert res["errno"] == 0
    job = h.job(jid)
    assert (job["state"], job["cancelled_by"]) == ("CANCELLED", 0)


def test_cancel_running_job_terminates_it_on_its_node_then_completes(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]})
    job = h.job(jid)
    assert (job["state"], job["flags"]) == ("CANCELLED", ["COMPLETING"])
    h.ctl.jobs.complete(
        "n1", JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=15)
    )
    job = h.job(jid)
    assert (job["state"], job["flags"], job["cancelled_by"]) == ("CANCELLED", [], 1001)
    assert [(s["state"], s["exit_code"]) for s in job["steps"]] == [("CANCELLED", 15)]


def test_time_limit_times_out_with_slurms_message(harness):
    h = harness
    jid = h.submit(time_limit=1)["job_id"]
    h.tick()
    h.pass_time(59)
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.pass_time(2)  # 61 s > 1 minute
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["reason"], job["flags"]) == ("TIMEOUT", "TimeLimit", ["COMPLETING"])
    [(kind, node, spec)] = h.agents.take("signal", 1)
    assert node == "n1" and spec.signal is None and spec.kill_wait == 2
    assert spec.message.startswith(f"slurmstepd-n1: error: *** JOB {jid} ON n1 CANCELLED AT ")
    assert spec.message.endswith(" DUE TO TIME LIMIT ***")
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_silent_node_goes_down_and_its_job_is_requeued(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    h.clock.advance(5)
    h.ctl.nodes.heartbeat("n2")
    nodes = {n["name"]: n for n in h.client.get("/v1/nodes").json()["nodes"]}
    assert "NOT_RESPONDING" in nodes["n1"]["flags"] and nodes["n2"]["flags"] == []
    h.clock.advance(6)  # n1 silent 11 s > SlurmdTimeout=10
    h.ctl.nodes.heartbeat("n2")
    h.tick()
    nodes = {n["name"]: n for n in h.client.get("/v1/nodes").json()["nodes"]}
    assert nodes["n1"]["state"] == "DOWN" and nodes["n1"]["reason"] == "Not responding"
    job = h.job(jid)
    assert (job["state"], job["reason"], job["restarts"]) == ("PENDING", "BeginTime", 1)
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_unreachable_agent_gives_the_job_back_to_the_queue(harness):
    h = harness
    h.agents.fail_nodes.add("n1")
    jid = h.submit()["job_id"]
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["nodes"]) == ("PENDING", [])


def test_a_launch_the_agent_never_answered_stays_running_until_the_node_says(harness):
    h = harness
    h.agents.mute_nodes.add("n1")  # got the order, died before answering: it may run
    jid = h.submit(req_nodes=["n1"])["job_id"]
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["nodes"]) == ("RUNNING", ["n1"])
    h.agents.take("launch", 1)
    h.agents.mute_nodes.clear()
    # the restarted agent adopted the run and lists it: nothing changes
    h.ctl.nodes.heartbeat("n1", [jid])
    h.clock.advance(6)
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("RUNNING", 0)
    # had it not started, its node would stop listing it: requeued once after the grace
    h.ctl.nodes.heartbeat("n1", [])
    h.clock.advance(6)
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("PENDING", 1)


def test_held_job_waits_until_released(harness):
    h = harness
    jid = h.submit(hold=True)["job_id"]
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["reason"], job["priority"]) == ("PENDING", "JobHeldUser", 0)


def test_exit_status_meanings():
    # the wait statuses the agent reports
    assert os.WEXITSTATUS(3 << 8) == 3 and os.WTERMSIG(9) == 9


def test_completing_job_on_a_node_that_dies_releases_its_resources(harness):
    h = harness
    jid = h.submit(gpus_per_node=2)["job_id"]
    h.tick()
    node = h.job(jid)["batch_host"]
    h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]})
    assert h.job(jid)["flags"] == ["COMPLETING"]
    other = "n2" if node == "n1" else "n1"
    h.clock.advance(11)  # the job's node stays silent past SlurmdTimeout
    h.ctl.nodes.heartbeat(other)
    h.tick()
    assert h.job(jid)["flags"] == []
    usage = {n["name"]: n["alloc_gpus"] for n in h.client.get("/v1/nodes").json()["nodes"]}
    assert usage[node] == []


def test_jobfileappend_sets_the_open_mode_of_jobs_that_name_none(harness):
    h = harness
    plain = h.submit()["job_id"]
    h.ctl.validator.cfg.job_file_append = 1  # JobFileAppend=1: keep every run's output
    kept = h.submit()["job_id"]
    chosen = h.submit(open_mode="truncate")["job_id"]  # --open-mode wins
    h.tick()
    modes = {o.spec.job_id: o.spec.open_mode for o in h.agents.take("launch", 3)}
    assert modes == {plain: "truncate", kept: "append", chosen: "truncate"}
