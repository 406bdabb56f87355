"""Steps and their job on a node: the batch run's cgroup, a cancel of the job, leftovers,
and the step's completion next to the batch step's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from agent.daemon import AgentState
from slurmlite.config import parse_config
from slurmlite.protocol import JobCompletion, SignalSpec
from tests.agent.jobs import a_spec, is_live, wait_for
from tests.agent.signing import CLUSTER_KEY, post, signed
from tests.agent.steprig import DEADLINE, Stream, a_launch, fallback_stepenv, says, serving
from tests.agent.test_supervision import FakeController, agent_state

fallback_stepenv()


def serve(state: AgentState, scenario: Any) -> None:
    async def main() -> None:
        try:
            async with serving(state) as client:
                await scenario(client)
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(main(), DEADLINE))


def test_a_terminate_of_the_job_ends_its_batch_script_and_its_steps(area: Path) -> None:
    state = agent_state(area / "spool")
    step = signed(a_launch(area, ["sh", "-c", "cat /proc/self/cgroup; echo ready; sleep 20"]))
    seen: dict[str, Any] = {}

    async def scenario(client: httpx.AsyncClient) -> None:
        assert await state.launch(a_spec(area, 7, "sleep 20\n")) == "started"
        batch = state.jobs[(7, 0)].proc
        async with client.stream("POST", "/v1/steps", json=step) as r:
            seen["s"] = s = Stream(r)
            await s.until(says("ready"))
            order = signed(
                SignalSpec(credential="", job_id=7, restarts=0, signal=None, kill_wait=2)
            )
            assert (await post(client, "/v1/signal", order)).json() == {"status": "ok"}
            await s.rest()
        seen["batch"] = await asyncio.wait_for(batch.wait_async(), 10)
        seen["cgroup"] = batch.cgroup

    serve(state, scenario)
    s: Stream = seen["s"]
    assert s.exits() == {0: 15}  # SIGTERM, as the batch script's
    assert s.text(0, "err").startswith("slurmstepd: error: *** STEP 7.0 ON n1 CANCELLED AT ")
    assert seen["batch"] == 15
    if seen["cgroup"] is not None:  # the step ran in the batch run's cgroup
        assert f"{seen['cgroup'].path.name}\n" in s.text(0)


def test_what_a_task_leaves_running_ends_with_the_step(area: Path) -> None:
    # without cgroups (process groups, sessions): a background child outlives its task
    cfg = "SlurmctldHost=localhost(127.0.0.1)\nProctrackType=proctrack/pgid\n"
    state = AgentState(
        cfg=parse_config(cfg),
        name="n1",
        cluster_key=CLUSTER_KEY,
        spool=area / "spool",
        gpus=[],
        gpu_source="none",
        node_conf=None,
    )
    assert state.launcher.cgroups is None
    body = signed(a_launch(area, ["sh", "-c", "sleep 20 >/dev/null 2>&1 & echo $!"]))
    seen: dict[str, Any] = {}

    async def scenario(client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            await s.rest()

    serve(state, scenario)
    s: Stream = seen["s"]
    assert s.exits() == {0: 0}
    leftover = int(s.text(0))
    # killed at the step's end, as Slurm ends a step (SIGKILL takes a moment to land)
    wait_for(lambda: not is_live(leftover), timeout=5)


def test_step_and_batch_completions_of_one_run_are_acknowledged_apart(area: Path) -> None:
    state = agent_state(area / "spool")
    fake = FakeController()
    state.post = fake.post  # type: ignore[method-assign]
    forgotten: list[tuple[int, int]] = []
    state.launcher.forget = lambda j, r: forgotten.append((j, r)) or True  # type: ignore[method-assign]
    for step in ("batch", "0", "1"):
        state._queue(JobCompletion(node="n1", job_id=7, restarts=0, step_id=step, exit_code=0))
    folder = state.spool / "completions"
    names = sorted(p.name for p in folder.glob("*.json"))
    assert names == ["7.0.json", "7.0.s0.json", "7.0.s1.json"]

    async def report() -> bool:
        return await state._report(sorted(folder.glob("*.json")))

    try:
        assert asyncio.run(report())
    finally:
        asyncio.run(state.shutdown())
    # one request with the three; each answered in its place, each file dropped
    assert sorted(m["step_id"] for m in fake.received) == ["0", "1", "batch"]
    assert list(folder.glob("*.json")) == []
    assert forgotten == [(7, 0)]  # the batch run's directory only: steps have none
    assert state.held_jobs() == []


def test_a_stopping_agent_kills_its_steps_and_spools_their_completion(area: Path) -> None:
    state = agent_state(area / "spool")
    body = signed(a_launch(area, ["sh", "-c", "echo ready; exec sleep 20"]))
    seen: dict[str, Any] = {}

    async def scenario(client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            await s.until(says("ready"))
            await state.steps.shutdown()
            await s.rest()  # the answer ends, without the output there was no room for

    serve(state, scenario)
    done = (state.spool / "completions" / "7.0.s0.json").read_text()
    assert '"exit_code": 9' in done  # SIGKILL: the agent does not wait KillWait when stopping
