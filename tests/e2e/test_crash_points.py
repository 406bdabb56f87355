"""A daemon dies at every crash point (slurmlite.crashpoints); after a restart every job runs
exactly once and ends with its own exit status.

One local cluster of one node.  For each point the daemon that owns it
(``ctld.*``: slurmctld, ``slurmd.*``: the agent) is restarted with
``SLURMLITE_CRASH_AT=<point>``; a small workload is submitted, an array of
three tasks that exit with their index (``sbatch`` runs in the background: a
crash around the submit's commit is met by its retry); the
daemon dies there (``os._exit(86)``, as ``kill -9`` would: its log's last
line names the point) and is started again as an admin would, without
the variable.  Then:

* an ``sbatch`` that printed an id made exactly one array, one that printed
  an error made none (no job has its name);
* each task ran once (one line in its log) and ended with its own status
  (``N_0`` COMPLETED 0:0, ``N_1`` FAILED 1:0, ``N_2`` FAILED 2:0), whatever
  the daemon was doing when it died.

``SlurmdTimeout`` is raised to 60 s so the agent's restarts never look like
a dead node; a run the controller launched into the void (crash between the
plan's commit and the order) is requeued by the reconciler once the node's
reports omit it, and still runs once.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import localcluster
from cli.localcluster import ClusterSpec, down, read_pid, up
from slurmlite.crashpoints import POINTS
from tests.agent.jobs import is_live
from tests.e2e.conftest import BIN, Cluster, wait_for

NODE = "cp1"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="slurmlite-crashpoints-"))
    base.chmod(0o755)
    (base / "work").mkdir(mode=0o777)
    spec = ClusterSpec(directory=base / "c", nodelist=NODE, cpus_per_node=2, mem_per_node=2000)
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


def pid_file(c: Cluster, daemon: str) -> Path:
    name = "slurmctld.pid" if daemon == "ctld" else f"slurmd-{NODE}.pid"
    return c.directory / "run" / name


def log_file(c: Cluster, daemon: str) -> Path:
    name = "slurmctld.log" if daemon == "ctld" else f"slurmd-{NODE}.log"
    return c.directory / "log" / name


def start(c: Cluster, daemon: str, **env: str) -> int:
    """Start the daemon as an admin would (it detaches); its new pid."""
    old = read_pid(pid_file(c, daemon))
    if daemon == "ctld":
        cmd = [sys.executable, "-m", "controller.main", "-f", str(c.conf)]
    else:
        cmd = [sys.executable, "-m", "agent.main", "-N", NODE, "-f", str(c.conf), "--fake-gpus"]
    subprocess.run(cmd, check=True, env=c.env(**env), timeout=60, stdin=subprocess.DEVNULL)
    return int(wait_for(lambda: (p := read_pid(pid_file(c, daemon))) != old and p))


def stop(c: Cluster, daemon: str) -> None:
    pid = read_pid(pid_file(c, daemon))
    if pid is not None and is_live(pid):
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not is_live(pid), what=f"{daemon} stopped")


def node_idle(c: Cluster) -> bool:
    return c.run(f"sinfo -h -N -n {NODE} -o %T").stdout.strip() == "idle"


def named(c: Cluster, name: str) -> list[str]:
    r = c.run(f"sacct -n -P -X --name {name} -o JobID,State,ExitCode")
    return r.stdout.splitlines()


def done(c: Cluster, name: str) -> list[str]:
    ended = ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT")
    return [row for row in named(c, name) if row.split("|")[1] in ended]


@pytest.mark.parametrize("point", sorted(POINTS))
def test_every_job_runs_once_with_its_exit_status_after_a_crash_at(cluster, point):
    c = cluster
    daemon = point.split(".")[0]
    wait_for(lambda: node_idle(c), timeout=60, what="the node idle before the scenario")
    stop(c, daemon)
    pid = start(c, daemon, SLURMLITE_CRASH_AT=point)
    wait_for(lambda: node_idle(c), timeout=60, what="the node registered")
    w = c.new_workdir()
    name = "cp_" + point.replace(".", "_")
    sbatch = subprocess.Popen(
        [str(BIN / "sbatch"), "--parsable", "-J", name, "-o", "/dev/null", "--array=0-2",
         "--wrap", f"echo run >> {w}/log.$SLURM_ARRAY_TASK_ID; exit $SLURM_ARRAY_TASK_ID"],
        cwd=w, env=c.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: not is_live(pid), timeout=60, what=f"{daemon} dead at {point}")
        assert f"event=crash_point name={point}" in log_file(c, daemon).read_text()
        start(c, daemon)
        out, err = sbatch.communicate(timeout=60)
    finally:
        if sbatch.poll() is None:
            sbatch.kill()
            sbatch.communicate()
    if sbatch.returncode != 0:  # refused: no job of that name, now or later
        assert err.startswith("sbatch: error: "), err
        assert named(c, name) == []
        return
    jid = int(out.strip())
    wait_for(lambda: len(done(c, name)) == 3, timeout=60, what="the three tasks ended")
    assert named(c, name) == [
        f"{jid}_0|COMPLETED|0:0",
        f"{jid}_1|FAILED|1:0",
        f"{jid}_2|FAILED|2:0",
    ]
    for task in range(3):
        assert (w / f"log.{task}").read_text() == "run\n"  # ran once
