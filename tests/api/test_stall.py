"""A stalled controller is not a dead node (``controller.nodes.service``, issue 19).

The controller here reads one ``FakeClock`` as both its wall clock and its
monotonic clock, so a jump of the clock between two passes is what a SIGSTOP
(or a VM freeze) looks like from inside: nobody could be heard meanwhile.
The harness config has SlurmdTimeout=10, a 1 s heartbeat (stall threshold
max(3 x 1, 5) = 5 s) and requeue_delay=5.
"""

from __future__ import annotations

import logging

import pytest

from tests.api.conftest import Harness, harness_on

TIMEOUT = 10  # SlurmdTimeout in the harness config
PAUSE = 3 * TIMEOUT


@pytest.fixture
def h(tmp_path, store_url):
    yield from harness_on(tmp_path, store_url, clock_is_monotonic=True)


def running_on_n1(h: Harness) -> int:
    jid = h.submit(req_nodes=["n1"])["job_id"]
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["batch_host"]) == ("RUNNING", "n1")
    return jid


def nodes(h: Harness) -> dict[str, dict]:
    return {n["name"]: n for n in h.client.get("/v1/nodes").json()["nodes"]}


def test_a_pause_of_three_timeouts_fails_no_healthy_node(h, caplog):
    jid = running_on_n1(h)
    h.pass_time(1)
    h.tick()
    with caplog.at_level(logging.WARNING, logger="slurmctld.nodes"):
        h.clock.advance(PAUSE)  # the controller is frozen: no heartbeat is heard
        h.tick()
    assert f"event=controller_stalled seconds={PAUSE:.1f}" in caplog.text
    shown = nodes(h)
    assert [shown[n]["state"] for n in ("n1", "n2")] == ["MIXED", "IDLE"]
    assert "NOT_RESPONDING" not in shown["n1"]["flags"]  # a fresh window to be heard
    for _ in range(2 * TIMEOUT):  # awake again: the nodes heartbeat as before
        h.pass_time(1)
        h.tick()
    job = h.job(jid)
    assert (job["state"], job["restarts"]) == ("RUNNING", 0)
    assert not any(n["state"] == "DOWN" for n in nodes(h).values())
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_node_that_died_in_the_pause_is_down_within_a_timeout_and_a_heartbeat(h):
    jid = running_on_n1(h)
    h.pass_time(1)
    h.tick()
    h.clock.advance(PAUSE)  # n1 dies during the pause
    resumed = h.clock()
    h.tick()
    assert nodes(h)["n1"]["state"] != "DOWN"
    down_at = None
    while down_at is None:
        h.clock.advance(1)  # one heartbeat interval; only n2 speaks
        h.ctl.nodes.heartbeat("n2")
        h.tick()
        if nodes(h)["n1"]["state"] == "DOWN":
            down_at = h.clock()
        assert h.clock() - resumed <= TIMEOUT + 1, "n1 is not DOWN in time"
    assert down_at - resumed > TIMEOUT  # a full SlurmdTimeout after the resume
    assert nodes(h)["n1"]["reason"] == "Not responding"
    job = h.job(jid)
    assert (job["state"], job["reason"], job["restarts"]) == ("PENDING", "BeginTime", 1)
    for _ in range(10):  # requeued once: it starts again on n2, nothing more
        h.pass_time(1)
        h.tick()
    assert h.job(jid)["restarts"] == 1


def test_gaps_under_the_threshold_are_not_a_stall(h):
    jid = running_on_n1(h)
    for _ in range(3):  # 4 s between passes (< 5 s): silence accumulates
        h.clock.advance(4)
        h.ctl.nodes.heartbeat("n2")
        h.tick()
    assert nodes(h)["n1"]["state"] == "DOWN"  # silent 12 s > 10 s
    assert h.job(jid)["restarts"] == 1


def test_a_vanished_job_suspicion_does_not_fire_from_a_pause(h):
    jid = running_on_n1(h)
    h.ctl.nodes.heartbeat("n1", [])  # built before the launch arrived: a suspect for 5 s
    h.clock.advance(PAUSE)
    h.tick()  # its grace ran out during the pause: a fresh one from the resume
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("RUNNING", 0)
    h.clock.advance(1)
    h.ctl.nodes.heartbeat("n1", [jid])  # the next heartbeat lists it
    h.ctl.nodes.heartbeat("n2", [])
    h.tick()
    for _ in range(10):  # passes a second apart, as the loop runs them
        h.pass_time(1)
        h.tick()
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("RUNNING", 0)
    # a job the node really lost still counts as vanished after the grace
    for _ in range(6):
        h.clock.advance(1)
        h.ctl.nodes.heartbeat("n1", [])
        h.ctl.nodes.heartbeat("n2", [])
        h.tick()
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("PENDING", 1)


def test_an_allocation_is_not_timed_out_for_the_controllers_own_pause(h):
    """InactiveLimit counts silence only while the controller could hear keepalives."""
    h.ctl.cfg.inactive_limit = 20
    jid = h.submit(script="", name="bash", allocation=True)["job_id"]
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.clock.advance(PAUSE)  # > InactiveLimit, but salloc's keepalives sit unread in the socket
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.client.post(f"/v1/jobs/{jid}/allocation", json={})  # the queued keepalive is read
    for _ in range(20):  # awake, passes a second apart; salloc falls silent
        h.pass_time(1)
        h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.pass_time(1)  # now silent for longer than the limit while heard
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("TIMEOUT", "InactiveLimit")


def test_a_step_waiting_for_its_nodes_report_gets_a_fresh_grace_after_a_pause(h):
    """A finished job's step is closed without its report only after a grace heard awake."""
    jid = h.submit(script="", name="bash", allocation=True)["job_id"]
    h.tick()
    step = h.client.post(f"/v1/jobs/{jid}/steps", json={"argv": ["hostname"], "work_dir": "/tmp"})
    assert step.status_code == 200
    h.client.post(f"/v1/jobs/{jid}/allocation", json={"end": True})
    assert h.job(jid)["flags"] == ["COMPLETING"]  # until the node reports its step
    h.clock.advance(PAUSE)  # past the report grace, but the report may be queued unread
    h.tick()
    assert [s["state"] for s in h.job(jid)["steps"]] == ["RUNNING"]
    for _ in range(20):  # awake; the node never reports: closed after a grace
        h.pass_time(1)
        h.tick()
    job = h.job(jid)
    assert ([s["state"] for s in job["steps"]], job["flags"]) == (["CANCELLED"], [])
