"""Usage of job steps on a node: every node of a job reports what its processes used.

Real steps on a real agent (an allocation's step: no batch run on the node,
as for ``salloc``/``srun --pty`` or a multi-node batch job's other nodes),
then the counting rules of ``agent.step_usage`` on scripted steps: a step in
the batch run's cgroup is not counted twice, the CPU of reaped tasks is
kept, a step-only job keeps its summary between steps."""

from __future__ import annotations

import asyncio
import copy
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx

from agent.gres import GpuDevice
from agent.step_usage import kept_cpu, read_steps
from agent.usage_probe import JobReading, ProcTable
from slurmlite import fakegpu
from slurmlite.clock import FakeClock
from tests.agent.signing import signed
from tests.agent.steprig import DEADLINE, Stream, a_launch, fallback_stepenv, says, serving
from tests.agent.test_sampling import Gpus, fake_run
from tests.agent.test_supervision import agent_state

fallback_stepenv()

# a child of the task's shell spins (it is reaped by the shell: the task's cutime)
SPIN = "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'"
GONE = 2**22 + 4321  # a pid no process has


def completion_usage(spool: Path, step: int) -> dict[str, Any]:
    return json.loads((spool / "completions" / f"7.0.s{step}.json").read_text())["usage"]


def test_an_allocations_steps_are_sampled_on_the_node_and_their_completion_says_it(
    area: Path, monkeypatch: Any
) -> None:
    """Job 7 has no batch run on n1 (an allocation): its first step spins, a round samples
    it while it waits, its completion carries the job's summary with GPU 1's figures; the
    second step goes on counting from there (one summary per job and node)."""
    gpu_state = area / "gpus.json"
    gpu_state.write_text(json.dumps({"1": {"util": 70, "mem_used_mib": 512}}))
    monkeypatch.setenv(fakegpu.ENV, str(gpu_state))
    gpus = [GpuDevice(0, "gpu", memory_mib=1024, fake=True), GpuDevice(1, "gpu", fake=True)]
    state = agent_state(area / "spool", gpus=gpus, gpu_source="static")
    first = signed(a_launch(area, ["sh", "-c", f"{SPIN}; echo ready; sleep 1"], gpus=[1]))
    second = signed(a_launch(area, ["sh", "-c", "echo ready"], step_id=1, gpus=[1]))
    seen: dict[str, Any] = {}

    async def scenario(client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=first) as r:
            s = Stream(r)
            await s.until(says("ready"))
            assert state.sampler.sample() == 1  # the step's job: running here
            [mid] = state.sampler.summaries()
            seen["mid"] = copy.deepcopy(mid)  # the sampler goes on adding to its own
            await s.rest()
        assert state.sampler.summaries() == []  # nothing of job 7 runs here: not reported
        async with client.stream("POST", "/v1/steps", json=second) as r:
            await Stream(r).rest()

    async def main() -> None:
        try:
            async with serving(state) as client:
                await scenario(client)
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(main(), DEADLINE))
    mid = seen["mid"]
    assert mid.samples == 1 and mid.cpu_seconds > 0.05, mid  # the shell's reaped child
    end = completion_usage(state.spool, 0)
    assert end["samples"] == 2 and end["cpu_seconds"] >= mid.cpu_seconds, end
    [gpu] = end["gpus"]
    assert (gpu["index"], gpu["util_sum"], gpu["mem_max_mib"]) == (1, 140.0, 512.0)
    later = completion_usage(state.spool, 1)
    assert later["samples"] == 3 and later["cpu_seconds"] >= end["cpu_seconds"], later


def task(pid: int, cpu: float | None = None) -> SimpleNamespace:
    """A step task: ``cpu`` is what wait4 said once it was reaped (None: still running)."""
    return SimpleNamespace(pid=pid, status=None if cpu is None else 0, cpu_seconds=cpu)


def step(cgroup: Any, *tasks: SimpleNamespace, job: int = 7, gpus: list[int] = ()) -> Any:
    launch = SimpleNamespace(job_id=job, restarts=0, gpus=list(gpus))
    return SimpleNamespace(cgroup=cgroup, tasks=list(tasks), launch=launch)


def cgroup(path: Path, version: int) -> SimpleNamespace:
    return SimpleNamespace(path=path, version=version)


def test_a_step_in_the_batch_cgroup_is_counted_once_and_reaped_tasks_are_kept(tmp_path):
    v2, v1 = cgroup(tmp_path / "job_7_0", 2), cgroup(tmp_path / "job_7_0", 1)
    procs = ProcTable()
    # v2: the batch cgroup's cpu.stat counts the step, running or ended
    inside = step(v2, task(GONE, cpu=1.5))
    assert read_steps([inside], v2, procs) == JobReading(None, None)
    assert kept_cpu(inside, v2) == 0.0
    # v1: the batch reading counts live members only: the reaped task's 1.5 s are added
    inside = step(v1, task(GONE, cpu=1.5), task(GONE + 1))
    assert read_steps([inside], v1, procs).cpu_seconds == 1.5
    assert kept_cpu(inside, v1) == 1.5
    # no batch run here (an allocation's own cgroup, or none): the tasks' own figures
    own = step(None, task(GONE, cpu=2.0), task(GONE + 1, cpu=0.5))
    assert read_steps([own], None, procs) == JobReading(2.5, 0, None)
    assert kept_cpu(own, None) == 2.5


