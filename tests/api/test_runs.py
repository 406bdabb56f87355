"""Workload runs on the controller: a run is a job plus its row, retried, private to its owner."""

from __future__ import annotations

import hashlib

from sqlalchemy import text

from slurmlite.protocol import JobCompletion
from tests.api.conftest import ALICE, BOB, ROOT

JOB = {"script": "#!/bin/bash\ntrue\n", "name": "ft", "work_dir": "/tmp", "submit_dir": "/tmp",
       "submit_host": "vm", "nodes_min": 2, "ntasks_per_node": 1}  # fmt: skip


def create(h, key: str | None = None, **run):  # type: ignore[no-untyped-def]
    body = {"job": JOB, "run": {"name": "ft", "spec": {"experiment_name": "ft"}, **run}}
    if key:
        body["run"]["idempotency_key"] = key
    return h.client.post("/v1/runs", json=body)


def start(h, run_id: int) -> list[str]:  # type: ignore[no-untyped-def]
    h.tick()
    job = h.job(run_id)
    assert job["state"] == "RUNNING", (job["state"], job["reason"])
    return job["nodes"]


def end(h, run_id: int, status: int, restarts: int = 0) -> None:  # type: ignore[no-untyped-def]
    host = h.job(run_id)["batch_host"]
    msg = JobCompletion(
        node=host, job_id=run_id, restarts=restarts, step_id="batch", exit_code=status
    )
    assert h.ctl.jobs.complete(host, msg)


def test_a_run_is_a_job_with_its_row_and_the_same_key_answers_the_first(harness):
    h = harness
    first = create(h, key="exp-1").json()
    assert first["existing"] is False
    again = create(h, key="exp-1").json()
    assert again == {"run_id": first["run_id"], "existing": True}
    jobs = h.client.get("/v1/jobs", params={"all_states": True}).json()["jobs"]
    assert [j["job_id"] for j in jobs] == [first["run_id"]]  # one job
    run = h.client.get(f"/v1/runs/{first['run_id']}").json()
    assert (run["name"], run["state"], run["attempts"], run["max_retries"]) == (
        "ft",
        "PENDING",
        [],
        3,
    )
    assert run["spec"] == {"experiment_name": "ft"}
    h.as_user(BOB)  # another user's key of the same text is their own
    assert create(h, key="exp-1").json()["run_id"] != first["run_id"]


def test_a_failed_attempt_is_retried_until_the_budget_is_spent(harness):
    h = harness
    rid = create(h, max_retries=2).json()["run_id"]
    for attempt in range(3):
        start(h, rid)
        end(h, rid, 3 << 8, restarts=attempt)
        h.pass_time(2)  # a retry is eligible a second later
    run = h.client.get(f"/v1/runs/{rid}").json()
    assert (run["state"], run["retries"], run["attempt"]) == ("FAILED", 2, 2)
    assert [(a["attempt"], a["state"], a["exit_code"], a["ended_by"]) for a in run["attempts"]] == [
        (0, "FAILED", 3 << 8, "retry:3:0"),
        (1, "FAILED", 3 << 8, "retry:3:0"),
        (2, "FAILED", 3 << 8, None),
    ]
    assert all(a["nodes"] == ["n1", "n2"] for a in run["attempts"])
    assert h.job(rid)["restart_causes"] == "retry:3:0,retry:3:0"


def test_success_ends_the_run_and_a_plain_job_is_never_retried(harness):
    h = harness
    rid = create(h).json()["run_id"]
    start(h, rid)
    end(h, rid, 0)
    assert h.client.get(f"/v1/runs/{rid}").json()["state"] == "COMPLETED"
    jid = h.submit(script="#!/bin/sh\nfalse\n", name="plain", work_dir="/tmp",
                   submit_dir="/tmp", submit_host="vm")["job_id"]  # fmt: skip
    start(h, jid)
    end(h, jid, 1 << 8)
    assert h.job(jid)["state"] == "FAILED"


def test_a_node_failure_requeues_without_using_the_retry_budget(harness):
    h = harness
    rid = create(h, max_retries=1).json()["run_id"]
    start(h, rid)
    host = h.job(rid)["batch_host"]
    # its agent was cut off and killed the run (agent.cutoff): lost on the node
    assert h.ctl.jobs.complete(host, JobCompletion(host, rid, 0, "batch", 15, fenced=True))
    h.tick()
    run = h.client.get(f"/v1/runs/{rid}").json()
    assert (run["state"], run["retries"], run["attempt"]) == ("PENDING", 0, 1)
    assert run["attempts"][0]["state"] == "NODE_FAIL"
    assert run["attempts"][0]["ended_by"].startswith("node_fail:")


def test_another_user_cannot_read_a_run_its_logs_or_its_secrets(harness):
    h = harness
    rid = create(h).json()["run_id"]
    h.as_user(BOB)
    for path in (f"/v1/runs/{rid}", f"/v1/runs/{rid}/logs", f"/v1/runs/{rid}/node-env"):
        r = h.client.get(path)
        assert r.status_code == 403 and r.json()["error"] == "Access/permission denied", path
    assert h.client.get("/v1/runs").json() == []
    assert [r["user"] for r in h.client.get("/v1/runs", params={"all_users": True}).json()] == [
        "alice"
    ]
    h.as_user(ROOT)  # an operator reads the run, but no secret value
    assert h.client.get(f"/v1/runs/{rid}").status_code == 200
    assert h.client.get(f"/v1/runs/{rid}/node-env").status_code == 403
    assert h.client.get("/v1/runs/999").status_code == 404


