"""Crash safety with real processes: the per-job wrapper, its status file, and
adopting jobs after the agent that started them was killed with SIGKILL.

"The agent" that dies is a real Python process (``_AGENT``) that starts jobs
through ``Launcher`` and is then killed; the test process plays the
restarted agent and finds the jobs again from the spool alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from agent.daemon import AgentState
from agent.launcher import BatchRun, Launcher, read_status
from agent.procfs import stat_of
from slurmlite.config import parse_config
from slurmlite.protocol import JobCompletion
from slurmlite.states import exit_code_str
from tests.agent.jobs import IS_ROOT, a_spec, is_live, out_of, wait_for

ROOT = Path(__file__).resolve().parents[2]

# Starts each job given as JSON, prints "job_id pid wrapper_pid" per job, then sleeps.
_AGENT = r"""
import json, sys, time
from agent.launcher import Launcher
from slurmlite.protocol import LaunchSpec
launcher = Launcher(sys.argv[1])
for spec in json.loads(sys.argv[2]):
    job = launcher.start(LaunchSpec(**spec))
    print(job.job_id, job.pid, job.wrapper_pid, flush=True)
time.sleep(600)
"""


def state_of(pid: int) -> str | None:
    info = stat_of(pid)
    return info[0] if info else None


def shell_rc(raw: int) -> int:
    """What a shell's ``$?`` says of a raw wait status: 128+N for signal N."""
    return 128 + (raw & 0x7F) if raw & 0x7F else raw >> 8


def wrapper_status(launcher: Launcher, job_id: int) -> str:
    return (launcher.job_dir(job_id) / "status").read_text().strip()


@pytest.fixture
def kill_later() -> Iterator[list[int]]:
    """Jobs and wrappers (not our children, each leads its own group) to SIGKILL after the
    test, whatever happened."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def agent_that_dies(
    spool: Path, specs: list[Any], kill_later: list[int]
) -> dict[int, tuple[int, int]]:
    """Run ``_AGENT`` until its jobs started, then ``kill -9`` it: {job: (pid, wrapper)}."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _AGENT, str(spool), json.dumps([asdict(s) for s in specs])],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    started: dict[int, tuple[int, int]] = {}
    try:
        assert proc.stdout is not None
        for _ in specs:
            job_id, pid, wrapper = map(int, proc.stdout.readline().split())
            started[job_id] = (pid, wrapper)
            kill_later += [pid, wrapper]  # the job's group, then its wrapper
    finally:
        proc.kill()  # SIGKILL: no cleanup of any kind
        proc.wait()
        if proc.stdout:
            proc.stdout.close()
    return started


# ----------------------------------------------------------- the wrapper


@pytest.mark.parametrize(
    ("script", "raw", "sacct"),
    [
        ("exit 0\n", 0, "0:0"),
        ("exit 3\n", 3 << 8, "3:0"),
        ("kill -9 $$\n", 9, "0:9"),
        ("exit 137\n", 137 << 8, "137:0"),  # a shell's $? (137) alone would say signal 9
    ],
)
def test_the_wrapper_records_the_exact_wait_status(
    launcher: Launcher, area: Path, script: str, raw: int, sacct: str
) -> None:
    job = launcher.start(a_spec(area, 30, script))
    assert job.wait() == raw
    assert exit_code_str(raw) == sacct
    # the file a restarted agent would read: the exact status, or (when the shell reaped
    # the job before reading it) the shell's $? with the same meaning; the live agent
    # above got the exact one either way
    assert wrapper_status(launcher, 30) in (
        f"status={raw} restarts=0",
        f"rc={shell_rc(raw)} restarts=0",
    )
    assert not is_live(job.wrapper_pid)


@pytest.mark.skipif(not IS_ROOT, reason="switching users needs root")
@pytest.mark.parametrize(("script", "raw"), [("exit 137\n", 137 << 8), ("kill -9 $$\n", 9)])
def test_exact_status_when_the_job_runs_as_another_user(
    launcher: Launcher, area: Path, script: str, raw: int
) -> None:
    nobody = pwd.getpwnam("nobody")
    spec = a_spec(area, 33, script, uid=nobody.pw_uid, gid=nobody.pw_gid, user="nobody")
    job = launcher.start(spec)
    assert job.wait() == raw
    status = launcher.job_dir(33) / "status"
    assert status.stat().st_uid == nobody.pw_uid  # written by the wrapper, as the user
    assert status.read_text() in (f"status={raw} restarts=0\n", f"rc={shell_rc(raw)} restarts=0\n")


