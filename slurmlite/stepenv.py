"""The environment of a job step's tasks (what ``srun env`` prints in each task).

A step task sees srun's exported environment (``base``: inside a batch job
that is the batch shell's environment, so the batch variables are inherited)
overlaid with what Slurm sets for a step, then with the per-task variables.
The controller computes the per-node part (:func:`step_environment`) and
signs it into each node's ``StepLaunch``; the agent adds the per-task part
(:func:`task_environment`) and ``SLURM_TASK_PID`` once the process exists.

Algorithm (one node of a step)
------------------------------
1. Start from ``base``.  If it is not this job's environment (no or another
   ``SLURM_JOB_ID``: srun outside an allocation, or ``srun --jobid`` from
   elsewhere), drop stale job descriptions as the batch shell does
   (``jobenv.is_stale``).  Inherited copies of this job's variables stay:
   that is how ``SLURM_MEM_PER_CPU``, ``SLURM_JOB_GPUS``,
   ``SLURM_NODE_ALIASES``, ``ENVIRONMENT=BATCH`` and even the batch node's
   ``HOSTNAME`` reach step tasks in the 22.05 goldens, and why a direct
   ``srun`` shows none of them.  Per-task leftovers (``SLURM_PROCID``,
   ``SLURM_LOCALID``, ``SLURM_TASK_PID``, injected ``RANK``/``LOCAL_RANK``)
   are removed; the task layer sets them.
2. Overwrite the job variables (``SLURM_JOB_*``, ``SLURM_NODELIST`` = the
   *job's* nodes, ``SLURM_SUBMIT_*`` ...) and the step variables:
   ``SLURM_STEP_ID``/``SLURM_STEPID``, ``SLURM_STEP_NODELIST``,
   ``SLURM_STEP_NUM_NODES``/``SLURM_NNODES``, ``SLURM_STEP_NUM_TASKS``/
   ``SLURM_NTASKS``/``SLURM_NPROCS``, ``SLURM_STEP_TASKS_PER_NODE``/
   ``SLURM_TASKS_PER_NODE`` (compressed, ``2(x3),1``), ``SLURM_GTIDS``
   (ranks on this node), ``SLURMD_NODENAME``, ``SLURM_TOPOLOGY_ADDR``,
   ``SLURM_CPUS_ON_NODE`` and srun's address (``SLURM_LAUNCH_NODE_IPADDR``,
   ``SLURM_SRUN_COMM_HOST/PORT``, ``SLURM_STEP_LAUNCHER_PORT``).
3. Inside an existing allocation (batch, salloc, ``--jobid``) srun also
   sets ``SLURM_DISTRIBUTION`` and ``SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0``
   (golden 11, 12, 14); a step srun made its own allocation for shows
   neither (golden 17), unless ``-m`` was given.
4. GPUs: ``SLURM_STEP_GPUS`` (never ``SLURM_JOB_GPUS``, which is only
   inherited), ``SLURM_GPUS_ON_NODE`` and the device variables of the
   node's style, global indices (``jobenv.gpu_variables``).  A GPU node
   gives a step without GPUs ``CUDA_VISIBLE_DEVICES=""``.
5. Rendezvous variables (DESIGN.md §3): ``MASTER_ADDR`` (the step's first
   node), ``MASTER_PORT``, ``WORLD_SIZE`` (step tasks), ``NUM_NODES``,
   ``NODE_RANK`` (this node's index), ``LOCAL_WORLD_SIZE`` (tasks here);
   per task ``RANK`` and ``LOCAL_RANK``.  A name already present is the
   user's and kept, unless ``SLURMLITE_INJECTED`` lists it (an enclosing
   batch shell or step put it there): then it is replaced.  Every name set
   is listed in ``SLURMLITE_INJECTED``.

Worked example (golden 12: ``sbatch -N2 --ntasks-per-node=1``, plain
``srun env``; node n2 is step node 1)::

    SLURM_STEP_ID=0  SLURM_STEP_NODELIST=n[1-2]  SLURM_STEP_TASKS_PER_NODE=1(x2)
    SLURM_DISTRIBUTION=cyclic (2 tasks <= 2 nodes)  SLURM_GTIDS=1  SLURMD_NODENAME=n2
    task 1: SLURM_PROCID=1 SLURM_LOCALID=0 SLURM_NODEID=1 RANK=1 LOCAL_RANK=0
    WORLD_SIZE=2 NUM_NODES=2 NODE_RANK=1 LOCAL_WORLD_SIZE=1

Reference: spec §5.5 (GPU variables), §6.7 (column S), §6.8, §7.2; the
goldens ``11_env_1node_2tasks_srun``, ``12_env_2nodes``,
``13_env_gres_gpu1``, ``14_env_gpus_per_node2_2nodes``, ``17_*``.
"""

from __future__ import annotations

from collections.abc import Mapping

