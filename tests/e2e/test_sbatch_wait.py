"""``sbatch -W/--wait`` on the session cluster: sbatch returns when the job has ended,
with its exit code (an array's highest), non-zero for a cancelled job; Ctrl-C stops
only the waiting."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the local cluster runs jobs as root")


def test_a_job_that_exits_3_makes_sbatch_exit_3(cluster, jobdir: Path) -> None:
    r = cluster.run("sbatch --wait --wrap 'echo ran; exit 3'", cwd=jobdir)
    assert r.returncode == 3, r.stderr
    job = int(r.stdout.removeprefix("Submitted batch job "))
    assert cluster.run(f"sacct -n -X -P -j {job} -o State,ExitCode").stdout.split() == [
        "FAILED|3:0"
    ]
    assert (jobdir / f"slurm-{job}.out").read_text() == "ran\n"  # written before sbatch ends


def test_a_completed_job_exits_0_and_parsable_prints_the_bare_id(cluster, jobdir: Path) -> None:
    r = cluster.run("sbatch -W --parsable --wrap 'echo done'", cwd=jobdir)
    assert r.returncode == 0, r.stderr
    job = int(r.stdout)
    assert cluster.run(f"squeue -h -t all -j {job} -o %T").stdout.strip() == "COMPLETED"
    assert (jobdir / f"slurm-{job}.out").read_text() == "done\n"


def test_an_array_gives_its_highest_exit_code(cluster, jobdir: Path) -> None:
    r = cluster.run("sbatch --wait --array=0-2 --wrap 'exit $SLURM_ARRAY_TASK_ID'", cwd=jobdir)
    assert r.returncode == 2, (r.stdout, r.stderr)


def test_a_directive_asks_for_waiting_too(cluster, jobdir: Path) -> None:
    (jobdir / "w.sh").write_text("#!/bin/sh\n#SBATCH --wait\nexit 4\n")
    assert cluster.run("sbatch w.sh", cwd=jobdir).returncode == 4


def waiting_sbatch(cluster, jobdir: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        ["sbatch", "--wait", "--parsable", "--wrap", "sleep 60"],
        cwd=jobdir,
        env=cluster.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    job = int(proc.stdout.readline())  # printed before the waiting starts
    wait_for(
        lambda: cluster.run(f"squeue -h -j {job} -o %T").stdout.strip() == "RUNNING",
        what=f"job {job} to run",
    )
    return proc, job


def test_a_cancelled_job_makes_sbatch_fail(cluster, jobdir: Path) -> None:
    proc, job = waiting_sbatch(cluster, jobdir)
    try:
        cluster.run(f"scancel {job}")
        assert proc.wait(timeout=30) == 1
    finally:
        proc.kill()
        proc.communicate()


def test_ctrl_c_stops_the_waiting_not_the_job(cluster, jobdir: Path) -> None:
    proc, job = waiting_sbatch(cluster, jobdir)
    try:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130
        assert f"stopped waiting; job {job} goes on" in err
        assert cluster.run(f"squeue -h -j {job} -o %T").stdout.strip() == "RUNNING"
    finally:
        proc.kill()
        cluster.run(f"scancel {job}")
        cluster.wait_done(job)
