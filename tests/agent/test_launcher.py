"""agent.launcher with real short processes: exit statuses, files, signals, kill."""

from __future__ import annotations

import asyncio
import os
import pwd
import signal
import time
from pathlib import Path

import pytest

from agent.launcher import (
    LAUNCH_FAILED_STATUS,
    Launcher,
    LaunchError,
    kill_message,
    read_status,
)
from slurmlite.states import exit_code_str
from tests.agent.jobs import IS_ROOT, a_spec, is_live, out_of, run, wait_for


def test_exit_statuses_are_raw_wait_statuses(launcher: Launcher, area: Path) -> None:
    assert run(launcher, area, 1, "exit 0\n") == 0
    assert run(launcher, area, 2, "exit 3\n") == 3 << 8  # 768, sacct "3:0"
    assert run(launcher, area, 3, "kill -9 $$\n") == 9  # sacct "0:9"
    assert exit_code_str(3 << 8) == "3:0"
    record = read_status(launcher.job_dir(2))
    assert record is not None and (record.status, record.restarts) == (768, 0)


def test_output_environment_cwd_and_task_pid(launcher: Launcher, area: Path) -> None:
    script = 'echo out; echo err >&2; echo "pid=$$ task=$SLURM_TASK_PID foo=$FOO"; pwd\n'
    spec = a_spec(
        area, 4, script, environment={"PATH": "/bin", "FOO": "bar", "SLURM_TASK_PID": "1"}
    )
    job = launcher.start(spec)
    assert job.wait() == 0
    # stderr shares stdout's file when std_err == std_out; SLURM_TASK_PID is the shell itself
    lines = out_of(area, 4).splitlines()
    assert lines == ["out", "err", f"pid={job.pid} task={job.pid} foo=bar", str(area / "work")]
    script_file = launcher.job_dir(4) / "script"
    assert script_file.stat().st_mode & 0o777 == 0o700


def test_separate_error_file(launcher: Launcher, area: Path) -> None:
    err = str(area / "work" / "err.txt")
    assert run(launcher, area, 5, "echo out; echo err >&2\n", std_err=err) == 0
    assert out_of(area, 5) == "out\n"
    assert Path(err).read_text() == "err\n"


@pytest.mark.parametrize(("mode", "expected"), [("truncate", "new\n"), ("append", "old\nnew\n")])
def test_open_mode(launcher: Launcher, area: Path, mode: str, expected: str) -> None:
    (area / "work" / "slurm-6.out").write_text("old\n")
    assert run(launcher, area, 6, "echo new\n", open_mode=mode) == 0
    assert out_of(area, 6) == expected


def test_missing_output_directory_fails_the_launch(launcher: Launcher, area: Path) -> None:
    missing = area / "work" / "nosuchdir"
    out = str(missing / "out-7.txt")
    with pytest.raises(LaunchError, match="nosuchdir") as failure:
        launcher.start(a_spec(area, 7, "echo x\n", std_out=out, std_err=out))
    # golden 20_output_missing_dir.txt: FAILED 0:53, reason JobLaunchFailure
    assert failure.value.exit_status == LAUNCH_FAILED_STATUS
    assert exit_code_str(failure.value.exit_status) == "0:53"
    assert failure.value.reason == "JobLaunchFailure"
    assert not missing.exists()  # never created
    record = read_status(launcher.job_dir(7))
    assert record is not None and (record.status, record.reason) == (53, "JobLaunchFailure")


def test_stdin_from_file_and_dev_null_by_default(launcher: Launcher, area: Path) -> None:
    (area / "work" / "in.txt").write_text("line one\n")
    assert run(launcher, area, 8, "cat\n", std_in=str(area / "work" / "in.txt")) == 0
    assert out_of(area, 8) == "line one\n"
    assert run(launcher, area, 9, "cat; echo end\n") == 0
    assert out_of(area, 9) == "end\n"


def test_missing_work_dir_runs_in_tmp_with_a_note(launcher: Launcher, area: Path) -> None:
    out = str(area / "work" / "slurm-10.out")
    assert run(launcher, area, 10, "pwd\n", work_dir="/nonexistent/dir", std_out=out) == 0
    text = out_of(area, 10)
    assert text.endswith("/tmp\n")
    assert "slurmstepd-n1: error: couldn't chdir to '/nonexistent/dir'" in text


def test_terminate_kills_the_whole_tree_and_writes_the_message(
    launcher: Launcher, area: Path
) -> None:
    child_file = area / "work" / "child"
    job = launcher.start(a_spec(area, 11, f"sleep 1000 &\necho $! > {child_file}\nwait\n"))
    wait_for(lambda: child_file.exists() and child_file.read_text().strip() != "")
    child = int(child_file.read_text())
    assert is_live(child)
    message = kill_message(11, "n1", "2026-11-30T02:28:43")
    assert job.terminate(kill_wait=10, message=message) is True
    assert job.wait() == signal.SIGTERM  # 15: the shell died of SIGTERM
    assert not is_live(child)
    # golden 60_timeout_job_output.txt
    assert out_of(area, 11).splitlines()[-1] == (
        "slurmstepd-n1: error: *** JOB 11 ON n1 CANCELLED AT 2026-11-30T02:28:43 "
        "DUE TO TIME LIMIT ***"
    )