from slurmlite.hostlist import compress
from slurmlite.jobenv import (
    GPU_DEVICE_VARS,
    GPU_ENV_STYLES,
    INJECTED_VAR,
    gpu_variables,
    inherited_injections,
    inject,
    is_stale,
    ordered_allocs,
    set_gpu_indices,
    working_cluster,
)
from slurmlite.protocol import JobInfo
from slurmlite.steplayout import compress_counts, default_distribution, parse_distribution

__all__ = ["NODE_TRAINING_VARS", "TASK_TRAINING_VARS", "step_environment", "task_environment"]

NODE_TRAINING_VARS = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "NUM_NODES",
    "NODE_RANK",
    "LOCAL_WORLD_SIZE",
)
TASK_TRAINING_VARS = ("RANK", "LOCAL_RANK")
_PER_TASK = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_TASK_PID")
_STEP_GPU_VARS = (*GPU_DEVICE_VARS, "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE")
SRUN_DEBUG = "3"  # srun's log level at default verbosity (info), as Slurm exports it


def step_environment(
    job: JobInfo,
    base: dict[str, str],
    step_id: int,
    step_nodes: list[str],
    tasks: list[list[int]],
    node_index: int,
    cpus_per_task: int,
    gpus: list[int],
    master_addr: str,
    master_port: int,
    cluster_name: str,
    *,
    node_gpu_count: int = 0,
    gpu_env_style: str = "all",
    controller_host: str = "",
    controller_port: int = 0,
    conf_path: str = "",
    distribution: str | None = None,
    in_allocation: bool | None = None,
    ntasks_per_node: int | None = None,
    cpus_on_node: int | None = None,
    submit_host: str = "",
    launch_addr: str = "",
    launch_port: int = 0,
    umask: str = "",
    work_dir: str = "",
    echo_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Node ``step_nodes[node_index]``'s environment for step ``job_id.step_id``.

    ``tasks`` are the global ranks per step node (``steplayout.distribute``
    with empty nodes dropped), parallel to ``step_nodes``; ``gpus`` are this
    node's GPUs for the step (global indices) and ``node_gpu_count`` how many
    the node has.  Optional: ``distribution`` as given to ``-m`` (``None``:
    not given, Slurm's default is shown where Slurm shows one);
    ``in_allocation`` (``None``: true when ``base`` is this job's
    environment); ``ntasks_per_node`` as given to srun; ``cpus_on_node``
    (default: the job's CPUs on the node); ``submit_host`` (default:
    ``job.alloc_node``); srun's address ``launch_addr``/``launch_port`` (not
    set when empty/0); ``umask`` (default: ``base``'s ``SLURM_UMASK`` or
    ``0022``); ``work_dir`` (sets ``PWD``); ``echo_env`` (option echoes such
    as ``SLURM_GPUS_PER_TASK``, set verbatim).

    Raises ``ValueError`` for an unknown GPU style or distribution, a node
    index outside the step, ``tasks`` not parallel to ``step_nodes`` or a
    step node the job does not hold.
    """
    if gpu_env_style not in GPU_ENV_STYLES:
        raise ValueError(f"unknown gpu_env_style {gpu_env_style!r}; use one of {GPU_ENV_STYLES}")
    if len(tasks) != len(step_nodes):
        raise ValueError(f"{len(tasks)} task lists for {len(step_nodes)} step nodes")
    if not 0 <= node_index < len(step_nodes):
        raise ValueError(f"node index {node_index} outside the step's {len(step_nodes)} nodes")
    allocs = ordered_allocs(job)
    by_node = {a.node: a for a in allocs}
    if missing := [n for n in step_nodes if n not in by_node]:
        raise ValueError(f"nodes {missing} are not allocated to job {job.job_id}")
    node = step_nodes[node_index]
    explicit = parse_distribution(distribution) if distribution else ""

    job_id = str(job.job_id)
    same_job = base.get("SLURM_JOB_ID") == job_id
    if in_allocation is None:
        in_allocation = same_job
    inherited = inherited_injections(base)
    env = {k: v for k, v in base.items() if k != INJECTED_VAR and (same_job or not is_stale(k))}
    for name in (*_PER_TASK, *(k for k in TASK_TRAINING_VARS if k in inherited)):
        env.pop(name, None)

    counts = [len(t) for t in tasks]
    ntasks, nnodes = sum(counts), len(step_nodes)
    job_cpus = compress_counts([a.cpus for a in allocs])
    job_nodelist = compress([a.node for a in allocs])
    step_nodelist = compress(step_nodes)
    layout = compress_counts(counts)
    ours: dict[str, str] = {
        "SLURMD_NODENAME": node,
        "SLURM_CLUSTER_NAME": cluster_name,
        "SLURM_CPUS_ON_NODE": str(by_node[node].cpus if cpus_on_node is None else cpus_on_node),
        "SLURM_GTIDS": ",".join(str(t) for t in tasks[node_index]),
        "SLURM_JOBID": job_id,
        "SLURM_JOB_ID": job_id,
        "SLURM_JOB_CPUS_PER_NODE": job_cpus,
        "SLURM_JOB_GID": str(job.gid),
        "SLURM_JOB_NAME": job.name,
        "SLURM_JOB_NODELIST": job_nodelist,
        "SLURM_JOB_NUM_NODES": str(len(allocs)),
        "SLURM_JOB_PARTITION": job.partition,
        "SLURM_JOB_UID": str(job.uid),
        "SLURM_JOB_USER": job.user,
        "SLURM_NNODES": str(nnodes),
        "SLURM_NODEID": str(node_index),
        "SLURM_NODELIST": job_nodelist,
        "SLURM_NPROCS": str(ntasks),
        "SLURM_NTASKS": str(ntasks),
        "SLURM_PRIO_PROCESS": base.get("SLURM_PRIO_PROCESS", "0"),
        "SLURM_STEPID": str(step_id),
        "SLURM_STEP_ID": str(step_id),
        "SLURM_STEP_NODELIST": step_nodelist,
        "SLURM_STEP_NUM_NODES": str(nnodes),
        "SLURM_STEP_NUM_TASKS": str(ntasks),
        "SLURM_STEP_TASKS_PER_NODE": layout,
        "SLURM_SUBMIT_DIR": job.submit_dir,
        "SLURM_SUBMIT_HOST": submit_host or job.alloc_node or base.get("SLURM_SUBMIT_HOST", ""),
        "SLURM_TASKS_PER_NODE": layout,
        "SLURM_TOPOLOGY_ADDR": node,
        "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
        "SLURM_UMASK": umask or base.get("SLURM_UMASK") or "0022",
        "SRUN_DEBUG": SRUN_DEBUG,
    }
    if controller_host:
        ours["SLURM_WORKING_CLUSTER"] = working_cluster(
            cluster_name, controller_host, controller_port
        )
    if conf_path:
        ours["SLURM_CONF"] = conf_path
    if job.account:
        ours["SLURM_JOB_ACCOUNT"] = job.account
    if job.qos:
        ours["SLURM_JOB_QOS"] = job.qos
    if launch_addr:
        ours["SLURM_LAUNCH_NODE_IPADDR"] = ours["SLURM_SRUN_COMM_HOST"] = launch_addr
    if launch_port:
        ours["SLURM_SRUN_COMM_PORT"] = ours["SLURM_STEP_LAUNCHER_PORT"] = str(launch_port)
    if in_allocation or explicit:
        ours["SLURM_DISTRIBUTION"] = explicit or default_distribution(ntasks, nnodes)
    if in_allocation:
        ours["SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0"] = job_cpus
    if ntasks_per_node is not None:
        ours["SLURM_NTASKS_PER_NODE"] = str(ntasks_per_node)
    if cpus_per_task > 1:
        ours["SLURM_CPUS_PER_TASK"] = str(cpus_per_task)
    if node_gpu_count > 0 or gpus:
        for name in _STEP_GPU_VARS:
            env.pop(name, None)
        ours.update(gpu_variables(gpus, node_gpu_count, gpu_env_style, "SLURM_STEP_GPUS"))
    ours.update(echo_env or {})
    env.update(ours)
    env.setdefault("TMPDIR", "/tmp")
    if work_dir:
        env["PWD"] = work_dir

    training = {
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "WORLD_SIZE": str(ntasks),
        "NUM_NODES": str(nnodes),
        "NODE_RANK": str(node_index),
        "LOCAL_WORLD_SIZE": str(len(tasks[node_index])),
    }
    inject(env, training, inherited)
    return env


def task_environment(
    node_env: dict[str, str],
    task: int,
    local_id: int,
    node_index: int,
    task_gpus: list[int] | None = None,
) -> dict[str, str]:
    """``node_env`` plus task ``task``'s variables (the agent adds ``SLURM_TASK_PID``).

    Sets ``SLURM_PROCID`` (global rank), ``SLURM_LOCALID`` (rank on this
    node), ``SLURM_NODEID`` and, unless the user set them, ``RANK`` and
    ``LOCAL_RANK``.  ``task_gpus`` (``--gpus-per-task``: this task's slice of
    the node's step GPUs) narrows ``SLURM_STEP_GPUS`` and whichever device
    variables the node environment carries (its GPU style) to those GPUs,
    global indices, as Slurm does per task; ``SLURM_GPUS_ON_NODE`` keeps
    the step's count.

    >>> env = task_environment({"SLURMLITE_INJECTED": "MASTER_ADDR"}, 3, 1, 1)
    >>> env["RANK"], env["LOCAL_RANK"], env["SLURMLITE_INJECTED"]
    ('3', '1', 'MASTER_ADDR,RANK,LOCAL_RANK')
    """
    env = dict(node_env)
    env["SLURM_PROCID"] = str(task)
    env["SLURM_LOCALID"] = str(local_id)
    env["SLURM_NODEID"] = str(node_index)
    inject(env, {"RANK": str(task), "LOCAL_RANK": str(local_id)}, inherited_injections(node_env))
    if task_gpus is not None:
        set_gpu_indices(env, task_gpus, "SLURM_STEP_GPUS")
    return env
