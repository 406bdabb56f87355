"""Helpers for agent tests with real processes: job specs, waiting, /proc checks."""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.launcher import Launcher
from slurmlite.protocol import LaunchSpec

IS_ROOT = os.geteuid() == 0


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def is_live(pid: int) -> bool:
    """Exists and is no zombie (orphans may stay unreaped zombies in containers)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def a_spec(area: Path, job_id: int, script: str, **kw: Any) -> LaunchSpec:
    """Job ``job_id`` of the current user, output to work/slurm-<id>.out (merged)."""
    uid = os.geteuid()
    out = str(area / "work" / f"slurm-{job_id}.out")
    fields: dict[str, Any] = dict(
        credential="",
        job_id=job_id,
        restarts=0,
        step_id="batch",
        name="t",
        uid=uid,
        gid=os.getegid(),
        user=pwd.getpwuid(uid).pw_name,
        script="#!/bin/sh\n" + script,
        work_dir=str(area / "work"),
        environment={"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "n1", "FOO": "bar"},
        std_out=out,
        std_err=out,
        std_in="",
        open_mode="truncate",
        gpus=[],
        kill_wait=1,
    )
    fields.update(kw)
    return LaunchSpec(**fields)


def run(launcher: Launcher, area: Path, job_id: int, script: str, **kw: Any) -> int | None:
    return launcher.start(a_spec(area, job_id, script, **kw)).wait()


def out_of(area: Path, job_id: int) -> str:
    return (area / "work" / f"slurm-{job_id}.out").read_text()
