"""Authentication refusals and running as the submitting user, on a real cluster."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from slurmlite.config import load_config
from slurmlite.credential import node_key, orders_key, sign_credential
from tests.e2e.conftest import run_as

TEST_USER = "slurmlite-bob"


def http(method: str, url: str, body: dict | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_tcp_listener_refuses_requests_without_credentials(cluster):
    cfg = load_config(str(cluster.conf))
    base = f"http://127.0.0.1:{cfg.slurmctld_port}"
    assert http("GET", base + "/health")[0] == 200
    assert http("GET", base + "/openapi.json")[0] == 200
    for method, path, body in [
        ("GET", "/v1/jobs", None),
        ("POST", "/v1/jobs", {"script": "x"}),
        ("POST", "/v1/jobs/cancel", {"job_ids": [1]}),
        ("GET", "/v1/nodes", None),
        ("POST", "/v1/nodes/register", {}),
    ]:
        status, text = http(method, base + path, body)
        assert status == 401, (method, path, status, text)
        assert "Protocol authentication error" in text or "authentication" in text.lower()


def _launch_body(marker: str, credential: str) -> dict:
    return {
        "credential": credential,
        "job_id": 999999,
        "restarts": 0,
        "step_id": "batch",
        "name": "evil",
        "uid": 0,
        "gid": 0,
        "user": "root",
        "script": f"#!/bin/sh\ntouch {marker}\n",
        "work_dir": "/tmp",
        "environment": {},
        "std_out": "/dev/null",
        "std_err": "/dev/null",
        "std_in": "/dev/null",
        "open_mode": "truncate",
        "gpus": [],
        "kill_wait": 1,
    }


def _never_appears(path: str, seconds: float = 1.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return False
        time.sleep(0.05)
    return True


def test_agent_spawns_nothing_without_a_valid_controller_credential(cluster, jobdir):
    cfg = load_config(str(cluster.conf))
    n1 = cfg.node("n1")
    url = f"http://{n1.addr}:{n1.port}/v1/launch"
    marker = str(jobdir / "pwned")
    # the requests are not signed by the controller (401, body unread; signed requests
    # carrying bad orders: tests/e2e/test_node_keys.py)
    # 1) garbage credential
    status, _ = http("POST", url, _launch_body(marker, "garbage"))
    assert status == 401
    # 2) well-formed but signed with the wrong key
    forged = sign_credential(
        orders_key(node_key(b"not-the-cluster-key" * 3, "n1")),
        {"op": "launch", "job": 999999, "restarts": 0, "node": "n1", "nodes": ["n1"]},
        now=time.time(),
        ttl=60,
    )
    status, text = http("POST", url, _launch_body(marker, forged))
    assert status == 401 and "not signed" in text
    # 3) no credential at all
    body = _launch_body(marker, "")
    assert http("POST", url, body)[0] == 401
    assert _never_appears(marker)
    assert http("GET", f"http://{n1.addr}:{n1.port}/health")[0] == 200


# ------------------------------------------------------------- another user


@pytest.fixture(scope="module")
def other_user():
    if os.geteuid() != 0:
        pytest.skip("creating a second user needs root")
    created = False
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", TEST_USER], check=True)
        created = True
    try:
        yield pwd.getpwnam(TEST_USER)
    finally:
        if created:
            subprocess.run(["userdel", TEST_USER], check=False)


def test_another_users_scancel_is_refused(cluster, other_user, jobdir):
    from cli import scancel

    jid = cluster.submit("--wrap 'sleep 60'", cwd=jobdir)
    env = cluster.env()
    code, out, err = run_as(other_user, scancel.main, [str(jid)], str(jobdir), env)
    assert (code, out, err) == (
        210,
        "",
        f"scancel: error: Kill job error on job id {jid}: Access/permission denied\n",
    )
    assert cluster.run(f"squeue -h -j {jid} -o %T").stdout.strip() in ("PENDING", "RUNNING")
    assert cluster.run(f"scancel {jid}").returncode == 0  # root may
    assert cluster.wait_done(jid) == "CANCELLED"


def test_job_runs_as_the_user_who_submitted_it(cluster, other_user, jobdir):
    from cli import sbatch

    env = cluster.env(HOME="/tmp", USER=other_user.pw_name)
    code, out, err = run_as(
        other_user, sbatch.main, ["--parsable", "--wrap", "id -u; id -g"], str(jobdir), env
    )
    assert code == 0, err
    jid = int(out.strip())
    assert cluster.wait_done(jid) == "COMPLETED"
    path = jobdir / f"slurm-{jid}.out"
    assert path.read_text() == f"{other_user.pw_uid}\n{other_user.pw_gid}\n"
    assert path.stat().st_uid == other_user.pw_uid  # created by the user, not by root
    r = cluster.run(f"squeue -h -t all -j {jid} -o %u")
    assert r.stdout.strip() == other_user.pw_name
