"""srun and salloc on the real local cluster (n1, n2: 2 CPUs, 2 GPUs each), as users type them.

Each test compares with what Slurm 22.05 prints (golden ``17_srun_*``,
``60_stepfail_job_output``, ``60_sacct_torchx``) or with spec §7.  They need
the controller's step routes and the agents' ``/v1/steps``: until both
answer, the whole module is skipped with the reason (``steps_ready``).
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import signal
import subprocess
import termios
import urllib.request

import pytest

from cli.client import ControllerClient
from slurmlite.errors import SlurmError
from tests.e2e.conftest import wait_for


@pytest.fixture(scope="module")
def steps_ready(cluster):
    """Skip unless the controller has ``POST /v1/jobs/{id}/steps`` and the agents ``/v1/steps``."""
    client = ControllerClient.from_env("srun", str(cluster.conf))
    try:
        client.request("POST", "/v1/jobs/2147483000/steps", {"argv": ["true"], "work_dir": "/"})
    except SlurmError as e:
        if "HTTP 404" in (e.detail or "") or "HTTP 405" in (e.detail or ""):
            pytest.skip("the controller has no step route yet (POST /v1/jobs/{id}/steps)")
    node = client.get_nodes()[0]
    try:
        with urllib.request.urlopen(f"http://{node.addr}:{node.port}/openapi.json", timeout=5) as r:
            paths = json.load(r).get("paths", {})
    except OSError as e:
        pytest.skip(f"agent {node.name} not reachable for its API description: {e}")
    if "/v1/steps" not in paths:
        pytest.skip("the agents have no step route yet (POST /v1/steps)")
    return cluster


@pytest.fixture
def c(steps_ready):
    return steps_ready


def test_labelled_tasks_over_two_nodes(c):
    # golden 17_srun_label_hostname: srun -N2 -n4 -l hostname | sort
    r = c.run("srun -N2 -n4 -l printenv SLURMD_NODENAME | sort")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0: n1", "1: n1", "2: n2", "3: n2"]  # block layout
    assert r.stderr == ""  # started at once: nothing from srun (golden 17_srun_step_in_env)


def test_step_zero_of_an_srun_allocation(c):
    r = c.run("srun -n1 printenv SLURM_JOB_ID SLURM_STEP_ID SLURM_STEPID SLURM_NTASKS SLURM_PROCID")
    assert r.returncode == 0, r.stderr
    job, *rest = r.stdout.split()
    assert job.isdigit() and rest == ["0", "0", "1", "0"]  # golden 17_srun_step_in_env
    assert c.wait_done(job) == "COMPLETED"


def test_exit_status_is_the_worst_task_and_failures_are_named(c):
    r = c.run("srun -N2 -n2 sh -c 'exit $((SLURM_PROCID + 2))'")
    assert r.returncode == 3  # tasks exited 2 and 3
    assert sorted(r.stderr.splitlines()) == [
        "srun: error: n1: task 0: Exited with exit code 2",
        "srun: error: n2: task 1: Exited with exit code 3",
    ]
    r = c.run("srun -n1 sh -c 'kill -9 $$'")
    assert r.returncode == 128 + 9 and "srun: error: n1: task 0: Killed" in r.stderr


def test_stdin_is_piped_to_the_task(c):
    # snakemake's jobstep: the rule's script on srun's stdin, `sh -s` runs it
    r = c.run("printf 'echo one\\necho two\\n' | srun -n1 sh -s")
    assert (r.returncode, r.stdout) == (0, "one\ntwo\n"), r.stderr


def test_a_failing_step_in_a_batch_script(c, jobdir):
    # golden 60_stepfail_job_output and 60_sacct_torchx
    (jobdir / "stepfail.sh").write_text("#!/bin/bash\nsrun false\necho after\n")
    jid = c.submit("-J stepfail stepfail.sh", cwd=jobdir)
    assert c.wait_done(jid) == "COMPLETED"
    text = (jobdir / f"slurm-{jid}.out").read_text()
    assert re.fullmatch(r"srun: error: n[12]: task 0: Exited with exit code 1\nafter\n", text)
    r = c.run(f"sacct --parsable2 --noheader -j {jid} -o JobID,JobName,State,ExitCode")
    assert r.stdout.splitlines() == [
        f"{jid}|stepfail|COMPLETED|0:0",
        f"{jid}.batch|batch|COMPLETED|0:0",
        f"{jid}.0|false|FAILED|1:0",
    ]


def test_salloc_runs_a_command_with_the_allocation_and_steps_inside_it(c):
    r = c.run("salloc -N2 sh -c 'echo $SLURM_NNODES $SLURM_JOB_NODELIST; srun -l hostname | wc -l'")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["2 n[1-2]", "2"]  # one task per node by default
    jid = re.search(r"Granted job allocation (\d+)", r.stderr).group(1)
    assert f"salloc: Relinquishing job allocation {jid}" in r.stderr
    assert c.wait_done(jid) == "COMPLETED"


def test_a_second_step_waits_for_a_busy_one(c):
    script = "srun -n2 sleep 3 & sleep 1; srun -n2 true; wait"  # both want the job's 2 CPUs
    r = c.run(f"salloc -N1 -n2 bash -c '{script}'", timeout=60)
    assert r.returncode == 0, r.stderr
    assert re.search(
        r"srun: Job (\d+) step creation temporarily disabled, retrying \(Requested nodes are busy\)\n"
        r"srun: Step created for StepId=\1\.1",
        r.stderr,
    ), r.stderr


def test_a_step_inside_a_running_batch_job(c, jobdir):
    jid = c.submit("--wrap 'sleep 60'", cwd=jobdir)
    wait_for(lambda: c.run(f"squeue -h -j {jid} -o %T").stdout.strip() == "RUNNING", what="running")
    r = c.run(f"srun --jobid {jid} --overlap printenv SLURM_JOB_ID SLURM_STEP_ID")
    assert (r.returncode, r.stdout.split()) == (0, [str(jid), "0"]), r.stderr
    c.run(f"scancel {jid}")


def test_two_ctrl_c_abort_the_step(c):
    proc = subprocess.Popen(
        ["srun", "-n1", "sleep", "60"], cwd=c.work, env=c.env(), stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(
            lambda: re.search(r"\.0\|RUNNING", c.run("sacct -n -P -o JobID,State").stdout),
            what="step running",
        )
        proc.send_signal(signal.SIGINT)
        assert proc.stderr.readline() == "srun: interrupt (one more within 1 sec to abort)\n"
        assert re.fullmatch(r"srun: StepId=\d+\.0 task 0: running\n", proc.stderr.readline())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 128 + signal.SIGINT
        assert "srun: sending Ctrl-C to StepId=" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_pty_gives_task_0_a_terminal(c):
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["srun", "-n1", "--pty", "sh", "-c", "test -t 0 && test -t 1 && echo tty-$SLURM_PROCID"],
        cwd=c.work, env=c.env(), stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    seen = b""
    try:
        assert proc.wait(timeout=60) == 0
        while b"tty-0" not in seen:
            try:
                chunk = os.read(master, 1024)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert b"tty-0" in seen, seen


def test_rank_variables_for_pytorch(c):
    r = c.run(
        "srun -N2 --ntasks-per-node=2 sh -c "
        "'echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $MASTER_ADDR' | sort"
    )
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    # RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK: 2 nodes x 2 tasks, block layout
    assert [row[:5] for row in rows] == [
        [str(rank), "4", str(rank % 2), "2", str(rank // 2)] for rank in range(4)
    ]
    assert len({row[5] for row in rows}) == 1  # one MASTER_ADDR: the step's first node


def test_gpus_per_task_gives_each_task_its_own_gpus(c):
    # n1 and n2 have 2 (fake) GPUs each: 2 tasks x 1 GPU on one node -> distinct devices
    r = c.run(
        "srun -N1 -n2 --gpus-per-task=1 sh -c 'echo $SLURM_PROCID $CUDA_VISIBLE_DEVICES' | sort"
    )
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    assert [row[0] for row in rows] == ["0", "1"]
    devices = [row[1] for row in rows]
    assert len(set(devices)) == 2 and all(d in ("0", "1") for d in devices), rows


def _own_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_an_interactive_shell_inside_a_running_job(c, jobdir):
    jid = c.submit("--wrap 'sleep 60'", cwd=jobdir)
    wait_for(lambda: c.run(f"squeue -h -j {jid} -o %T").stdout.strip() == "RUNNING", what="running")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["srun", "--jobid", str(jid), "--overlap", "--pty", "bash", "--norc", "-i"],
        cwd=c.work, env=c.env(), stdin=slave, stdout=slave, stderr=slave,
        preexec_fn=_own_terminal,  # as in a login: the terminal is srun's controlling tty
    )  # fmt: skip
    os.close(slave)
    seen = b""
    try:
        os.write(master, b"echo inside-$SLURM_JOB_ID-$SLURM_STEP_ID; exit 3\n")
        while b"inside-" + str(jid).encode() not in seen:
            try:
                chunk = os.read(master, 1024)
            except OSError:  # EIO: the terminal closed
                break
            if not chunk:
                break
            seen += chunk
        code = proc.wait(timeout=60)
        while True:
            try:
                more = os.read(master, 1024)
            except OSError:
                break
            if not more:
                break
            seen += more
        assert code == 3, seen  # the shell's own exit status comes back
    finally:
        os.close(master)
        proc.kill()
        proc.wait()
        c.run(f"scancel {jid}")
    assert re.search(rb"inside-%d-\d+" % jid, seen), seen
