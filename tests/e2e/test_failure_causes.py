"""Every failure says why, on real clusters: the cause is in ``sacct -o SystemComment``,
``scontrol show job`` and the ``--json`` outputs, and ``slurmlite explain`` gives the fix.

The session cluster (n1, n2) covers launch failures (an ``--output`` directory
that does not exist, a ``--chdir`` that is a file or that the job's user
cannot enter) and an OOM kill.  A cluster of its own (fc1, fc2) has a Prolog
that fails while a marker file exists, and loses an agent for a node
failure (``SlurmdTimeout=5`` there).  The time-limit kill is checked in
``test_batch_jobs.test_time_limit_ends_the_job_with_timeout`` (a minute).
"""

from __future__ import annotations

import json
import os
import pwd
import signal
from collections.abc import Iterator

import pytest

from agent.cgroups import find_mount
from cli.localcluster import read_pid
from tests.agent.jobs import is_live
from tests.e2e.conftest import Cluster, local_cluster, run_as, wait_for

MOUNT = find_mount()
FAIL_MARK = "fail-prologs"


def comment(c: Cluster, jid: int) -> str:
    return c.run(f"sacct -n -P -X -j {jid} -o SystemComment").stdout.strip()


def explain(c: Cluster, jid: int) -> str:
    r = c.run(f"slurmlite explain {jid}")
    assert r.returncode == 0, r.stderr
    return r.stdout


def shown_comment(c: Cluster, jid: int) -> str:
    lines = c.run(f"scontrol show job {jid}").stdout.splitlines()
    found = [x.strip() for x in lines if x.strip().startswith("SystemComment=")]
    return found[0].removeprefix("SystemComment=") if found else ""


def test_an_output_directory_that_does_not_exist(cluster, jobdir):
    jid = cluster.submit("-o 'nosuchdir/out-%j.txt' --wrap 'echo x'", jobdir)
    assert cluster.wait_done(jid) == "FAILED"
    path = f"{jobdir}/nosuchdir/out-{jid}.txt"
    why = f"launch failed on n1: cannot open --output file {path}: No such file or directory"
    node = cluster.run(f"squeue -h -t all -j {jid} -o %N").stdout.strip()
    why = why.replace("on n1", f"on {node}")
    assert comment(cluster, jid) == why
    # Slurm's reason stays; the cause is its own line, before the paths
    assert cluster.run(f"squeue -h -t all -j {jid} -o %r").stdout.strip() == "JobLaunchFailure"
    shown = cluster.run(f"scontrol show job {jid}").stdout
    assert "Reason=JobLaunchFailure " in shown
    assert f"\n   SystemComment={why} \n   StdErr=" in shown
    fix = f"the directory `nosuchdir` does not exist on {node}; create it or point --output at one that does"  # fmt: skip
    assert f"fix: {fix}" in explain(cluster, jid)
    [job] = json.loads(cluster.run(f"squeue --json -t all -j {jid}").stdout)["jobs"]
    assert job["system_comment"] == why
    [job] = json.loads(cluster.run(f"sacct --json -j {jid}").stdout)["jobs"]
    assert job["comment"]["system"] == why


def test_a_chdir_that_is_a_file(cluster, jobdir):
    (jobdir / "afile").write_text("")
    jid = cluster.submit("-D afile --wrap 'echo x'", jobdir)
    assert cluster.wait_done(jid) == "FAILED"
    assert comment(cluster, jid).endswith(f"{jobdir}/afile/slurm-{jid}.out: Not a directory")
    assert f"`{jobdir}/afile` is not a directory" in explain(cluster, jid)


