"""Hostile input to the agent: a 4xx that says what is wrong, never a 500, nothing spawned.

Every request here is signed as the controller signs its requests to node
``n1`` (``tests.agent.signing``), so what answers is the body's check, not
the request's signature.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agent.app import create_app
from tests.agent.signing import request_headers
from tests.agent.test_supervision import agent_state

SIGNAL = {"credential": "x.y", "job_id": 7, "restarts": 0, "signal": 10}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    state = agent_state(tmp_path / "spool")
    try:
        yield TestClient(create_app(state))
        assert state.launcher.job_ids() == [] and not state.jobs  # nothing was started
    finally:
        asyncio.run(state.shutdown())


def post(client: TestClient, path: str, body: bytes):  # type: ignore[no-untyped-def]
    return client.post(path, content=body, headers=request_headers(path, body))


def _messages(answer: dict) -> str:
    return "\n".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in answer["detail"])


@pytest.mark.parametrize("path", ["/v1/launch", "/v1/launches", "/v1/signal"])
def test_malformed_json_is_a_422_that_says_so(client: TestClient, path: str) -> None:
    r = post(client, path, b'{"job_id": 7,')
    assert r.status_code == 422
    assert "JSON decode error" in _messages(r.json())


def test_wrong_types_and_values_out_of_range_are_422s_naming_the_field(client: TestClient) -> None:
    cases = [
        ({**SIGNAL, "job_id": "seven"}, "body.job_id: Input should be a valid integer"),
        ({**SIGNAL, "job_id": 2**64}, "body.job_id: Input should be less than or equal to"),
        ({**SIGNAL, "restarts": -1}, "body.restarts: Input should be greater than or equal to 0"),
        ({**SIGNAL, "signal": 99}, "body.signal: Input should be less than or equal to 64"),
        ({**SIGNAL, "message": "a\x00b"}, "body.message: Value error, must not contain a NUL"),
    ]
    for body, expected in cases:
        r = post(client, "/v1/signal", json.dumps(body).encode())
        assert r.status_code == 422, body
        assert expected in _messages(r.json()), _messages(r.json())
    r = post(client, "/v1/launches", b'{"launches": {"job_id": 7}}')
    assert (r.status_code, _messages(r.json())) == (
        422,
        "body.launches: Input should be a valid list",
    )


def test_bodies_over_the_limit_get_413(client: TestClient) -> None:
    # a signal order is a few hundred bytes: 1 MiB is the cap; a launch may carry 16 MiB
    big = json.dumps({**SIGNAL, "message": "x" * (1 << 20)}).encode()
    r = post(client, "/v1/signal", big)
    assert r.status_code == 413
    assert r.json() == {"detail": "request body over 1048576 bytes (POST /v1/signal)"}
    huge = json.dumps({"credential": "x", "script": "#" * (17 << 20)}).encode()
    assert post(client, "/v1/launch", huge).status_code == 413
