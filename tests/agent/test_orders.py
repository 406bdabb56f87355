"""The agent obeys only its controller, only once: forged, expired, another node's,
unsigned, altered and replayed orders are refused and start or signal nothing,
and what was accepted is remembered across an agent restart (``agent.orders``).

"Nothing spawned" is read from the process table: a wrapper and its job carry
the spool's path on their command line, so no live process may name it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agent.app import create_app
from agent.daemon import AgentState
from agent.orders import SeenNonces
from controller.nodes.agent_client import AgentAddress, AgentError, HttpAgentClient, Signer
from slurmlite.credential import node_key, sign_request, to_node_key
from slurmlite.protocol import SignalSpec, to_dict
from tests.agent.jobs import a_spec, is_live
from tests.agent.signing import CLUSTER_KEY, post, request_headers, signed
from tests.agent.test_supervision import agent_state, until


def processes_in(spool: Path) -> list[int]:
    """Live processes whose command line names ``spool`` (every wrapper and job does)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if str(spool).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return [pid for pid in found if is_live(pid)]


def reap(spool: Path) -> None:
    for pid in processes_in(spool):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def agent(spool: Path) -> AsyncIterator[tuple[AgentState, httpx.AsyncClient]]:
    """Agent n1 on ``spool``, its API reached in-process."""
    state = agent_state(spool)
    transport = httpx.ASGITransport(app=create_app(state))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://n1") as client:
            yield state, client
    finally:
        await state.shutdown()


def test_bad_orders_are_refused_with_403_and_spawn_nothing(area: Path) -> None:
    spool, marker = area / "spool", area / "work" / "pwned"

    def order() -> dict:
        return to_dict(a_spec(area, 70, f"touch {marker}\n"))

    altered = signed(a_spec(area, 70, f"touch {marker}\n"))
    altered["work_dir"] = "/"  # changed after signing
    # arguments added after signing: a script that runs "$1" must not get one
    args_added = signed(a_spec(area, 70, '"$@"\n'))
    args_added["script_args"] = ["touch", str(marker)]
    cases = {
        "forged": (signed(a_spec(area, 70, "true\n"), cluster_key=b"x" * 64), "signature invalid"),
        "expired": (  # signed 200 s ago for 60 s: expired 140 s ago
            signed(a_spec(area, 70, f"touch {marker}\n"), now=time.time() - 200, ttl=60),
            "credential expired",
        ),
        "another node's": (signed(a_spec(area, 70, f"touch {marker}\n"), node="n2"), "invalid"),
        "unsigned": ({**order(), "credential": ""}, "malformed credential"),
        "altered": (altered, "request altered"),
        "arguments added": (args_added, "request altered"),
    }

    async def scenario() -> dict[str, tuple[int, str]]:
        async with agent(spool) as (state, client):
            got = {}
            for what, (body, _) in cases.items():
                r = await post(client, "/v1/launch", body)
                got[what] = (r.status_code, r.json()["detail"])
                r = await post(client, "/v1/launches", {"launches": [body]})
                assert r.json()["results"][0]["status"] == "refused", what
            assert not state.jobs and not state.launcher.job_ids()  # no run was even prepared
            return got

    try:
        got = asyncio.run(scenario())
        for what, (_, why) in cases.items():
            assert got[what][0] == 403 and why in got[what][1], (what, got[what])
        assert processes_in(spool) == [] and not marker.exists()
    finally:
        reap(spool)


def test_requests_the_controller_did_not_sign_for_this_node_are_refused_with_401(
    area: Path,
) -> None:
    spool = area / "spool"
    body = {**to_dict(a_spec(area, 71, "true\n")), "credential": ""}  # refused if ever read
    raw = json.dumps(body).encode()

    async def scenario() -> list[tuple[int, str]]:
        async with agent(spool) as (_, client):
            answers = []
            path = "/v1/launch"
            sent = [
                {"content-type": "application/json"},  # no signature at all
                request_headers(path, raw, node="n2"),  # the controller's, but for n2
                request_headers(path, raw, cluster_key=b"x" * 64),  # not the controller's
            ]
            old = sign_request(to_node_key(node_key(CLUSTER_KEY, "n1")), "n1", "POST", path, raw, 0)
            sent.append({**old, "content-type": "application/json"})  # 1970: skewed
            good = request_headers(path, raw)
            sent += [good, good]  # the same signed request twice: the second is a replay
            for headers in sent:
                r = await client.post(path, content=raw, headers=headers)
                answers.append((r.status_code, r.text))
            return answers

    a = asyncio.run(scenario())
    # only the well-signed request is read, and its order refused (403: it has no credential)
    assert [code for code, _ in a] == [401, 401, 401, 401, 403, 401]
    reasons = ["not signed", "is for node n2", "bad signature", "clock skew of 17", "malformed"]
    for (_, text), why in zip(a, [*reasons, "replayed request"], strict=True):
        assert why in text
    assert processes_in(spool) == []


