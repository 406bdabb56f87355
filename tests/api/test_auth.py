"""Every route but /health and /openapi.json demands credentials."""

from __future__ import annotations

import json
import re

from fastapi.testclient import TestClient

from controller.app import create_app
from slurmlite import errors
from slurmlite.credential import node_key, sign_request
from tests.api.conftest import KEY

OPEN = {"/health", "/openapi.json"}


def _bare_client(h) -> TestClient:
    return TestClient(create_app(h.ctl, run_loop=False))  # no overrides: as a TCP peer sees it


def test_every_published_path_refuses_an_anonymous_caller(harness):
    client = _bare_client(harness)
    schema = client.get("/openapi.json").json()
    assert client.get("/health").status_code == 200
    checked = 0
    for path, ops in schema["paths"].items():
        if path in OPEN:
            continue
        concrete = re.sub(r"\{[^}]+\}", "1", path)
        for method in ops:
            r = client.request(method.upper(), concrete, json={})
            assert r.status_code == 401, f"{method.upper()} {path} answered {r.status_code}"
            assert r.json()["detail"]["errno"] == errors.ESLURM_AUTH_CRED_INVALID
            checked += 1
    assert checked >= 10  # the walk really covered the API


def _signed(
    client, node: str, path: str, payload: dict, key_node: str | None = None, now: float = 0.0
):
    body = json.dumps(payload).encode()
    headers = sign_request(node_key(KEY, key_node or node), node, "POST", path, body, now)
    headers["content-type"] = "application/json"
    return client.post(path, content=body, headers=headers)


def test_node_signed_heartbeat_accepted_and_forgeries_refused(harness):
    h = harness
    client = _bare_client(h)
    now = h.clock()
    assert _signed(client, "n1", "/v1/nodes/n1/heartbeat", {}, now=now).json() == {"known": True}
    # signed with n2's key while claiming n1
    assert (
        _signed(client, "n1", "/v1/nodes/n1/heartbeat", {}, key_node="n2", now=now).status_code
        == 401
    )
    # n2 speaking for n1 with its own valid signature
    r = _signed(client, "n2", "/v1/nodes/n1/heartbeat", {}, now=now)
    assert r.status_code == 403 and r.json()["errno"] == errors.ESLURM_ACCESS_DENIED
    # a node cannot use the users' routes
    assert _signed(client, "n1", "/v1/jobs/cancel", {"job_ids": [1]}, now=now).status_code == 401


def test_node_cannot_report_completion_for_another_node(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    client = _bare_client(h)
    payload = {"node": "n1", "job_id": jid, "restarts": 0, "step_id": "batch", "exit_code": 0}
    r = _signed(client, "n2", f"/v1/jobs/{jid}/complete", payload, now=h.clock())
    assert r.status_code == 403
    assert h.job(jid)["state"] == "RUNNING"
    r = _signed(client, "n1", f"/v1/jobs/{jid}/complete", payload, now=h.clock())
    assert r.json() == {"ok": True, "changed": True}
    assert h.job(jid)["state"] == "COMPLETED"


def test_client_mistakes_are_4xx_never_500(harness):
    h = harness
    assert h.client.post("/v1/jobs", json={"name": 3}).status_code == 422
    h.submit()
    r = h.client.get("/v1/jobs", params={"ids": "abc", "all_states": True})
    assert (r.status_code, r.json()) == (200, {"jobs": []})  # a bad id matches nothing, not everything
    r = h.client.post("/v1/nodes/update", json={"names": ["n1"], "state": "drain", "reason": "x"})
    assert r.status_code == 403  # alice is no admin
