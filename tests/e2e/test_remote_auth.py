"""Commands from "another host": over TCP with SLURM_JWT or a munge credential.

A one-node cluster of its own (``slurmlite cluster up``), whose controller
is then restarted with ``AuthType=auth/munge`` (a private munged,
tests/munged.py), ``AuthAltTypes=auth/jwt`` and a JWT key.  The "remote"
slurm.conf is the cluster's with ``SlurmliteSocket`` pointing where nothing
listens, so the commands must use TCP, as on a host without the
controller.  The job outputs show whose uid a job really ran with.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.localcluster import ClusterSpec, down, pid_alive, read_pid, up, wait_idle
from slurmlite import jwt
from tests.e2e.conftest import BIN, run_as, wait_for
from tests.munged import Munged, munged_or_skip

TEST_USER = "slurmlite-remote"


@dataclass
class RemoteCluster:
    conf: Path  # the controller host's slurm.conf (Unix socket)
    remote: Path  # the same cluster seen from another host (TCP only)
    work: Path
    jwt_key: bytes

    def env(self, remote: bool = True, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_"))}
        env["PATH"] = f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}"
        env["SLURM_CONF"] = str(self.remote if remote else self.conf)
        return {**env, **extra}

    def run(self, command: str, remote: bool = True, **extra: str):  # type: ignore[no-untyped-def]
        return subprocess.run(
            ["bash", "-c", command], cwd=self.work, env=self.env(remote, **extra),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    def finished(self, job_id: int) -> str:
        def state() -> str:
            r = self.run(f"squeue -h -t all -j {job_id} -o %T", remote=False)
            s = r.stdout.strip()
            return s if s not in ("", "PENDING", "RUNNING", "COMPLETING", "CONFIGURING") else ""

        return wait_for(state, timeout=30, what=f"job {job_id} to finish")


def _restart_controller(spec: ClusterSpec, lines: str) -> None:
    """Stop slurmctld (by its PID file), add ``lines`` to slurm.conf, start it again."""
    pid = read_pid(spec.directory / "run" / "slurmctld.pid")
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not pid_alive(pid), timeout=20, what="slurmctld to stop")
    with open(spec.conf, "a") as f:
        f.write(lines)
    subprocess.run([sys.executable, "-m", "controller.main", "-f", str(spec.conf)], check=True)
    wait_idle(spec, 60)


@pytest.fixture(scope="module")
def other_user():
    if os.geteuid() != 0:
        pytest.skip("creating a second user needs root")
    created = False
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", TEST_USER], check=True)
        created = True
    try:
        yield pwd.getpwnam(TEST_USER)
    finally:
        if created:
            subprocess.run(["userdel", TEST_USER], check=False)


@pytest.fixture(scope="module")
def rc(other_user):
    binary = munged_or_skip()
    base = Path(tempfile.mkdtemp(prefix="slurmlite-auth-"))
    os.chmod(base, 0o755)  # other users reach the confs, munged's socket and the work dir
    spec = ClusterSpec(directory=base / "c", nodelist="ra1", cpus_per_node=2, mem_per_node=2000)
    daemon = None
    try:
        daemon = Munged.start(base / "munge", binary)
        up(spec, timeout=60)
        key = os.urandom(32)
        key_path = spec.directory / "jwt.key"
        key_path.write_bytes(key)
        key_path.chmod(0o600)
        _restart_controller(
            spec,
            f"AuthType=auth/munge\nAuthInfo=socket={daemon.socket}\nAuthAltTypes=auth/jwt\n"
            f"AuthAltParameters=jwt_key={key_path},max_token_lifespan=3600\n",
        )
        remote = base / "remote" / "slurm.conf"
        remote.parent.mkdir(mode=0o755)
        remote.write_text(spec.conf.read_text() + f"SlurmliteSocket={base}/remote/none.sock\n")
        remote.chmod(0o644)
        work = base / "work"
        work.mkdir()
        work.chmod(0o777)
        yield RemoteCluster(conf=spec.conf, remote=remote, work=work, jwt_key=key)
    finally:
        down(spec.directory)
        if daemon is not None:
            daemon.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_slurm_jwt_from_scontrol_token_works_over_tcp(rc, other_user):
    r = rc.run(f"scontrol token lifespan=600 username={other_user.pw_name}", remote=False)
    assert r.returncode == 0 and r.stdout.startswith("SLURM_JWT="), r.stderr
    token = r.stdout.strip().split("=", 1)[1]
    assert jwt.verify_token(rc.jwt_key, token, time.time()) == other_user.pw_name
    assert rc.run("squeue -h -o %i", SLURM_JWT=token).returncode == 0
    # root's process, bob's token: the job is bob's, and runs with bob's uid
    r = rc.run("sbatch --parsable --wrap 'id -u'", SLURM_JWT=token)
    assert r.returncode == 0, r.stderr
    job = int(r.stdout)
    assert rc.finished(job) == "COMPLETED"
    assert (rc.work / f"slurm-{job}.out").read_text() == f"{other_user.pw_uid}\n"


def test_munge_over_tcp_proves_the_real_user(rc, other_user):
    from cli import sbatch

    assert rc.run("squeue -h -o %i").returncode == 0  # root, munge credential over TCP
    code, out, err = run_as(
        other_user, sbatch.main, ["--parsable", "--wrap", "id -u"], str(rc.work), rc.env()
    )
    assert code == 0, err
    job = int(out)
    assert rc.finished(job) == "COMPLETED"
    assert rc.run(f"squeue -h -t all -j {job} -o %u", remote=False).stdout.strip() == TEST_USER
    assert (rc.work / f"slurm-{job}.out").read_text() == f"{other_user.pw_uid}\n"


def test_expired_and_forged_tokens_are_refused_with_slurms_words(rc):
    now = time.time()
    expired = jwt.make_token(rc.jwt_key, "root", 60, now - 600)  # expired 9 minutes ago
    r = rc.run("squeue", SLURM_JWT=expired)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "",
        "squeue: error: Authentication credential expired: token expired\n"
        "slurm_load_jobs error: Protocol authentication error\n",
    )  # fmt: skip
    forged = jwt.make_token(b"not the key".ljust(32), "root", 600, now)
    r = rc.run("sbatch --wrap true", SLURM_JWT=forged)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "",
        "sbatch: error: Invalid authentication credential: token signature invalid\n"
        "sbatch: error: Batch job submission failed: Protocol authentication error\n",
    )  # fmt: skip


def test_a_user_cannot_mint_a_token_for_root(rc, other_user):
    from cli import scontrol

    def main(argv: list[str]) -> None:
        sys.exit(scontrol.main(argv))  # scontrol.main returns its exit status

    argv = ["token", "username=root"]
    code, out, err = run_as(other_user, main, argv, str(rc.work), rc.env())
    assert (code, out) == (1, "")
    assert err == "scontrol: error: slurm_fetch_token: error with request: Invalid user id\n"
