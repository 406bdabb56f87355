"""``POST /v1/launches``: several orders in one request, each checked on its own credential."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from agent.app import create_app
from tests.agent.jobs import a_spec, wait_for
from tests.agent.signing import post, signed
from tests.agent.test_supervision import agent_state


def test_each_order_is_verified_and_only_good_ones_start(area: Path) -> None:
    marks = {j: area / "work" / f"ran{j}" for j in (80, 81, 82)}
    stop = area / "work" / "stop"
    # job 80 keeps running until told, so the repeated order below finds it running
    good = signed(
        a_spec(area, 80, f"touch {marks[80]}\nwhile [ ! -e {stop} ]; do sleep 0.05; done\n")
    )
    forged = signed(a_spec(area, 81, f"touch {marks[81]}\n"), cluster_key=b"x" * 64)
    altered = signed(a_spec(area, 82, "true\n"))
    altered["script"] = f"#!/bin/sh\ntouch {marks[82]}\n"  # swapped after signing

    async def scenario() -> None:
        state = agent_state(area / "spool")
        app = create_app(state)
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://n1") as c:
                r = await post(c, "/v1/launches", {"launches": [good, forged, altered]})
                assert r.status_code == 200
                got = [(a["job_id"], a["status"]) for a in r.json()["results"]]
                assert got == [(80, "started"), (81, "refused"), (82, "refused")]
                # the same order again (a retried request) spawns nothing
                r = await post(c, "/v1/launches", {"launches": [good]})
                assert r.json()["results"][0]["status"] == "already running"
        finally:
            stop.touch()
            for job in list(state.jobs.values()):
                await job.proc.wait_async()
            await state.shutdown()

    asyncio.run(scenario())
    wait_for(lambda: marks[80].exists())
    assert not marks[81].exists() and not marks[82].exists()