def test_terminate_escalates_to_sigkill_after_kill_wait(launcher: Launcher, area: Path) -> None:
    ready = area / "work" / "ready"
    script = f"trap '' TERM\ntouch {ready}\nwhile :; do sleep 0.05; done\n"
    job = launcher.start(a_spec(area, 12, script))
    wait_for(ready.exists)
    began = time.monotonic()
    assert job.terminate(kill_wait=0.3) is True
    assert time.monotonic() - began >= 0.3  # TERM was ignored for the whole grace
    assert job.wait() == signal.SIGKILL


def test_signal_to_the_batch_shell_only(launcher: Launcher, area: Path) -> None:
    ready = area / "work" / "ready"
    script = f"trap 'echo got USR1; exit 7' USR1\ntouch {ready}\nwhile :; do sleep 0.05; done\n"
    job = launcher.start(a_spec(area, 13, script))
    wait_for(ready.exists)
    assert job.signal(signal.SIGUSR1, batch_only=True) is True
    assert job.wait() == 7 << 8
    assert out_of(area, 13) == "got USR1\n"
    assert job.signal(signal.SIGUSR1, batch_only=True) is False  # nobody left


def test_wait_async(launcher: Launcher, area: Path) -> None:
    job = launcher.start(a_spec(area, 14, "sleep 0.1; exit 5\n"))
    assert asyncio.run(asyncio.wait_for(job.wait_async(), timeout=10)) == 5 << 8


def test_adopt_after_agent_restart(launcher: Launcher, area: Path) -> None:
    ready = area / "work" / "ready"
    job = launcher.start(a_spec(area, 15, f"touch {ready}\nwhile :; do sleep 0.05; done\n"))
    wait_for(ready.exists)
    again = Launcher(area / "spool").adopt(15)  # a new agent process on the same spool
    assert again is not None and again.pid == job.pid and not again.poll()
    assert again.wrapper_pid == job.wrapper_pid
    assert again.terminate(kill_wait=10) is True  # the adopted handle can kill it
    # the adopted handle learns the exact status too: the wrapper, not the agent, records it
    assert again.wait() == signal.SIGTERM
    assert job.wait() == signal.SIGTERM
    later = Launcher(area / "spool").adopt(15)
    assert later is not None and later.done and later.status == signal.SIGTERM  # from status
    assert Launcher(area / "spool").adopt(99) is None


def test_refuses_another_users_job_when_not_root(
    launcher: Launcher, area: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = a_spec(area, 16, "exit 0\n", uid=4243)
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    with pytest.raises(LaunchError, match="uid 4242"):
        launcher.start(spec)


def test_non_root_agent_runs_its_own_users_job_unchanged(
    launcher: Launcher, area: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_uid = os.geteuid()
    spec = a_spec(area, 20, "id -u\n", uid=4242)
    monkeypatch.setattr(os, "geteuid", lambda: 4242)  # the agent "is" uid 4242 ...
    job = launcher.start(spec)  # ... so no credential switch is asked for
    monkeypatch.undo()
    assert job.wait() == 0
    assert out_of(area, 20) == f"{real_uid}\n"


@pytest.mark.skipif(not IS_ROOT, reason="switching users needs root")
def test_root_agent_runs_the_job_as_its_user(launcher: Launcher, area: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    spec = a_spec(area, 17, "id -u; id -g\n", uid=nobody.pw_uid, gid=nobody.pw_gid, user="nobody")
    assert launcher.start(spec).wait() == 0
    assert out_of(area, 17).split() == [str(nobody.pw_uid), str(nobody.pw_gid)]
    # the output file was created by the user, not by root; so was the script's owner set
    assert (area / "work" / "slurm-17.out").stat().st_uid == nobody.pw_uid
    assert (launcher.job_dir(17) / "script").stat().st_uid == nobody.pw_uid


def test_adopting_a_failed_launch_reports_it_and_signals_nobody(
    launcher: Launcher, area: Path
) -> None:
    out = str(area / "missing" / "o.txt")
    with pytest.raises(LaunchError):
        launcher.start(a_spec(area, 18, "exit 0\n", std_out=out, std_err=out))
    found = Launcher(area / "spool").adopt(18)
    assert found is not None and found.done and found.status == LAUNCH_FAILED_STATUS
    # no pid was ever recorded: signalling must not reach process group 0 (our own)
    assert found.signal(signal.SIGTERM) is False
    assert found.terminate(kill_wait=0) is True


def test_terminate_async(launcher: Launcher, area: Path) -> None:
    ready = area / "work" / "ready"
    job = launcher.start(a_spec(area, 19, f"touch {ready}\nsleep 1000\n"))
    wait_for(ready.exists)
    assert asyncio.run(job.terminate_async(kill_wait=10)) is True
    assert job.wait() == signal.SIGTERM