def test_job_and_wrapper_are_apart_and_the_job_gets_default_signals(
    launcher: Launcher, area: Path
) -> None:
    ready = area / "work" / "ready"
    script = f"grep -E '^SigIgn' /proc/$$/status\ntouch {ready}\nsleep 1000\n"
    job = launcher.start(a_spec(area, 31, script))
    wait_for(ready.exists)
    line = out_of(area, 31)
    assert line.startswith("SigIgn:\t")
    ignored = int(line.split()[1], 16)  # bit n-1 set = signal n ignored
    wrapper_ignores = (
        signal.SIGHUP,
        signal.SIGINT,
        signal.SIGQUIT,
        signal.SIGTERM,
        signal.SIGUSR1,
        signal.SIGUSR2,
        signal.SIGALRM,
        signal.SIGPIPE,
    )
    # none of what the wrapper ignores (nor sh's INT/QUIT for background jobs) leaks into
    # the job; whatever the agent itself inherited (e.g. glibc's real-time signals) may
    assert [s.name for s in wrapper_ignores if ignored & (1 << (s - 1))] == []
    job_stat, wrapper_stat = stat_of(job.pid), stat_of(job.wrapper_pid)
    assert job_stat is not None and wrapper_stat is not None
    assert job_stat[1] == job.pid  # the job leads its own process group ...
    assert wrapper_stat[1] != job.pid  # ... which the wrapper is not in
    assert job.terminate(kill_wait=10) is True
    assert job.wait() == signal.SIGTERM
    assert wrapper_status(launcher, 31) in ("status=15 restarts=0", "rc=143 restarts=0")


def test_wrapper_keeps_an_ended_job_unreaped_until_an_agent_opens_the_gate(
    launcher: Launcher, area: Path
) -> None:
    job = launcher.start(a_spec(area, 32, "exit 5\n"))
    wait_for(lambda: state_of(job.pid) == "Z")
    assert is_live(job.wrapper_pid)  # waiting for the gate, holding the exact status
    status = (launcher.job_dir(32) / "status").read_text()  # no end recorded yet
    assert status == f"started pid={job.pid} wrapper={job.wrapper_pid} restarts=0\n"
    assert job.wait() == 5 << 8  # poll() opened the gate


# ------------------------------------------------------------ adoption


def test_a_killed_agents_jobs_keep_running_and_are_adopted(
    area: Path, kill_later: list[int]
) -> None:
    spool = area / "spool"
    child = area / "work" / "child"
    specs = [
        a_spec(area, 40, f"sleep 1000 &\necho $! > {child}\nwait\n"),
        a_spec(area, 41, "sleep 0.3\nexit 3\n"),
        a_spec(area, 42, "sleep 0.3\nkill -9 $$\n"),
        a_spec(area, 43, "sleep 0.3\nexit 137\n"),
    ]
    started = agent_that_dies(spool, specs, kill_later)
    wait_for(lambda: child.exists() and child.read_text().strip() != "")
    # with no agent alive, jobs 41-43 end; their wrappers wait to be asked in
    for job_id in (41, 42, 43):
        pid, wrapper = started[job_id]
        wait_for(lambda pid=pid: state_of(pid) == "Z")
        assert is_live(wrapper)
    assert is_live(started[40][0]) and is_live(int(child.read_text()))

    launcher = Launcher(spool)  # the restarted agent, from the spool alone
    assert launcher.job_ids() == [40, 41, 42, 43]
    jobs = {job_id: launcher.adopt(job_id) for job_id in launcher.job_ids()}
    assert all(isinstance(j, BatchRun) and not j.done for j in jobs.values())
    # exact statuses, though every one of these ended while no agent ran
    assert jobs[41].wait() == 3 << 8  # FAILED 3:0
    assert jobs[42].wait() == 9  # FAILED 0:9, the .batch step CANCELLED 0:9
    assert jobs[43].wait() == 137 << 8  # 137:0, not a signal
    # the job still running can be signalled and killed, children included
    job = jobs[40]
    assert job.pid == started[40][0] and not job.poll()
    assert job.terminate(kill_wait=10) is True
    assert job.wait() == signal.SIGTERM
    assert not is_live(int(child.read_text()))
    record = read_status(launcher.job_dir(40))
    assert record is not None and (record.status, record.restarts) == (15, 0)


def test_adoption_sees_only_the_run_it_was_given(area: Path) -> None:
    launcher = Launcher(area / "spool")
    assert launcher.adopt(99) is None  # nothing in the spool
    job_dir = launcher.job_dir(50)
    job_dir.mkdir(parents=True)
    (job_dir / "launch.json").write_text(json.dumps({"pid": 2**22 + 7, "restarts": 1}))
    gone = launcher.adopt(50)  # a pid that no longer runs, and no status: unknown end
    assert gone is not None and gone.done and gone.status is None
    assert gone.signal(signal.SIGTERM) is False  # nobody to signal, and no error
    assert launcher.forget(50, restarts=0) is False  # not that run
    assert launcher.forget(50, restarts=1) is True and not job_dir.exists()