def test_replays_are_refused_and_remembered_across_an_agent_restart(area: Path) -> None:
    spool, work = area / "spool", area / "work"
    ran, usr, stop = work / "ran", work / "usr", work / "stop"
    script = (
        f"trap 'echo usr1 >> {usr}' USR1\ntrap 'echo usr2 >> {usr}' USR2\necho ran >> {ran}\n"
        f"while [ ! -e {stop} ]; do sleep 0.05; done\n"
    )
    launch = signed(a_spec(area, 90, script))

    def sig(number: int, **kw) -> dict:  # type: ignore[no-untyped-def]
        return signed(SignalSpec("", 90, 0, number, batch_only=True), **kw)

    usr1, usr2 = sig(signal.SIGUSR1), sig(signal.SIGUSR2)

    async def before_restart() -> None:
        async with agent(spool) as (state, c):
            assert (await post(c, "/v1/launch", launch)).json() == {"status": "started"}
            await until(ran.exists)
            assert processes_in(spool)  # the check below can see a job when there is one
            assert (await post(c, "/v1/launch", launch)).json() == {"status": "already running"}
            assert (await post(c, "/v1/signal", usr1)).json() == {"status": "ok"}
            await until(lambda: usr.exists() and usr.read_text() == "usr1\n")
            r = await post(c, "/v1/signal", usr1)
            assert (r.status_code, r.json()["detail"]) == (
                403,
                "credential refused: replayed credential",
            )
            forged = sig(signal.SIGUSR1, cluster_key=b"x" * 64)
            assert (await post(c, "/v1/signal", forged)).status_code == 403
            # a fresh signal as a barrier: had a refused USR1 got through, usr1 would show twice
            assert (await post(c, "/v1/signal", usr2)).json() == {"status": "ok"}
            await until(lambda: usr.read_text().endswith("usr2\n"))
            assert usr.read_text() == "usr1\nusr2\n"
            for job in state.jobs.values():  # the agent dies; its job runs on
                assert job.task is not None
                job.task.cancel()

    async def after_restart() -> None:
        async with agent(spool) as (state, c):
            assert state.adopt_spool() == (1, 0)
            # a duplicate of the accepted launch, its run still going: idempotent
            assert (await post(c, "/v1/launch", launch)).json() == {"status": "already running"}
            r = await post(c, "/v1/signal", usr2)  # used before the restart
            assert (r.status_code, r.json()["detail"]) == (
                403,
                "credential refused: replayed credential",
            )
            assert (await post(c, "/v1/signal", sig(signal.SIGUSR1))).json() == {"status": "ok"}
            await until(lambda: usr.read_text() == "usr1\nusr2\nusr1\n")  # only the fresh one
            stop.touch()
            await until(lambda: not state.jobs)
            # the run ended: the same launch would run the job a second time
            r = await post(c, "/v1/launch", launch)
            assert (r.status_code, r.json()["detail"]) == (
                403,
                "credential refused: replayed credential",
            )
            assert ran.read_text() == "ran\n" and processes_in(spool) == []
            # the requeued job's launch is a new credential (restarts 1, new nonce)
            again = signed(a_spec(area, 90, script, restarts=1))
            assert (await post(c, "/v1/launch", again)).json() == {"status": "started"}
            await until(lambda: ran.read_text() == "ran\nran\n" and not state.jobs)

    try:
        asyncio.run(before_restart())
        asyncio.run(after_restart())
    finally:
        stop.touch()
        reap(spool)


def test_the_controller_signs_orders_only_the_named_node_accepts(area: Path) -> None:
    spool, marker = area / "spool", area / "work" / "ran"
    signer = Signer(CLUSTER_KEY)

    async def scenario() -> None:
        async with agent(spool) as (_, app_client):
            client = HttpAgentClient(signer)
            await client.close()
            client._http = app_client  # the real client's requests, answered in-process
            n1, n2 = AgentAddress("n1", "127.0.0.1", 6818), AgentAddress("n2", "127.0.0.1", 6818)
            for_n2 = signer.launch(a_spec(area, 96, f"touch {marker}\n"), "n2", time.time())
            with pytest.raises(AgentError, match="401"):  # a request signed for n2 reaching n1
                await client.launch(n2, for_n2)
            with pytest.raises(AgentError, match="403.*signature invalid"):  # n2's order
                await client.launch(n1, for_n2)
            spec = signer.launch(a_spec(area, 95, f"touch {marker}\n"), "n1", time.time())
            await client.launch(n1, spec)
            await until(marker.exists)

    try:
        asyncio.run(scenario())
    finally:
        reap(spool)


def test_seen_nonces_outlive_the_agent_until_they_expire(tmp_path: Path) -> None:
    path = tmp_path / "nonces"
    seen = SeenNonces(path, now=1000.0)
    seen.add("a" * 24, expiry=1100.0)
    seen.add("b" * 24, expiry=1500.0)
    seen.close()
    with path.open("a") as f:
        f.write("16")  # a line torn by a crash
    again = SeenNonces(path, now=1200.0)  # restarted at 1200: a's credential has expired
    assert "b" * 24 in again and "a" * 24 not in again and len(again) == 1
    assert path.read_text() == f"1500.000 {'b' * 24}\n"  # rewritten without the dead
    for i in range(300):  # 300 orders that expire at 1300
        again.add(f"{i:024d}", expiry=1300.0)
    again.prune(now=1400.0)  # 300 stale lines > 256 tolerated: rewritten
    assert len(again) == 1 and len(path.read_text().splitlines()) == 1
    again.close()
