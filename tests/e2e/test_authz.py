"""Who may do what to a job, with real Unix users on the session cluster.

A second user (created here with ``useradd``, removed afterwards) runs the
commands' ``main`` in a forked child that became that user (``run_as``), so
the controller sees their uid through the socket's peer credentials.  Texts
and exit codes are Slurm's (golden 51_*): another user's hold, release or
update is "Invalid user id", a cancel or requeue "Access/permission denied".
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.conftest import run_as, wait_for

USER = "slurmlite-carol"


@pytest.fixture(scope="module")
def carol() -> Iterator[pwd.struct_passwd]:
    if os.geteuid() != 0:
        pytest.skip("creating a second user needs root")
    created = False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", USER], check=True)
        created = True
    try:
        yield pwd.getpwnam(USER)
    finally:
        if created:
            subprocess.run(["userdel", USER], check=False)


def as_user(cluster, user, command: str, args: list[str], cwd: Path) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    """``command args`` as ``user``: (exit status, stdout, stderr)."""
    from cli import sacct, sbatch, scancel, scontrol, squeue

    mains: dict[str, Callable[[list[str]], object]] = {
        "sbatch": sbatch.main, "scancel": scancel.main, "scontrol": scontrol.main,
        "squeue": squeue.main, "sacct": sacct.main,
    }  # fmt: skip
    main = mains[command]

    def exiting(argv: list[str]) -> None:
        status = main(argv)
        sys.exit(status if isinstance(status, int) else 0)

    env = cluster.env(HOME="/tmp", USER=user.pw_name)
    return run_as(user, exiting, args, str(cwd), env)


def running_with_pid(cluster, jobdir: Path, job: int) -> int:  # type: ignore[no-untyped-def]
    """Wait until ``job`` runs and has written its shell's pid; return that pid."""
    pidfile = jobdir / f"pid-{job}"
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), what=f"job {job} to run")
    return int(pidfile.read_text())


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def job_line(cluster, job: int, fmt: str = "%T %r %l") -> str:  # type: ignore[no-untyped-def]
    return cluster.run(f"squeue -h -t all -j {job} -o '{fmt}'").stdout.strip()


def sleeper(cluster, jobdir: Path, extra: str = "") -> int:  # type: ignore[no-untyped-def]
    return cluster.submit(f"{extra} --wrap 'echo $$ > pid-$SLURM_JOB_ID; exec sleep 300'", jobdir)


@contextmanager
def extra_config(cluster, line: str) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """``line`` added to slurm.conf and applied with ``scontrol reconfigure``, then undone."""
    original = cluster.conf.read_text()
    cluster.conf.write_text(original + line + "\n")
    try:
        r = cluster.run("scontrol reconfigure")
        assert r.returncode == 0, r.stderr
        yield
    finally:
        cluster.conf.write_text(original)
        cluster.run("scontrol reconfigure")


# ------------------------------------------------------------------ tests


def test_another_user_can_neither_stop_nor_change_roots_job(cluster, carol, jobdir):
    job = sleeper(cluster, jobdir, "-t 30")
    pid = running_with_pid(cluster, jobdir, job)
    j = str(job)
    denied = "Access/permission denied"
    invalid = "Invalid user id"
    for command, args, want in [
        ("scancel", [j], (210, "", f"scancel: error: Kill job error on job id {j}: {denied}\n")),
        ("scancel", ["-s", "KILL", j], (210, "", f"scancel: error: Kill job error on job id {j}: {denied}\n")),
        ("scontrol", ["hold", j], (1, "", f"{invalid} for job {j}\nslurm_suspend error: {invalid}\n")),
        ("scontrol", ["uhold", j], (1, "", f"{invalid} for job {j}\nslurm_suspend error: {invalid}\n")),
        ("scontrol", ["release", j], (1, "", f"{invalid} for job {j}\nslurm_suspend error: {invalid}\n")),
        ("scontrol", ["requeue", j], (1, "", f"{denied} for job {j}\n")),
        ("scontrol", ["update", f"JobId={j}", "TimeLimit=5"], (1, "", f"{invalid} for job {j}\n")),
        ("scontrol", ["update", f"JobId={j}", "Comment=mine"], (1, "", f"{invalid} for job {j}\n")),
    ]:  # fmt: skip
        assert as_user(cluster, carol, command, args, jobdir) == want, (command, args)
    # the job runs on untouched: same state, limit, run (restart count) and process
    assert job_line(cluster, job, "%T %r %l %R") == "RUNNING None 30:00 n1"
    assert "Restarts=0" in cluster.run(f"scontrol show job {job}").stdout
    assert alive(pid)
    # root may do all of it
    for command in [
        f"scontrol update JobId={job} TimeLimit=60 Comment=roots",
        f"scontrol hold {job}",
        f"scontrol release {job}",
    ]:
        r = cluster.run(command)
        assert (r.returncode, r.stderr) == (0, ""), command
    assert job_line(cluster, job) == "RUNNING None 1:00:00"
    assert cluster.run(f"scontrol requeue {job}").returncode == 0
    assert job_line(cluster, job) == "PENDING BeginTime 1:00:00"
    wait_for(lambda: not alive(pid), what="the requeued run's process to end")
    assert cluster.run(f"scancel {job}").returncode == 0
    assert cluster.wait_done(job) == "CANCELLED"


