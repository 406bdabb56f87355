"""The environment of Prolog, Epilog, PrologSlurmctld and EpilogSlurmctld scripts.

Slurm runs four site scripts around every job (slurm.conf ``Prolog=``,
``Epilog=`` on the compute node, ``PrologSlurmctld=``, ``EpilogSlurmctld=``
on the controller), as root, with nothing of the job's own environment:
only variables that describe the job, and no ``PATH`` (a script names its
programs in full or sets one).  Which variable each script gets follows
Slurm's prolog_epilog guide:

=========================  ======  ======  ==========  ==========
variable                   Prolog  Epilog  PrologCtld  EpilogCtld
=========================  ======  ======  ==========  ==========
SLURM_SCRIPT_CONTEXT       x       x       x           x
SLURM_CLUSTER_NAME         x       x       x           x
SLURM_JOB_ID, _UID, _USER  x       x       x           x
SLURM_JOB_GID              x       x       x           x
SLURM_JOB_NAME             x       x       x           x
SLURM_JOB_NODELIST         x       x       x           x
SLURM_JOB_PARTITION        x       x       x           x
SLURM_JOB_ACCOUNT          x       x       x           x
SLURM_JOB_CONSTRAINTS      x       x       x           x    (when the job has some)
SLURM_JOB_WORK_DIR         x       x       x           x
SLURM_ARRAY_JOB_ID/TASK_ID x       x       x           x    (array tasks only)
SLURMD_NODENAME, SLURM_CONF x      x
SLURM_JOB_GPUS,            x       x                        (when the job has GPUs
CUDA_VISIBLE_DEVICES                                         on this node)
SLURM_JOB_GROUP                            x           x
SLURM_JOB_EXIT_CODE                                    x    (raw wait status)
SLURM_JOB_EXIT_CODE2                                   x    (``exit:signal``)
SLURM_JOB_DERIVED_EC                                   x    (highest step status)
=========================  ======  ======  ==========  ==========

``SLURM_SCRIPT_CONTEXT`` is ``prolog_slurmd``, ``epilog_slurmd``,
``prolog_slurmctld`` or ``epilog_slurmctld``.  Values only, never code:
the scripts themselves are files from the configuration of the machine
that runs them, never something a user sent.

Worked example (job 42 of alice, uid 1001, on n1 of ``n[1-2]``)::

    >>> job = ScriptJob(42, "train", 1001, 1001, "alice", "gpu", "lab", "n[1-2]", "/home/alice")
    >>> env = script_environment(PROLOG, job, cluster="c", conf_path="/etc/slurm/slurm.conf",
    ...                          node="n1")
    >>> env["SLURM_SCRIPT_CONTEXT"], env["SLURMD_NODENAME"], env["SLURM_JOB_NODELIST"]
    ('prolog_slurmd', 'n1', 'n[1-2]')
    >>> env = script_environment(EPILOG_SLURMCTLD, job, cluster="c", exit_code=256)
    >>> env["SLURM_JOB_EXIT_CODE"], env["SLURM_JOB_EXIT_CODE2"], "SLURMD_NODENAME" in env
    ('256', '1:0', False)
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmlite.states import exit_code_str

__all__ = ["CONTEXTS", "EPILOG", "EPILOG_SLURMCTLD", "PROLOG", "PROLOG_SLURMCTLD", "ScriptJob",
           "script_environment"]  # fmt: skip

PROLOG, EPILOG = "prolog_slurmd", "epilog_slurmd"
PROLOG_SLURMCTLD, EPILOG_SLURMCTLD = "prolog_slurmctld", "epilog_slurmctld"
CONTEXTS = (PROLOG, EPILOG, PROLOG_SLURMCTLD, EPILOG_SLURMCTLD)
_ON_NODE = (PROLOG, EPILOG)


@dataclass
class ScriptJob:
    """What the scripts are told about a job (nodes as one compressed hostlist)."""

    job_id: int
    name: str
    uid: int
    gid: int
    user: str
    partition: str
    account: str
    nodelist: str
    work_dir: str
    group: str = ""
    constraints: str = ""
    gpus: str = ""  # this node's GPU indices, "0,1"; "" without GPUs
    array_job_id: int | None = None
    array_task_id: int | None = None


def script_environment(
    context: str,
    job: ScriptJob,
    *,
    cluster: str,
    conf_path: str = "",
    node: str = "",
    exit_code: int | None = None,
    derived_exit_code: int | None = None,
) -> dict[str, str]:
    """The whole environment of one script run (module table); ``node`` on agents only."""
    if context not in CONTEXTS:
        raise ValueError(f"unknown script context: {context!r}")
    env = {
        "SLURM_SCRIPT_CONTEXT": context,
        "SLURM_CLUSTER_NAME": cluster,
        "SLURM_JOB_ID": str(job.job_id),
        "SLURM_JOB_UID": str(job.uid),
        "SLURM_JOB_GID": str(job.gid),
        "SLURM_JOB_USER": job.user,
        "SLURM_JOB_NAME": job.name,
        "SLURM_JOB_NODELIST": job.nodelist,
        "SLURM_JOB_PARTITION": job.partition,
        "SLURM_JOB_ACCOUNT": job.account,
        "SLURM_JOB_WORK_DIR": job.work_dir,
    }
    if job.constraints:
        env["SLURM_JOB_CONSTRAINTS"] = job.constraints
    if job.array_job_id is not None and job.array_task_id is not None:
        env["SLURM_ARRAY_JOB_ID"] = str(job.array_job_id)
        env["SLURM_ARRAY_TASK_ID"] = str(job.array_task_id)
    if context in _ON_NODE:
        env["SLURMD_NODENAME"] = node
        if conf_path:
            env["SLURM_CONF"] = conf_path
        if job.gpus:
            env["SLURM_JOB_GPUS"] = env["CUDA_VISIBLE_DEVICES"] = job.gpus
        return env
    env["SLURM_JOB_GROUP"] = job.group or str(job.gid)
    if context == EPILOG_SLURMCTLD:
        env["SLURM_JOB_EXIT_CODE"] = str(exit_code or 0)
        env["SLURM_JOB_EXIT_CODE2"] = exit_code_str(exit_code)
        env["SLURM_JOB_DERIVED_EC"] = str(derived_exit_code or 0)
    return env