def test_a_chdir_the_user_cannot_enter(cluster, jobdir):
    from cli import sbatch

    locked = jobdir / "locked"
    locked.mkdir(mode=0o700)  # root's: nobody may not enter it
    nobody = pwd.getpwnam("nobody")
    argv = ["--parsable", "-D", str(locked), "--wrap", "echo x"]
    code, out, err = run_as(nobody, sbatch.main, argv, str(jobdir), cluster.env())
    assert code == 0, err
    jid = int(out)
    assert cluster.wait_done(jid) == "FAILED"
    assert comment(cluster, jid).endswith(f"{locked}/slurm-{jid}.out: Permission denied")
    assert shown_comment(cluster, jid) == comment(cluster, jid)
    text = explain(cluster, jid)
    assert f"user nobody may not create or open files in `{locked}`" in text
    assert "--chdir (or --output)" in text


@pytest.mark.skipif(
    MOUNT is None or not MOUNT.memory, reason="the agents need a writable cgroup memory controller"
)
def test_an_oom_kill_says_what_was_used(cluster, jobdir):
    jid = cluster.submit("""--mem=50M --wrap 'python3 -c "b = bytearray(200 << 20)"'""", jobdir)
    assert cluster.wait_done(jid) == "OUT_OF_MEMORY"
    why = comment(cluster, jid)
    assert why.startswith("out of memory on n") and why.endswith("M of --mem=50M"), why
    assert shown_comment(cluster, jid) == why
    used = why.split(" used ")[1].split(" ")[0]
    assert f"fix: ask for more --mem (it used {used})" in explain(cluster, jid)


# ------------------------------------------------- a cluster with a Prolog, losing an agent


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    scripts = tmp_path_factory.mktemp("causes")
    scripts.chmod(0o755)
    prolog = scripts / "prolog.sh"
    prolog.write_text(f"#!/bin/sh\n[ -e {scripts / FAIL_MARK} ] && exit 3\nexit 0\n")
    prolog.chmod(0o755)
    with local_cluster(
        "slurmlite-causes-",
        nodelist="fc[1-2]",
        cpus_per_node=1,
        mem_per_node=1000,
        extra_conf=(f"Prolog={prolog}", "PrologEpilogTimeout=20"),
    ) as c:
        c.scripts = scripts  # type: ignore[attr-defined]
        yield c


def test_a_failing_prolog_names_the_script_the_node_and_the_exit(failing):
    c = failing
    marker = c.scripts / FAIL_MARK  # type: ignore[attr-defined]
    marker.touch()
    try:
        jid = c.submit("-w fc1 --wrap 'echo x'", c.new_workdir())
        wait_for(lambda: comment(c, jid), 30, "the prolog's failure recorded")
    finally:
        marker.unlink()
    prolog = c.scripts / "prolog.sh"  # type: ignore[attr-defined]
    assert comment(c, jid) == f"prolog {prolog} failed on fc1 with exit 3"
    assert shown_comment(c, jid) == comment(c, jid)
    assert c.run(f"squeue -h -j {jid} -o %r").stdout.strip() == "launch failed requeued held"
    c.run(f"scancel {jid}")


def test_a_node_that_stops_answering_is_named_with_when(failing):
    c = failing
    jid = c.submit("-w fc2 --no-requeue --wrap 'sleep 1000'", c.new_workdir())
    launch = c.directory / "spool" / "fc2" / f"job{jid}" / "launch.json"
    meta = wait_for(lambda: launch.exists() and json.loads(launch.read_text()), 30, "running")
    agent = read_pid(c.directory / "run" / "slurmd-fc2.pid")
    assert agent is not None
    os.kill(agent, signal.SIGKILL)
    wait_for(lambda: not is_live(agent), what="agent fc2 dead")
    os.killpg(meta["pid"], signal.SIGKILL)  # the job dies with its node
    os.kill(meta["wrapper_pid"], signal.SIGKILL)
    assert c.wait_done(jid, timeout=30) == "NODE_FAIL"
    why = comment(c, jid)
    assert why.startswith("node fc2 stopped answering at "), why
    assert "(no heartbeat for 00:00:0" in why and why.endswith("; job failed"), why
    assert shown_comment(c, jid) == why
    text = explain(c, jid)
    assert f"why: {why}" in text and "fix: the node failed, not the job" in text
