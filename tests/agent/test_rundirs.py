"""agent.rundirs: finished runs' directories reused by the same user, never by another."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agent.launcher import Launcher
from agent.rundirs import RunDirs, fresh_file, gate_fifo
from tests.agent.jobs import IS_ROOT, a_spec, out_of, run

ME = os.geteuid()


def parked_run(rundirs: RunDirs, job_dir: Path, uid: int = ME) -> Path:
    """A directory as a finished run leaves it: script, status, gate, launch.json."""
    rundirs.make(job_dir, uid)
    for name, text in (("script", "#!/bin/sh\n"), ("status", "status=0 restarts=0\n")):
        os.close(fresh_file(job_dir / name, 0o700, None, uid))
        (job_dir / name).write_text(text)
    gate_fifo(job_dir / "gate", None, uid)
    (job_dir / "launch.json").write_text('{"pid": 1, "restarts": 0}')
    return job_dir


def test_a_parked_directory_records_no_run_and_goes_to_the_next_run(tmp_path: Path) -> None:
    rundirs = RunDirs(tmp_path)
    first = parked_run(rundirs, tmp_path / "job7")
    inode = (first / "script").stat().st_ino
    assert rundirs.park(first)
    assert not first.exists()
    [parked] = list((tmp_path / "free").iterdir())
    # nothing left that a restarted agent could mistake for a run
    assert (parked / "status").read_text() == "" and (parked / "launch.json").read_text() == ""
    rundirs.make(tmp_path / "job9", ME)
    assert (tmp_path / "job9" / "script").stat().st_ino == inode  # the same file, not a new one
    assert stat.S_IMODE((tmp_path / "job9").stat().st_mode) == 0o711
    assert list((tmp_path / "free").iterdir()) == []


@pytest.mark.skipif(not IS_ROOT, reason="files of another user need root")
def test_another_users_run_gets_a_new_directory(tmp_path: Path) -> None:
    rundirs = RunDirs(tmp_path)
    assert rundirs.park(parked_run(rundirs, tmp_path / "job7"))  # root's files
    rundirs.make(tmp_path / "job8", 1001)
    assert list((tmp_path / "job8").iterdir()) == []  # made new: nothing of root's run
    assert len(list((tmp_path / "free").iterdir())) == 1  # still parked for root


def test_only_a_finished_runs_directory_is_parked_and_only_keep_of_them(tmp_path: Path) -> None:
    rundirs = RunDirs(tmp_path, keep=1)
    odd = parked_run(rundirs, tmp_path / "job1")
    (odd / "status.tmp").write_text("")  # a launch that failed half-way leaves more
    assert not rundirs.park(odd)
    two, three = parked_run(rundirs, tmp_path / "job2"), parked_run(rundirs, tmp_path / "job3")
    assert rundirs.park(two)
    assert not rundirs.park(three)  # keep=1: the caller removes it


def test_an_earlier_agents_parked_directories_are_not_trusted(tmp_path: Path) -> None:
    rundirs = RunDirs(tmp_path)
    assert rundirs.park(parked_run(rundirs, tmp_path / "job1"))
    RunDirs(tmp_path)  # the next agent
    assert list((tmp_path / "free").iterdir()) == []


def test_fresh_file_reuses_only_a_plain_single_link_file_of_the_user(tmp_path: Path) -> None:
    path = tmp_path / "script"
    path.write_text("old")
    inode = path.stat().st_ino
    os.close(fresh_file(path, 0o700, None, ME))
    assert (path.stat().st_ino, path.read_text(), stat.S_IMODE(path.stat().st_mode)) == (
        inode,
        "",
        0o700,
    )
    os.link(path, tmp_path / "kept")  # someone holds a second name for it
    os.close(fresh_file(path, 0o700, None, ME))
    assert path.stat().st_ino != inode and (tmp_path / "kept").stat().st_ino == inode
    path.unlink()
    os.symlink(tmp_path / "kept", path)  # never followed
    os.close(fresh_file(path, 0o600, None, ME))
    assert not path.is_symlink() and path.is_file()


def test_gate_fifo_keeps_a_fifo_and_replaces_anything_else(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.write_text("not a fifo")
    gate_fifo(gate, None, ME)
    assert stat.S_ISFIFO(gate.lstat().st_mode)
    inode = gate.lstat().st_ino
    gate_fifo(gate, None, ME)
    assert gate.lstat().st_ino == inode


def test_a_forgotten_runs_directory_serves_the_next_job_of_the_same_user(
    launcher: Launcher, area: Path
) -> None:
    assert run(launcher, area, 40, "echo first\n") == 0
    script = (launcher.job_dir(40) / "script").stat().st_ino
    assert launcher.forget(40, 0)
    assert not launcher.job_dir(40).exists()
    job = launcher.start(a_spec(area, 41, "echo second; exit 4\n"))
    assert (launcher.job_dir(41) / "script").stat().st_ino == script
    assert job.wait() == 4 << 8
    assert out_of(area, 41) == "second\n"
    # the new run's own records, nothing of job 40's
    assert '"restarts": 0' in (launcher.job_dir(41) / "launch.json").read_text()
    assert (launcher.job_dir(41) / "status").read_text() == "status=1024 restarts=0\n"
