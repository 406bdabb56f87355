"""Daemon behaviour on a cluster of its own: restarts, silence, admin states, keys, real GPUs."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from cli.localcluster import ClusterSpec, down, read_pid, up
from tests.e2e.conftest import BIN, Cluster, wait_for

FAKE_NVML = Path(__file__).resolve().parents[1] / "agent" / "fake_nvml"


@pytest.fixture(scope="module")
def own():
    base = Path(tempfile.mkdtemp(prefix="slurmlite-own-"))
    base.chmod(0o755)
    spec = ClusterSpec(directory=base / "c", nodelist="rs[1-2]", cpus_per_node=2, mem_per_node=2000)
    (base / "work").mkdir(mode=0o777)
    try:
        up(spec, timeout=60)
        yield Cluster(directory=spec.directory, conf=spec.conf, work=base / "work")
    finally:
        down(spec.directory)
        shutil.rmtree(base, ignore_errors=True)


def node_state(c: Cluster, node: str) -> str:
    return c.run(f"sinfo -h -N -n {node} -o %t").stdout.strip()


def test_completion_is_delivered_after_a_controller_restart(own):
    c = own
    # the job ends only once the controller is down (a fixed sleep raced a slow stop under load)
    go = c.work / "go-after-stop"
    jid = c.submit(f"--wrap 'while [ ! -e {go} ]; do sleep 0.1; done; echo done'", cwd=c.work)
    wait_for(
        lambda: c.run(f"squeue -h -j {jid} -o %T").stdout.strip() == "RUNNING", what="job running"
    )
    held = c.submit("--hold --wrap true", cwd=c.work)
    pidfile = c.directory / "run" / "slurmctld.pid"
    pid = read_pid(pidfile)
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not pidfile.exists(), what="controller stopped")
    try:
        go.touch()
        # the job ends while nobody listens; its agent keeps the completion in its spool
        wait_for(
            lambda: list((c.directory / "spool").glob("*/completions/*.json")),
            what="completion spooled",
        )
    finally:  # the module's other tests need the controller, also when this one fails
        subprocess.run(
            [sys.executable, "-m", "controller.main", "-f", str(c.conf)], check=True, env=c.env()
        )
    assert c.wait_done(jid, timeout=30) == "COMPLETED"
    assert (c.work / f"slurm-{jid}.out").read_text() == "done\n"
    # and what was accepted before the restart is still there
    assert c.run(f"squeue -h -j {held} -o '%T %r'").stdout == "PENDING JobHeldUser\n"
    c.run(f"scancel {held}")


def test_a_controller_down_past_slurmdtimeout_does_not_fence_the_runs(own):
    """Agent fencing (agent.cutoff) kills runs only when the controller's host is silent:
    a stopped controller (an upgrade) refuses connections, so its nodes keep running."""
    c = own
    go = c.work / "go-after-outage"
    jid = c.submit(f"--wrap 'while [ ! -e {go} ]; do sleep 0.1; done; echo done'", cwd=c.work)
    wait_for(
        lambda: c.run(f"squeue -h -j {jid} -o %T").stdout.strip() == "RUNNING", what="job running"
    )
    pidfile = c.directory / "run" / "slurmctld.pid"
    os.kill(read_pid(pidfile), signal.SIGTERM)
    wait_for(lambda: not pidfile.exists(), what="controller stopped")
    try:
        # the one wait on time here: nothing happens during it (SlurmdTimeout=5, + margin)
        time.sleep(7)
        go.touch()
    finally:
        subprocess.run(
            [sys.executable, "-m", "controller.main", "-f", str(c.conf)], check=True, env=c.env()
        )
    assert c.wait_done(jid, timeout=30) == "COMPLETED"
    assert (c.work / f"slurm-{jid}.out").read_text() == "done\n"  # it ran on, to its end
    job = c.run(f"scontrol show job {jid}").stdout
    assert "Restarts=0" in job and "ExitCode=0:0" in job


def test_silent_node_is_marked_then_down_then_back(own):
    c = own
    pid = read_pid(c.directory / "run" / "slurmd-rs2.pid")
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_for(lambda: node_state(c, "rs2") == "idle*", what="rs2 not responding")
        wait_for(lambda: node_state(c, "rs2") == "down*", what="rs2 down")
        r = c.run("scontrol show node rs2")
        assert "State=DOWN+NOT_RESPONDING" in r.stdout and "Reason=Not responding" in r.stdout
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: node_state(c, "rs2") == "idle", what="rs2 back (ReturnToService=2)")


def test_admin_drains_and_resumes_a_node(own):
    c = own
    r = c.run("scontrol update nodename=rs1 state=drain reason='disk check'")
    assert r.returncode == 0, r.stderr
    assert node_state(c, "rs1") == "drain"
    jid = c.submit("-w rs1 --wrap true", cwd=c.work)
    wait_for(
        lambda: (
            c.run(f"squeue -h -j {jid} -o %r").stdout.strip()
            == "ReqNodeNotAvail, UnavailableNodes:rs1"
        ),
        what="pending",
    )
    assert "Reason=disk check" in c.run("scontrol show node rs1").stdout
    assert c.run("scontrol update nodename=rs1 state=resume").returncode == 0
    assert c.wait_done(jid) == "COMPLETED"
    assert node_state(c, "rs1") == "idle"


def test_daemons_refuse_a_cluster_key_others_can_read(own, tmp_path):
    conf = tmp_path / "slurm.conf"
    key = tmp_path / "k.key"
    shutil.copy(own.directory / "slurmlite.key", key)
    key.chmod(0o644)
    text = own.conf.read_text().replace(str(own.directory / "slurmlite.key"), str(key))
    conf.write_text(text)
    for module, args in (("controller.main", []), ("agent.main", ["-N", "rs1"])):
        r = subprocess.run(
            [sys.executable, "-m", module, "-D", "-f", str(conf), *args],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode == 1
        assert "accessible by group or others" in r.stderr and "chmod 600" in r.stderr


def test_real_gpus_are_split_among_the_local_nodes(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="slurmlite-gpu-"))
    base.chmod(0o755)
    d = base / "c"
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "FAKE_NVML_GPUS": "4",
        "PYTHONPATH": f"{FAKE_NVML}:{Path(__file__).resolve().parents[2]}",
    }
    try:
        r = subprocess.run(
            ["slurmlite", "cluster", "up", "--dir", str(d), "--nodelist", "gp[1-2]", "--real-gpus"],
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert r.returncode == 0, r.stderr
        c = Cluster(directory=d, conf=d / "slurm.conf", work=base)
        assert (
            c.run("sinfo -h -N -o '%N %G'").stdout
            == "gp1 gpu:nvidia_h200:2\ngp2 gpu:nvidia_h200:2\n"
        )
        jid = c.submit("-w gp2 --gres=gpu:2 --wrap 'echo $CUDA_VISIBLE_DEVICES'", cwd=base)
        assert c.wait_done(jid) == "COMPLETED"
        assert (base / f"slurm-{jid}.out").read_text() == "2,3\n"  # the machine's devices 2 and 3
    finally:
        down(d)
        shutil.rmtree(base, ignore_errors=True)


def test_scontrol_reconfigure_rereads_the_file_without_dropping_jobs(own):
    c = own
    jid = c.submit("--wrap 'sleep 3'", cwd=c.work)
    wait_for(lambda: c.run(f"squeue -h -j {jid} -o %T").stdout.strip() == "RUNNING", what="running")
    original = c.conf.read_text()
    c.conf.write_text(original + "PartitionName=short Nodes=rs1 MaxTime=10 State=UP\n")
    try:
        r = c.run("scontrol reconfigure")
        assert (r.returncode, r.stderr) == (0, "")
        assert c.run("sinfo -o %P").stdout == "PARTITION\ndebug*\nshort\n"
        assert c.run(f"squeue -h -j {jid} -o %T").stdout == "RUNNING\n"
        c.conf.write_text(original + "PartitionName=broken Nodes=nosuchnode\n")
        r = c.run("scontrol reconfigure")
        assert r.returncode == 1
        assert re.fullmatch(
            r"slurm_reconfigure error: Invalid configuration file: slurm\.conf:\d+: "
            r"partition 'broken' names unknown node 'nosuchnode'\n",
            r.stderr,
        )
    finally:
        c.conf.write_text(original)
        c.run("scontrol reconfigure")
    assert c.wait_done(jid) == "COMPLETED"


def test_cluster_up_twice_is_harmless_and_status_lists_the_daemons(own):
    c = own
    before = {p.name: read_pid(p) for p in (c.directory / "run").glob("*.pid")}
    r = c.run(f"slurmlite cluster up --dir {c.directory} --nodelist 'rs[1-2]'")
    assert (r.returncode, r.stdout) == (0, f"cluster in {c.directory} is already up\n")
    assert {
        p.name: read_pid(p) for p in (c.directory / "run").glob("*.pid")
    } == before  # nothing restarted
    r = c.run(f"slurmlite cluster status --dir {c.directory}")
    assert r.returncode == 0
    assert [line.split()[0] for line in r.stdout.splitlines()] == [
        "slurmd-rs1",
        "slurmd-rs2",
        "slurmctld",
    ]
    assert all(line.endswith("running") for line in r.stdout.splitlines())
