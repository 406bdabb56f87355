"""An agent killed between spawning a job's wrapper and recording it (``launch.json``):
its successor still adopts the run from the wrapper's ``started`` line (agent.wrapper),
so the job is neither lost nor run a second time, and its exact status arrives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from agent.launcher import Launcher
from agent.wrapper import read_started
from tests.agent.jobs import a_spec, wait_for
from tests.agent.test_supervision import kill_later  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]

# spawns the wrapper, never reads its report nor records the run, and dies at once
_DIES_AFTER_SPAWN = r"""
import json, os, sys
from agent.launcher import Launcher
from slurmlite.protocol import LaunchSpec
spawn = Launcher(sys.argv[1]).spawn(LaunchSpec(**json.loads(sys.argv[2])))
print(spawn.proc.pid, flush=True)
os._exit(0)
"""


def test_a_run_started_but_never_recorded_is_adopted(area: Path, kill_later: list[int]) -> None:  # noqa: F811
    spool, go, ran = area / "spool", area / "work" / "go", area / "work" / "ran"
    spec = a_spec(
        area, 90, f"echo once >> {ran}\nwhile [ ! -e {go} ]; do sleep 0.05; done\nexit 7\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", _DIES_AFTER_SPAWN, str(spool), json.dumps(asdict(spec))],
        cwd=ROOT, capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    wrapper = int(out)
    kill_later.append(wrapper)
    job_dir = spool / "job90"
    assert not (job_dir / "launch.json").exists()  # the agent died before recording it
    wait_for(lambda: read_started(job_dir) is not None)
    started = read_started(job_dir)
    assert started is not None
    kill_later.append(started["pid"])
    assert (started["wrapper_pid"], started["restarts"]) == (wrapper, 0)
    wait_for(lambda: ran.exists())

    successor = Launcher(spool)
    assert successor.job_ids() == [90] and successor.run_of(90) == 0
    run = successor.adopt(90)
    assert run is not None and not run.done and run.pid == started["pid"]
    go.touch()
    assert run.wait() == 7 << 8  # the exact status, through the adopted gate
    assert ran.read_text() == "once\n"


def test_a_started_line_is_not_believed_for_processes_that_are_not_its_wrapper(
    area: Path,
) -> None:
    job_dir = area / "spool" / "job91"
    job_dir.mkdir(parents=True)
    me, parent = os.getpid(), os.getppid()
    (job_dir / "status").write_text(f"started pid={me} wrapper={parent} restarts=0\n")
    assert read_started(job_dir) is None  # pid is the wrapper's child, but it is no wrapper
    (job_dir / "status").write_text("status=0 restarts=0\n")
    assert read_started(job_dir) is None
