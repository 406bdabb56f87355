"""``slurmlite node-run``: a workload run's command on one node (started by its batch script).

The run's batch script (``slurmlite.workload.translate``) ends with
``srun --ntasks-per-node=1 -K slurmlite node-run``: one of these per node,
as the run's user, inside the job's allocation.  Each, in order:

1. sends its output to the node's log of this attempt
   (``$SLURMLITE_LOG_DIR/attempt<N>.log``, made by the agent: ``agent.runlogs``);
2. sets the variables the managed runtimes promise the command:
   ``RUN_ID`` (the job id), ``ATTEMPT`` (the restart count, 0 first),
   ``NUM_NODES``, ``NODE_RANK`` (0..NUM_NODES-1), ``MASTER_ADDR`` (node 0),
   ``MASTER_PORT``, ``LOCAL_WORLD_SIZE`` (GPUs per node),
   ``CODE_SOURCE_PATH``;
3. fetches the code snapshot (``$SLURMLITE_SNAPSHOT``) from the controller a
   part at a time, with the user's own credentials, checks its SHA-256 and
   unpacks it into a fresh folder of this attempt
   (``$TMPDIR/slurmlite-run-<job>.<attempt>.<node rank>-XXXXXX/code``, the user's);
4. builds or reuses the environment (``slurmlite.workload.envs``);
5. asks the controller for the run's secrets and MLflow run id (only the
   owner's running run gets them) and exports them (``MLFLOW_RUN_ID``); node 0
   records the attempt in MLflow (``slurmlite.workload.tracking``);
6. runs ``bash -c "$SLURMLITE_COMMAND"`` in ``CODE_SOURCE_PATH``, waits for it
   (signals reach it from the step's process group), removes the attempt's
   folder and exits with the command's status (128 + N for signal N) -- but 0
   when the command died of a SIGTERM the step was sent (``_run``), or the
   SIGTERM came while this node was still preparing (steps 3-5), so that the
   attempt's exit code is the failing node's, not the 143 of those stopped.

A failure before the command (snapshot, environment) prints one line saying
why, prefixed ``slurmlite: error:``, and exits 1: the attempt fails and is
retried like any failure.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.workload import tracking
from slurmlite.workload.snapshot import PART

__all__ = ["node_run"]


def _fail(text: str) -> None:
    print(f"slurmlite: error: {text}", file=sys.stderr, flush=True)
    sys.exit(1)


def _to_log(env: dict[str, str], attempt: int) -> None:
    where = env.get("SLURMLITE_LOG_DIR")
    if not where:
        return
    try:
        fd = os.open(f"{where}/attempt{attempt}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as e:
        print(f"slurmlite: warning: cannot write the node log in {where}: {e}", file=sys.stderr)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _fetch(client: object, sha: str, into: Path) -> None:
    """Download snapshot ``sha`` a part at a time, check it, unpack it into ``into``."""
    tar_path = into.parent / "code.tar"
    h = hashlib.sha256()
    offset = 0
    with open(tar_path, "wb") as f:
        while True:
            chunk = client.raw(  # type: ignore[attr-defined]
                "GET", f"/v1/snapshots/data/{sha}", query={"offset": offset, "length": PART}
            )
            if not chunk:
                break
            f.write(chunk)
            h.update(chunk)
            offset += len(chunk)
            if len(chunk) < PART:
                break
    if h.hexdigest() != sha:
        _fail(
            f"code snapshot {sha[:12]}: received data with another SHA-256 ({h.hexdigest()[:12]})"
        )
    into.mkdir()
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    tar_path.unlink()


class _Stopped(BaseException):
    """SIGTERM before the command started: the step is being stopped (another node failed,
    or the run was cancelled) while this node was still preparing."""


def _stop_early(signum: int, _frame: object) -> None:
    raise _Stopped


def node_run() -> None:
    signal.signal(signal.SIGTERM, _stop_early)  # until ``_run`` takes the signals over
    env = dict(os.environ)
    job = env.get("SLURM_JOB_ID", "0")
    attempt = int(env.get("SLURM_RESTART_COUNT") or 0)
    _to_log(env, attempt)
    rank = env.get("SLURM_NODEID", "0")
    nodes = env.get("SLURM_STEP_NUM_NODES") or env.get("SLURM_NNODES") or "1"
    env.update(RUN_ID=job, ATTEMPT=str(attempt), NUM_NODES=nodes, NODE_RANK=rank)
    env["LOCAL_WORLD_SIZE"] = env.get("SLURMLITE_GPUS_PER_NODE", env.get("LOCAL_WORLD_SIZE", "1"))
    # a folder of its own (mkdtemp: 0700, never another's -- job ids repeat across clusters
    # sharing a host); removed when the command ends
    tmp = env.get("TMPDIR") or "/tmp"
    home = Path(tempfile.mkdtemp(prefix=f"slurmlite-run-{job}.{attempt}.{rank}-", dir=tmp))
    code = home / "code"
    try:
        try:
            extra = _prepare(env, job, code)
            mlflow_run = extra.get("mlflow_run_id") if rank == "0" else None
            if mlflow_run:
                tracking.attempt_started(mlflow_run, attempt, env.get("SLURM_JOB_NODELIST", ""))
        except _Stopped:  # stopped while preparing: as a stopped command (``_run``)
            _say_stopped()
            sys.exit(0)
        status, stopped = _run(env, code)
        if mlflow_run:
            failed = not stopped and status != 0
            how = "STOPPED" if stopped else f"FAILED exit {status}" if failed else "COMPLETED"
            last = not failed or extra.get("retries", 0) >= extra.get("max_retries", 0)
            log = (
                f"{env['SLURMLITE_LOG_DIR']}/attempt{attempt}.log"
                if "SLURMLITE_LOG_DIR" in env
                else None
            )
            sys.stdout.flush()
            tracking.attempt_ended(mlflow_run, attempt, how, log, last)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    sys.exit(status)


def _prepare(env: dict[str, str], job: str, code: Path) -> dict[str, Any]:
    """Snapshot, secrets, environment (steps 3-5); the controller's ``node-env`` answer."""
    from cli.client import ControllerClient

    client = ControllerClient.from_env("slurmlite")
    sha = env.pop("SLURMLITE_SNAPSHOT", "")
    try:
        if sha:
            _fetch(client, sha, code)
        else:
            code.mkdir()
        extra = client.request("GET", f"/v1/runs/{job}/node-env")
    except SlurmError as e:
        if (
            sha or e.code != errors.SLURMLITE_NO_SUCH_RUN
        ):  # no such run: a translated script run by plain sbatch
            _fail(f"run {job}: {e.message}{': ' + e.detail if e.detail else ''}")
        extra = {}
    finally:
        client.close()
    env["CODE_SOURCE_PATH"] = str(code)
    env.update(extra.get("secrets") or {})
    if extra.get("mlflow_run_id"):
        env["MLFLOW_RUN_ID"] = extra["mlflow_run_id"]
    deps = env.pop("SLURMLITE_DEPENDENCIES", "")
    if deps:
        import json

        from slurmlite.workload.envs import EnvError, ensure

        try:
            venv = ensure(json.loads(deps), code)
        except (EnvError, OSError, ValueError) as e:
            _fail(f"the environment could not be built:\n{e}")
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv}/bin:{env.get('PATH', '')}"
    return extra


def _say_stopped() -> None:
    print("slurmlite: the command was stopped (SIGTERM): the run was cancelled, ran out "
          "of time, or another node's command failed", flush=True)  # fmt: skip


def _run(env: dict[str, str], code: Path) -> tuple[int, bool]:
    """The command's exit status, and whether the step stopped it: 0 (and True) when it
    died of a SIGTERM this node was sent too.

    The step's tasks are stopped with SIGTERM when another node's command failed
    (``srun -K``) or the run was cancelled or ran out of time: the controller
    records those by their own states, and srun's status (the highest of its tasks')
    stays the failing node's exit code instead of 143 (module doc)."""
    command = env.pop("SLURMLITE_COMMAND", "")
    got: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP):
        signal.signal(sig, lambda n, _f: got.append(n))  # the command gets them too (its group)
    sys.stdout.flush()
    proc = subprocess.Popen(["bash", "-c", command], cwd=code, env=env)
    status = proc.wait()
    if status == -signal.SIGTERM and signal.SIGTERM in got:
        _say_stopped()
        return 0, True
    return (128 - status if status < 0 else status), False
