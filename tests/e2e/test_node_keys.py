"""Per-node keys on a real cluster: agents hold only the key files ``slurmlite keys node``
wrote, jobs run, and one node's key speaks for no other node.

The cluster (nodes nk1, nk2) is set up as an admin would: ``slurmlite keygen``
for the cluster key, ``slurmlite keys node`` for one file per node, and
``SlurmliteNodeKeyFile=<dir>/keys/%n.key`` in slurm.conf.  Requests below go
over real TCP to the daemons' ports, signed the way a (stolen) node key
would sign them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cli import localcluster
from cli.localcluster import ClusterSpec, down, read_pid, up
from slurmlite.config import load_config
from slurmlite.credential import (
    load_node_key,
    orders_key,
    sign_credential,
    sign_request,
    to_node_key,
)
from slurmlite.protocol import NodeHeartbeat, NodeRegister, to_dict
from tests.agent.jobs import is_live
from tests.e2e.conftest import BIN, Cluster, wait_for


def slurmlite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "slurmlite"), *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def keyed():
    base = Path(tempfile.mkdtemp(prefix="slurmlite-keys-"))
    base.chmod(0o755)
    (base / "work").mkdir(mode=0o777)
    d = base / "c"
    d.mkdir()
    render = localcluster.render_conf
    try:
        assert slurmlite("keygen", str(d / "slurmlite.key")).returncode == 0
        r = slurmlite(
            "keys",
            "node",
            "nk[1-2]",
            "--dir",
            str(d / "keys"),
            "--key-file",
            str(d / "slurmlite.key"),
        )
        assert (r.returncode, r.stdout) == (0, f"wrote {d}/keys/nk1.key\nwrote {d}/keys/nk2.key\n")
        spec = ClusterSpec(directory=d, nodelist="nk[1-2]", cpus_per_node=2, mem_per_node=2000)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(
                localcluster,
                "render_conf",
                lambda *a, **k: render(*a, **k) + f"SlurmliteNodeKeyFile={d}/keys/%n.key\n",
            )
            up(spec, timeout=60)
        yield Cluster(directory=spec.directory, conf=spec.conf, work=base / "work")
    finally:
        down(d)
        shutil.rmtree(base, ignore_errors=True)


def http(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    req = urllib.request.Request(
        url, data=body, method="POST", headers={**headers, "content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def agent_answers(c: Cluster, node: str) -> bool:
    n = load_config(str(c.conf)).node(node)
    try:
        with urllib.request.urlopen(f"http://{n.addr}:{n.port}/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def test_agents_hold_only_their_node_key_and_jobs_run(keyed):
    c = keyed
    for n in ("nk1", "nk2"):
        path = c.directory / "keys" / f"{n}.key"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        log = (c.directory / "log" / f"slurmd-{n}.log").read_text()
        assert f"event=node_key node={n} source={path}" in log
    # take the cluster key away and restart nk2: its node key file is all it needs
    key = c.directory / "slurmlite.key"
    key.rename(key.with_suffix(".away"))
    try:
        pid = read_pid(c.directory / "run" / "slurmd-nk2.pid")
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not is_live(pid), what="nk2's agent stopped")
        cmd = [sys.executable, "-m", "agent.main", "-N", "nk2", "-f", str(c.conf), "--fake-gpus"]
        subprocess.run(cmd, check=True, env=c.env(), timeout=60)
        wait_for(lambda: agent_answers(c, "nk2"), what="nk2's agent back")
        jid = c.submit("-w nk2 --wrap 'echo hello from $SLURMD_NODENAME'", cwd=c.work)
        assert c.wait_done(jid) == "COMPLETED"
        assert (c.work / f"slurm-{jid}.out").read_text() == "hello from nk2\n"
    finally:
        key.with_suffix(".away").rename(key)


def test_one_nodes_key_cannot_register_or_beat_as_another_node(keyed):
    c = keyed
    cfg = load_config(str(c.conf))
    base = f"http://127.0.0.1:{cfg.slurmctld_port}"
    nk1 = load_node_key(c.directory / "keys" / "nk1.key", "nk1")  # what a thief of nk1 has
    me = cfg.node("nk1")
    fake = NodeRegister(name="nk2", addr=me.addr, port=me.port, hostname="evil", cpus=64,
                        real_memory=2000, gpus=[], gpu_type=None)  # fmt: skip
    body = json.dumps(to_dict(fake)).encode()
    path = "/v1/nodes/register"

    def signed(as_node: str, p: str, data: bytes, now: float | None = None) -> dict[str, str]:
        return sign_request(nk1, as_node, "POST", p, data, time.time() if now is None else now)

    # nk1's key, claiming to be nk2: the controller checks with nk2's key
    status, text = http(base + path, body, signed("nk2", path, body))
    assert status == 401 and "bad signature for node nk2" in text
    # nk1 honestly signing as nk1, but registering nk2
    status, text = http(base + path, body, signed("nk1", path, body))
    assert status == 403 and "node nk1 cannot register as nk2" in text
    beat = json.dumps(to_dict(NodeHeartbeat(running_jobs=[]))).encode()
    hb2 = "/v1/nodes/nk2/heartbeat"
    assert http(base + hb2, beat, signed("nk2", hb2, beat))[0] == 401
    assert http(base + hb2, beat, signed("nk1", hb2, beat))[0] == 403
    hb1 = "/v1/nodes/nk1/heartbeat"
    status, text = http(base + hb1, beat, signed("nk1", hb1, beat, now=time.time() - 1000))
    assert status == 401 and "clock skew of 1000 s" in text
    # the key does work for its own node (so the refusals above are not for some other reason)
    headers = signed("nk1", hb1, beat)
    assert http(base + hb1, beat, headers) == (200, '{"known":true}')
    status, text = http(base + hb1, beat, headers)  # the same request again
    assert status == 401 and "replayed request" in text
    r = c.run("scontrol show node nk2")
    assert "CPUTot=2" in r.stdout and "evil" not in r.stdout  # nk2 is as it was


def test_an_agent_refuses_orders_made_for_another_node(keyed):
    c = keyed
    nk1 = c.directory / "keys" / "nk1.key"
    n1 = load_config(str(c.conf)).node("nk1")
    marker = c.work / "pwned"
    order = {
        "job_id": 999999, "restarts": 0, "step_id": "batch", "name": "evil", "uid": 0, "gid": 0,
        "user": "root", "script": f"#!/bin/sh\ntouch {marker}\n", "work_dir": "/tmp",
        "environment": {}, "std_out": "/dev/null", "std_err": "/dev/null",
        "std_in": "/dev/null", "open_mode": "truncate", "gpus": [], "kill_wait": 1,
    }  # fmt: skip
    claims = {"op": "launch", "job": 999999, "restarts": 0, "node": "nk1", "nodes": ["nk1"]}
    # nk2's key file can make an order only nk2 would accept
    nk2_orders = orders_key(load_node_key(c.directory / "keys" / "nk2.key", "nk2"))
    order["credential"] = sign_credential(nk2_orders, claims, now=time.time(), ttl=60)
    body = json.dumps(order).encode()
    url, path = f"http://{n1.addr}:{n1.port}/v1/launch", "/v1/launch"
    assert http(url, body, {})[0] == 401  # not signed by the controller
    to_nk1 = to_node_key(load_node_key(nk1, "nk1"))
    status, text = http(url, body, sign_request(to_nk1, "nk1", "POST", path, body, time.time()))
    assert status == 403 and "credential signature invalid" in text
    assert not (c.directory / "spool" / "nk1" / "job999999").exists() and not marker.exists()
