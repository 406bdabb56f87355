"""What ``scontrol show node`` reads from the controller: load, free memory, LastBusyTime.

The harness registers n1 and n2 at T0 (its fake clock's start) without a
load or free memory, and nothing advances the clock but the tests.
"""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from controller.api.app import create_app
from controller.nodes.service import NodeService
from slurmlite.credential import node_key, sign_request
from slurmlite.protocol import JobCompletion, NodeRegister
from tests.api.conftest import KEY, ROOT

T0 = 1_800_000_000.0


def nodes(h) -> dict[str, dict]:
    return {n["name"]: n for n in h.client.get("/v1/nodes").json()["nodes"]}


def signed_heartbeat(h, node: str, payload: dict):
    """POST a heartbeat as the agent does: the body signed with the node's key."""
    client = TestClient(create_app(h.ctl, run_loop=False))  # a TCP peer, no overrides
    path = f"/v1/nodes/{node}/heartbeat"
    body = json.dumps(payload).encode()
    headers = sign_request(node_key(KEY, node), node, "POST", path, body, h.clock())
    headers["content-type"] = "application/json"
    return client.post(path, content=body, headers=headers)


def finish(h, job_id: int, node: str = "n1") -> None:
    done = JobCompletion(node=node, job_id=job_id, restarts=0, step_id="batch", exit_code=0)
    assert h.ctl.jobs.complete(node, done)


# ------------------------------------------------------- load and free memory


def test_load_and_free_memory_come_from_registration_then_heartbeats(harness):
    h = harness
    assert (nodes(h)["n1"]["cpu_load"], nodes(h)["n1"]["free_mem"]) == (None, None)  # N/A
    h.ctl.nodes.register(
        NodeRegister(
            name="n1",
            addr="127.0.0.1",
            port=6818,
            hostname="n1",
            cpus=2,
            real_memory=4000,
            gpus=["gpu", "gpu"],
            gpu_type=None,
            os="Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)",
            cpu_load=1.68,
            free_mem=23494,
        )
    )
    n1 = nodes(h)["n1"]
    assert (n1["cpu_load"], n1["free_mem"]) == (1.68, 23494)
    assert n1["os"] == "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
    # a heartbeat refreshes both
    r = signed_heartbeat(h, "n1", {"running_jobs": [], "cpu_load": 0.5, "free_mem": 20000})
    assert r.json() == {"known": True}
    assert (nodes(h)["n1"]["cpu_load"], nodes(h)["n1"]["free_mem"]) == (0.5, 20000)
    # one that does not measure them (an older agent) keeps the last values
    assert signed_heartbeat(h, "n1", {"running_jobs": []}).json() == {"known": True}
    assert (nodes(h)["n1"]["cpu_load"], nodes(h)["n1"]["free_mem"]) == (0.5, 20000)
    # each node has its own
    assert (nodes(h)["n2"]["cpu_load"], nodes(h)["n2"]["free_mem"]) == (None, None)


# ------------------------------------------------------------ LastBusyTime


def test_last_busy_is_when_the_node_last_became_idle(harness):
    h = harness
    assert nodes(h)["n1"]["last_busy_time"] == T0  # registered holding nothing
    h.pass_time(10)
    first = h.submit()["job_id"]
    h.tick()  # T0+10: runs on n1
    h.pass_time(10)
    n1 = nodes(h)["n1"]  # T0+20, busy: still the last idle moment, not "now"
    assert (n1["state"], n1["last_busy_time"]) == ("MIXED", T0)
    h.client.post("/v1/jobs/cancel", json={"job_ids": [first]})
    h.pass_time(10)
    h.tick()  # T0+30: COMPLETING still keeps the node busy
    assert nodes(h)["n1"]["last_busy_time"] == T0
    finish(h, first)
    h.pass_time(5)
    assert nodes(h)["n1"]["last_busy_time"] == T0 + 35  # the listing saw it idle
    h.pass_time(5)
    h.submit()
    h.tick()  # T0+40: the next job runs there
    h.pass_time(10)
    n1 = nodes(h)["n1"]
    assert (n1["state"], n1["last_busy_time"]) == ("MIXED", T0 + 35)
    assert nodes(h)["n2"]["last_busy_time"] == T0  # never busy


def test_the_loop_notes_a_node_gone_idle_even_if_nobody_lists_nodes(harness):
    h = harness
    job = h.submit()["job_id"]
    h.tick()  # T0: runs on n1
    h.pass_time(2)
    h.tick()  # T0+2: the liveness step looks (the last look was 2 s ago) and sees n1 busy
    finish(h, job)
    h.pass_time(3)
    h.tick()  # T0+5: nothing pending, yet the liveness step looks again: n1 went idle
    h.pass_time(100)
    assert nodes(h)["n1"]["last_busy_time"] == T0 + 5  # not the listing's T0+105
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_resume_counts_as_idle_now_and_a_restart_as_idle_since_the_start(harness):
    h = harness
    h.as_user(ROOT)
    h.client.post("/v1/nodes/update", json={"names": ["n1"], "state": "DOWN", "reason": "x"})
    h.pass_time(50)
    h.client.post("/v1/nodes/update", json={"names": ["n1"], "state": "RESUME"})
    assert nodes(h)["n1"]["last_busy_time"] == T0 + 50
    assert nodes(h)["n2"]["last_busy_time"] == T0
    h.ctl.nodes.heartbeat("n1", [], cpu_load=1.0, free_mem=100)
    # a controller started at T0+80 over the same store: LastBusyTime is its start
    # (as Slurm 22.05 does on loading its state); load and free memory wait for the nodes
    h.clock.advance(30)
    restarted = {n.name: n for n in NodeService(h.ctl.db, h.ctl.cfg, h.clock).infos()}
    assert restarted["n1"].last_busy_time == restarted["n2"].last_busy_time == T0 + 80
    assert (restarted["n1"].cpu_load, restarted["n1"].free_mem) == (None, None)
