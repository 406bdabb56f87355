"""Agents' usage reports: heartbeats and completions carry summaries, sacct's endpoint shows them.

Harness cluster: n1 and n2, 2 CPUs and 2 GPUs each.  A job asking for 2 GPUs
and 2 CPUs runs on one node (n1 when both are free); what the test's node
reports goes through the signed agent routes, as a real agent's would.
"""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from controller.api.app import create_app
from slurmlite.credential import node_key, sign_request
from slurmlite.protocol import to_dict
from slurmlite.usage import GpuUsage, UsageSummary
from tests.api.conftest import KEY, ROOT

T0 = 1_800_000_000.0
GIB = 1 << 30


def signed(h, node: str, path: str, payload: dict):
    """POST as node ``node``'s agent (the body signed with its key)."""
    client = TestClient(create_app(h.ctl, run_loop=False))
    body = json.dumps(payload).encode()
    headers = sign_request(node_key(KEY, node), node, "POST", path, body, h.clock())
    headers["content-type"] = "application/json"
    return client.post(path, content=body, headers=headers)


def summary(job_id: int, samples: int, cpu: float = 10.0, restarts: int = 0) -> dict:
    gpu = GpuUsage(index=0, samples=samples, util_sum=90.0 * samples, util_max=95.0,
                   mem_sum_mib=1024.0 * samples, mem_max_mib=2048.0, mem_total_mib=81920.0)  # fmt: skip
    s = UsageSummary(job_id, restarts, samples=samples, first_sample=T0, last_sample=T0 + samples,
                     cpu_seconds=cpu, max_rss_bytes=3 * GIB, rss_sum_bytes=2.0 * GIB * samples,
                     gpus=[gpu])  # fmt: skip
    return to_dict(s)


def running_job(h) -> tuple[int, str]:
    jid = h.submit(gpus_per_node=2, ntasks=2)["job_id"]
    h.tick()
    job = h.job(jid)
    assert job["state"] == "RUNNING"
    return jid, job["nodes"][0]


def usage(h, jid: int) -> list[dict]:
    jobs = h.client.get("/v1/accounting", params={"ids": jid}).json()["jobs"]
    return jobs[0].get("usage", [])  # absent: nothing measured (JobInfo.usage defaults to [])


def heartbeat(h, node: str, *summaries: dict, path_node: str | None = None):
    path = f"/v1/nodes/{path_node or node}/heartbeat"
    return signed(h, node, path, {"running_jobs": [], "usage": list(summaries)})


def test_a_heartbeats_usage_is_kept_and_shown_by_the_accounting_endpoint(harness):
    h = harness
    jid, node = running_job(h)
    assert usage(h, jid) == []  # nothing measured yet
    assert heartbeat(h, node, summary(jid, 3)).json() == {"known": True}
    [part] = usage(h, jid)
    assert part["node"] == node
    s = part["summary"]
    assert (s["samples"], s["cpu_seconds"], s["max_rss_bytes"]) == (3, 10.0, 3 * GIB)
    assert s["gpus"][0]["util_sum"] == 270.0  # 3 samples at 90 %


def test_a_newer_summary_replaces_an_older_one_never_the_reverse(harness):
    h = harness
    jid, node = running_job(h)
    heartbeat(h, node, summary(jid, 5, cpu=50.0))
    heartbeat(h, node, summary(jid, 4, cpu=40.0))  # late or repeated: older, ignored
    assert usage(h, jid)[0]["summary"]["cpu_seconds"] == 50.0
    heartbeat(h, node, summary(jid, 6, cpu=60.0))
    assert usage(h, jid)[0]["summary"]["cpu_seconds"] == 60.0


def test_a_node_cannot_report_another_nodes_job_or_speak_for_another_node(harness):
    h = harness
    jid, node = running_job(h)
    other = "n2" if node == "n1" else "n1"
    assert heartbeat(h, other, summary(jid, 3)).status_code == 200
    assert usage(h, jid) == []  # not in the job's allocation: dropped
    r = heartbeat(h, other, summary(jid, 3), path_node=node)
    assert r.status_code == 403
    assert usage(h, jid) == []


def test_a_summary_of_a_stale_run_is_dropped(harness):
    h = harness
    jid, node = running_job(h)
    heartbeat(h, node, summary(jid, 3, restarts=1))  # the job is in run 0
    assert usage(h, jid) == []


def test_the_completions_final_summary_is_stored_with_the_end(harness):
    h = harness
    jid, node = running_job(h)
    heartbeat(h, node, summary(jid, 2, cpu=20.0))
    done = {"node": node, "job_id": jid, "restarts": 0, "step_id": "batch", "exit_code": 0,
            "usage": summary(jid, 3, cpu=31.5)}  # fmt: skip
    r = signed(h, node, f"/v1/nodes/{node}/completions", {"completions": [done]})
    assert r.status_code == 200 and r.json()["results"][0]["ok"]
    job = h.client.get("/v1/accounting", params={"ids": jid}).json()["jobs"][0]
    assert job["state"] == "COMPLETED"
    assert job["usage"][0]["summary"]["cpu_seconds"] == 31.5


def test_bad_usage_values_are_the_agents_mistake_not_a_server_error(harness):
    h = harness
    jid, node = running_job(h)
    bad = summary(jid, 3)
    bad["samples"] = -1
    assert heartbeat(h, node, bad).status_code == 422
    bad = summary(jid, 3)
    bad["gpus"][0]["util_sum"] = "NaN"
    assert heartbeat(h, node, bad).status_code == 422
    big = summary(jid, 3)
    big["max_rss_bytes"] = 2 * 1024 * GIB  # 2 TiB: beyond 32 bits, still a memory size
    assert heartbeat(h, node, big).status_code == 200
    h.as_user(ROOT)
    assert usage(h, jid)[0]["summary"]["max_rss_bytes"] == 2 * 1024 * GIB


def test_two_summaries_of_one_run_in_one_heartbeat_keep_the_newer(harness):
    h = harness
    jid, node = running_job(h)
    heartbeat(h, node, summary(jid, 5, cpu=50.0), summary(jid, 3, cpu=30.0))
    assert usage(h, jid)[0]["summary"]["cpu_seconds"] == 50.0


def test_explain_of_a_finished_job_adds_its_efficiency(harness):
    h = harness
    jid, node = running_job(h)
    h.clock.advance(100)
    done = {"node": node, "job_id": jid, "restarts": 0, "step_id": "batch", "exit_code": 0,
            "start_time": T0, "end_time": T0 + 100, "usage": summary(jid, 3, cpu=100.0)}  # fmt: skip
    signed(h, node, f"/v1/nodes/{node}/completions", {"completions": [done]})
    message = h.client.get(f"/v1/jobs/{jid}/explain").json()["message"]
    lines = message.splitlines()
    assert lines[0].startswith(f"job {jid} is COMPLETED since")
    # 2 CPUs for 100 s, 100 s of CPU time; GPU 0 at 90 %, GPU 1 never reported
    assert "  CPU Efficiency: 50.00% of 00:03:20 core-walltime" in lines
    assert (
        "  GPU 0 on " + node + ": utilization 90.00% (max 95%), memory 2.00 GB of 80.00 GB (2.50%)"
        in lines
    )
