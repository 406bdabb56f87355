"""The allocation's variables: what salloc's command (and srun's step 0) inherits.

salloc runs its command on the submit host, not on a node, so the command
sees the variables that describe the *allocation* (spec §6.7 column A) and
none of the node's or task's (``SLURMD_NODENAME``, ``SLURM_PROCID``...);
srun outside an allocation puts the same variables into the environment of
the step it runs, so its tasks see ``SLURM_JOB_ID`` as in a batch job.

Algorithm: start from the caller's environment, drop every variable that
describes some *other* job or step (inherited from an enclosing allocation:
``SLURM_JOB_*``, ``SLURM_STEP_*``, ``SLURM_NTASKS``...; user knobs such as
``SLURM_CONF`` and ``SLURM_TIME_FORMAT`` stay), then add this allocation's:

* ``SLURM_JOB_ID``/``SLURM_JOBID``, ``SLURM_JOB_NAME``, the node list and
  count in both spellings, ``SLURM_JOB_CPUS_PER_NODE`` and
  ``SLURM_TASKS_PER_NODE`` (compressed counts, spec §6.8), partition,
  account, QOS, user and group, submit dir and host, cluster name;
* the echoes of the options (``SLURM_NTASKS`` only with ``-n`` or
  ``--ntasks-per-node``, ``SLURM_CPUS_PER_TASK`` with ``-c``,
  ``SLURM_GPUS*``...), as the request's ``echo_env`` has them;
* the memory variable the job has (one of ``SLURM_MEM_PER_NODE``,
  ``_PER_CPU``, ``_PER_GPU``);
* ``MASTER_ADDR``/``MASTER_PORT``/``NUM_NODES`` as a batch shell gets them
  (DESIGN.md §3), unless the user set them (``SLURMLITE_INJECTED`` lists
  what was added, so a nested allocation replaces an inherited injection).

Worked example: job 12 on ``n1`` and ``n2`` with 2 CPUs each, ``-n 4`` ->
``SLURM_JOB_NODELIST=n[1-2]``, ``SLURM_NNODES=2``,
``SLURM_JOB_CPUS_PER_NODE=2(x2)``, ``SLURM_TASKS_PER_NODE=2(x2)``,
``SLURM_NTASKS=4``, ``MASTER_PORT=20012``.

The job comes as any object with ``JobInfo``'s attribute names (the
commands' ``Record`` views), so this module imports no dataclasses.
"""

from __future__ import annotations

from collections.abc import Mapping

from slurmlite.hostlist import compress
from slurmlite.stalevars import INJECTED_VAR
from slurmlite.stalevars import is_stale as _job_stale
from slurmlite.states import compress_counts

# The batch shell's stale list (``jobenv``) less what a command on the submit host
# keeps from its user: where the config is, the umask and priority to pass on.
_KEPT = frozenset({"SLURM_CONF", "SLURM_UMASK", "SLURM_PRIO_PROCESS", "SLURM_WORKING_CLUSTER"})


def is_stale(name: str) -> bool:
    """Does ``name`` describe a job, step or task (so an inherited copy is stale)?"""
    return name not in _KEPT and _job_stale(name)


def _field(job: object, name: str, default: object = None) -> object:
    return getattr(job, name, default)


def _per_node(job: object) -> tuple[list[str], list[int], list[int]]:
    """Node names, CPUs and tasks per node, in the job's node order."""
    allocs = list(_field(job, "alloc", None) or [])
    nodes = list(_field(job, "nodes", None) or [a.node for a in allocs])
    cpus_by_node = {a.node: a.cpus for a in allocs}
    total = int(_field(job, "num_cpus", 0) or 0)
    share = total // max(1, len(nodes))
    cpus = [int(cpus_by_node.get(n, share)) for n in nodes]
    tasks = [int(t) for t in (_field(job, "tasks_per_node", None) or [])]
    if len(tasks) != len(nodes):
        tasks = [1] * len(nodes)
    return nodes, cpus, tasks


def _memory(job: object) -> dict[str, str]:
    if _field(job, "mem_per_gpu"):
        return {"SLURM_MEM_PER_GPU": str(_field(job, "mem_per_gpu"))}
    if _field(job, "mem_per_node") is not None:
        return {"SLURM_MEM_PER_NODE": str(_field(job, "mem_per_node"))}
    if _field(job, "mem_per_cpu"):
        return {"SLURM_MEM_PER_CPU": str(_field(job, "mem_per_cpu"))}
    return {}


def allocation_variables(
    job: object,
    cluster_name: str,
    submit_host: str,
    echo_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Only the variables this allocation sets (no training variables)."""
    nodes, cpus, tasks = _per_node(job)
    nodelist = compress(nodes)
    job_id = str(_field(job, "job_id"))
    ours = {
        "SLURM_CLUSTER_NAME": cluster_name,
        "SLURM_JOBID": job_id,
        "SLURM_JOB_ID": job_id,
        "SLURM_JOB_NAME": str(_field(job, "name", "")),
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_NODELIST": nodelist,
        "SLURM_JOB_NUM_NODES": str(len(nodes)),
        "SLURM_NNODES": str(len(nodes)),
        "SLURM_JOB_CPUS_PER_NODE": compress_counts(cpus),
        "SLURM_TASKS_PER_NODE": compress_counts(tasks),
        "SLURM_NODE_ALIASES": "(null)",
        "SLURM_SUBMIT_DIR": str(_field(job, "submit_dir", "")),
        "SLURM_SUBMIT_HOST": submit_host,
    }
    for name, attr in (
        ("SLURM_JOB_PARTITION", "partition"),
        ("SLURM_JOB_ACCOUNT", "account"),
        ("SLURM_JOB_QOS", "qos"),
        ("SLURM_JOB_UID", "uid"),
        ("SLURM_JOB_USER", "user"),
        ("SLURM_JOB_GID", "gid"),
    ):
        value = _field(job, attr)
        if value is not None and value != "":
            ours[name] = str(value)
    ours.update(_memory(job))
    ours.update(echo_env or {})
    return ours


def allocation_environment(
    base_env: Mapping[str, str],
    job: object,
    cluster_name: str,
    submit_host: str,
    echo_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``base_env`` without stale job variables, plus this allocation's (see above)."""
    inherited_injected = set(filter(None, base_env.get(INJECTED_VAR, "").split(",")))
    env = {k: v for k, v in base_env.items() if not is_stale(k) and k != INJECTED_VAR}
    env.update(allocation_variables(job, cluster_name, submit_host, echo_env))
    nodes = env["SLURM_JOB_NODELIST"]
    first = _per_node(job)[0][:1]
    training = {
        "MASTER_ADDR": first[0] if first else nodes,
        "MASTER_PORT": str(20000 + int(_field(job, "job_id", 0)) % 20000),  # jobenv.master_port
        "NUM_NODES": env["SLURM_NNODES"],
    }
    injected = [k for k in training if k not in env or k in inherited_injected]
    for name in injected:
        env[name] = training[name]
    if injected:
        env[INJECTED_VAR] = ",".join(injected)
    return env
