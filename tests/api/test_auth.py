"""Every route but /health and /openapi.json demands credentials."""

from __future__ import annotations

import json
import re

from fastapi.testclient import TestClient

from controller.api.app import create_app
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
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_client_mistakes_are_4xx_never_500(harness):
    h = harness
    assert h.client.post("/v1/jobs", json={"name": 3}).status_code == 422
    h.submit()
    r = h.client.get("/v1/jobs", params={"ids": "abc", "all_states": True})
    assert (r.status_code, r.json()) == (
        200,
        {"jobs": []},
    )  # a bad id matches nothing, not everything
    r = h.client.post("/v1/nodes/update", json={"names": ["n1"], "state": "drain", "reason": "x"})
    assert r.status_code == 403  # alice is no admin


def _completion(node: str, jid: int, exit_code: int = 0) -> dict:
    return {"node": node, "job_id": jid, "restarts": 0, "step_id": "batch", "exit_code": exit_code}


def test_batch_completions_are_node_signed_and_a_node_cannot_report_for_another(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    holder = h.job(jid)["batch_host"]
    other = "n2" if holder == "n1" else "n1"
    client = _bare_client(h)
    batch = {"completions": [_completion(holder, jid)]}
    path = f"/v1/nodes/{holder}/completions"
    assert client.post(path, json=batch).status_code == 401  # unsigned
    # another node's valid signature, on the holder's path: refused
    assert _signed(client, other, path, batch, now=h.clock()).status_code == 403
    # on its own path, but carrying the holder's completion: refused whole
    r = _signed(client, other, f"/v1/nodes/{other}/completions", batch, now=h.clock())
    assert r.status_code == 403 and r.json()["errno"] == errors.ESLURM_ACCESS_DENIED
    assert h.job(jid)["state"] == "RUNNING"  # nothing was recorded
    r = _signed(client, holder, path, batch, now=h.clock())
    assert r.status_code == 200
    assert r.json() == {"results": [{"job_id": jid, "restarts": 0, "ok": True, "changed": True}]}
    assert h.job(jid)["state"] == "COMPLETED"
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_batch_completions_answer_per_item_and_repeats_change_nothing(harness):
    h = harness
    ok, bad = h.submit()["job_id"], h.submit()["job_id"]
    h.tick()
    assert h.job(ok)["batch_host"] == h.job(bad)["batch_host"] == "n1"  # 1 CPU each, 2 on n1
    client = _bare_client(h)
    path = "/v1/nodes/n1/completions"
    items = [
        _completion("n1", ok),
        _completion("n1", bad, exit_code=3 << 8),  # exit 3
        _completion("n1", ok),  # repeated within the batch
        _completion("n1", 999),  # a job the controller does not know
    ]
    r = _signed(client, "n1", path, {"completions": items}, now=h.clock())
    assert [(a["job_id"], a["ok"], a["changed"]) for a in r.json()["results"]] == [
        (ok, True, True),
        (bad, True, True),
        (ok, True, False),
        (999, True, False),
    ]
    assert (h.job(ok)["state"], h.job(bad)["state"]) == ("COMPLETED", "FAILED")
    assert h.job(bad)["exit_code"] == 3 << 8
    # the agent re-sends after a lost answer: acknowledged again, nothing changes
    again = [_completion("n1", ok, exit_code=9), _completion("n1", bad)]
    r = _signed(client, "n1", path, {"completions": again}, now=h.clock())
    assert [(a["ok"], a["changed"]) for a in r.json()["results"]] == [(True, False)] * 2
    assert (h.job(ok)["state"], h.job(bad)["state"]) == ("COMPLETED", "FAILED")
    assert h.job(ok)["exit_code"] == 0
    h.agents.take("launch", 2)
    h.agents.assert_nothing_else()


def test_caller_names_are_looked_up_once_a_minute(monkeypatch):
    """The password database is read once per uid per NAME_TTL, not per request."""
    import controller.auth.callers as auth

    calls: list[int] = []
    clock = [1000.0]

    class Entry:
        pw_name = "renamed"

    def getpwuid(uid: int) -> Entry:
        calls.append(uid)
        if uid == 4242:
            raise KeyError(uid)
        return Entry()

    monkeypatch.setattr(auth.pwd, "getpwuid", getpwuid)
    monkeypatch.setattr(auth.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(auth, "_names", {})
    assert [auth.user_name(7) for _ in range(3)] == ["renamed"] * 3
    assert auth.user_name(4242) == "4242"  # no account: its digits
    assert calls == [7, 4242]
    clock[0] += auth.NAME_TTL + 1  # a minute later the database is read again
    auth.user_name(7)
    assert calls == [7, 4242, 7]
