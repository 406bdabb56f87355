"""``POST /v1/launches``: several orders in one request, each checked on its own credential."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from agent.app import create_app
from agent.gres import GpuDevice
from tests.agent.jobs import a_spec, out_of, wait_for
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


def test_the_batch_shell_sees_the_machines_devices_for_the_gpus_its_order_names(
    area: Path,
) -> None:
    # a node owning the machine's GPUs 2 and 3: the scheduler calls them 0 and 1
    devices = [GpuDevice(2, "g"), GpuDevice(3, "g")]
    show = 'echo "$CUDA_VISIBLE_DEVICES $GPU_DEVICE_ORDINAL $SLURM_JOB_GPUS $SLURM_GPUS_ON_NODE"\n'
    base = a_spec(area, 0, "").environment
    as_built = {"CUDA_VISIBLE_DEVICES": "1", "GPU_DEVICE_ORDINAL": "1", "SLURM_JOB_GPUS": "1"}
    given_one = a_spec(
        area, 83, show, gpus=[1], environment={**base, **as_built, "SLURM_GPUS_ON_NODE": "1"}
    )
    # no GPU for this job: the controller's CUDA_VISIBLE_DEVICES="" stays empty
    given_none = a_spec(area, 84, show, gpus=[], environment={**base, "CUDA_VISIBLE_DEVICES": ""})

    async def scenario() -> list[str]:
        state = agent_state(area / "spool", gpus=devices)
        try:
            answers = [await state.launch(given_one), await state.launch(given_none)]
            for job in list(state.jobs.values()):
                await job.proc.wait_async()
            return answers
        finally:
            await state.shutdown()

    assert asyncio.run(scenario()) == ["started", "started"]
    assert out_of(area, 83) == "3 3 3 1\n"  # GPU 1 of the node is the machine's device 3
    assert out_of(area, 84) == "   \n"


def test_a_node_numbered_as_its_machine_leaves_the_environment_as_the_controller_built_it(
    area: Path,
) -> None:
    # on a node without GPUs a user's own CUDA_VISIBLE_DEVICES is left alone
    spec = a_spec(area, 85, 'echo "$CUDA_VISIBLE_DEVICES"\n', gpus=[])
    spec.environment["CUDA_VISIBLE_DEVICES"] = "7"

    async def scenario() -> str:
        state = agent_state(area / "spool")
        try:
            answer = await state.launch(spec)
            for job in list(state.jobs.values()):
                await job.proc.wait_async()
            return answer
        finally:
            await state.shutdown()

    assert asyncio.run(scenario()) == "started"
    assert out_of(area, 85) == "7\n"
