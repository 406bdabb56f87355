"""A controller frozen with SIGSTOP for 3 x SlurmdTimeout, then continued, on a
cluster of its own: a healthy node's running job is not failed or requeued,
and a node whose agent was killed during the pause is DOWN a SlurmdTimeout
after the resume (not at once), its job requeued once.

The local cluster runs ``SlurmdTimeout=5`` with a 1 s heartbeat, so the
pause is 15 s -- the one sleep of the test; everything else waits on a
condition with a deadline.  The controller is continued in a ``finally``
(a stopped process would ignore the cluster's SIGTERM) and the cluster is
stopped by PID.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator

import pytest

from cli.localcluster import read_pid
from tests.agent.jobs import is_live
from tests.e2e.conftest import Cluster, local_cluster, wait_for

TIMEOUT = 5  # SlurmdTimeout of the local cluster
PAUSE = 3 * TIMEOUT


@pytest.fixture(scope="module")
def stall() -> Iterator[Cluster]:
    with local_cluster("slurmlite-stall-", nodelist="st[1-2]", cpus_per_node=2) as c:
        yield c


def show(c: Cluster, jid: int, key: str) -> str:
    out = c.run(f"scontrol show job {jid}").stdout
    m = re.search(rf"\b{key}=(\S+)", out)
    return m.group(1) if m else ""


def pid_of(c: Cluster, daemon: str) -> int:
    pid = read_pid(c.directory / "run" / f"{daemon}.pid")
    assert pid is not None
    return pid


def test_a_job_outlives_a_controller_paused_for_three_timeouts(stall):
    c = stall
    jid = c.submit(f"-w st1 --wrap 'sleep {PAUSE + 10}'")
    wait_for(lambda: show(c, jid, "JobState") == "RUNNING", what="job running")
    pid = pid_of(c, "slurmctld")
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(PAUSE)  # the pause itself
    finally:
        os.kill(pid, signal.SIGCONT)
    assert c.wait_done(jid, timeout=PAUSE + 30) == "COMPLETED"
    assert show(c, jid, "Restarts") == "0"
    log = (c.directory / "log" / "slurmctld.log").read_text()
    assert "event=controller_stalled" in log
    assert "event=node_fail" not in log
    nodes = c.run("sinfo -h -N -o '%N %T'").stdout.split()
    assert "down" not in nodes and "down*" not in nodes


def test_a_node_killed_during_the_pause_is_down_a_timeout_after_the_resume(stall):
    """Runs last: it leaves st2 without an agent (the cluster goes with the module)."""
    c = stall
    kept = c.submit(f"-w st1 --wrap 'sleep {PAUSE + 10}'")
    lost = c.submit(f"-w st2 --wrap 'sleep {PAUSE + 10}'")
    for jid in (kept, lost):
        wait_for(lambda jid=jid: show(c, jid, "JobState") == "RUNNING", what=f"job {jid} running")
    ctld, agent = pid_of(c, "slurmctld"), pid_of(c, "slurmd-st2")
    os.kill(ctld, signal.SIGSTOP)
    try:
        os.kill(agent, signal.SIGKILL)
        wait_for(lambda: not is_live(agent), what="agent st2 dead")
        time.sleep(PAUSE)  # the pause itself
    finally:
        os.kill(ctld, signal.SIGCONT)
    resumed = time.monotonic()

    def st2_down() -> bool:
        return c.run("sinfo -h -n st2 -o %T").stdout.strip().startswith("down")

    wait_for(st2_down, timeout=TIMEOUT + 10, what="st2 DOWN")
    took = time.monotonic() - resumed
    assert TIMEOUT - 0.5 <= took <= TIMEOUT + 4, took  # SlurmdTimeout + a heartbeat (+ polling)
    wait_for(lambda: show(c, lost, "Restarts") == "1", what="job requeued")
    assert c.wait_done(kept, timeout=PAUSE + 30) == "COMPLETED"
    assert show(c, kept, "Restarts") == "0"
    assert show(c, lost, "Restarts") == "1"  # requeued once
