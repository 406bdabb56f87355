"""Which inherited variables describe some job, step or allocation (and so are stale).

A job's environment starts from its submitter's; copies of ``SLURM_JOB_ID``
and friends from an enclosing job would lie about the new one, so they are
dropped before the new values are set (``slurmlite.jobenv``,
``slurmlite.stepenv``, ``slurmlite.allocenv``).  A module of its own, with no
imports, because salloc and srun read it on their start-up path.

``is_stale("SLURM_JOB_ID")`` -> True; ``is_stale("HOME")`` -> False.
"""

from __future__ import annotations

INJECTED_VAR = "SLURMLITE_INJECTED"

# Variables that describe a job, step or allocation; inherited copies are stale.
_STALE_PREFIXES = (
    "SLURM_JOB_",
    "SLURM_STEP_",
    "SLURM_ARRAY_",
    "SLURM_SRUN_",
    "SLURM_GPUS",
    "SLURM_MEM_PER_",
    "SLURM_CPUS_",
    "SLURM_NTASKS",
    "SLURM_TOPOLOGY_",
    "SLURM_SUBMIT_",
)
_STALE_NAMES = frozenset(
    {
        "SLURM_JOBID",
        "SLURM_STEPID",
        "SLURM_NNODES",
        "SLURM_NPROCS",
        "SLURM_NODELIST",
        "SLURM_NODEID",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_GTIDS",
        "SLURM_TASK_PID",
        "SLURM_TASKS_PER_NODE",
        "SLURM_LAUNCH_NODE_IPADDR",
        "SLURM_DISTRIBUTION",
        "SLURM_RESTART_COUNT",
        "SLURM_PRIO_PROCESS",
        "SLURM_CLUSTER_NAME",
        "SLURM_WORKING_CLUSTER",
        "SLURM_NODE_ALIASES",
        "SLURM_UMASK",
        "SLURMD_NODENAME",
        "SLURM_CONF",
    }
)


def is_stale(name: str) -> bool:
    """True for a variable that describes some job, step or allocation (see ``slurmlite.jobenv``)."""
    return name in _STALE_NAMES or name.startswith(_STALE_PREFIXES)
