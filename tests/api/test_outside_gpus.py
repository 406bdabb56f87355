"""GPUs used outside the scheduler, through the controller's API (controller.nodes.outside_gpus).

The harness cluster (n1, n2: 2 CPUs, 2 GPUs each) with a settle time of 30 s.
Heartbeats are posted as the agent posts them (signed with the node's key);
the fake clock moves time; the loop's tick schedules.  What the commands
show is rendered from the API's own answer (``scontrol show node``, ``sinfo -R``).
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from cli import sinfo
from cli.scontrol_show import node_text
from controller.api.app import create_app
from controller.nodes.service import NodeService
from slurmlite.credential import node_key, sign_request
from slurmlite.gpu_outside import outside_reason
from slurmlite.protocol import NodeInfo, PartitionInfo, from_dict
from tests.api import conftest
from tests.api.conftest import ALICE, KEY, ROOT, harness_on
from tests.cli.harness import FakeClient, install

ALICE_GPU1 = outside_reason(1, 4242, "alice", "python")
ALICE_GPU0 = outside_reason(0, 4243, "alice", "python")


@pytest.fixture
def h(tmp_path, store_url, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(conftest, "CONF", conftest.CONF + "SlurmliteGpuOutsideUse=settle=30\n")
    yield from harness_on(tmp_path, store_url)


@pytest.fixture
def h_ignore(tmp_path, store_url, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(conftest, "CONF", conftest.CONF + "SlurmliteGpuOutsideUse=ignore\n")
    yield from harness_on(tmp_path, store_url)


def heartbeat(h, node: str, outside: dict | None, held: list[int] | None = None):  # type: ignore[no-untyped-def]
    """POST a heartbeat as the agent does, holding ``held`` jobs, signed with the node's
    key; the raw response."""
    client = TestClient(create_app(h.ctl, run_loop=False))  # a TCP peer, no overrides
    path = f"/v1/nodes/{node}/heartbeat"
    payload = {"running_jobs": held or [], "outside_gpus": outside}
    body = json.dumps(payload).encode()
    headers = sign_request(node_key(KEY, node), node, "POST", path, body, h.clock())
    headers["content-type"] = "application/json"
    return client.post(path, content=body, headers=headers)


def node(h, name: str) -> NodeInfo:  # type: ignore[no-untyped-def]
    nodes = h.client.get("/v1/nodes").json()["nodes"]
    return from_dict(NodeInfo, next(n for n in nodes if n["name"] == name))


def test_a_gpu_used_outside_is_no_jobs_until_it_settled(h):
    t0 = h.clock()
    assert heartbeat(h, "n1", {"0": ALICE_GPU0, "1": ALICE_GPU1}).json() == {"known": True}
    n1 = node(h, "n1")
    assert n1.outside_gpus == [0, 1] and n1.alloc_gpus == []
    assert n1.state == "MIXED"  # no GPU left for jobs; CPU jobs still fit
    assert (n1.reason, n1.reason_user, n1.reason_time) == (
        f"{ALICE_GPU0}; {ALICE_GPU1}",
        "root",
        t0,
    )
    # a GPU job asking for n1 waits for Resources; a CPU job runs there
    gpu_job = h.submit(gpus_per_node=1, req_nodes=["n1"])["job_id"]
    cpu_job = h.submit(req_nodes=["n1"])["job_id"]
    h.tick()
    assert h.job(gpu_job)["state"] == "PENDING" and h.job(gpu_job)["reason"] == "Resources"
    assert h.job(cpu_job)["state"] == "RUNNING"
    h.agents.take("launch", 1)
    explained = h.client.get(f"/v1/jobs/{gpu_job}/explain").json()
    (n1_lack,) = [n for n in explained["nodes"] if n["node"] == "n1"]
    assert n1_lack["problems"] == [
        "GPUs: needs 1, none free (0: in use outside slurmlite (sinfo -R), "
        "1: in use outside slurmlite (sinfo -R))"
    ]
    # alice's GPU 0 process ends at t0 + 10: GPU 0 settles until t0 + 40
    h.pass_time(10)
    heartbeat(h, "n1", {"1": ALICE_GPU1}, held=[cpu_job])
    assert node(h, "n1").reason.startswith(f"{ALICE_GPU0}, ended, free for jobs at ")
    h.pass_time(29.5)
    h.tick()
    assert h.job(gpu_job)["state"] == "PENDING"
    h.pass_time(0.5)  # t0 + 40
    h.tick()
    job = h.job(gpu_job)
    assert job["state"] == "RUNNING" and job["alloc"][0]["gpus"] == [0]  # never GPU 1
    h.agents.take("launch", 1)
    n1 = node(h, "n1")
    assert (n1.outside_gpus, n1.alloc_gpus, n1.reason) == ([1], [0], ALICE_GPU1)


def test_a_running_job_is_not_touched_by_outside_use_of_its_gpu(h):
    jid = h.submit(gpus_per_node=2, req_nodes=["n1"])["job_id"]
    h.tick()
    h.agents.take("launch", 1)
    before = node(h, "n1").state  # MIXED: one of its two CPUs is held
    heartbeat(h, "n1", {"1": ALICE_GPU1}, held=[jid])
    h.pass_time(5)
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.agents.assert_nothing_else()  # no signal, no terminate
    assert node(h, "n1").state == before == "MIXED"


def test_what_scontrol_and_sinfo_show(h, monkeypatch, capsys):
    heartbeat(h, "n1", {"1": ALICE_GPU1})
    n1 = node(h, "n1")
    text = node_text(n1)
    assert "   Gres=gpu:2\n   GresUsed=gpu:(null):1(IDX:1)\n   NodeAddr=" in text
    assert "\n   State=IDLE " in text  # GPU 0 and the CPUs are still free
    assert f"\n   Reason={ALICE_GPU1} [root@" in text
    parts = [PartitionInfo("debug", ["n1", "n2"], True, None, None, "UP")]
    install(monkeypatch, FakeClient(get_nodes=[n1, node(h, "n2")], get_partitions=parts))
    monkeypatch.setenv("TZ", "UTC")
    assert sinfo.run(["-R"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["REASON", "USER", "TIMESTAMP", "NODELIST"]
    assert len(lines) == 2 and lines[1].startswith("gpu 1 in use outside root ")
    assert lines[1].endswith(" n1")
    assert sinfo.run(["-R", "-t", "drain"]) == 0  # states asked for: only those
    assert capsys.readouterr().out.splitlines()[1:] == []


def test_the_record_outlives_a_controller_restart(h):
    heartbeat(h, "n1", {"1": ALICE_GPU1})
    again = NodeService(h.ctl.db, h.ctl.cfg, clock=h.clock)
    assert again.outside.blocked("n1", h.clock(), h.ctl.cfg.gpu_outside_use) == {1}


def test_bad_reports_are_refused_or_ignored_never_a_500(h):
    assert heartbeat(h, "n1", {"gpu": "x"}).status_code == 422
    assert heartbeat(h, "n1", {"0": "a\u0000b"}).status_code == 422
    assert heartbeat(h, "n1", {"7": "x", "-1": "y"}).status_code == 200  # not n1's GPUs
    assert node(h, "n1").outside_gpus == []
    assert heartbeat(h, "n1", None).status_code == 200  # not looked: nothing changes
    assert node(h, "n1").outside_gpus == []


def test_ignore_disregards_what_agents_report(h_ignore):
    h = h_ignore
    heartbeat(h, "n1", {"0": ALICE_GPU0, "1": ALICE_GPU1})
    n1 = node(h, "n1")
    assert (n1.outside_gpus, n1.reason, n1.state) == ([], None, "IDLE")
    jid = h.submit(gpus_per_node=2, req_nodes=["n1"])["job_id"]
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"


def test_private_data_users_hides_whose_process_it_is(tmp_path, store_url, monkeypatch):
    monkeypatch.setattr(conftest, "CONF", conftest.CONF + "PrivateData=users\n")
    for h in harness_on(tmp_path, store_url):
        heartbeat(h, "n1", {"0": ALICE_GPU0, "1": outside_reason(1, 77, "bob", "jupyter")})
        h.as_user(ALICE)  # her own process is named, bob's is not
        assert node(h, "n1").reason == (
            f"{ALICE_GPU0}; gpu 1 in use outside slurmlite: another user's process"
        )
        h.as_user(ROOT)  # operators see everything
        assert node(h, "n1").reason.endswith("pid 77 (bob: jupyter)")
