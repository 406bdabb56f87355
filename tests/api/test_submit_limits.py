"""The controller refuses oversized or malformed submissions with 400, by either route:
a client need not be sbatch, so its checks are made again here."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from controller.api.app import create_app
from controller.api.fastsubmit import SubmitShortcut
from slurmlite import errors
from tests.api.test_submit_shortcut import body, with_peercred

TOO_LONG = errors.ESLURM_PATHNAME_TOO_LONG  # 2012: "Pathname of a file, directory or ..."

CASES = [
    (dict(environment={f"V{i}": "1" for i in range(4097)}), TOO_LONG, "4097 variables"),
    (dict(environment={"BIG": "x" * 200_000}), TOO_LONG, "variable BIG is 200004 bytes"),
    (dict(environment={"A=B": "x"}), errors.SLURM_UNEXPECTED_MSG_ERROR, "invalid environment"),
    (dict(echo_env={"SLURM_X": "x" * 200_000}), TOO_LONG, "echoed environment variable"),
    (dict(script="#!/bin/sh\n" + "#" * (4 << 20)), TOO_LONG, "the batch script is 4194314"),
    (dict(name="n" * 2000), TOO_LONG, "the job name is 2000 bytes"),
    (dict(comment="c" * 65537), TOO_LONG, "the comment is 65537 bytes"),  # 64 KiB + 1
    (dict(std_out="/" + "o" * 5000), TOO_LONG, "the output path is 5001 bytes"),
    (dict(work_dir="/" + "w" * 5000), TOO_LONG, "the work directory is 5001 bytes"),
]


@pytest.fixture
def both(harness):  # type: ignore[no-untyped-def]
    """(shortcut client, FastAPI-route client), as ``sbatch`` reaches them over the socket."""
    app = create_app(harness.ctl, run_loop=False)
    with (
        TestClient(with_peercred(SubmitShortcut(app))) as fast,
        TestClient(with_peercred(app)) as slow,
    ):
        yield fast, slow


@pytest.mark.parametrize(("fields", "code", "detail"), CASES, ids=[c[2] for c in CASES])
def test_oversized_or_malformed_submissions_get_400(both, harness, fields, code, detail):  # type: ignore[no-untyped-def]
    for client in both:
        r = client.post("/v1/jobs", json=body(**fields))
        assert r.status_code == 400, r.text
        answer = r.json()
        answer = answer.get("detail", answer) if isinstance(answer.get("detail"), dict) else answer
        assert answer["errno"] == code and detail in answer["detail"]
    # nothing was stored: the next job gets the first id
    ok = both[0].post("/v1/jobs", json=body())
    assert ok.status_code == 200 and harness.job(ok.json()["job_id"])["name"] == "t"


def test_a_large_but_allowed_submission_is_taken(both):  # type: ignore[no-untyped-def]
    env = {f"V{i}": "x" * 200 for i in range(4096)}  # 4096 * ~205 bytes = ~840 kB < 1 MiB
    r = both[0].post("/v1/jobs", json=body(environment=env, name="n" * 1024))
    assert r.status_code == 200, r.text
