"""Job steps on a real agent: what srun sees of its tasks, and how a step ends.

Each test posts a signed ``StepLaunch`` to an agent served on loopback
(``tests.agent.steprig``) and reads the NDJSON answer as srun does: output
per task as it comes, one ``exit`` line per task, then the end; the node's
part of the step is then spooled as a ``JobCompletion`` (``7.0.s0.json``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pwd
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.daemon import AgentState
from slurmlite.protocol import SignalSpec
from tests.agent.jobs import IS_ROOT, is_live
from tests.agent.signing import post, signed
from tests.agent.steprig import (
    DEADLINE,
    Stream,
    a_launch,
    fallback_stepenv,
    post_input,
    says,
    serving,
)
from tests.agent.test_runas import runas  # noqa: F401  (the created user, a fixture)
from tests.agent.test_supervision import agent_state

fallback_stepenv()

Scenario = Callable[[AgentState, httpx.AsyncClient], Awaitable[None]]


def run(area: Path, scenario: Scenario) -> AgentState:
    """Run ``scenario`` against an agent on ``area/spool``; the agent, stopped after."""
    state = agent_state(area / "spool")

    async def main() -> None:
        try:
            async with serving(state) as client:
                await scenario(state, client)
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(main(), DEADLINE))
    return state


def completion(state: AgentState, step: int = 0) -> dict[str, Any]:
    return json.loads((state.spool / "completions" / f"7.0.s{step}.json").read_text())


def test_two_tasks_stream_their_output_environment_and_exits(area: Path) -> None:
    script = (
        'echo "$SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $RANK $LOCAL_RANK $SLURM_TASK_PID $$"; '
        'echo "err of $SLURM_PROCID" >&2; cat /proc/self/cgroup; exit "$SLURM_PROCID"'
    )
    body = signed(a_launch(area, ["sh", "-c", script], tasks=[0, 1]))
    seen: dict[str, Any] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("application/x-ndjson")
            seen["s"] = s = Stream(r)
            await s.rest()
        seen["cgroup_left"] = state.steps.cgroups and state.steps.cgroups.job_path(7, 0).exists()

    state = run(area, scenario)
    s: Stream = seen["s"]
    for task in (0, 1):
        ids, *cgroups = s.text(task).splitlines()
        procid, localid, nodeid, rank, local_rank, task_pid, shell_pid = ids.split()
        # one node, tasks 0 and 1: the global and the local rank agree
        assert (procid, localid, nodeid, rank, local_rank) == (
            f"{task}",
            f"{task}",
            "0",
            *[f"{task}"] * 2,
        )
        assert task_pid == shell_pid  # SLURM_TASK_PID is the task's own pid
        assert s.text(task, "err") == f"err of {task}\n"
        if state.launcher.cgroups is not None:  # born in the job's cgroup, made for the step
            assert any(line.endswith("/job_7_0") for line in cgroups), cgroups
        # the exit line comes after all of the task's output
        mine = [i for i, e in enumerate(s.events) if e.get("task") == task]
        assert "exit" in s.events[mine[-1]]
    assert s.exits() == {0: 0, 1: 1 << 8}  # exit 1 -> raw status 256
    assert not seen["cgroup_left"]  # the step's cgroup went with its last step
    done = completion(state)
    assert (done["step_id"], done["exit_code"], done["node"]) == ("0", 256, "n1")
    assert done["start_time"] <= done["end_time"]


def test_stdin_goes_to_every_task_by_default(area: Path) -> None:
    body = signed(a_launch(area, ["cat"], tasks=[0, 1]))
    seen: dict[str, Stream] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            assert await post_input(client, body, data=b"hello\n") == 200
            assert await post_input(client, body, data=b"world\n", eof=True) == 200
            await s.rest()

    run(area, scenario)
    s = seen["s"]
    assert s.text(0) == s.text(1) == "hello\nworld\n"
    assert s.exits() == {0: 0, 1: 0}


def test_stdin_to_task_zero_only_runs_a_piped_script(area: Path) -> None:
    # snakemake's pattern: srun -i 0 ... sh -s, the script on srun's stdin
    body = signed(a_launch(area, ["sh", "-s"], tasks=[0, 1], stdin_task=0))
    seen: dict[str, Stream] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            script = b'echo "script ran as task $SLURM_PROCID"\n'
            assert await post_input(client, body, data=script, eof=True) == 200
            await s.rest()

    run(area, scenario)
    s = seen["s"]
    assert s.text(0) == "script ran as task 0\n"
    assert s.text(1) == ""  # task 1's stdin is /dev/null: an empty script
    assert s.exits() == {0: 0, 1: 0}


def test_a_signal_from_srun_reaches_the_tasks(area: Path) -> None:
    script = "trap 'echo caught USR1; exit 7' USR1; echo ready; while :; do sleep 1; done"
    body = signed(a_launch(area, ["sh", "-c", script]))
    seen: dict[str, Stream] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            await s.until(says("ready"))
            assert await post_input(client, body, signal=signal.SIGUSR1) == 200
            await s.rest()

    run(area, scenario)
    assert seen["s"].text(0) == "ready\ncaught USR1\n"
    assert seen["s"].exits() == {0: 7 << 8}


def test_kill_on_bad_exit_kills_the_other_tasks_and_the_worst_status_is_reported(
    area: Path,
) -> None:
    script = '[ "$SLURM_PROCID" = 0 ] && exit 3; exec sleep 20'
    launch = a_launch(area, ["sh", "-c", script], tasks=[0, 1], kill_on_bad_exit=True)
    body = signed(launch)
    seen: dict[str, Any] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        began = time.monotonic()
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            await s.rest()
        seen["took"] = time.monotonic() - began

    state = run(area, scenario)
    assert seen["s"].exits() == {0: 3 << 8, 1: signal.SIGKILL}
    assert seen["took"] < 15  # not the 20 s of the sleep
    # srun's rule: SIGKILL ranks 128 + 9 = 137 > exit 3, so the step's status is raw 9
    assert completion(state)["exit_code"] == signal.SIGKILL


@pytest.mark.skipif(not IS_ROOT, reason="running as another user needs a root agent")
def test_output_goes_to_per_task_files_written_as_the_user(
    area: Path,
    runas: pwd.struct_passwd,  # noqa: F811
) -> None:
    script = 'echo "task $SLURM_PROCID is $(id -u)"; echo "to stderr" >&2'
    launch = a_launch(
        area,
        ["sh", "-c", script],
        tasks=[0, 1],
        std_out="out-%t-%j.%s.txt",
        uid=runas.pw_uid,
        gid=runas.pw_gid,
        user=runas.pw_name,
    )
    body = signed(launch)
    seen: dict[str, Stream] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            await s.rest()

    run(area, scenario)
    # nothing streamed but the exits: all output went to the files
    assert len(seen["s"].events) == 2 and seen["s"].exits() == {0: 0, 1: 0}
    for task in (0, 1):
        path = area / "work" / f"out-{task}-7.0.txt"  # %t, %j = 7, %s = step 0
        assert path.read_text() == f"task {task} is {runas.pw_uid}\nto stderr\n"
        assert path.stat().st_uid == runas.pw_uid


def test_pty_gives_task_zero_a_controlling_terminal_with_the_window_size(area: Path) -> None:
    script = "read x; tty; stty size; echo ctty-ok >/dev/tty"
    body = signed(a_launch(area, ["sh", "-c", script], pty=True))
    seen: dict[str, Stream] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            assert await post_input(client, body, rows=30, cols=100) == 200
            assert await post_input(client, body, data=b"go\n") == 200
            await s.rest()

    run(area, scenario)
    lines = seen["s"].text(0).replace("\r\n", "\n").splitlines()
    # the terminal echoes what was typed, as a local one does
    assert lines[0] == "go"
    assert lines[1].startswith("/dev/pts/")
    assert lines[2:] == ["30 100", "ctty-ok"]  # /dev/tty opens: it is the controlling terminal
    assert seen["s"].exits() == {0: 0}


def test_the_time_limit_ends_the_step_with_slurms_line(area: Path) -> None:
    body = signed(a_launch(area, ["sleep", "20"], time_limit_s=1))
    seen: dict[str, Stream] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            await s.rest()

    state = run(area, scenario)
    err = seen["s"].text(0, "err")
    assert err.startswith("slurmstepd: error: *** STEP 7.0 ON n1 CANCELLED AT ")
    assert err.endswith(" DUE TO TIME LIMIT ***\n")
    assert seen["s"].exits() == {0: signal.SIGTERM}
    assert completion(state)["exit_code"] == signal.SIGTERM


def test_a_dropped_client_kills_the_tasks_and_the_step_is_reported(area: Path) -> None:
    body = signed(a_launch(area, ["sh", "-c", "echo $$; exec sleep 20"]))
    seen: dict[str, int] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            first = await Stream(r).until(lambda e: "out" in e)
            seen["pid"] = pid = int(base64.b64decode(first["out"]))
            assert is_live(pid)
        # leaving the block closed the connection mid-stream: srun is gone
        deadline = time.monotonic() + 10
        while is_live(pid) or not (state.spool / "completions" / "7.0.s0.json").exists():
            assert time.monotonic() < deadline, "the task outlived its client"
            await asyncio.sleep(0.02)

    state = run(area, scenario)
    assert not is_live(seen["pid"])
    assert completion(state)["exit_code"] == signal.SIGTERM  # the kill sequence's TERM


def test_signal_and_terminate_orders_for_the_job_reach_its_step(area: Path) -> None:
    script = "trap 'echo got USR1' USR1; echo ready; while :; do sleep 1; done"
    body = signed(a_launch(area, ["sh", "-c", script]))
    seen: dict[str, Any] = {}

    def order(sig: int | None, **kw: Any) -> dict[str, Any]:
        return signed(SignalSpec(credential="", job_id=7, restarts=0, signal=sig, **kw))

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            seen["s"] = s = Stream(r)
            await s.until(says("ready"))
            # scancel --signal=USR1: Slurm's default target is the steps
            answer = await post(client, "/v1/signal", order(signal.SIGUSR1))
            assert answer.json() == {"status": "ok"}
            await s.until(says("got USR1"))
            # scancel -b: the batch shell only, and this job (an allocation) has none here
            answer = await post(client, "/v1/signal", order(signal.SIGUSR1, batch_only=True))
            assert answer.json() == {"status": "not running"}
            # scancel: terminate; no batch run here, the step is what ends
            answer = await post(client, "/v1/signal", order(None, kill_wait=2))
            assert answer.json() == {"status": "ok"}
            await s.rest()

    run(area, scenario)
    s: Stream = seen["s"]
    assert s.text(0) == "ready\ngot USR1\n"
    # (the shell also says its sleep died of USR1: every process of the step got it)
    last = s.text(0, "err").splitlines()[-1]
    assert last.startswith("slurmstepd: error: *** STEP 7.0 ON n1 CANCELLED AT ")
    assert s.exits() == {0: signal.SIGTERM}


def test_a_step_that_cannot_start_says_why_and_is_reported(area: Path) -> None:
    launch = a_launch(area, ["true"], std_out="no-such-dir/out-%t.txt")
    body = signed(launch)
    seen: dict[str, Any] = {}

    async def scenario(state: AgentState, client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "/v1/steps", json=body) as r:
            assert r.status_code == 200
            seen["events"] = await Stream(r).rest()

    state = run(area, scenario)
    missing = area / "work" / "no-such-dir" / "out-0.txt"
    # as sbatch's output, the directory is never created: the step fails, saying why
    assert seen["events"] == [
        {"error": f"cannot open output file {missing}: Directory nonexistent"}
    ]
    done = completion(state)
    assert done["launch_failed"] and done["reason"] == "JobLaunchFailure"
    assert os.listdir(area / "work") == []  # nothing was created, nothing ran