def test_secrets_are_stored_encrypted_and_given_only_to_the_owners_running_run(harness):
    h = harness
    assert h.client.put("/v1/secrets/hf/token", json={"value": "s3cr3t-value"}).status_code == 200
    refused = create(h, secrets={"HF_TOKEN": "hf/token", "X": "nope"})
    assert refused.status_code == 400 and "secret nope is not set" in refused.json()["detail"]
    rid = create(h, secrets={"HF_TOKEN": "hf/token"}).json()["run_id"]
    assert h.client.get(f"/v1/runs/{rid}").json()["secrets"] == ["HF_TOKEN"]
    pending = h.client.get(f"/v1/runs/{rid}/node-env")
    assert pending.status_code == 409  # not running: nothing is handed out
    start(h, rid)
    assert h.client.get(f"/v1/runs/{rid}/node-env").json()["secrets"] == {
        "HF_TOKEN": "s3cr3t-value"
    }
    with h.ctl.db.engine.connect() as conn:
        stored = conn.execute(text("SELECT value FROM secrets")).scalar_one()
        dump = " ".join(str(v) for row in conn.execute(text("SELECT * FROM runs")) for v in row)
    assert b"s3cr3t" not in bytes(stored) and "s3cr3t" not in dump
    assert h.client.get("/v1/secrets").json()[0]["name"] == "hf/token"
    assert "value" not in h.client.get("/v1/secrets").json()[0]
    h.as_user(BOB)
    assert h.client.get("/v1/secrets").json() == []
    assert h.client.delete("/v1/secrets/hf/token").status_code == 404  # not bob's
    h.as_user(ALICE)
    assert h.client.delete("/v1/secrets/hf/token").status_code == 200
    assert h.client.get(f"/v1/runs/{rid}/node-env").status_code == 404  # deleted meanwhile


def upload(h, data: bytes, part: int = 5) -> str:  # type: ignore[no-untyped-def]
    sha = hashlib.sha256(data).hexdigest()
    for offset in range(0, len(data), part):
        r = h.client.put("/v1/snapshots/parts", params={"sha": sha, "offset": offset},
                         content=data[offset : offset + part])  # fmt: skip
        assert r.json()["received"] == min(offset + part, len(data))
    assert h.client.post("/v1/snapshots/commit", json={"sha": sha}).json()["size"] == len(data)
    return sha


def test_snapshots_upload_in_parts_are_stored_once_and_read_only_by_their_uploaders(harness):
    h = harness
    data = b"a tar file, pretend" * 3
    sha = upload(h, data)
    assert h.client.get(f"/v1/snapshots/{sha}").json()["stored"] is True
    got = h.client.get(f"/v1/snapshots/data/{sha}", params={"offset": 4, "length": 6})
    assert got.content == data[4:10]
    h.as_user(BOB)
    assert h.client.get(f"/v1/snapshots/{sha}").json()["stored"] is False  # must upload
    assert h.client.get(f"/v1/snapshots/data/{sha}").status_code == 400
    assert create(h, snapshot=sha).status_code == 400  # not uploaded by bob
    upload(h, data)  # the same bytes from bob: still one file
    files = list((h.ctl.runs.files.root).glob("*.tar"))
    assert [f.name for f in files] == [f"{sha}.tar"]
    assert h.client.get(f"/v1/snapshots/data/{sha}").content == data


def test_a_bad_upload_is_refused(harness):
    h = harness
    sha = hashlib.sha256(b"right").hexdigest()
    h.client.put("/v1/snapshots/parts", params={"sha": sha, "offset": 0}, content=b"wrong")
    r = h.client.post("/v1/snapshots/commit", json={"sha": sha})
    assert r.status_code == 400 and "has SHA-256" in r.json()["detail"]
    r = h.client.put("/v1/snapshots/parts", params={"sha": sha, "offset": 3}, content=b"x")
    assert r.status_code == 400 and "offset 0" in r.json()["detail"]
    assert h.client.post("/v1/snapshots/commit", json={"sha": sha}).status_code == 400


def test_unreferenced_snapshots_are_collected_after_the_keep_time(harness):
    h = harness
    used, unused = upload(h, b"used one"), upload(h, b"not used")
    rid = create(h, snapshot=used).json()["run_id"]
    h.pass_time(100)
    assert h.ctl.runs.collect(keep=50) == 1  # the pending run keeps its snapshot
    assert h.ctl.runs.files.has(used) and not h.ctl.runs.files.has(unused)
    start(h, rid)
    end(h, rid, 0)
    assert h.ctl.runs.collect(keep=50) == 0  # ended just now
    h.pass_time(100)
    assert h.ctl.runs.collect(keep=50) == 1 and not h.ctl.runs.files.has(used)
