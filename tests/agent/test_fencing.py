"""Fencing (``agent.fencing``): an agent obeys the newest controller epoch it has seen.

Orders are signed as the controller signs them, with the lease's claims
(``epoch``, ``store``) set by hand: an older epoch of the same store is
refused with 409 and starts or signals nothing, a newer one is obeyed and
remembered in the spool across an agent restart.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agent.fencing import EpochFence
from controller.nodes.agent_client import AgentAddress, AgentError, HttpAgentClient, Signer
from slurmlite.protocol import SignalSpec
from tests.agent.jobs import a_spec
from tests.agent.signing import CLUSTER_KEY, post, signed
from tests.agent.test_orders import agent, processes_in, reap
from tests.agent.test_supervision import until

STORE = "0123456789abcdef0123456789abcdef"  # a store id, as the lease row makes it


def test_an_order_from_an_older_epoch_is_refused_and_a_newer_one_obeyed(area: Path) -> None:
    spool, work = area / "spool", area / "work"

    def launch(job: int, epoch: int | None, store: str = STORE) -> dict:
        return signed(a_spec(area, job, f"touch {work}/ran-{job}\n"), epoch=epoch, store=store)

    async def scenario() -> None:
        async with agent(spool) as (state, client):
            r = await post(client, "/v1/launch", launch(1, epoch=4))
            assert r.json() == {"status": "started"}
            await until(lambda: (work / "ran-1").exists() and not state.jobs)
            # controller epoch 3 after epoch 4 was obeyed: fenced off, on every route
            r = await post(client, "/v1/launch", launch(2, epoch=3))
            assert r.status_code == 409
            assert r.json()["detail"] == (
                "credential refused: order from controller epoch 3, agent has seen epoch 4"
            )
            r = await post(client, "/v1/launches", {"launches": [launch(3, epoch=3)]})
            answer = r.json()["results"][0]
            assert (answer["status"], answer["code"]) == ("refused", 409)
            assert "agent has seen epoch 4" in answer["error"]
            stop = signed(
                SignalSpec(credential="", job_id=1, restarts=0, signal=15), epoch=3, store=STORE
            )
            assert (await post(client, "/v1/signal", stop)).status_code == 409
            # no epoch at all (a controller older than fencing): refused too
            r = await post(client, "/v1/launch", launch(4, epoch=None))
            assert r.status_code == 403 and "no controller epoch" in r.json()["detail"]
            assert not state.jobs and state.launcher.job_ids() == [1]  # 2, 3, 4 not prepared
            # the same epoch and a newer one are obeyed; the newer one becomes the bar
            r = await post(client, "/v1/launch", launch(5, epoch=4))
            assert r.json() == {"status": "started"}
            r = await post(client, "/v1/launch", launch(6, epoch=5))
            assert r.json() == {"status": "started"}
            await until(lambda: (work / "ran-6").exists() and not state.jobs)
        assert (spool / "epoch").read_text() == f"{STORE} 5\n"

        async with agent(spool) as (state, client):  # restarted: the spool remembers epoch 5
            r = await post(client, "/v1/launch", launch(7, epoch=4))
            assert r.status_code == 409 and "agent has seen epoch 5" in r.json()["detail"]
            # a wiped store (a new store id) starts its own count at 1
            r = await post(client, "/v1/launch", launch(8, epoch=1, store="f" * 32))
            assert r.json() == {"status": "started"}
            await until(lambda: (work / "ran-8").exists() and not state.jobs)

    try:
        asyncio.run(scenario())
        ran = sorted(p.name for p in work.glob("ran-*"))
        assert ran == ["ran-1", "ran-5", "ran-6", "ran-8"]  # 2, 3, 4 and 7 never ran
        assert processes_in(spool) == []
    finally:
        reap(spool)


def test_the_controller_hears_it_was_fenced_off(area: Path) -> None:
    """The real client: a 409 is a ``fenced`` refusal, handed to ``on_fenced`` (the daemon stops)."""
    spool, marker = area / "spool", area / "work" / "ran"
    told: list[str] = []

    async def scenario() -> None:
        async with agent(spool) as (_, app_client):
            newer, older = Signer(CLUSTER_KEY, 2, STORE), Signer(CLUSTER_KEY, 1, STORE)
            n1 = AgentAddress("n1", "127.0.0.1", 6818)
            clients = []
            for signer in (newer, older):
                client = HttpAgentClient(signer, on_fenced=told.append)
                await client.close()
                client._http = app_client  # the real client's requests, answered in-process
                clients.append(client)
            await clients[0].launch(n1, newer.launch(a_spec(area, 11, "true\n"), "n1", time.time()))
            spec = older.launch(a_spec(area, 12, f"touch {marker}\n"), "n1", time.time())
            try:
                await clients[1].launch(n1, spec)
            except AgentError as e:
                assert e.fenced and e.refused and "409" in str(e)
            else:
                raise AssertionError("an order of epoch 1 after epoch 2 was obeyed")
            spec = older.launch(a_spec(area, 13, f"touch {marker}\n"), "n1", time.time())
            [error] = await clients[1].launch_many(n1, [spec])
            assert error is not None and error.fenced

    try:
        asyncio.run(scenario())
        assert len(told) == 2 and "controller epoch 1, agent has seen epoch 2" in told[0]
        assert not marker.exists()
    finally:
        reap(spool)


def test_the_fence_file_is_replaced_whole_and_read_back(tmp_path: Path) -> None:
    fence = EpochFence(tmp_path / "epoch")
    assert fence.epoch == -1  # nothing seen: epoch 0 (no lease) passes
    assert fence.check({"epoch": 0, "store": ""}) == ("", 0)
    fence.obeyed("", 0)
    assert (tmp_path / "epoch").read_text() == "- 0\n"
    assert EpochFence(tmp_path / "epoch").store == ""  # "-" is the empty id
    fence.obeyed(STORE, 3)
    fence.obeyed(STORE, 2)  # older: nothing written
    again = EpochFence(tmp_path / "epoch")
    assert (again.store, again.epoch) == (STORE, 3)
    assert not (tmp_path / "epoch.new").exists()
