"""Jobs in cgroups: the memory limit ends a job OUT_OF_MEMORY, no process escapes a kill,
cgroups are removed and found again; and the configuration switches, anywhere."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from agent.cgroups import SIG_OOM, find_mount
from agent.isolation import Isolation, open_tree
from agent.launcher import Launcher
from slurmlite.config import parse_config
from slurmlite.states import exit_code_str
from tests.agent.jobs import a_spec, is_live, out_of, wait_for
from tests.agent.test_supervision import FakeController, agent_state, until

MOUNT = find_mount()
VERSIONS = [v for v in (1, 2) if find_mount(version=v) is not None]  # writable hierarchies
needs_cgroups = pytest.mark.skipif(
    MOUNT is None, reason="needs a root agent and a writable cgroup hierarchy"
)
needs_memory = pytest.mark.skipif(
    MOUNT is None or not MOUNT.memory, reason="needs a writable cgroup memory controller"
)
# a job that double-forks a sleeper into a session of its own, records its pid, runs on
ESCAPE = "setsid sh -c 'sleep 1000 & echo $! > {pidfile}'\nsleep 1000\n"


def escapee(pidfile: Path) -> int:
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit())
    return int(pidfile.read_text())


@needs_memory
def test_a_job_over_its_memory_ends_out_of_memory(launcher: Launcher, area: Path) -> None:
    spec = a_spec(area, 1, 'python3 -c "b = bytearray(200 << 20)"\necho "rc=$?"\n')
    spec.mem_mib = 50  # type: ignore[attr-defined]  # 200 MiB wanted, 50 MiB allowed
    job = launcher.start(spec)
    assert job.cgroup is not None and job.cgroup.path.is_dir()
    assert job.wait() == SIG_OOM  # 253: the controller's OUT_OF_MEMORY
    assert exit_code_str(SIG_OOM) == "0:125"  # what sacct shows for it, as in Slurm
    text = out_of(area, 1)
    assert "rc=137" in text  # python was SIGKILLed (128 + 9); the script went on
    assert "slurmstepd-n1: error: Detected 1 oom-kill event(s) in StepId=1.batch." in text
    assert not job.cgroup.path.exists()  # removed once the run ended


@needs_memory
def test_the_agent_reports_the_oom_status_to_the_controller(area: Path) -> None:
    async def scenario() -> dict[str, object]:
        state = agent_state(area / "spool")
        controller = FakeController()
        state.post = controller.post  # type: ignore[method-assign]
        reporter = asyncio.create_task(state.report_forever())
        try:
            spec = a_spec(area, 9, 'python3 -c "b = bytearray(200 << 20)"\n')
            spec.mem_mib = 50  # type: ignore[attr-defined]
            assert await state.launch(spec) == "started"
            await until(lambda: len(controller.received) >= 1, timeout=30)
        finally:
            reporter.cancel()
            await state.shutdown()
        return controller.received[0]

    completion = asyncio.run(asyncio.wait_for(scenario(), timeout=60))
    assert (completion["job_id"], completion["exit_code"]) == (9, SIG_OOM)


@needs_memory
def test_a_job_within_its_memory_completes(launcher: Launcher, area: Path) -> None:
    spec = a_spec(area, 2, 'python3 -c "b = bytearray(10 << 20)"\n')
    spec.mem_mib = 50  # type: ignore[attr-defined]  # 10 MiB + python's own ~10 MiB < 50
    assert launcher.start(spec).wait() == 0
    assert "oom" not in out_of(area, 2)


@needs_cgroups
@pytest.mark.parametrize("version", VERSIONS or [0])
def test_terminate_kills_a_double_forked_setsid_escapee(area: Path, version: int) -> None:
    launcher = Launcher(area / "spool", Isolation(version=version))
    assert launcher.cgroups is not None
    pidfile = area / "work" / "escaped.pid"
    job = launcher.start(a_spec(area, 3, ESCAPE.format(pidfile=pidfile)))
    pid = escapee(pidfile)
    assert os.getsid(pid) != job.pid  # it left the job's session (and process group)
    assert job.terminate(kill_wait=5) is True
    wait_for(lambda: not is_live(pid))
    assert job.wait() == signal.SIGTERM  # the batch shell died of the cancel's SIGTERM


@needs_cgroups
def test_a_signal_reaches_every_process_of_the_job(launcher: Launcher, area: Path) -> None:
    # the batch shell ignores TERM: only the cgroup, not the end of the job, can reach the
    # escapee here
    pidfile, ready = area / "work" / "escaped.pid", area / "work" / "trapped"
    trapped = f"trap '' TERM\necho ok > {ready}\nsleep 1000\n"
    script = ESCAPE.format(pidfile=pidfile).replace("sleep 1000\n", trapped)
    job = launcher.start(a_spec(area, 8, script))  # (trap after the fork: ignoring is inherited)
    pid = escapee(pidfile)
    wait_for(ready.exists)  # the shell ignores TERM from here on (else a loaded machine races)
    assert job.signal(signal.SIGTERM) is True
    wait_for(lambda: not is_live(pid))
    assert not job.poll()  # the job itself runs on
    assert job.terminate(kill_wait=0.2) is True
    assert job.wait() == signal.SIGKILL


@needs_cgroups
def test_without_cgroups_the_escapee_survives(area: Path) -> None:
    # the contrast that shows what cgroups add: a process group does not hold it
    launcher = Launcher(area / "spool", Isolation(track=False))
    assert launcher.cgroups is None
    pidfile = area / "work" / "escaped.pid"
    job = launcher.start(a_spec(area, 4, ESCAPE.format(pidfile=pidfile)))
    pid = escapee(pidfile)
    try:
        assert job.terminate(kill_wait=5) is True  # the group is gone...
        assert is_live(pid)  # ...the escapee is not
    finally:
        os.kill(pid, signal.SIGKILL)
    assert job.wait() == signal.SIGTERM


@needs_cgroups
def test_what_a_script_leaves_running_ends_with_it(launcher: Launcher, area: Path) -> None:
    pidfile = area / "work" / "left.pid"
    job = launcher.start(a_spec(area, 5, f"setsid sleep 1000 &\necho $! > {pidfile}\n"))
    assert job.wait() == 0
    pid = escapee(pidfile)
    wait_for(lambda: not is_live(pid))
    assert job.cgroup is not None and not job.cgroup.path.exists()


@needs_cgroups
def test_the_wrapper_lives_outside_the_jobs_cgroup(launcher: Launcher, area: Path) -> None:
    ready = area / "work" / "ready"
    job = launcher.start(a_spec(area, 6, f"touch {ready}\nsleep 1000\n"))
    wait_for(ready.exists)
    assert job.cgroup is not None and launcher.cgroups is not None
    assert job.pid in job.cgroup.pids() and job.wrapper_pid not in job.cgroup.pids()
    job.cgroup.kill()  # everything of the job at once: the wrapper still records the end
    assert job.wait() == signal.SIGKILL


@needs_cgroups
def test_a_restarted_agent_adopts_the_cgroup_and_sweeps_unknown_ones(area: Path) -> None:
    first = Launcher(area / "spool")
    assert first.cgroups is not None
    pidfile = area / "work" / "escaped.pid"
    job = first.start(a_spec(area, 7, ESCAPE.format(pidfile=pidfile)))
    pid = escapee(pidfile)
    # a cgroup of a run the spool does not know (its directory is gone): swept at start
    stray = first.cgroups.create(99, 0, None)
    sleeper = os.posix_spawn("/bin/sleep", ["sleep", "1000"], {})
    stray.add(sleeper)
    again = Launcher(area / "spool")  # a new agent process on the same spool
    assert not stray.path.exists()
    assert os.waitpid(sleeper, 0)[1] == signal.SIGKILL
    adopted = again.adopt(7)
    assert adopted is not None and adopted.cgroup is not None
    assert adopted.cgroup.path == job.cgroup.path  # type: ignore[union-attr]
    assert adopted.terminate(kill_wait=5) is True
    wait_for(lambda: not is_live(pid))
    assert adopted.wait() == signal.SIGTERM


def test_configuration_switches() -> None:
    def iso(text: str) -> Isolation:
        return Isolation.from_config(parse_config(text))

    assert iso("") == Isolation(track=True, limit_memory=True, no_swap=True)
    assert iso("TaskPlugin=task/affinity,task/cgroup\n").limit_memory is True
    assert iso("TaskPlugin=task/none\n") == Isolation(True, False, True)
    assert iso("ProctrackType=proctrack/pgid\n") == Isolation(False, False, True)


def test_cgroup_conf_beside_slurm_conf(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("TaskPlugin=task/cgroup\n")
    (tmp_path / "cgroup.conf").write_text(
        "CgroupPlugin=cgroup/v1  # forced\nConstrainRAMSpace=no\nConstrainSwapSpace=no\n"
    )
    cfg = parse_config(conf.read_text(), path=str(conf))
    assert Isolation.from_config(cfg) == Isolation(True, False, False, version=1)


def test_the_mount_chosen_prefers_the_memory_controller_then_v2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    v2_mem, v2_bare, v1 = tmp_path / "v2m", tmp_path / "v2", tmp_path / "v1"
    for path, controllers in ((v2_mem, "cpu memory pids"), (v2_bare, "hugetlb"), (v1, "")):
        path.mkdir()
        (path / "cgroup.controllers").write_text(controllers + "\n")
    lines = {
        "v2m": f"cgroup2 {v2_mem} cgroup2 rw 0 0",
        "v2": f"cgroup2 {v2_bare} cgroup2 rw 0 0",
        "v1": f"cgroup {v1} cgroup rw,relatime,memory 0 0",
        "v1pids": f"cgroup {tmp_path} cgroup rw,pids 0 0",
    }

    def chosen(*names: str, version: int | None = None) -> tuple[int, Path, bool] | None:
        m = find_mount("\n".join(lines[n] for n in names), version)
        return (m.version, m.path, m.memory) if m else None

    assert chosen("v1", "v2m") == (2, v2_mem, True)  # v2 with memory first
    assert chosen("v2", "v1") == (1, v1, True)  # this machine's case: v1 has the memory
    assert chosen("v2", "v1pids") == (2, v2_bare, False)  # tracking only
    assert chosen("v1pids") is None  # a v1 tree without memory is not used
    assert chosen("v2", "v1", version=2) == (2, v2_bare, False)  # CgroupPlugin=cgroup/v2
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert chosen("v2m") is None  # not root: no cgroups


def test_advisory_without_a_hierarchy_or_root(area: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert open_tree(Isolation(track=False), area / "spool") is None
    assert open_tree(Isolation(), area / "spool", mounts="") is None  # nothing mounted
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    launcher = Launcher(area / "spool")  # a non-root agent still works, by process group
    monkeypatch.undo()
    assert launcher.cgroups is None