def test_an_allocations_cgroup_gives_the_steps_memory_once(tmp_path):
    path = tmp_path / "job_7_0"
    path.mkdir()
    (path / "memory.usage_in_bytes").write_text("1048576\n")  # v1: 1 MiB now
    (path / "memory.max_usage_in_bytes").write_text("3145728\n")  # 3 MiB peak
    own = cgroup(path, 1)
    two = [step(own, task(GONE, cpu=1.0)), step(own, task(GONE + 1, cpu=1.0))]
    assert read_steps(two, None, ProcTable()) == JobReading(2.0, 1 << 20, 3 << 20)


def test_a_job_with_a_batch_run_and_steps_is_one_summary_with_all_their_gpus(tmp_path):
    """Batch run on GPU 0, a step of it (in its v2 cgroup) on GPU 1: one summary, both
    GPUs, the batch reading alone (it holds the step); the step's end changes no CPU."""
    from agent.sampling import UsageSampler

    clock = FakeClock(1000.0)
    gpus = Gpus({1: 60.0})
    probe = lambda pid, cg, version, procs: JobReading(4.0, 10)  # noqa: E731
    sampler = UsageSampler(gpus, 30, clock, probe)
    run = fake_run(tmp_path, "job7")
    run.cgroup = cgroup(tmp_path / "job_7_0", 2)
    sampler.track(7, 0, run, [0])
    s1 = step(run.cgroup, task(GONE, cpu=3.0), gpus=[1])
    sampler.track_step(s1)
    clock.advance(30)
    assert sampler.sample() == 1 and gpus.asked == [[0, 1]]
    end = sampler.step_ended(s1)
    assert end is not None and (end.samples, end.cpu_seconds) == (2, 4.0)
    assert [(g.index, g.util_sum) for g in end.gpus] == [(0, 0.0), (1, 120.0)]
    assert [s.job_id for s in sampler.summaries()] == [7]  # the batch run goes on


def test_a_step_only_job_sleeps_between_steps_and_the_oldest_are_let_go(tmp_path, monkeypatch):
    from agent import sampling

    monkeypatch.setattr(sampling, "DORMANT", 2)
    sampler = sampling.UsageSampler(Gpus({}), 30, FakeClock(0.0))
    for job in (7, 8, 9):
        s = step(None, task(GONE, cpu=1.0), job=job)
        sampler.track_step(s)
        assert sampler.step_ended(s).cpu_seconds == 1.0
    assert sampler.sample() == 0 and sampler.summaries() == []  # nothing runs: no reports
    assert sorted(sampler.dormant) == [(8, 0), (9, 0)]  # job 7's summary was let go
    again = step(None, task(GONE, cpu=0.5), job=9)
    sampler.track_step(again)
    done = sampler.step_ended(again)
    assert (done.samples, done.cpu_seconds) == (2, 1.5)  # job 9 counts on from its first step


class BrokenGpus:
    def sample(self, indices: list[int]) -> dict:  # type: ignore[type-arg]
        raise OSError("the driver went away")


def test_a_failing_end_sample_costs_the_step_neither_its_completion_nor_its_release(
    area: Path, caplog: Any
) -> None:
    state = agent_state(area / "spool")
    state.sampler.gpus = BrokenGpus()  # type: ignore[assignment]
    body = signed(a_launch(area, ["true"], gpus=[0]))

    async def main() -> None:
        try:
            async with serving(state) as client:
                async with client.stream("POST", "/v1/steps", json=body) as r:
                    await Stream(r).rest()
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(main(), DEADLINE))
    done = json.loads((state.spool / "completions" / "7.0.s0.json").read_text())
    assert (done["exit_code"], done["usage"]) == (0, None)
    assert state.sampler.runs == {}  # the step was let go all the same
    assert "event=step_sample_failed step=7.0" in caplog.text


def run_steps(state: Any, *bodies: dict[str, Any]) -> None:
    """Post each step to the agent in turn and read its answer to the end; then stop it."""

    async def main() -> None:
        try:
            async with serving(state) as client:
                for body in bodies:
                    async with client.stream("POST", "/v1/steps", json=body) as r:
                        await Stream(r).rest()
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(main(), DEADLINE))


def test_a_restarted_agent_goes_on_with_a_step_only_jobs_saved_summary(area: Path) -> None:
    spool = area / "spool"
    run_steps(agent_state(spool), signed(a_launch(area, ["true"])))
    assert completion_usage(spool, 0)["samples"] == 1
    again = agent_state(spool)  # a new agent on the same spool: job 7 is known again
    assert list(again.sampler.dormant) == [(7, 0)]
    run_steps(again, signed(a_launch(area, ["true"], step_id=1)))
    assert completion_usage(spool, 1)["samples"] == 2  # newer than what n1 sent before


def test_a_starting_agent_takes_back_only_the_latest_saved_summaries(tmp_path, monkeypatch):
    from agent import sampling
    from agent.usage_spool import save, step_file
    from slurmlite.usage import UsageSummary

    folder = tmp_path / "usage"
    folder.mkdir()
    for job in (7, 8, 9):
        path = step_file(folder, job, 0)
        save(path, UsageSummary(job_id=job, restarts=0, samples=job), [0])
        os.utime(path, (1000.0 + job, 1000.0 + job))  # job 7's is the oldest
    (folder / "job_x_0.json").write_text("not ours")  # left alone
    step_file(folder, 10, 0).write_text("{broken")  # unreadable: removed
    monkeypatch.setattr(sampling, "DORMANT", 2)
    sampler = sampling.UsageSampler(Gpus({}), 30, FakeClock(0.0), spool=folder)
    assert {k: j.summary.samples for k, j in sampler.dormant.items()} == {(8, 0): 8, (9, 0): 9}
    assert sorted(p.name for p in folder.iterdir()) == [
        "job_8_0.json", "job_9_0.json", "job_x_0.json"
    ]  # fmt: skip
