"""The node's Prolog and Epilog around a batch run, and what the completion says.

Each test gives agent n1 a slurm.conf with ``Prolog=``/``Epilog=`` scripts
that record their environment, launches one job, and reads the completion
a fake controller receives:

* prolog exits 0 -> the job runs, the prolog saw the job's variables and
  no user variable; the launch was answered before the prolog finished;
* prolog exits 1, or outlives ``PrologEpilogTimeout`` -> nothing runs, the
  completion is a launch failure with ``failed_script="prolog"``;
* epilog exits 1 -> the job's own status is reported, marked
  ``failed_script="epilog"``, and only after the epilog ended.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from slurmlite.config import parse_config
from tests.agent.jobs import a_spec
from tests.agent.test_supervision import FakeController, agent_state, signal_spec, until


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def run_one(area: Path, conf: str, job: str, job_id: int = 80) -> dict[str, Any]:
    """Launch one job on an agent with ``conf``; the completion the controller got."""
    cfg = parse_config("SlurmctldHost=localhost(127.0.0.1)\nClusterName=lab\n" + conf)

    async def scenario() -> dict[str, Any]:
        state = agent_state(area / "spool", cfg=cfg)
        controller = FakeController()
        state.post = controller.post  # type: ignore[method-assign]
        reporter = asyncio.create_task(state.report_forever())
        try:
            spec = a_spec(area, job_id, job)
            spec.environment = {
                **spec.environment,
                "SLURM_JOB_PARTITION": "debug",
                "SLURM_JOB_ACCOUNT": "acct_a",
                "SLURM_JOB_NODELIST": "n[1-2]",
            }
            assert await state.launch(spec) in ("started", "failed")
            await until(lambda: controller.received, timeout=20)
            await until(lambda: state.held_jobs() == [], timeout=20)
            return controller.received[-1]
        finally:
            reporter.cancel()
            await state.shutdown()

    return asyncio.run(asyncio.wait_for(scenario(), timeout=40))


def env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return dict(pairs)


def test_a_prolog_that_succeeds_runs_before_the_job_with_the_jobs_variables(area: Path) -> None:
    seen, order = area / "prolog.env", area / "order"
    prolog = script(area / "prolog", f"env > {seen}\necho prolog >> {order}\n")
    done = run_one(area, f"Prolog={prolog}\n", f"echo job >> {order}\n")
    assert (done["exit_code"], done["launch_failed"], done["failed_script"]) == (0, False, None)
    assert order.read_text() == "prolog\njob\n"
    env = env_file(seen)
    assert env["SLURM_SCRIPT_CONTEXT"] == "prolog_slurmd"
    assert (env["SLURM_JOB_ID"], env["SLURMD_NODENAME"], env["SLURM_CLUSTER_NAME"]) == (
        "80",
        "n1",
        "lab",
    )
    assert (env["SLURM_JOB_PARTITION"], env["SLURM_JOB_ACCOUNT"]) == ("debug", "acct_a")
    assert env["SLURM_JOB_NODELIST"] == "n[1-2]" and env["SLURM_JOB_USER"]
    assert "FOO" not in env  # nothing of the job's own environment


def test_a_failing_prolog_starts_nothing_and_says_so(area: Path) -> None:
    ran = area / "work" / "ran"
    prolog = script(area / "prolog", "exit 1\n")
    done = run_one(area, f"Prolog={prolog}\n", f"touch {ran}\n")
    assert done["launch_failed"] and done["failed_script"] == "prolog"
    assert done["detail"] == "Prolog error: exit status 1"
    assert not ran.exists()


def test_a_prolog_past_its_time_limit_is_killed_and_counts_as_failed(area: Path) -> None:
    after = area / "after"
    prolog = script(area / "prolog", f"sleep 30\ntouch {after}\n")
    done = run_one(area, f"Prolog={prolog}\nPrologEpilogTimeout=1\n", "true\n")
    assert done["failed_script"] == "prolog"
    assert done["detail"] == "Prolog error: timed out after 1 s"
    assert not after.exists()


def test_a_failing_epilog_marks_the_completion_after_the_job(area: Path) -> None:
    seen = area / "epilog.env"
    epilog = script(area / "epilog", f"env > {seen}\nexit 2\n")
    done = run_one(area, f"Epilog={epilog}\n", "exit 3\n")
    assert (done["exit_code"], done["failed_script"]) == (3 << 8, "epilog")
    assert not done["launch_failed"]
    env = env_file(seen)
    assert (env["SLURM_SCRIPT_CONTEXT"], env["SLURM_JOB_ID"]) == ("epilog_slurmd", "80")
    assert env["SLURM_JOB_PARTITION"] == "debug"


def test_an_epilog_that_succeeds_leaves_the_completion_as_it_was(area: Path) -> None:
    epilog = script(area / "epilog", "exit 0\n")
    done = run_one(area, f"Epilog={epilog}\n", "exit 0\n")
    assert (done["exit_code"], done["failed_script"]) == (0, None)


def test_a_launch_is_answered_while_its_prolog_runs_and_the_job_counts_as_held(
    area: Path,
) -> None:
    go = area / "go"
    prolog = script(area / "prolog", f"while [ ! -e {go} ]; do sleep 0.05; done\n")
    cfg = parse_config(f"SlurmctldHost=localhost(127.0.0.1)\nProlog={prolog}\n")

    async def scenario() -> None:
        state = agent_state(area / "spool", cfg=cfg)
        controller = FakeController()
        state.post = controller.post  # type: ignore[method-assign]
        reporter = asyncio.create_task(state.report_forever())
        try:
            assert await state.launch(a_spec(area, 81, "exit 0\n")) == "started"
            # the prolog still waits: the node holds the job, so the controller keeps it
            assert state.held_jobs() == [81] and not controller.received
            go.touch()
            await until(lambda: controller.received, timeout=20)
            assert controller.received[-1]["exit_code"] == 0
        finally:
            reporter.cancel()
            await state.shutdown()

    asyncio.run(asyncio.wait_for(scenario(), timeout=40))


def test_a_job_terminated_during_its_prolog_never_starts(area: Path) -> None:
    go, ran = area / "go", area / "work" / "ran"
    prolog = script(area / "prolog", f"while [ ! -e {go} ]; do sleep 0.05; done\n")
    cfg = parse_config(f"SlurmctldHost=localhost(127.0.0.1)\nProlog={prolog}\n")

    async def scenario() -> None:
        state = agent_state(area / "spool", cfg=cfg)
        controller = FakeController()
        state.post = controller.post  # type: ignore[method-assign]
        reporter = asyncio.create_task(state.report_forever())
        try:
            assert await state.launch(a_spec(area, 82, f"touch {ran}\n")) == "started"
            # scancel: the terminate is answered at once, not after the prolog
            assert await state.signal(signal_spec(82)) == "ok"
            go.touch()
            await until(lambda: controller.received, timeout=20)
            assert controller.received[-1]["exit_code"] == 15  # as if SIGTERM came first
            await until(lambda: state.held_jobs() == [], timeout=20)
        finally:
            reporter.cancel()
            await state.shutdown()

    asyncio.run(asyncio.wait_for(scenario(), timeout=40))
    assert not ran.exists()
