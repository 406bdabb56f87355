"""Usage from every node of a job: an allocation's nodes (no batch step anywhere) report
through their signed heartbeats and their steps' completions, as agents send them.

Harness cluster: n1 and n2 with 2 CPUs each.  A summary counts only from a
node of the job's allocation, for its current run (``controller.accounting
.usage.record_usage``); the accounting answer then lists one summary per
node, which ``sacct`` and ``seff`` fold together.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from fastapi.testclient import TestClient

from controller.api.app import create_app
from slurmlite.credential import node_key, sign_request
from slurmlite.protocol import JobCompletion
from slurmlite.usage import UsageSummary
from tests.api.conftest import KEY


def heartbeat(h, node: str, *usage: UsageSummary) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """``node``'s agent's heartbeat, signed with its key (no test overrides)."""
    client = TestClient(create_app(h.ctl, run_loop=False))
    path = f"/v1/nodes/{node}/heartbeat"
    body = json.dumps({"usage": [asdict(u) for u in usage]}).encode()
    headers = sign_request(node_key(KEY, node), node, "POST", path, body, h.clock())
    headers["content-type"] = "application/json"
    return client.post(path, content=body, headers=headers).json()


def summary(jid: int, samples: int, cpu: float) -> UsageSummary:
    return UsageSummary(job_id=jid, restarts=0, samples=samples, cpu_seconds=cpu)


def usage_by_node(h, jid: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    [job] = h.client.get("/v1/accounting", params={"ids": jid}).json()["jobs"]
    return {u["node"]: u["summary"]["cpu_seconds"] for u in job.get("usage", [])}


def test_both_nodes_of_an_allocation_count_through_heartbeats_and_step_ends(harness):
    h = harness
    jid = h.submit(script="", name="bash", allocation=True, nodes_min=2)["job_id"]
    h.tick()
    assert (h.job(jid)["nodes"], h.job(jid)["steps"]) == (["n1", "n2"], [])  # no batch step
    assert heartbeat(h, "n1", summary(jid, 3, 1.5)) == {"known": True}
    assert heartbeat(h, "n2", summary(jid, 2, 0.5)) == {"known": True}
    assert usage_by_node(h, jid) == {"n1": 1.5, "n2": 0.5}
    # n2's step ends: its completion carries n2's end sample (3 samples, 2.5 s)
    done = JobCompletion("n2", jid, 0, "0", 0, usage=summary(jid, 3, 2.5))
    h.ctl.jobs.complete("n2", done)
    heartbeat(h, "n2", summary(jid, 2, 0.5))  # a late heartbeat is older: changes nothing
    assert usage_by_node(h, jid) == {"n1": 1.5, "n2": 2.5}


def test_a_node_outside_the_allocation_cannot_write_its_usage(harness):
    h = harness
    jid = h.submit(script="", name="bash", allocation=True, nodes_min=1)["job_id"]
    h.tick()
    [mine] = h.job(jid)["nodes"]
    other = "n2" if mine == "n1" else "n1"
    heartbeat(h, other, summary(jid, 5, 9.0))
    h.ctl.jobs.complete(other, JobCompletion(other, jid, 0, "0", 0, usage=summary(jid, 6, 9.0)))
    assert usage_by_node(h, jid) == {}
    heartbeat(h, mine, summary(jid, 1, 0.25))
    assert usage_by_node(h, jid) == {mine: 0.25}
