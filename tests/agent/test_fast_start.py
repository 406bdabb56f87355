"""Fast starts keep their guarantees: exact statuses of jobs that end at once, even many
started together, the job's environment exactly as sent, a wrapper never left waiting."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from agent.launcher import Launcher
from tests.agent.jobs import a_spec, out_of
from tests.agent.test_supervision import FakeController, agent_state, until

# (script, raw wait status): the ones a shell's $? alone would get wrong or ambiguous
ENDINGS = [
    ("exit 137\n", 137 << 8),  # $? 137, not signal 9
    ("kill -9 $$\n", 9),
    ("exit 3\n", 3 << 8),
    ("kill -TERM $$\n", signal.SIGTERM),
    ("exit 0\n", 0),
]


def test_jobs_that_end_at_once_started_together_keep_their_exact_status(area: Path) -> None:
    # 40 jobs in one batch, as a launch request brings them: each wrapper must still catch
    # its job's zombie, however soon the job ends (the wrapper/job handshake)
    specs = [a_spec(area, 100 + i, ENDINGS[i % 5][0]) for i in range(40)]
    expected = {100 + i: ENDINGS[i % 5][1] for i in range(40)}

    async def scenario() -> dict[int, int]:
        state = agent_state(area / "spool")
        controller = FakeController()
        state.post = controller.post  # type: ignore[method-assign]
        reporter = asyncio.create_task(state.report_forever())
        try:
            answers = await asyncio.gather(*(state.launch(s) for s in specs))
            assert answers == ["started"] * 40
            await until(lambda: len(controller.received) >= 40, timeout=30)
        finally:
            reporter.cancel()
            await state.shutdown()
        return {m["job_id"]: m["exit_code"] for m in controller.received}

    assert asyncio.run(asyncio.wait_for(scenario(), timeout=60)) == expected


def test_a_job_killed_before_its_handshake_still_ends_its_run(
    launcher: Launcher, area: Path
) -> None:
    spawn = launcher.spawn(a_spec(area, 60, "sleep 1000\n"))
    assert spawn.proc.stderr is not None
    first = spawn.proc.stderr.readline()  # "slurmlite-job-pid=<pid>": the job was forked
    os.kill(int(first.split(b"=")[1]), signal.SIGKILL)  # most likely before its handshake
    job = launcher.settle(spawn, first + spawn.proc.stderr.read())
    spawn.proc.stderr.close()

    async def ended() -> int | None:
        return await asyncio.wait_for(job.wait_async(), timeout=10)

    assert asyncio.run(ended()) == signal.SIGKILL  # and the wrapper is not left waiting


def test_the_job_sees_its_environment_exactly(launcher: Launcher, area: Path) -> None:
    # the start's helper programs run with LC_ALL=C (cheaper), which the job never sees
    show = 'echo "LC_ALL=${LC_ALL-unset} LANG=${LANG-unset}"\n'
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    assert launcher.start(a_spec(area, 61, show, environment=env)).wait() == 0
    assert out_of(area, 61) == "LC_ALL=unset LANG=C.UTF-8\n"
    env["LC_ALL"] = "C.UTF-8"
    assert launcher.start(a_spec(area, 62, show, environment=env)).wait() == 0
    assert out_of(area, 62) == "LC_ALL=C.UTF-8 LANG=C.UTF-8\n"
