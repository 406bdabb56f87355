"""``kill -9`` of a node agent on a cluster of its own: jobs survive, are adopted,
and every exit status still arrives; a job the agent lost is not left RUNNING.

The cluster's ``SlurmdTimeout`` is raised to 60 s so that the controller never
declares cr1 DOWN (and requeues its jobs) while its agent is away: the
point here is what the *agent* does, not node failure.  Jobs synchronise on
files the test creates, never on sleeps.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cli import localcluster
from cli.localcluster import ClusterSpec, down, read_pid, up
from tests.agent.jobs import is_live
from tests.e2e.conftest import Cluster, wait_for


@pytest.fixture(scope="module")
def crash():
    base = Path(tempfile.mkdtemp(prefix="slurmlite-crash-"))
    base.chmod(0o755)
    (base / "work").mkdir(mode=0o777)
    spec = ClusterSpec(directory=base / "c", nodelist="cr[1-2]", cpus_per_node=4, mem_per_node=4000)
    render = localcluster.render_conf
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(
                localcluster,
                "render_conf",
                lambda *a, **k: render(*a, **k).replace("SlurmdTimeout=5", "SlurmdTimeout=60"),
            )
            up(spec, timeout=60)
        yield Cluster(directory=spec.directory, conf=spec.conf, work=base / "work")
    finally:
        down(spec.directory)
        shutil.rmtree(base, ignore_errors=True)


def state(c: Cluster, jid: int) -> str:
    return c.run(f"squeue -h -t all -j {jid} -o %T").stdout.strip()


def sacct(c: Cluster, jid: int) -> list[str]:
    return c.run(f"sacct -n -P -j {jid} -o JobID,State,ExitCode").stdout.splitlines()


def batch_pid(c: Cluster, node: str, jid: int) -> int:
    meta = c.directory / "spool" / node / f"job{jid}" / "launch.json"
    return int(wait_for(lambda: meta.exists() and json.loads(meta.read_text())["pid"]))


def kill_agent(c: Cluster, node: str) -> None:
    pid = read_pid(c.directory / "run" / f"slurmd-{node}.pid")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not is_live(pid), what=f"agent {node} dead")


def start_agent(c: Cluster, node: str) -> None:
    """As an admin would: ``slurmd -N cr1 -f conf`` (detaches)."""
    cmd = [sys.executable, "-m", "agent.main", "-N", node, "-f", str(c.conf), "--fake-gpus"]
    subprocess.run(cmd, check=True, env=c.env(), timeout=60)


def test_jobs_survive_an_agent_killed_with_sigkill(crash):
    c = crash
    w = c.new_workdir()
    go, stop = w / "go", w / "stop"
    until = "while [ ! -e {} ]; do sleep 0.05; done"
    a = c.submit(f"-w cr1 -o a.out --wrap 'echo start; {until.format(go)}; echo end'", cwd=w)
    b = c.submit(f"-w cr1 --wrap '{until.format(stop)}; exit 3'", cwd=w)
    d = c.submit(f"-w cr1 --wrap '{until.format(stop)}; kill -9 $$'", cwd=w)
    cancel = c.submit("-w cr1 --wrap 'sleep 1000 & echo $! > child; wait'", cwd=w)
    for jid in (a, b, d, cancel):
        wait_for(lambda jid=jid: state(c, jid) == "RUNNING", what=f"job {jid} running")
    pids = {jid: batch_pid(c, "cr1", jid) for jid in (a, b, d, cancel)}
    wait_for(lambda: (w / "child").exists() and (w / "child").read_text().strip())
    child = int((w / "child").read_text())

    kill_agent(c, "cr1")
    stop.touch()  # b and d end while no agent runs on cr1
    for jid in (b, d):
        wait_for(lambda jid=jid: not is_live(pids[jid]), what=f"job {jid} ended")
    assert all(is_live(pids[jid]) for jid in (a, cancel)) and is_live(child)
    assert state(c, b) == "RUNNING"  # nobody has told the controller yet

    start_agent(c, "cr1")
    # what ended while the agent was away arrives with its exact status
    assert c.wait_done(b) == "FAILED"
    assert sacct(c, b) == [f"{b}|FAILED|3:0", f"{b}.batch|FAILED|3:0"]
    assert c.wait_done(d) == "FAILED"
    assert sacct(c, d) == [f"{d}|FAILED|0:9", f"{d}.batch|CANCELLED|0:9"]
    # what kept running is adopted: it completes with its whole output ...
    assert state(c, a) == "RUNNING" and is_live(pids[a])
    go.touch()
    assert c.wait_done(a) == "COMPLETED"
    assert (w / "a.out").read_text() == "start\nend\n"
    assert "Restarts=0" in c.run(f"scontrol show job {a}").stdout  # never requeued
    # ... or is cancelled, its whole process tree with it
    assert c.run(f"scancel {cancel}").returncode == 0
    assert c.wait_done(cancel) == "CANCELLED"
    wait_for(lambda: not is_live(child), what="the cancelled job's child killed")
    assert sacct(c, cancel)[1] == f"{cancel}.batch|CANCELLED|0:15"


def test_a_job_the_restarted_agent_knows_nothing_of_ends_node_fail(crash):
    c = crash
    w = c.new_workdir()
    jid = c.submit("-w cr2 --no-requeue --wrap 'sleep 1000'", cwd=w)
    wait_for(lambda: state(c, jid) == "RUNNING", what="running")
    pid = batch_pid(c, "cr2", jid)
    job_dir = c.directory / "spool" / "cr2" / f"job{jid}"
    wrapper = json.loads((job_dir / "launch.json").read_text())["wrapper_pid"]
    kill_agent(c, "cr2")
    # the node loses everything, as in a reboot: the job, its wrapper, its spool entry
    os.killpg(pid, signal.SIGKILL)
    os.kill(wrapper, signal.SIGKILL)
    shutil.rmtree(job_dir)
    start_agent(c, "cr2")
    # cr2 registers without the job; after the grace (5 s here) the controller gives up on it
    assert c.wait_done(jid, timeout=30) == "NODE_FAIL"
    wait_for(lambda: c.run("sinfo -h -N -n cr2 -o %t").stdout.strip() == "idle", what="cr2 idle")
