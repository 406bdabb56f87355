"""Hostile input to the controller: a 4xx that says what is wrong, never a 500.

Each test runs on SQLite and on PostgreSQL (``harness``): PostgreSQL is the
stricter store (32-bit INTEGER columns, no NUL in text), so a value that
slipped through validation would surface there as an internal error.

Submissions are sent both ways the controller takes them: through
``SubmitShortcut`` (over the Unix socket, as sbatch does: ``socket_client``)
and through the FastAPI route (``harness.client``, dependencies overridden).
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from controller.api.app import create_app
from controller.api.fastsubmit import SubmitShortcut
from slurmlite import errors
from tests.api.conftest import ROOT
from tests.fuzz_asgi import on_the_wire

JOB = {"script": "#!/bin/sh\ntrue\n", "name": "j", "work_dir": "/tmp", "submit_dir": "/tmp"}
JOB = {**JOB, "submit_host": "vm"}
JSON = {"content-type": "application/json"}


@pytest.fixture
def socket_client(harness) -> TestClient:
    """The controller as alice's sbatch reaches it: peer credentials, the submit shortcut."""
    app = SubmitShortcut(create_app(harness.ctl, run_loop=False))
    return TestClient(on_the_wire(app, peer=(4242, 1001, 1001)))


def _messages(answer: dict) -> str:
    """The 422's messages, one line each (what a client would show)."""
    return "\n".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in answer["detail"])


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/jobs/cancel", "/v1/nodes/update"])
def test_malformed_json_is_a_422_that_says_so(harness, socket_client, path):
    for client in (harness.client, socket_client):
        r = client.post(path, content=b'{"job_ids": [1', headers=JSON)
        assert r.status_code == 422, (path, r.text)
        assert "JSON" in _messages(r.json())  # "body.14: JSON decode error" or alike


def test_a_wrong_typed_field_is_a_422_naming_it(harness, socket_client):
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, "nice": "very"})
        assert r.status_code == 422
        assert "body.nice: Input should be a valid integer" in _messages(r.json())
    r = harness.client.post("/v1/jobs/cancel", json={"job_ids": "7"})
    assert (r.status_code, _messages(r.json())) == (
        422,
        "body.job_ids: Input should be a valid list",
    )
    r = harness.client.get("/v1/accounting", params={"start": "yesterday"})
    assert r.status_code == 422 and "query.start" in _messages(r.json())


def test_numbers_out_of_range_are_refused_with_their_range(harness, socket_client):
    # 2**63 does not fit SQLite's 64-bit integers, 2**31 not PostgreSQL's INTEGER
    r = harness.client.post("/v1/jobs/cancel", json={"job_ids": [2**63]})
    assert r.status_code == 422
    assert "less than or equal to 2147483647" in _messages(r.json())
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, "nice": 2**40})
        assert r.status_code == 400
        assert r.json()["errno"] == errors.ESLURM_INVALID_NICE
        assert r.json()["detail"] == "nice=1099511627776 is out of range (-2147483645..2147483645)"
        r = client.post("/v1/jobs", json={**JOB, "ntasks": -1})
        assert (r.status_code, r.json()["errno"]) == (400, errors.ESLURM_BAD_TASK_COUNT)
        # each count fits, their product (the job's CPUs) would not: 65536 * 65536 = 2**32
        r = client.post("/v1/jobs", json={**JOB, "ntasks": 65536, "cpus_per_task": 65536})
        assert (r.status_code, r.json()["errno"]) == (400, errors.ESLURM_TOO_MANY_REQUESTED_CPUS)
    # a job id no job can have matches nothing, like "abc"
    r = harness.client.get("/v1/jobs", params={"ids": "99999999999999999999999"})
    assert (r.status_code, r.json()) == (200, {"jobs": []})
    assert harness.client.get("/v1/jobs").json() == {"jobs": []}  # nothing was stored


def test_nul_characters_are_refused_not_stored(harness, socket_client):
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, "comment": "a\x00b"})
        assert (r.status_code, r.json()["detail"]) == (400, "comment contains a NUL character")
    r = harness.client.post("/v1/jobs/cancel", json={"job_ids": [], "user": "al\x00ice"})
    assert r.status_code == 422 and "body.user" in _messages(r.json())
    r = harness.client.get("/v1/jobs", params={"names": "a\x00"})
    assert r.status_code == 422 and "query.names" in _messages(r.json())
    assert harness.client.get("/v1/jobs").json() == {"jobs": []}


def test_a_malformed_hostlist_is_a_400_with_slurms_error(harness):
    harness.as_user(ROOT)
    r = harness.client.post(
        "/v1/nodes/update", json={"names": ["n[1"], "state": "drain", "reason": "x"}
    )
    assert r.status_code == 400
    assert r.json()["errno"] == errors.ESLURM_INVALID_NODE_NAME
    assert r.json()["detail"] == "Invalid hostlist: n[1"


def test_bodies_over_the_limit_get_413_before_anything_is_read(harness, socket_client):
    over_a_mib = b'{"job_ids": [], "name": "' + b"x" * (1 << 20) + b'"}'
    r = harness.client.post("/v1/jobs/cancel", content=over_a_mib, headers=JSON)
    assert r.status_code == 413
    assert r.json() == {"detail": "request body over 1048576 bytes (POST /v1/jobs/cancel)"}
    # a submission may carry up to 16 MiB (a 4 MiB script and its environment)
    script = "#!/bin/sh\n" + "#" * (17 << 20)
    for client in (harness.client, socket_client):
        assert client.post("/v1/jobs", json={**JOB, "script": script}).status_code == 413
    assert harness.client.get("/v1/jobs").json() == {"jobs": []}
