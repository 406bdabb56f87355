"""The environment a batch script starts with (what ``env | sort`` shows).

A batch job's shell sees the user's environment (``--export=ALL``: the one
sbatch ran in) overlaid with variables that describe the job, the node and
the allocation.  This module computes that overlay as a pure function of the
job record; the agent adds only ``SLURM_TASK_PID`` (known after the spawn).

Algorithm
---------
1. Start from ``base_env`` (the submit environment; with ``--export=NONE``
   the caller passes just HOME/USER/LOGNAME/SHELL/PATH).
2. Drop stale job descriptions from it: every ``SLURM_*`` variable that a
   job, step or allocation *sets* (``SLURM_JOB_*``, ``SLURM_STEP_*``,
   ``SLURM_NTASKS``, ``SLURM_MEM_PER_*`` ...).  Real Slurm lets those leak
   when sbatch runs inside another job (a classic source of "SLURM_MEM_PER_CPU
   and SLURM_MEM_PER_NODE are mutually exclusive"); slurmlite does not.  User
   knobs such as ``SLURM_TIME_FORMAT`` or ``SLURM_EXIT_ERROR`` pass through.
3. Add the batch variables of spec §6.7 column B, in the shape the 22.05
   golden files show (``golden/slurm-22.05/1[0-5]_env_*.txt``).
4. Add the GPU variables (spec §5.5, DESIGN.md §3) and the distributed
   training variables (DESIGN.md §3).

Choices (each one visible to users)
-----------------------------------
* ``SLURM_NTASKS``/``SLURM_NPROCS`` only when ``-n`` (``ntasks_given``) or
  ``--ntasks-per-node`` was given: golden 10 (``-n 1``) and 12 have them,
  golden 13 and 15 (neither option) do not.
* ``SLURM_CPUS_PER_TASK`` when ``cpus_per_task > 1`` (the record cannot tell
  an explicit ``-c 1`` from the default).
* Memory: ``--mem-per-gpu`` -> ``SLURM_MEM_PER_GPU``; else ``--mem`` ->
  ``SLURM_MEM_PER_NODE`` (``--mem=0`` shows this node's allocated MiB); else
  per-CPU memory (explicit or ``DefMemPerCPU``) -> ``SLURM_MEM_PER_CPU``.
  Exactly one of them, as in golden 10 (``MEM_PER_CPU=1000``) and 15
  (``--mem=500M`` -> ``MEM_PER_NODE=500``).
* ``SLURM_TASKS_PER_NODE``: per-node task counts.  Each node can hold
  ``--ntasks-per-node`` tasks, or ``cpus // cpus_per_task``; tasks are dealt
  out one per node per round while a node has room, then, if tasks remain,
  round robin regardless of room.  Ranks are then numbered in blocks.  When
  the allocation holds exactly the CPUs the tasks need (the usual case) this
  equals the spec §6.8 block formula; it also never leaves a node of a
  ``-N 2`` job without a task.  Without a task count the job has as many
  tasks as its CPUs hold (golden 15: 2 CPUs, ``-c 2`` -> ``1``).
* ``SLURM_RESTART_COUNT`` only after a requeue (golden 22.05 shows none on a
  first run, although the spec says 0 is set).
* ``SLURM_JOB_START_TIME``/``END_TIME`` and ``SLURM_UMASK``: absent, as in the
  22.05 batch dumps.  Option echoes (``SLURM_GPUS``, ``SLURM_GPUS_PER_NODE``,
  ``SLURM_EXPORT_ENV``, ``SLURM_PRIO_PROCESS`` ...) come verbatim from
  ``echo_env``; ``SLURM_PRIO_PROCESS`` defaults to ``0``.
* GPUs: the node's *global* indices (no device confinement, as 22.05 without
  cgroups).  ``gpu_env_style``: ``"all"`` (fake GPUs / no AutoDetect) sets
  CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL, ROCR_VISIBLE_DEVICES and
  ZE_AFFINITY_MASK; ``"cuda"`` (AutoDetect=nvml) only CUDA_VISIBLE_DEVICES;
  ``"none"`` (count-only GPUs) no device variable.  A job without GPUs on a
  node that has some gets ``CUDA_VISIBLE_DEVICES=""`` (slurmlite hides them;
  Slurm would unset the variable and leave every GPU usable).  On a node
  without GPUs the device variables of ``base_env`` are left alone.  The
  indices are the scheduler's, as the launch order carries them typed
  (``LaunchSpec.gpus``); an agent whose node owns a subset of a machine's
  GPUs points the same variables at the machine's devices
  (``set_gpu_indices``), from that field, not from these strings.
* ``MASTER_ADDR`` (the job's first node, resolved by the caller),
  ``MASTER_PORT`` (20000 + job id mod 20000) and ``NUM_NODES`` are added
  unless the user set them; ``SLURMLITE_INJECTED`` lists what was added, so
  a variable inherited from an enclosing job's injection is replaced, a
  user's own never.
* ``TMPDIR`` defaults to ``/tmp``; ``PWD`` is the job's working directory
  (shells would recompute it anyway; other interpreters read it as given).
* ``HOSTNAME`` is the Slurm node name (golden: ``HOSTNAME=n2``), not the
  machine's hostname.

Step tasks start from this environment and get their own overlay from
``slurmlite.stepenv``, which shares the pieces below (``is_stale``,
``gpu_variables``, ``inject`` ...).

Worked example (golden 12: ``-N 2 --ntasks-per-node=1``, 1 CPU on n1 and n2,
shell on n1)::

    SLURM_JOB_NODELIST=n[1-2]       SLURM_JOB_CPUS_PER_NODE=1(x2)
    SLURM_NTASKS=2                  SLURM_TASKS_PER_NODE=1(x2)
    SLURMD_NODENAME=n1              SLURM_NODEID=0  SLURM_PROCID=0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from slurmlite.hostlist import compress
from slurmlite.protocol import JobInfo, NodeAlloc
from slurmlite.stalevars import INJECTED_VAR, is_stale
from slurmlite.states import compress_counts
from slurmlite.steplayout import task_counts

__all__ = [
    "ArraySpan",
    "GPU_DEVICE_VARS",
    "GPU_ENV_STYLES",
    "INJECTED_VAR",
    "batch_environment",
    "gpu_variables",
    "inherited_injections",
    "inject",
    "is_stale",
    "master_port",
    "ordered_allocs",
    "set_gpu_indices",
    "task_layout",
    "working_cluster",
]

GPU_ENV_STYLES = ("all", "cuda", "none")
GPU_DEVICE_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
)


@dataclass(frozen=True)
class ArraySpan:
    """Shape of a job array, for ``SLURM_ARRAY_TASK_COUNT/MIN/MAX/STEP``."""

    count: int
    min: int
    max: int
    step: int = 1


def master_port(job_id: int) -> int:
    """Deterministic rendezvous port: 20000 + job id mod 20000 (job 28 -> 20028)."""
    return 20000 + job_id % 20000


def task_layout(
    ntasks: int, cpus: Sequence[int], cpus_per_task: int = 1, ntasks_per_node: int | None = None
) -> list[int]:
    """Tasks per node: one per node per round while it has room, then round robin.

    ``task_layout(3, [2, 2])`` -> ``[2, 1]``; ``task_layout(2, [2, 2])`` ->
    ``[1, 1]``; ``task_layout(5, [1, 1])`` -> ``[3, 2]`` (overcommitted).
    """
    cpt = max(1, cpus_per_task)
    room = [ntasks_per_node if ntasks_per_node else max(1, c // cpt) for c in cpus]
    return task_counts(ntasks, room)


def working_cluster(cluster_name: str, controller_host: str, controller_port: int) -> str:
    """``SLURM_WORKING_CLUSTER``: ``anchor:127.0.0.1:6917:9728:109`` (name, controller, RPC ids)."""
    return f"{cluster_name}:{controller_host}:{controller_port}:9728:109"


def inherited_injections(base_env: Mapping[str, str]) -> set[str]:
    """Names an enclosing job or step injected, as its ``SLURMLITE_INJECTED`` lists them."""
    return set(filter(None, base_env.get(INJECTED_VAR, "").split(",")))


def inject(env: dict[str, str], values: Mapping[str, str], inherited: set[str]) -> list[str]:
    """Set each of ``values`` unless the user set it; record what was set.

    A name already in ``env`` is the user's (kept) unless ``inherited`` lists
    it as an earlier injection (replaced).  The names set are appended to
    ``env[SLURMLITE_INJECTED]`` (which is removed when it would be empty)
    and returned.
    """
    done = [k for k in values if k not in env or k in inherited]
    for name in done:
        env[name] = values[name]
    record = [k for k in env.get(INJECTED_VAR, "").split(",") if k and k not in done] + done
    if record:
        env[INJECTED_VAR] = ",".join(record)
    else:
        env.pop(INJECTED_VAR, None)
    return done


def ordered_allocs(job: JobInfo) -> list[NodeAlloc]:
    """Per-node allocations in the job's node order (``job.nodes``).

    Without ``alloc`` records the CPUs are split evenly over ``job.nodes``.
    """
    if not job.alloc:
        share = job.num_cpus // max(1, len(job.nodes))
        return [NodeAlloc(node=n, cpus=share, mem=0) for n in job.nodes]
    by_node = {a.node: a for a in job.alloc}
    order = [n for n in job.nodes if n in by_node] or [a.node for a in job.alloc]
    return [by_node[n] for n in order]


def _memory_vars(job: JobInfo, here: NodeAlloc) -> dict[str, str]:
    if job.mem_per_gpu:
        return {"SLURM_MEM_PER_GPU": str(job.mem_per_gpu)}
    if job.mem_per_node is not None:
        return {"SLURM_MEM_PER_NODE": str(job.mem_per_node or here.mem)}
    if job.mem_per_cpu:
        return {"SLURM_MEM_PER_CPU": str(job.mem_per_cpu)}
    return {}


def gpu_variables(
    gpus: Sequence[int], node_gpu_count: int, style: str, list_var: str = "SLURM_JOB_GPUS"
) -> dict[str, str]:
    """GPU variables for ``gpus`` (global indices) on a node with ``node_gpu_count`` GPUs.

    ``list_var`` is ``SLURM_JOB_GPUS`` (batch shell) or ``SLURM_STEP_GPUS``
    (step tasks).  No GPUs on a GPU node: only ``CUDA_VISIBLE_DEVICES=""``.
    """
    if not gpus:
        return {"CUDA_VISIBLE_DEVICES": ""} if node_gpu_count > 0 else {}
    ids = ",".join(str(g) for g in gpus)
    env = {list_var: ids, "SLURM_GPUS_ON_NODE": str(len(gpus))}
    if style == "all":
        env.update({name: ids for name in GPU_DEVICE_VARS})
    elif style == "cuda":
        env["CUDA_VISIBLE_DEVICES"] = ids
    return env


def set_gpu_indices(env: dict[str, str], gpus: Sequence[int], list_var: str) -> None:
    """Point the GPU index variables of ``env`` at ``gpus``, in place.

    Those are the device variables ``env`` carries (which ones is the node's
    GPU style, ``gpu_variables``) and ``list_var`` (``SLURM_JOB_GPUS`` or
    ``SLURM_STEP_GPUS``: set, or removed when ``gpus`` is empty).  A task's
    share of a step's GPUs (``stepenv.task_environment``) and the agent's
    machine indices both go through here.

    >>> env = {"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_STEP_GPUS": "0,1"}
    >>> set_gpu_indices(env, [3], "SLURM_STEP_GPUS")
    >>> env
    {'CUDA_VISIBLE_DEVICES': '3', 'SLURM_STEP_GPUS': '3'}
    """
    ids = ",".join(str(g) for g in gpus)
    for name in GPU_DEVICE_VARS:
        if name in env:
            env[name] = ids
    if gpus:
        env[list_var] = ids
    else:
        env.pop(list_var, None)


def batch_environment(
    job: JobInfo,
    node: str,
    cluster_name: str,
    conf_path: str,
    gpu_env_style: str = "all",
    *,
    base_env: Mapping[str, str],
    submit_host: str,
    controller_host: str,
    controller_port: int,
    master_addr: str | None = None,
    echo_env: Mapping[str, str] | None = None,
    ntasks_given: bool = False,
    node_gpu_count: int = 0,
    array: ArraySpan | None = None,
) -> dict[str, str]:
    """The complete environment of ``job``'s batch shell on ``node``.

    ``master_addr`` defaults to the job's first node name; ``node_gpu_count``
    is how many GPUs ``node`` has (0: no GPU variables are touched).
    Raises ``ValueError`` when ``node`` is not one of the job's nodes or the
    GPU style is unknown.
    """
    if gpu_env_style not in GPU_ENV_STYLES:
        raise ValueError(f"unknown gpu_env_style {gpu_env_style!r}; use one of {GPU_ENV_STYLES}")
    allocs = ordered_allocs(job)
    nodes = [a.node for a in allocs]
    if node not in nodes:
        raise ValueError(f"node {node} is not allocated to job {job.job_id} ({nodes})")
    here = allocs[nodes.index(node)]
    node_has_gpus = node_gpu_count > 0 or bool(here.gpus)

    inherited = inherited_injections(base_env)
    env = {k: v for k, v in base_env.items() if not is_stale(k) and k != INJECTED_VAR}
    if node_has_gpus:
        for name in GPU_DEVICE_VARS:
            env.pop(name, None)

    nodelist = compress(nodes)
    cpus = [a.cpus for a in allocs]
    ntasks = job.num_tasks or sum(max(1, c // max(1, job.cpus_per_task)) for c in cpus)
    layout = task_layout(ntasks, cpus, job.cpus_per_task, job.ntasks_per_node)
    job_id = str(job.job_id)
    ours: dict[str, str] = {
        "ENVIRONMENT": "BATCH",
        "HOSTNAME": node,
        "SLURMD_NODENAME": node,
        "SLURM_CLUSTER_NAME": cluster_name,
        "SLURM_CONF": conf_path,
        "SLURM_CPUS_ON_NODE": str(here.cpus),
        "SLURM_GTIDS": "0",
        "SLURM_JOBID": job_id,
        "SLURM_JOB_ID": job_id,
        "SLURM_JOB_CPUS_PER_NODE": compress_counts(cpus),
        "SLURM_JOB_GID": str(job.gid),
        "SLURM_JOB_NAME": job.name,
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_NODELIST": nodelist,
        "SLURM_JOB_NUM_NODES": str(len(nodes)),
        "SLURM_NNODES": str(len(nodes)),
        "SLURM_JOB_PARTITION": job.partition,
        "SLURM_JOB_UID": str(job.uid),
        "SLURM_JOB_USER": job.user,
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "0",
        "SLURM_NODE_ALIASES": "(null)",
        "SLURM_PRIO_PROCESS": "0",
        "SLURM_PROCID": "0",
        "SLURM_SUBMIT_DIR": job.submit_dir,
        "SLURM_SUBMIT_HOST": submit_host,
        "SLURM_TASKS_PER_NODE": compress_counts(layout),
        "SLURM_TOPOLOGY_ADDR": node,
        "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
        "SLURM_WORKING_CLUSTER": working_cluster(cluster_name, controller_host, controller_port),
    }
    if job.account:
        ours["SLURM_JOB_ACCOUNT"] = job.account
    if job.qos:
        ours["SLURM_JOB_QOS"] = job.qos
    if ntasks_given or job.ntasks_per_node is not None:
        ours["SLURM_NTASKS"] = ours["SLURM_NPROCS"] = str(ntasks)
    if job.ntasks_per_node is not None:
        ours["SLURM_NTASKS_PER_NODE"] = str(job.ntasks_per_node)
    if job.cpus_per_task and job.cpus_per_task > 1:
        ours["SLURM_CPUS_PER_TASK"] = str(job.cpus_per_task)
    if job.restarts > 0:
        ours["SLURM_RESTART_COUNT"] = str(job.restarts)
    if job.array_job_id is not None and job.array_task_id is not None:
        ours["SLURM_ARRAY_JOB_ID"] = str(job.array_job_id)
        ours["SLURM_ARRAY_TASK_ID"] = str(job.array_task_id)
        if array is not None:
            ours["SLURM_ARRAY_TASK_COUNT"] = str(array.count)
            ours["SLURM_ARRAY_TASK_MIN"] = str(array.min)
            ours["SLURM_ARRAY_TASK_MAX"] = str(array.max)
            ours["SLURM_ARRAY_TASK_STEP"] = str(array.step)
    ours.update(_memory_vars(job, here))
    if node_has_gpus:
        ours.update(gpu_variables(here.gpus, node_gpu_count, gpu_env_style))
    ours.update(echo_env or {})
    env.update(ours)

    env.setdefault("TMPDIR", "/tmp")
    env["PWD"] = job.work_dir
    training = {
        "MASTER_ADDR": master_addr or nodes[0],
        "MASTER_PORT": str(master_port(job.job_id)),
        "NUM_NODES": str(len(nodes)),
    }
    inject(env, training, inherited)
    return env