# ------------------------------------------------------- the agent state


def agent_state(spool: Path, **kw: Any) -> AgentState:
    """Agent n1 on ``spool``; ``kw``: more fields (``clock``, ``timer``, ``gpus`` ...)."""
    cfg = parse_config("SlurmctldHost=localhost(127.0.0.1)\nSlurmliteHeartbeatInterval=1\n")
    fields: dict[str, Any] = dict(
        cfg=cfg,
        name="n1",
        cluster_key=b"k" * 64,
        spool=spool,
        gpus=[],
        gpu_source="none",
        node_conf=None,
    )
    return AgentState(**{**fields, **kw})


class FakeController:
    """Answers completions: ``fail`` times 503 first, then 200; records what came."""

    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.received: list[dict[str, Any]] = []

    async def post(self, path: str, payload: dict[str, Any]) -> Any:
        # the batch route: one record per completion, one acknowledgement per item
        items = payload["completions"] if path.endswith("/completions") else [payload]
        self.received.extend(items)
        code = 503 if self.fail > 0 else 200
        self.fail -= 1
        acks = {"results": [{**i, "ok": code == 200, "changed": True} for i in items]}
        return type("Answer", (), {"status_code": code, "text": "", "json": lambda _: acks})()


def test_restarted_agent_adopts_reports_and_forgets_after_acknowledgement(
    area: Path, kill_later: list[int]
) -> None:
    spool = area / "spool"
    ready = area / "work" / "ready"
    specs = [
        a_spec(area, 60, f"touch {ready}\nsleep 1000\n"),
        a_spec(area, 61, "exit 3\n"),
    ]
    started = agent_that_dies(spool, specs, kill_later)
    wait_for(lambda: ready.exists() and state_of(started[61][0]) == "Z")

    async def scenario() -> None:
        state = agent_state(spool)
        controller = FakeController(fail=1)
        state.post = controller.post  # type: ignore[method-assign]
        try:
            assert state.adopt_spool() == (2, 0)  # both still held by their wrappers
            assert sorted(state.jobs) == [(60, 0), (61, 0)]
            assert state.held_jobs() == [60, 61]  # what register/heartbeat will say
            # the same launch again (a retried order) spawns nothing
            assert await state.launch(specs[0]) == "already running"
            reporter = asyncio.create_task(state.report_forever())
            await until(lambda: len(controller.received) >= 2)  # one refusal, one ack
            first = controller.received[-1]
            assert (first["job_id"], first["exit_code"]) == (61, 3 << 8)
            await until(lambda: not state.launcher.job_dir(61).exists())
            assert state.held_jobs() == [60]  # acknowledged: no longer held
            # the adopted job is cancelled like any other
            assert await state.signal(signal_spec(60)) == "ok"
            await until(lambda: len(controller.received) >= 3)
            last = controller.received[-1]
            assert (last["job_id"], last["exit_code"]) == (60, signal.SIGTERM)
            await until(lambda: state.held_jobs() == [])
            reporter.cancel()
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(scenario(), timeout=30))
    # nothing is left to re-send after yet another restart
    again = agent_state(spool)
    assert again.adopt_spool() == (0, 0) and again.held_jobs() == []


def test_a_completion_is_sent_until_acknowledged_even_across_restarts(area: Path) -> None:
    spool = area / "spool"

    async def first_life() -> None:
        state = agent_state(spool)
        job = state.launcher.start(a_spec(area, 70, "exit 0\n"))
        job.wait()
        state._queue(JobCompletion("n1", 70, 0, "batch", 0, job.started, job.ended))
        await state.shutdown()  # dies before the controller answered

    asyncio.run(first_life())
    assert [p.name for p in (spool / "completions").glob("*.json")] == ["70.0.json"]

    async def second_life() -> None:
        state = agent_state(spool)
        controller = FakeController()
        state.post = controller.post  # type: ignore[method-assign]
        assert state.adopt_spool() == (0, 0)  # already queued: not queued twice
        assert state.held_jobs() == [70]
        reporter = asyncio.create_task(state.report_forever())
        await until(lambda: state.held_jobs() == [])
        reporter.cancel()
        assert [m["job_id"] for m in controller.received] == [70]  # once, then acknowledged
        await state.shutdown()

    asyncio.run(asyncio.wait_for(second_life(), timeout=30))
    assert not (spool / "job70").exists()


def signal_spec(job_id: int) -> Any:
    from slurmlite.protocol import SignalSpec

    return SignalSpec(credential="", job_id=job_id, restarts=0, signal=None, kill_wait=5)


async def until(condition: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)
