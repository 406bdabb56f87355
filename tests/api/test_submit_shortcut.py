"""``POST /v1/jobs`` through ``SubmitShortcut`` answers exactly as the FastAPI route does.

slurmctld serves a thin ASGI app in front of FastAPI so that submissions skip
the framework's routing and dependency resolution (about half of their CPU).
Each case sends the same request both ways -- the shortcut, and FastAPI's own
route -- with the caller's peer credentials in the ASGI scope as the Unix
socket sets them, and compares status and body.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from controller.api import fastsubmit
from controller.api.app import create_app
from controller.api.fastsubmit import SubmitShortcut
from controller.auth.callers import user_name

ALICE_CREDS = (4321, 1001, 1001)  # pid, uid, gid as SO_PEERCRED gives them


def with_peercred(app, creds=ALICE_CREDS):  # type: ignore[no-untyped-def]
    """The socket's protocol puts the peer credentials in the scope's state; do the same."""

    async def asgi(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and creds is not None:
            scope = {**scope, "state": {**scope.get("state", {}), "peercred": creds}}
        await app(scope, receive, send)

    return asgi


@pytest.fixture
def both(harness):  # type: ignore[no-untyped-def]
    """(shortcut client, FastAPI-route client) over the harness's controller."""
    app = create_app(harness.ctl, run_loop=False)  # no dependency overrides
    with (
        TestClient(with_peercred(SubmitShortcut(app))) as fast,
        TestClient(with_peercred(app)) as slow,
    ):
        yield fast, slow


def body(**fields: object) -> dict[str, object]:
    return {"script": "#!/bin/sh\ntrue\n", "name": "t", "work_dir": "/tmp",
            "submit_dir": "/tmp", "submit_host": "h", **fields}  # fmt: skip


def test_a_submission_is_stored_and_answered_with_its_id(both, harness):
    fast, slow = both
    a = fast.post("/v1/jobs", json=body(name="via-shortcut"))
    b = slow.post("/v1/jobs", json=body(name="via-route"))
    assert a.status_code == b.status_code == 200
    assert b.json()["job_id"] == a.json()["job_id"] + 1 and a.json()["test_only_message"] is None
    stored = harness.job(a.json()["job_id"])
    # the caller is the socket's uid, named from the password database (digits if none)
    assert stored["name"] == "via-shortcut" and stored["uid"] == 1001
    assert stored["user"] == user_name(1001)


@pytest.mark.parametrize(
    "payload",
    [
        b"{not json",
        json.dumps({"name": "x"}).encode(),  # required fields missing
        json.dumps(body(nodes_min="many")).encode(),  # wrong type
    ],
    ids=["malformed", "missing fields", "wrong type"],
)
def test_bad_bodies_get_the_routes_422(both, payload):
    fast, slow = both
    headers = {"content-type": "application/json"}
    a = fast.post("/v1/jobs", content=payload, headers=headers)
    b = slow.post("/v1/jobs", content=payload, headers=headers)
    assert a.status_code == b.status_code == 422
    assert a.json() == b.json()


def test_refusals_carry_slurms_errno_and_status_as_the_route_gives_them(both):
    fast, slow = both
    a = fast.post("/v1/jobs", json=body(partition="nosuch"))
    b = slow.post("/v1/jobs", json=body(partition="nosuch"))
    assert a.status_code == b.status_code and 400 <= a.status_code < 500
    assert a.json() == b.json() and a.json()["error"] == "Invalid partition name specified"


def test_without_peer_credentials_fastapi_answers_401(harness):
    app = create_app(harness.ctl, run_loop=False)
    with TestClient(with_peercred(SubmitShortcut(app), creds=None)) as tcp_like:
        r = tcp_like.post("/v1/jobs", json=body())
    assert r.status_code == 401
    assert r.json()["detail"]["errno"] == 6000  # ESLURM_AUTH_CRED_INVALID


def test_an_oversized_body_is_refused_with_413_and_nothing_stored(both, harness, monkeypatch):
    fast, _ = both
    monkeypatch.setattr(fastsubmit, "MAX_SUBMIT_BODY", 1000)
    r = fast.post("/v1/jobs", json=body(script="#!/bin/sh\n" + "x" * 2000))
    assert r.status_code == 413
    assert harness.client.get("/v1/jobs?all_states=true").json()["jobs"] == []
