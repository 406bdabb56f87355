"""What a node says it holds vs. what the store has running there (controller.nodes.reconcile).

The harness config has ``SlurmliteHeartbeatInterval=1``, so the grace before
an unlisted job counts as vanished is max(5, 2 x 1 + 1) = 5 s.
"""

from __future__ import annotations

from slurmlite.protocol import JobCompletion, NodeRegister


def registration(name: str, running_jobs: list[int]) -> NodeRegister:
    return NodeRegister(
        name=name,
        addr="127.0.0.1",
        port=6818,
        hostname=name,
        cpus=2,
        real_memory=4000,
        gpus=["gpu", "gpu"],
        gpu_type=None,
        running_jobs=running_jobs,
    )


def running_job(h, **fields) -> tuple[int, str]:
    jid = h.submit(**fields)["job_id"]
    h.tick()
    job = h.job(jid)
    assert job["state"] == "RUNNING"
    return jid, job["batch_host"]


def test_a_job_its_restarted_node_does_not_list_is_requeued_after_the_grace(harness):
    h = harness
    jid, node = running_job(h)
    h.ctl.nodes.register(registration(node, []))  # the agent came back without it
    h.clock.advance(4.9)  # inside the 5 s grace
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.clock.advance(0.2)  # 5.1 s since the registration omitted it
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["reason"], job["restarts"]) == ("PENDING", "BeginTime", 1)
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_without_requeue_it_ends_node_fail(harness):
    h = harness
    jid, node = running_job(h, requeue=False)
    h.ctl.nodes.register(registration(node, []))
    h.clock.advance(6)
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("NODE_FAIL", "NodeDown")
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_listed_again_or_completed_within_the_grace_it_is_left_alone(harness):
    h = harness
    listed, _ = running_job(h, req_nodes=["n1"])
    done, _ = running_job(h, req_nodes=["n1"])
    h.ctl.nodes.register(registration("n1", []))  # built before both launches arrived
    h.clock.advance(1)
    h.ctl.nodes.heartbeat("n1", [listed, done])  # the next heartbeat lists both
    h.ctl.nodes.heartbeat("n1", [listed])  # then one ended and its completion comes
    h.ctl.jobs.complete("n1", JobCompletion("n1", done, 0, "batch", 3 << 8))
    h.clock.advance(10)  # far past the grace
    h.tick()
    assert h.job(listed)["state"] == "RUNNING"
    assert (h.job(done)["state"], h.job(done)["exit_code"]) == ("FAILED", 3 << 8)
    h.agents.take("launch", 2)
    h.agents.assert_nothing_else()


def test_a_heartbeat_without_a_job_list_changes_nothing(harness):
    h = harness
    jid, _ = running_job(h)
    h.pass_time(30)  # heartbeats that do not say what they hold (None)
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_node_registering_with_a_run_that_was_requeued_is_told_to_kill_it(harness):
    h = harness
    jid, node = running_job(h)
    h.clock.advance(11)  # the node is silent past SlurmdTimeout=10: DOWN, job requeued
    other = "n2" if node == "n1" else "n1"
    h.ctl.nodes.heartbeat(other, [])
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("PENDING", 1)
    h.agents.take("launch", 1)  # run 0's
    h.agents.assert_nothing_else()
    # its agent comes back having adopted the old run (restarts 0), still running
    h.ctl.nodes.register(registration(node, [jid]))
    h.tick()
    [(kind, to, spec)] = h.agents.take("signal", 1)
    # terminate with the current count: the agent ends every older run of the job
    assert (to, spec.job_id, spec.restarts, spec.signal) == (node, jid, 1, None)
    h.agents.assert_nothing_else()


def test_a_job_being_cancelled_when_its_agent_died_is_terminated_again(harness):
    h = harness
    jid, node = running_job(h)
    h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]})
    assert h.job(jid)["flags"] == ["COMPLETING"]
    h.agents.take("launch", 1)
    # the cancel's terminate goes from a task of the route, which the test client's
    # event loop may close before it runs: taken whether it went or not
    h.agents.take("signal", sum(o.kind == "signal" for o in h.agents.sent))
    h.agents.assert_nothing_else()
    # the agent died during the kill sequence; the restarted one adopted the job
    h.ctl.nodes.register(registration(node, [jid]))
    h.tick()
    [(kind, to, spec)] = h.agents.take("signal", 1)
    assert (to, spec.job_id, spec.restarts, spec.signal) == (node, jid, 0, None)
    # a node that no longer lists it, and never reports it: released after the grace
    h.ctl.nodes.heartbeat(node, [])
    h.clock.advance(6)
    h.tick()
    assert h.job(jid)["flags"] == [] and h.job(jid)["state"] == "CANCELLED"


# ------------------------------------------------- runs their agent fenced (agent.cutoff)


def fenced_end(node: str, jid: int, restarts: int = 0) -> JobCompletion:
    """What a cut-off agent reports for the run it killed: SIGTERM, marked fenced."""
    return JobCompletion(node, jid, restarts, "batch", 15, fenced=True)


def test_a_run_its_agent_fenced_is_requeued_at_once_not_ended_by_the_kill(harness):
    h = harness
    jid, node = running_job(h)
    # the link healed just before the controller marked the node DOWN
    assert h.ctl.jobs.complete(node, fenced_end(node, jid))
    h.tick()  # no grace: the run is gone for sure
    job = h.job(jid)
    assert (job["state"], job["restarts"]) == ("PENDING", 1)
    assert job["restart_causes"] == f"node_fail:{node}"
    assert job["exit_code"] in (None, 0)  # the kill's status is not the job's
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_without_requeue_a_fenced_run_ends_node_fail(harness):
    h = harness
    jid, node = running_job(h, requeue=False)
    h.ctl.jobs.complete(node, fenced_end(node, jid))
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("NODE_FAIL", "NodeDown")


def test_a_fenced_end_of_a_run_requeued_meanwhile_changes_nothing(harness):
    h = harness
    jid, node = running_job(h)
    h.clock.advance(11)  # silent past SlurmdTimeout=10: DOWN, requeued
    other = "n2" if node == "n1" else "n1"
    h.ctl.nodes.heartbeat(other, [])
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("PENDING", 1)
    h.ctl.jobs.complete(node, fenced_end(node, jid))  # after the healing
    h.tick()
    job = h.job(jid)
    assert (job["restarts"], job["restart_causes"]) == (1, f"node_fail:{node}")  # once
    h.agents.take("launch", 1)


def test_a_fenced_end_of_a_job_being_cancelled_ends_its_completing(harness):
    h = harness
    jid, node = running_job(h)
    h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]})
    assert h.job(jid)["flags"] == ["COMPLETING"]
    assert h.ctl.jobs.complete(node, fenced_end(node, jid))
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["flags"], job["restarts"]) == ("CANCELLED", [], 0)


def test_a_node_back_from_down_by_heartbeat_is_told_to_kill_a_requeued_run(harness):
    h = harness
    h.ctl.nodes.cfg.return_to_service = 1  # a node DOWN for silence comes back by itself
    jid, node = running_job(h)
    h.clock.advance(11)  # DOWN, requeued
    other = "n2" if node == "n1" else "n1"
    h.ctl.nodes.heartbeat(other, [])
    h.tick()
    h.agents.take("launch", sum(o.kind == "launch" for o in h.agents.sent))
    # the link heals: the agent (never restarted, not fenced) still holds run 0
    h.ctl.nodes.heartbeat(node, [jid])
    h.tick()
    kills = [(to, spec.job_id, spec.signal) for _, to, spec in h.agents.take("signal", 1)]
    assert kills == [(node, jid, None)]
