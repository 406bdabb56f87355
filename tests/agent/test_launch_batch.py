"""``POST /v1/launches``: several orders in one request, each checked on its own credential."""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path

import httpx

from agent.app import create_app
from slurmlite.credential import canonical_body, controller_key, sign_credential
from slurmlite.protocol import LaunchSpec, to_dict
from tests.agent.jobs import a_spec, wait_for
from tests.agent.test_supervision import agent_state

KEY = b"k" * 64  # agent_state's cluster key


def signed(spec: LaunchSpec, key: bytes = KEY) -> dict:
    """The order as the controller signs it (controller.agents.Signer's claims)."""
    body = to_dict(spec)
    claims = {
        "op": "launch",
        "job": spec.job_id,
        "step": "batch",
        "restarts": spec.restarts,
        "uid": spec.uid,
        "gid": spec.gid,
        "nodes": ["n1"],
        "script_sha256": hashlib.sha256(spec.script.encode()).hexdigest(),
        "body": hashlib.sha256(canonical_body(body)).hexdigest(),
    }
    body["credential"] = sign_credential(controller_key(key), claims, now=time.time(), ttl=60)
    return body


def test_each_order_is_verified_and_only_good_ones_start(area: Path) -> None:
    marks = {j: area / "work" / f"ran{j}" for j in (80, 81, 82)}
    good = signed(a_spec(area, 80, f"touch {marks[80]}\n"))
    forged = signed(a_spec(area, 81, f"touch {marks[81]}\n"), key=b"x" * 64)
    altered = signed(a_spec(area, 82, "true\n"))
    altered["script"] = f"#!/bin/sh\ntouch {marks[82]}\n"  # swapped after signing

    async def scenario() -> None:
        state = agent_state(area / "spool")
        app = create_app(state)
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://n1") as c:
                r = await c.post("/v1/launches", json={"launches": [good, forged, altered]})
                assert r.status_code == 200
                got = [(a["job_id"], a["status"]) for a in r.json()["results"]]
                assert got == [(80, "started"), (81, "refused"), (82, "refused")]
                # the same order again (a retried request) spawns nothing
                r = await c.post("/v1/launches", json={"launches": [good]})
                assert r.json()["results"][0]["status"] == "already running"
            for job in list(state.jobs.values()):
                await job.proc.wait_async()
        finally:
            await state.shutdown()

    asyncio.run(scenario())
    wait_for(lambda: marks[80].exists())
    assert not marks[81].exists() and not marks[82].exists()
