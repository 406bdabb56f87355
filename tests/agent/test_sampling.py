"""Usage sampling on the agent: cgroup and /proc readings, GPUs through NVML or the
fake state file, the summaries they add up to, and a real job's last sample."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from agent.gres import GpuDevice
from agent.gres.sampling import FakeGpus, GpuReading, NvmlGpus
from agent.launcher import Launcher
from agent.sampling import UsageSampler, fold
from agent.usage_probe import JobReading, read_cgroup, read_job, read_procs
from slurmlite import fakegpu
from slurmlite.clock import FakeClock
from slurmlite.usage import UsageSummary
from tests.agent.jobs import a_spec, wait_for

FAKE_NVML = Path(__file__).parent / "fake_nvml" / "pynvml.py"
MIB = 1 << 20


def write(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)
    return path


# --------------------------------------------------------------- cgroups, /proc


def test_a_v2_cgroup_gives_cpu_time_memory_now_and_the_kernels_peak(tmp_path):
    cg = write(tmp_path / "job_7_0", {
        "cpu.stat": "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
        "memory.current": "52428800\n",  # 50 MiB now
        "memory.peak": "104857600\n",  # 100 MiB at most
        "cgroup.procs": "",
    })  # fmt: skip
    assert read_cgroup(cg, 2) == JobReading(2.5, 50 * MIB, 100 * MIB)
    # both figures there: /proc is not asked
    assert read_job(0, cg, 2) == JobReading(2.5, 50 * MIB, 100 * MIB)


def test_a_v1_memory_cgroup_gives_memory_and_proc_completes_the_cpu_time(tmp_path):
    cg = write(tmp_path / "job_8_0", {
        "memory.usage_in_bytes": "1048576\n",
        "memory.max_usage_in_bytes": "2097152\n",
        "cgroup.procs": f"{os.getpid()}\n",  # this test's process plays the job
    })  # fmt: skip
    r = read_job(os.getpid(), cg, 1)
    assert (r.mem_bytes, r.mem_peak_bytes) == (MIB, 2 * MIB)
    assert r.cpu_seconds is not None and r.cpu_seconds > 0  # this process has run a while


def test_a_removed_cgroup_reads_nothing_and_a_gone_process_too(tmp_path):
    assert read_cgroup(tmp_path / "gone", 2) == JobReading(None, None, None)
    assert read_procs(2**22 + 12345, []) == JobReading(None, None)  # no such pid


# -------------------------------------------------------------------- GPUs


@pytest.fixture
def gpu_state(tmp_path, monkeypatch):
    path = tmp_path / "gpus.json"
    monkeypatch.setenv(fakegpu.ENV, str(path))
    return path


def test_real_gpus_are_read_through_nvml_power_not_supported_reads_none(gpu_state, monkeypatch):
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_NVML)
    nv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nv)
    monkeypatch.setenv("FAKE_NVML_GPUS", "2")
    gpu_state.write_text(json.dumps({"0": {"util": 85, "mem_used_mib": 2048, "power_mw": 250000}}))
    got = NvmlGpus(lib=nv).sample([0, 1])
    assert got == {
        0: GpuReading(85.0, 2048.0, 143771.0, 250.0),  # 250000 mW
        1: GpuReading(0.0, 0.0, 143771.0, None),  # the fake's NotSupported for power
    }


def test_nvml_without_a_driver_reads_nothing(monkeypatch):
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_NVML)
    nv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nv)
    monkeypatch.setenv("FAKE_NVML_GPUS", "-1")  # nvmlInit fails
    assert NvmlGpus(lib=nv).sample([0]) == {}


def test_static_gpus_read_the_state_file_once_per_round(gpu_state):
    gpu_state.write_text(json.dumps({"1": {"util": 40, "mem_used_mib": 512}}))
    devices = [GpuDevice(0, "gpu", fake=True), GpuDevice(1, "gpu", memory_mib=1024, fake=True)]
    assert FakeGpus(devices).sample([0, 1]) == {
        0: GpuReading(0.0, 0.0, 0.0, None),  # absent from the file: idle; memory unknown
        1: GpuReading(40.0, 512.0, 1024.0, None),
    }


# -------------------------------------------------------------- accumulation


def test_three_rounds_add_up_to_means_and_peaks():
    s = UsageSummary(job_id=7, restarts=0)
    for t, util, mem in ((100.0, 90.0, 2.0), (130.0, 80.0, 6.0), (160.0, 100.0, 4.0)):
        gpus = {0: GpuReading(util, 1000.0, 80000.0, 300.0), 1: GpuReading(0, 0, 80000.0)}
        fold(s, t, JobReading(cpu_seconds=t - 100, mem_bytes=int(mem * MIB)), gpus)
    assert (s.samples, s.first_sample, s.last_sample) == (3, 100.0, 160.0)
    assert s.cpu_seconds == 60.0  # cumulative: the last reading
    assert s.max_rss_bytes == 6 * MIB and s.rss_sum_bytes == 12 * MIB  # mean 4 MiB
    g0, g1 = s.gpus
    assert (g0.util_sum, g0.util_max, g0.util_avg) == (270.0, 100.0, 90.0)
    assert (g0.power_avg_w, g1.power_avg_w) == (300.0, None)
    assert (g1.util_max, g1.mem_total_mib) == (0.0, 80000.0)


def test_cpu_time_never_goes_back_and_the_kernels_peak_counts():
    s = UsageSummary(job_id=7, restarts=0)
    fold(s, 1.0, JobReading(5.0, 10, mem_peak_bytes=99), {})
    fold(s, 2.0, JobReading(3.0, 20), {})  # /proc lost an exited grandchild's time
    assert (s.cpu_seconds, s.max_rss_bytes) == (5.0, 99)


class Gpus:
    """A scripted GPU sampler: what each index reads, and what was asked."""

    def __init__(self, util: dict[int, float]) -> None:
        self.util, self.asked = util, []

    def sample(self, indices: list[int]) -> dict[int, GpuReading]:
        self.asked.append(list(indices))
        return {i: GpuReading(self.util.get(i, 0.0), 0.0, 0.0) for i in indices}


def fake_run(tmp_path: Path, name: str) -> SimpleNamespace:
    job_dir = tmp_path / name
    job_dir.mkdir()
    return SimpleNamespace(pid=0, cgroup=None, job_dir=job_dir, on_end=None)


def test_the_sampler_reads_each_gpu_once_per_round_and_keeps_one_summary_per_run(tmp_path):
    clock = FakeClock(1000.0)
    gpus = Gpus({0: 95.0})
    probe = lambda pid, cg, version, procs: JobReading(1.5, 10)  # noqa: E731
    sampler = UsageSampler(gpus, 30, clock, probe)
    a, b = fake_run(tmp_path, "job7"), fake_run(tmp_path, "job8")
    sampler.track(7, 0, a, [0, 1])
    sampler.track(8, 0, b, [1])
    assert sampler.summaries() == []  # none sampled yet: nothing to report
    for _ in range(2):
        clock.advance(30)
        assert sampler.sample() == 2
    assert gpus.asked == [[0, 1], [0, 1]]  # GPU 1 is held by both, read once
    s7, s8 = sampler.summaries()
    assert (s7.job_id, s7.samples, [g.util_avg for g in s7.gpus]) == (7, 2, [95.0, 0.0])
    assert (s8.job_id, [g.index for g in s8.gpus]) == (8, [1])
    a.on_end(a)  # the job's process ended: one more sample
    a.on_end(a)  # a second call changes nothing
    assert sampler.finish(7, 0).samples == 3
    assert [s.job_id for s in sampler.summaries()] == [8]


def test_an_agent_restarted_under_a_run_goes_on_counting_from_the_saved_summary(tmp_path):
    clock = FakeClock(1000.0)
    probe = lambda pid, cg, version, procs: JobReading(2.0, 10)  # noqa: E731
    first = UsageSampler(Gpus({}), 30, clock, probe)
    run = fake_run(tmp_path, "job7")
    first.track(7, 0, run, [3])
    first.sample()
    first.sample()
    again = UsageSampler(Gpus({}), 30, clock, probe)  # the new agent adopts the run
    again.track(7, 0, run, None)  # its GPUs: from the saved file
    again.sample()
    [s] = again.summaries()
    assert (s.samples, [g.index for g in s.gpus]) == (3, [3])  # newer than what was sent


def test_frequency_zero_samples_nothing(tmp_path):
    sampler = UsageSampler(Gpus({}), 0, FakeClock(0.0))
    sampler.track(7, 0, fake_run(tmp_path, "job7"), [0])
    assert (sampler.sample(), sampler.summaries(), sampler.finish(7, 0)) == (0, [], None)


def test_a_real_jobs_last_sample_sees_the_cpu_time_of_its_finished_commands(
    launcher: Launcher, area: Path
) -> None:
    """The script's busy loop runs in a child the shell reaps: the end sample reads the
    ended job's stat line (cutime) before its wrapper reaps it."""
    sampler = UsageSampler(Gpus({}), 30, FakeClock(0.0))
    busy = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"
    job = launcher.start(a_spec(area, 41, f"sh -c '{busy}'\n"))
    sampler.track(41, 0, job, [])
    wait_for(lambda: job.poll())
    s = sampler.finish(41, 0)
    assert s is not None and s.samples == 1
    assert s.cpu_seconds > 0.05, s
