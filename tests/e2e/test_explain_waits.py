"""``slurmlite explain`` of a job that can never run, and an interactive allocation held
back by the user's own QOS limit, on real daemons.

A cluster of its own (``w[1-2]``: 2 CPUs, 2000 MB each), so that changing QOS
``normal`` with the real ``sacctmgr`` cannot disturb the session cluster's tests.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.e2e.conftest import Cluster, local_cluster, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the local cluster runs jobs as root")


@pytest.fixture(scope="module")
def waits():
    with local_cluster(
        "slurmlite-waits-",
        nodelist="w[1-2]",
        cpus_per_node=2,
        mem_per_node=2000,
        cluster_name="waits",
        def_mem_per_cpu=500,
    ) as c:
        yield c


def _state(c: Cluster, job: int) -> str:
    return c.run(f"squeue -h -t all -j {job} -o %T").stdout.strip()


def test_explain_of_more_nodes_than_the_partition_has_says_never_and_the_fix(waits):
    job = waits.submit("-N 4 -t 5 --wrap true")
    try:
        wait_for(
            lambda: waits.run(f"squeue -h -j {job} -o %r").stdout.strip() == "PartitionNodeLimit",
            what="PartitionNodeLimit",
        )
        r = waits.run(f"slurmlite explain {job}")
        assert r.returncode == 0, r.stderr
        assert "reason PartitionNodeLimit" in r.stdout
        assert "Estimated start: never, as asked\n" in r.stdout
        assert "Blocked by:\n  partition debug has 2 nodes; ask for -N 2 or fewer\n" in r.stdout
    finally:
        waits.run(f"scancel {job}")
        waits.wait_done(job)


@pytest.mark.parametrize("command", ["salloc", "srun"])
def test_an_allocation_held_by_max_jobs_per_user_says_so_then_runs(waits, command, tmp_path):
    # one running job per user: while the batch job runs, the interactive one waits
    # with Slurm's lines and one more naming the limit; it runs once the batch job ends
    r = waits.run("sacctmgr -i modify qos normal set MaxJobsPerUser=1")
    assert r.returncode == 0, r.stderr
    first, proc = 0, None
    err = tmp_path / "stderr"
    try:
        first = waits.submit("-t 5 --wrap 'sleep 120'")
        wait_for(lambda: _state(waits, first) == "RUNNING", what="the batch job to run")
        with err.open("w") as sink:
            proc = subprocess.Popen(
                [command, "-t", "5", "-n", "1", "true"],
                cwd=waits.work,
                env=waits.env(),
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )
        limit = (
            f"{command}: your QOS normal allows 1 running job per user; "
            f"1 of your jobs ({first}) is running"
        )
        wait_for(lambda: limit in err.read_text(), what="the limit line")
        waits.run(f"scancel {first}")
        assert proc.wait(timeout=60) == 0, err.read_text()
        lines = err.read_text().splitlines()
        job = int(lines[0].split()[-1] if command == "salloc" else lines[0].split()[2])
        queued = [f"{command}: job {job} queued and waiting for resources", limit]
        if command == "salloc":
            queued.insert(0, f"salloc: Pending job allocation {job}")
        assert lines[: len(queued)] == queued
        assert lines.count(limit) == 1  # said once
        assert f"{command}: job {job} has been allocated resources" in lines
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        waits.run("sacctmgr -i modify qos normal set MaxJobsPerUser=-1")
        if first:
            waits.run(f"scancel {first}")
            waits.wait_done(first)
