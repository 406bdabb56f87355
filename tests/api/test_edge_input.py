"""Bad input stops at the edge (issue 19): scripts are bytes, junk is a 4xx naming the field.

* A script that is not UTF-8 arrives in base64 (``script_encoding``), is
  stored (on SQLite and PostgreSQL, whose text refuses such bytes) and
  reaches the agent's launch order as the same bytes; a NUL byte, or bad
  base64, is refused and nothing is stored.
* Junk in every closed-vocabulary field of a submission (``open_mode``,
  ``script_encoding``) and a wrong type in every count is a 422 whose
  ``message`` names the field in plain words; a count out of its range is
  Slurm's 400 naming it (``controller.jobs.validate``).  Nothing is stored.
  Both submission paths are asked: the fast path over the socket
  (``socket_client``) and the FastAPI route (``harness.client``).
* The other mutating routes (cancel/signal, hold, requeue, update, node
  update) answer junk with a 4xx naming the field, and change nothing.
"""

from __future__ import annotations

import base64

import pytest
from fastapi.testclient import TestClient

from controller.api.app import create_app
from controller.api.fastsubmit import SubmitShortcut
from slurmlite.scriptbytes import stored_bytes
from tests.api.conftest import ROOT
from tests.fuzz_asgi import on_the_wire

JOB = {"script": "#!/bin/sh\ntrue\n", "name": "j", "work_dir": "/tmp", "submit_dir": "/tmp"}
JOB = {**JOB, "submit_host": "vm"}
LATIN1 = b"#!/bin/sh\n# caf\xe9\necho 'caf\xe9'\n"
SQLITE = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


@pytest.fixture
def socket_client(harness) -> TestClient:
    """alice's sbatch as it reaches the controller: peer credentials, the submit shortcut."""
    app = SubmitShortcut(create_app(harness.ctl, run_loop=False))
    return TestClient(on_the_wire(app, peer=(4242, 1001, 1001)))


def _stored(harness) -> list:
    return harness.client.get("/v1/jobs", params={"all_states": True}).json()["jobs"]


def test_a_script_that_is_not_utf8_is_stored_and_launched_byte_for_byte(harness, socket_client):
    wire = {"script": base64.b64encode(LATIN1).decode(), "script_encoding": "base64"}
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, **wire})
        assert r.status_code == 200, r.text
    # a UTF-8 script sent in base64 is as good as its text
    utf8 = {"script": base64.b64encode(b"#!/bin/sh\necho \xc3\xa9\n").decode()}
    assert harness.post_job(**utf8, script_encoding="base64").status_code == 200
    harness.tick()
    launches = [o.spec for o in harness.agents.take("launch", 3)]
    scripts = sorted(stored_bytes(spec.script) for spec in launches)
    assert scripts == sorted([LATIN1, LATIN1, b"#!/bin/sh\necho \xc3\xa9\n"])


@pytest.mark.parametrize(
    "fields",
    [
        {"script": "#!/bin/sh\necho a\x00b\n"},
        {
            "script": base64.b64encode(b"#!/bin/sh\necho a\x00\xe9\n").decode(),
            "script_encoding": "base64",
        },
    ],
    ids=["text", "base64"],
)
def test_a_nul_byte_is_refused_with_sbatchs_words(harness, socket_client, fields):
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, **fields})
        assert r.status_code == 400
        assert r.json()["detail"] == (
            "The Slurm controller does not allow scripts that contain a NULL character '\\0'."
        )
    assert _stored(harness) == []


@SQLITE
def test_bad_base64_is_a_422_naming_the_script(harness, socket_client):
    for client in (harness.client, socket_client):
        r = client.post(
            "/v1/jobs", json={**JOB, "script": "not base64!", "script_encoding": "base64"}
        )
        assert r.status_code == 422 and "script" in r.json()["message"], r.text
    assert _stored(harness) == []


ENUMS = {"open_mode": "junk", "script_encoding": "utf-16"}
COUNTS = [
    "nodes_min", "nodes_max", "ntasks", "ntasks_per_node", "cpus_per_task", "mem_per_node",
    "mem_per_cpu", "mem_per_gpu", "gpus_per_node", "gpus_total", "time_limit", "nice",
    "warn_signal", "warn_time", "alloc_sid",
]  # fmt: skip


@SQLITE
@pytest.mark.parametrize("field", sorted(ENUMS))
def test_junk_in_a_closed_vocabulary_is_a_422_naming_the_field(harness, socket_client, field):
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, field: ENUMS[field]})
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert message.startswith(f"{field} must be one of ") and repr(ENUMS[field]) in message
    assert _stored(harness) == []


@SQLITE
@pytest.mark.parametrize("field", COUNTS)
def test_a_count_that_is_not_a_number_is_a_422_naming_it(harness, socket_client, field):
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, field: "many"})
        assert r.status_code == 422, r.text
        assert r.json()["message"].startswith(f"{field}: Input should be a valid integer")
    assert _stored(harness) == []


@SQLITE
@pytest.mark.parametrize("field", COUNTS)
def test_a_count_out_of_range_is_slurms_400_naming_it(harness, socket_client, field):
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, field: 2**40})
        assert r.status_code == 400, r.text
        assert r.json()["detail"].startswith(f"{field}={2**40} is out of range")
    assert _stored(harness) == []


@SQLITE
def test_a_node_range_upside_down_is_slurms_invalid_node_count(harness, socket_client):
    for client in (harness.client, socket_client):
        r = client.post("/v1/jobs", json={**JOB, "nodes_min": 3, "nodes_max": 1})
        assert (r.status_code, r.json()["error"]) == (400, "Node count specification invalid")
    assert _stored(harness) == []


ROUTES = [
    ("/v1/jobs/cancel", {"signal": 99}, "signal"),
    ("/v1/jobs/cancel", {"signal": "TERM"}, "signal"),
    ("/v1/jobs/cancel", {"states": ["JUNK"]}, "states"),
    ("/v1/jobs/hold", {"user_hold": "perhaps"}, "user_hold"),
    ("/v1/jobs/requeue", {"hold": "perhaps"}, "hold"),
    ("/v1/jobs/update", {"time_limit": "forever"}, "time_limit"),
    ("/v1/jobs/update", {"priority": -1}, "priority"),
    ("/v1/jobs/update", {"nice": 2**40}, "nice"),
    ("/v1/jobs/update", {"requeue": "perhaps"}, "requeue"),
]


@SQLITE
@pytest.mark.parametrize(("path", "junk", "field"), ROUTES)
def test_junk_to_a_job_verb_is_a_422_naming_the_field_and_changes_nothing(
    harness, path, junk, field
):
    jid = harness.submit(hold=True)["job_id"]
    before = harness.job(jid)
    r = harness.client.post(path, json={"job_ids": [jid], **junk})
    assert r.status_code == 422, r.text
    assert r.json()["message"].startswith(f"{field}"), r.json()["message"]
    assert harness.job(jid) == before
    harness.agents.assert_nothing_else()


@SQLITE
def test_junk_node_state_is_slurms_invalid_node_state_and_changes_nothing(harness):
    harness.as_user(ROOT)
    before = harness.client.get("/v1/nodes").json()
    r = harness.client.post("/v1/nodes/update", json={"names": ["n1"], "state": "SIDEWAYS"})
    assert (r.status_code, r.json()["error"]) == (400, "Invalid node state specified")
    assert "state SIDEWAYS" in r.json()["detail"]
    assert harness.client.get("/v1/nodes").json() == before
