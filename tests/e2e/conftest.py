"""A real local cluster for end-to-end tests: one slurmctld and two slurmd on loopback.

It mirrors the cluster the golden files were captured on (``anchor``: nodes
n1 and n2 with 2 CPUs, 4000 MB and 2 GPUs each, partitions ``debug``
(default) and ``long``, ``DefMemPerCPU=1000``), so commands can be compared
with ``golden/slurm-22.05``.  Daemons are started by ``slurmlite cluster up``
and stopped by PID in the fixture's finaliser, even when tests fail.

After every test, ``invariants_hold`` reads the store of each cluster the
test used (any fixture value with a ``conf`` slurm.conf: ``Cluster`` and the
files' own cluster objects) and fails the test with the violations of the
store's invariants (``controller.sched.invariants``), read-only and without
a daemon of its own.  The rules hold at every committed moment, so a test
that ends with a job still running or completing passes.
"""

from __future__ import annotations

import itertools
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli.localcluster import ClusterSpec, down, up
from controller.sched.invariants import check
from controller.store.db import Database
from slurmlite.config import load_config

BIN = Path(sys.executable).parent


@dataclass
class Cluster:
    directory: Path
    conf: Path
    work: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "SBATCH_", "SQUEUE_"))
        }
        env["PATH"] = f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}"
        env["SLURM_CONF"] = str(self.conf)
        env["TZ"] = "UTC"
        env.update(extra)
        return env

    def run(self, command: str, cwd: Path | None = None, timeout: float = 60, **extra: str):
        """Run a shell command line as a user would type it."""
        return subprocess.run(
            ["bash", "-c", command],
            cwd=cwd or self.work,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def wait_done(self, job_id: int | str, timeout: float = 30.0) -> str:
        """Wait until the job has left the queue; return its final state."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.run(f"squeue -h -t all -j {job_id} -o %T")
            state = r.stdout.strip()
            if state and state not in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING"):
                return state
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} still {state!r} after {timeout} s")

    def new_workdir(self) -> Path:
        """A fresh directory every user can write to (jobs may run as other users)."""
        path = self.work / f"w{next(_counter)}"
        path.mkdir(mode=0o777)
        path.chmod(0o777)
        return path

    def submit(self, args: str, cwd: Path | None = None) -> int:
        r = self.run(f"sbatch --parsable {args}", cwd=cwd)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.strip())


_counter = itertools.count()


def wait_for(check, timeout: float = 20.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    """Poll ``check`` until it returns something true (returned); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def fake_gpu_state(tmp_path: Path, monkeypatch: Any, state: dict[str, Any]) -> Path:
    """Write the fake GPUs' state file (``slurmlite.fakegpu``) and point
    ``$SLURMLITE_FAKE_GPU_STATE`` at it, for the daemons started afterwards to inherit;
    readable by the jobs' users (the file and its directory)."""
    from slurmlite import fakegpu

    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(state))
    path.chmod(0o644)
    tmp_path.chmod(0o755)
    monkeypatch.setenv(fakegpu.ENV, str(path))
    return path


@contextmanager
def local_cluster(prefix: str, **spec: Any) -> Iterator[Cluster]:
    """A cluster of its own (``ClusterSpec`` fields as keywords), stopped by PID and
    removed afterwards, even when the test fails."""
    # not under pytest's private tmp dir: other users must reach SLURM_CONF and the work dirs
    base = Path(tempfile.mkdtemp(prefix=prefix))
    cluster_spec = ClusterSpec(directory=base / "c", **spec)
    work = base / "work"
    work.mkdir()
    os.chmod(base, 0o755)
    os.chmod(work, 0o777)
    try:
        up(cluster_spec, timeout=60)
        yield Cluster(directory=cluster_spec.directory, conf=cluster_spec.conf, work=work)
    finally:
        down(cluster_spec.directory)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def cluster():
    with local_cluster(
        "slurmlite-e2e-",
        nodelist="n[1-2]",
        cpus_per_node=2,
        gpus_per_node=2,
        mem_per_node=4000,
        cluster_name="anchor",
        def_mem_per_cpu=1000,
        extra_partitions=("long Nodes=ALL MaxTime=UNLIMITED State=UP PriorityJobFactor=10",),
        # the anchor gathered no usage (jobacct_gather/none): sacct's usage columns stay blank
        extra_conf=("JobAcctGatherFrequency=0",),
    ) as c:
        yield c


def store_violations(conf: Path) -> list[str]:
    """The invariants broken in the store of the cluster that ``conf`` describes, one line each."""
    cfg = load_config(str(conf))
    db = Database(cfg.store_url)
    try:
        return [v.line() for v in check(db, cfg, time.time()).violations]
    finally:
        db.close()


@pytest.fixture(autouse=True)
def invariants_hold(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the test: the stores of the clusters it used keep their invariants."""
    yield
    confs: dict[Path, str] = {}
    for name in request.fixturenames:
        if name in ("request", "invariants_hold"):
            continue
        try:
            value = request.getfixturevalue(name)  # set up already: its cached value
        except Exception:  # a fixture that failed or was skipped: nothing to check
            continue
        conf = getattr(value, "conf", None)
        if isinstance(conf, Path) and conf.is_file():
            confs.setdefault(conf, name)
    found = [f"{name}: {line}" for conf, name in confs.items() for line in store_violations(conf)]
    assert not found, "store invariants broken:\n" + "\n".join(found)


@pytest.fixture
def jobdir(cluster) -> Path:
    return cluster.new_workdir()


def run_as(
    user: pwd.struct_passwd,
    main: Callable[[list[str]], None],
    argv: list[str],
    cwd: str,
    env: dict[str, str],
) -> tuple[int, str, str]:
    """Run a command's main() in a child that became ``user`` (the venv's interpreter
    may not be readable by other users, so we fork instead of exec)."""
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.dup2(w_out, 1)
            os.dup2(w_err, 2)
            sys.stdout = open(1, "w", closefd=False)  # pytest's capture objects are not fds 1/2
            sys.stderr = open(2, "w", closefd=False)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            try:
                main(argv)
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except BaseException:
                import traceback

                traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(w_out)
    os.close(w_err)
    with os.fdopen(r_out) as fo, os.fdopen(r_err) as fe:
        out, err = fo.read(), fe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out, err
