"""Fixtures for agent tests: a scratch area any user may write, and a Launcher
whose jobs are killed and reaped, and whose cgroups are removed, after each test."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.isolation import discard
from agent.launcher import BatchRun, Launcher
from slurmlite.protocol import LaunchSpec


@pytest.fixture
def area() -> Iterator[Path]:
    """A scratch dir any user may write (tmp_path's parents are root-only)."""
    path = Path(tempfile.mkdtemp(prefix="slurmlite-launcher-"))
    os.chmod(path, 0o777)
    (path / "work").mkdir(mode=0o777)
    os.chmod(path / "work", 0o777)
    try:
        yield path
    finally:
        discard(path / "spool")  # the cgroups of jobs an agent on area/spool left behind
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def launcher(area: Path) -> Iterator[Launcher]:
    """A Launcher whose jobs are all killed and reaped after the test."""
    real = Launcher(area / "spool")
    started: list[BatchRun] = []
    original = real.start

    def start(spec: LaunchSpec) -> BatchRun:
        job = original(spec)
        started.append(job)
        return job

    real.start = start  # type: ignore[method-assign]
    try:
        yield real
    finally:
        for job in started:
            job.signal(signal.SIGKILL)
            job.wait()
        if real.cgroups is not None:  # cgroups the test's jobs left (none, normally)
            real.cgroups.destroy()
