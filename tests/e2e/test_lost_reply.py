"""sbatch against a frozen controller: an error means no job, an id means exactly one.

A cluster of its own whose slurm.conf says ``MessageTimeout=3`` (commands
read it on every run).  The controller is frozen with SIGSTOP:

* for longer than MessageTimeout: sbatch gives up with Slurm's line and
  exit 1; once the controller is continued it reads the stale attempts,
  finds their deadline passed (``event=submit_too_late`` in its log, one per
  attempt) and stores nothing;
* for a second (less than MessageTimeout): sbatch prints one id, and that
  job is the only one.

The pauses are the only sleeps; the controller is continued in a
``finally`` and the cluster is stopped by PID.  The one time bound asserted
is generous (4 x MessageTimeout, against 60 s before).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Cluster, local_cluster, wait_for
from tests.e2e.test_stall import pid_of

MESSAGE_TIMEOUT = 3
TIMED_OUT = "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"


@pytest.fixture(scope="module")
def frozen() -> Iterator[Cluster]:
    with local_cluster("slurmlite-lostreply-", nodelist="lr1", cpus_per_node=2) as c:
        with c.conf.open("a") as conf:
            conf.write(f"MessageTimeout={MESSAGE_TIMEOUT}\n")
        yield c


def all_jobs(c: Cluster) -> list[str]:
    return c.run("squeue -h -t all -o %i").stdout.split()


def too_late_lines(c: Cluster) -> int:
    return (c.directory / "log" / "slurmctld.log").read_text().count("event=submit_too_late")


def test_sbatch_against_a_controller_frozen_past_message_timeout_creates_nothing(frozen):
    c = frozen
    ctld = pid_of(c, "slurmctld")
    os.kill(ctld, signal.SIGSTOP)
    try:
        started = time.monotonic()
        r = c.run("sbatch --parsable --wrap true", timeout=60)
        took = time.monotonic() - started
    finally:
        os.kill(ctld, signal.SIGCONT)
    assert r.returncode == 1, r.stdout
    assert r.stdout == "" and r.stderr == TIMED_OUT
    assert took < 4 * MESSAGE_TIMEOUT, took  # not the 60 s of before
    # the first attempt and the last try, both read once the controller runs again
    wait_for(lambda: too_late_lines(c) >= 2, what="stale attempts refused")
    assert all_jobs(c) == []
    fresh = c.submit("--wrap true")
    assert c.wait_done(fresh) == "COMPLETED"
    assert all_jobs(c) == [str(fresh)]


def test_sbatch_against_a_controller_frozen_briefly_makes_exactly_one_job(frozen):
    c = frozen
    before = set(all_jobs(c))
    ctld = pid_of(c, "slurmctld")
    os.kill(ctld, signal.SIGSTOP)
    try:
        proc = subprocess.Popen(
            ["bash", "-c", "sbatch --parsable --wrap true"],
            cwd=c.work,
            env=c.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1)  # the pause itself, under MessageTimeout
    finally:
        os.kill(ctld, signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    jid = int(out.strip())
    assert c.wait_done(jid) == "COMPLETED"
    assert set(all_jobs(c)) - before == {str(jid)}
