"""The node's ``Prolog`` and ``Epilog`` around each batch run (slurm.conf keys).

Slurm's slurmd runs ``Prolog`` before a job's first process on the node and
``Epilog`` once the job is over, as root (the agent's user), with the job's
variables and nothing of the user's environment (``slurmlite.scriptenv``),
each within ``PrologEpilogTimeout`` (``slurmlite.sitescript``).  The scripts
are files named by this node's configuration: a launch order carries the
job's facts (signed by the controller), never a script to run as root.

Here (``agent.daemon``):

1. a launch order is answered at once when a Prolog is configured (the
   controller need not wait for it; the run counts as held by this node,
   so the controller does not think it vanished); the prolog runs; if it
   fails, nothing is spawned and the run's completion says
   ``failed_script="prolog"`` (the controller drains the node, "Prolog
   error", and requeues the job held);
   a terminate order (scancel) that comes meanwhile is answered at once,
   and the run then never starts (its completion: killed by SIGTERM);
2. otherwise the batch script starts, and the variables the epilog will
   need are kept in ``<spool>/job<ID>/scriptenv.json`` (root's, 0600), so an
   agent restarted mid-job still has them;
3. when the run ends, the epilog runs before the completion is queued, so
   the job's resources stay held while it runs; a failure marks the
   completion ``failed_script="epilog"`` (the controller drains the node,
   "Epilog error").

Both run on the batch host (the node the batch script runs on); the other
nodes of a multi-node job run neither (see README, "Prolog and epilog").

Example: ``Prolog=/etc/slurm/prolog.sh`` exits 1 for job 7 on n1 ->
n1's log ``event=prolog_failed job=7 node=n1 why='exit status 1'`` and the
completion ``JobCompletion(job_id=7, launch_failed=True,
failed_script="prolog", reason="JobLaunchFailure", detail="Prolog error: exit
status 1", cause="prolog /etc/slurm/prolog.sh failed on n1 with exit 1")``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from agent.confine import LaunchError
from slurmlite.config import Config
from slurmlite.failures import prolog_failed
from slurmlite.protocol import LaunchSpec
from slurmlite.scriptenv import EPILOG, PROLOG, ScriptJob, script_environment
from slurmlite.sitescript import run_site_script

log = logging.getLogger("slurmd")
ENV_FILE = "scriptenv.json"


class PrologError(LaunchError):
    """The node's Prolog failed: the run was never started."""

    def __init__(self, why: str, path: str = "", node: str = "") -> None:
        cause = prolog_failed(path, node, why) if path else None  # the job's SystemComment
        super().__init__(f"prolog failed: {why}", detail=f"Prolog error: {why}", cause=cause)


def script_job(spec: LaunchSpec) -> ScriptJob:
    """The job as the scripts see it, from the signed order (its environment was
    built by the controller: ``slurmlite.jobenv``)."""
    env = spec.environment
    array_job, array_task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    return ScriptJob(
        job_id=spec.job_id,
        name=spec.name,
        uid=spec.uid,
        gid=spec.gid,
        user=spec.user,
        partition=env.get("SLURM_JOB_PARTITION", ""),
        account=env.get("SLURM_JOB_ACCOUNT", ""),
        nodelist=env.get("SLURM_JOB_NODELIST", ""),
        work_dir=spec.work_dir,
        gpus=",".join(str(g) for g in spec.gpus),
        array_job_id=int(array_job) if array_job and array_job.isdigit() else None,
        array_task_id=int(array_task) if array_task and array_task.isdigit() else None,
    )


def environment_for(cfg: Config, node: str, spec: LaunchSpec, context: str) -> dict[str, str]:
    """The environment of this run's prolog or epilog on ``node``."""
    job = script_job(spec)
    return script_environment(context, job, cluster=cfg.cluster_name, conf_path=cfg.path, node=node)


async def run_prolog(cfg: Config, node: str, spec: LaunchSpec) -> str | None:
    """Run the node's Prolog for ``spec``; None when it succeeded (or there is none)."""
    if not cfg.prolog:
        return None
    env = environment_for(cfg, node, spec, PROLOG)
    why = await run_site_script(cfg.prolog, env, cfg.prolog_epilog_timeout)
    if why is not None:
        log.error(
            "event=prolog_failed job=%s node=%s why=%r: the node will be drained "
            "(Prolog error); fix it, then scontrol update nodename=%s state=resume",
            spec.job_id,
            node,
            why,
            node,
        )
    return why


def keep_epilog_env(cfg: Config, node: str, spec: LaunchSpec, job_dir: Path) -> None:
    """Store what the epilog will need beside the run (read back by ``run_epilog``)."""
    if not cfg.epilog:
        return
    env = environment_for(cfg, node, spec, EPILOG)
    path = job_dir / ENV_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(env, f)
    except OSError as exc:
        log.warning("event=epilog_env_not_kept job=%s error=%r", spec.job_id, str(exc))


def _kept_env(job_dir: Path, job_id: int) -> dict[str, str] | None:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((job_dir / ENV_FILE).read_text())
        if isinstance(data, dict) and data.get("SLURM_JOB_ID") == str(job_id):
            return {str(k): str(v) for k, v in data.items()}
    return None


async def run_epilog(cfg: Config, node: str, job_id: int, job_dir: Path) -> str | None:
    """Run the node's Epilog after job ``job_id``; None when it succeeded (or there is none)."""
    if not cfg.epilog:
        return None
    env = _kept_env(job_dir, job_id) or {
        "SLURM_SCRIPT_CONTEXT": EPILOG,
        "SLURM_JOB_ID": str(job_id),
        "SLURMD_NODENAME": node,
        "SLURM_CLUSTER_NAME": cfg.cluster_name,
    }
    why = await run_site_script(cfg.epilog, env, cfg.prolog_epilog_timeout)
    if why is not None:
        log.error(
            "event=epilog_failed job=%s node=%s why=%r: the node will be drained "
            "(Epilog error); fix it, then scontrol update nodename=%s state=resume",
            job_id,
            node,
            why,
            node,
        )
    return why
