"""The open paths, on both daemons: ``/health`` and ``/openapi.json`` answer anyone;
every other published path and method refuses a caller without credentials.

The walk reads each daemon's own schema, so a route added later is covered
without touching this file.  The controller answers 401 with Slurm's
authentication errno (``test_auth.py`` checks its wording); the agent answers
401 to any request its controller did not sign for it.
"""

from __future__ import annotations

import asyncio
import re

from fastapi.testclient import TestClient

from agent.app import create_app as agent_app
from controller.api.app import create_app as controller_app
from tests.agent.test_supervision import agent_state

OPEN = {"/health", "/openapi.json"}


def walk(client: TestClient) -> list[tuple[str, str, int]]:
    """(method, path, status) of an anonymous request to each published operation."""
    schema = client.get("/openapi.json").json()
    answers = []
    for path, ops in schema["paths"].items():
        if path in OPEN:
            continue
        concrete = re.sub(r"\{[^}]+\}", "1", path)  # /v1/jobs/{job_id} -> /v1/jobs/1
        for method in ops:
            if method in ("get", "post", "put", "patch", "delete"):
                r = client.request(method.upper(), concrete, json={})
                answers.append((method.upper(), path, r.status_code))
    return answers


def test_controller_opens_only_health_and_its_schema(harness):
    client = TestClient(controller_app(harness.ctl, run_loop=False))  # as a TCP peer sees it
    assert client.get("/health").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    answers = walk(client)
    assert len(answers) >= 10  # the walk really covered the API
    assert [a for a in answers if a[2] != 401] == []


def test_agent_opens_only_health_and_its_schema(tmp_path):
    state = agent_state(tmp_path / "spool")
    try:
        client = TestClient(agent_app(state))
        assert client.get("/health").json() == {"status": "ok", "node": "n1"}
        assert client.get("/openapi.json").status_code == 200
        answers = walk(client)
        # launch, launches, signal (and whatever comes later: logs, steps)
        assert {path for _, path, _ in answers} >= {"/v1/launch", "/v1/launches", "/v1/signal"}
        assert [a for a in answers if a[2] != 401] == []
        assert state.launcher.job_ids() == [] and not state.jobs
    finally:
        asyncio.run(state.shutdown())