def test_root_acts_on_another_users_job_and_the_owner_lowers_but_never_raises(
    cluster, carol, jobdir
):
    code, out, err = as_user(
        cluster,
        carol,
        "sbatch",
        ["--parsable", "-t", "10", "--wrap", "echo $$ > pid-$SLURM_JOB_ID; exec sleep 300"],
        jobdir,
    )
    assert code == 0, err
    job = int(out)
    pid = running_with_pid(cluster, jobdir, job)
    assert os.stat(f"/proc/{pid}").st_uid == carol.pw_uid
    j = str(job)
    # the owner may lower a running job's limit, not raise it (not even back)
    assert as_user(cluster, carol, "scontrol", ["update", f"JobId={j}", "TimeLimit=5"], jobdir) == (
        0,
        "",
        "",
    )
    refused = (1, "", f"Access/permission denied for job {j}\n")
    for limit in ("10", "UNLIMITED"):
        args = ["update", f"JobId={j}", f"TimeLimit={limit}"]
        assert as_user(cluster, carol, "scontrol", args, jobdir) == refused
    assert job_line(cluster, job) == "RUNNING None 5:00"
    # root: raise it, requeue it held, cancel it
    assert cluster.run(f"scontrol update JobId={j} TimeLimit=20").returncode == 0
    assert job_line(cluster, job) == "RUNNING None 20:00"
    assert cluster.run(f"scontrol requeuehold {j}").returncode == 0
    # requeuehold: a user hold; squeue's reason column shows its description, as Slurm's
    assert job_line(cluster, job) == "PENDING job requeued in held state 20:00"
    wait_for(lambda: not alive(pid), what="the requeued run's process to end")
    # her own user hold she may release herself
    assert as_user(cluster, carol, "scontrol", ["release", j], jobdir) == (0, "", "")
    assert cluster.run(f"scancel {j}").returncode == 0
    assert cluster.wait_done(job) == "CANCELLED"


def test_node_administration_is_for_admins_only(cluster, carol, jobdir):
    args = ["update", "NodeName=n2", "State=DRAIN", "Reason=mine"]
    assert as_user(cluster, carol, "scontrol", args, jobdir) == (
        1,
        "",
        "slurm_update error: Invalid user id\n",
    )
    assert cluster.run("sinfo -h -n n2 -o %T").stdout.strip() in ("idle", "mixed", "allocated")
    assert cluster.run("scontrol update NodeName=n2 State=DRAIN Reason=test").returncode == 0
    try:
        assert "drain" in cluster.run("sinfo -h -n n2 -o %T").stdout
    finally:
        assert cluster.run("scontrol update NodeName=n2 State=RESUME").returncode == 0
    assert "drain" not in cluster.run("sinfo -h -n n2 -o %T").stdout


def test_slurmlite_admin_users_may_act_on_others_jobs(cluster, carol, jobdir):
    job = sleeper(cluster, jobdir, "--hold")  # root's, held: it never starts
    j = str(job)
    assert as_user(cluster, carol, "scontrol", ["release", j], jobdir)[0] == 1
    with extra_config(cluster, f"SlurmliteAdminUsers={USER}"):
        for args in (["release", j], ["hold", j], ["update", f"JobId={j}", "Comment=by-carol"]):
            assert as_user(cluster, carol, "scontrol", args, jobdir) == (0, "", ""), args
        assert job_line(cluster, job, "%T %r %k") == "PENDING JobHeldAdmin by-carol"
        assert as_user(cluster, carol, "scancel", [j], jobdir) == (0, "", "")
    assert cluster.wait_done(job) == "CANCELLED"
    # no longer an admin once the line is gone
    other = sleeper(cluster, jobdir, "--hold")
    assert as_user(cluster, carol, "scancel", [str(other)], jobdir)[0] == 210
    cluster.run(f"scancel {other}")


def test_private_data_jobs_hides_other_users_jobs(cluster, carol, jobdir):
    roots = sleeper(cluster, jobdir, "--hold")
    code, out, err = as_user(
        cluster, carol, "sbatch", ["--parsable", "--hold", "--wrap", "true"], jobdir
    )
    assert code == 0, err
    hers = int(out)
    try:
        both = sorted([str(roots), str(hers)])

        def squeue_as_carol() -> list[str]:
            listing = ["-h", "-o", "%i", "-j", f"{roots},{hers}"]
            return sorted(as_user(cluster, carol, "squeue", listing, jobdir)[1].split())

        assert squeue_as_carol() == both  # the default: everyone sees every job
        with extra_config(cluster, "PrivateData=jobs"):
            assert squeue_as_carol() == [str(hers)]
            code, out, err = as_user(
                cluster, carol, "scontrol", ["show", "job", str(roots)], jobdir
            )
            assert (code, err) == (1, "slurm_load_jobs error: Invalid job id specified\n")
            accounting = ["-a", "-X", "-n", "-o", "JobID", "-j", f"{roots},{hers}"]
            assert as_user(cluster, carol, "sacct", accounting, jobdir)[1].split() == [str(hers)]
            seen = cluster.run(f"squeue -h -o %i -j {roots},{hers}").stdout.split()
            assert sorted(seen) == both  # root sees everyone's
    finally:
        cluster.run(f"scancel {roots} {hers}")
