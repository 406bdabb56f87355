"""Which GPU processes are a job's and which are outside use (agent.gpu_outside).

Real processes stand in for jobs and strangers: a "job" is a shell the test
starts in a new session (as the agent's wrappers do), whose root pid is
handed to the check as what the agent started; a "stranger" is a ``sleep``
the test starts beside it.  The fake-GPU state file lists whichever pids a
test puts on a GPU, as NVML would.
"""

from __future__ import annotations

import getpass
import importlib.util
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from agent.gpu_outside import (
    OutsideWatch,
    gpu_processes,
    in_job_cgroup,
    is_jobs,
    job_marker,
    outside_use,
)
from agent.gres import GpuDevice
from agent.gres import nvml as nvml_mod
from slurmlite import fakegpu
from slurmlite.gpu_outside import GpuOutsideUse

FAKE_NVML = Path(__file__).parent / "fake_nvml" / "pynvml.py"


def _wait_for(check, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []

    def start(args: list[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(args, **kw)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.poll() is None:
            try:
                os.killpg(p.pid, 9) if os.getpgid(p.pid) == p.pid else p.kill()
            except ProcessLookupError:
                pass
            p.wait()


def _children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(rest[1]) == pid:
                out.append(int(name))
    return out


def _session_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[3])


def test_a_descendant_of_a_job_is_the_jobs_and_a_stranger_is_outside(procs):
    job = procs(["sh", "-c", "sleep 30; :"], start_new_session=True)  # ';' keeps sh the parent
    stranger = procs(["sleep", "30"])
    grandchild = _wait_for(lambda: _children(job.pid))[0]
    assert is_jobs(grandchild, {job.pid})
    assert not is_jobs(stranger.pid, {job.pid})


def test_a_jobs_orphan_still_counts_through_its_session(procs):
    # the subshell backgrounds a sleep and exits: the sleep's parent is no longer the job,
    # but it stays in the job's session (the job shell leads it, as a batch shell does)
    job = procs(["sh", "-c", "(sleep 30 &); sleep 30"], start_new_session=True)

    def orphans():
        return [
            int(n) for n in os.listdir("/proc")
            if n.isdigit() and int(n) not in (job.pid, *_children(job.pid))
            and _alive_in_session(int(n), job.pid)
        ]  # fmt: skip

    orphan = _wait_for(orphans)[0]
    assert _session_of(orphan) == job.pid
    assert is_jobs(orphan, {job.pid})


def _alive_in_session(pid: int, sid: int) -> bool:
    try:
        return _session_of(pid) == sid
    except OSError:
        return False


def test_a_process_in_one_of_the_agents_job_cgroups_is_the_jobs(tmp_path):
    marker = "/slurmlite/n1_1f2e3d4c/job_"
    (tmp_path / "41").mkdir()
    (tmp_path / "41" / "cgroup").write_text("0::/slurmlite/n1_1f2e3d4c/job_7_0\n")
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "cgroup").write_text("0::/user.slice/user-1000.slice/session-3.scope\n")
    (tmp_path / "43").mkdir()  # v1: one line per hierarchy
    (tmp_path / "43" / "cgroup").write_text(
        "12:pids:/user.slice\n9:memory:/slurmlite/n1_1f2e3d4c/job_8_1\n"
    )
    (tmp_path / "44").mkdir()  # another agent's job (another scope) is not ours
    (tmp_path / "44" / "cgroup").write_text("0::/slurmlite/n2_99999999/job_7_0\n")
    found = {pid: in_job_cgroup(pid, marker, proc=str(tmp_path)) for pid in (41, 42, 43, 44, 45)}
    assert found == {41: True, 42: False, 43: True, 44: False, 45: False}
    assert not in_job_cgroup(41, None, proc=str(tmp_path))  # no cgroups: rule not used


def test_job_marker_names_the_agents_scope():
    class Tree:
        base = Path("/sys/fs/cgroup/slurmlite")
        scope = base / "n1_1f2e3d4c"

    assert job_marker(Tree()) == "/slurmlite/n1_1f2e3d4c/job_"
    assert job_marker(None) is None


def test_outside_use_names_gpu_pid_user_and_command(procs, tmp_path, monkeypatch):
    job = procs(["sh", "-c", "sleep 30; :"], start_new_session=True)
    job_sleep = _wait_for(lambda: _children(job.pid))[0]
    stranger = procs(["sleep", "30"])
    state = tmp_path / "gpus.json"
    state.write_text(
        json.dumps(
            {
                "0": {"processes": [{"pid": job_sleep}]},
                "1": {"processes": [{"pid": stranger.pid, "mem_used_mib": 512}]},
                "2": {"processes": [{"pid": 2**22 + 7}]},  # ended since the driver listed it
            }
        )
    )
    monkeypatch.setenv(fakegpu.ENV, str(state))
    devices = [GpuDevice(i, "gpu", fake=True) for i in range(3)]
    listed = gpu_processes(devices, "static")
    assert listed == {0: [job_sleep], 1: [stranger.pid], 2: [2**22 + 7]}
    found = outside_use(listed, {job.pid})
    user = getpass.getuser()
    assert found == {1: f"gpu 1 in use outside slurmlite: pid {stranger.pid} ({user}: sleep)"}


def test_nvml_processes_map_to_the_nodes_gpu_numbers(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_NVML)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(nvml_mod, "_load", lambda: module)
    monkeypatch.setenv("FAKE_NVML_GPUS", "4")
    state = tmp_path / "gpus.json"
    state.write_text(json.dumps({"3": {"processes": [{"pid": 4242}]}}))
    monkeypatch.setenv(fakegpu.ENV, str(state))
    assert nvml_mod.compute_processes() == {0: [], 1: [], 2: [], 3: [4242]}
    # a node owning the machine's GPUs 2-3 (slurmd --gpu-devices 2-3) numbers them 0-1
    devices = [GpuDevice(2, "nvidia_h200"), GpuDevice(3, "nvidia_h200")]
    assert gpu_processes(devices, "nvml") == {0: [], 1: [4242]}
    monkeypatch.setenv("FAKE_NVML_GPUS", "-1")  # no driver: nothing listed, nothing blamed
    assert nvml_mod.compute_processes() is None
    assert gpu_processes(devices, "nvml") == {0: [], 1: []}


def test_the_watch_keeps_the_last_look_and_clears_it(procs, tmp_path, monkeypatch):
    stranger = procs(["sleep", "30"])
    state = tmp_path / "gpus.json"
    state.write_text(json.dumps({"0": {"processes": [{"pid": stranger.pid}]}}))
    monkeypatch.setenv(fakegpu.ENV, str(state))
    watch = OutsideWatch(
        GpuOutsideUse(), "n1", [GpuDevice(0, "gpu", fake=True)], "static", lambda: set()
    )
    assert watch.current is None  # no look yet: the heartbeat says nothing
    assert list(watch.look(set())) == [0]
    assert watch.current and "sleep" in watch.current[0]
    state.write_text("{}")
    assert watch.look(set()) == {} and watch.current == {}


def test_ignore_means_no_look_at_all():
    watch = OutsideWatch(
        GpuOutsideUse(enabled=False), "n1", [GpuDevice(0, "gpu", fake=True)], "static", set
    )
    import asyncio

    asyncio.run(asyncio.wait_for(watch.watch_forever(), 1.0))  # returns at once
    assert watch.current is None
