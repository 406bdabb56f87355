"""Wire schemas: what crosses HTTP between commands, controller and agents.

Plain dataclasses, so the commands and the agent can build and read them
without pydantic.  The controller's pydantic models (``controller/api/``)
mirror these field for field; ``tests/unit/test_protocol_sync.py`` keeps the
two in step.

Conventions used everywhere on the wire:

* times are Unix timestamps as floats, ``None`` when unset;
* time limits are whole minutes, ``None`` meaning UNLIMITED;
* memory is MiB;
* a wait status (``exit_code``) is the raw POSIX status of ``os.waitpid``:
  ``exit 3`` is ``3 << 8``, death by SIGKILL is ``9``.  ``slurmlite.states``
  turns it into Slurm's ``E:S`` text.

Example: ``JobSubmit(script="#!/bin/sh\\ntrue\\n", name="wrap", ...)`` is
posted to ``/v1/jobs``; the answer is ``SubmitResult(job_id=7)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from slurmlite.usage import GpuUsage, NodeUsage, UsageSummary

API_PREFIX = "/v1"

T = TypeVar("T")


_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    return names


def to_dict(obj: Any) -> dict[str, Any]:
    """Dataclass -> JSON-ready dict (nested dataclasses included).

    Hand-rolled rather than ``dataclasses.asdict``, whose deep copies cost
    most of the time of listing a deep queue; lists and dicts are copied one
    level, which is all the wire types hold.
    """
    out: dict[str, Any] = {}
    for name in _field_names(type(obj)):
        value = getattr(obj, name)
        kind = type(value)
        if kind in _SCALARS:
            pass
        elif kind is list:
            value = [v if type(v) in _SCALARS else to_dict(v) for v in value]
        elif kind is dict:
            value = dict(value)
        elif dataclasses.is_dataclass(value):
            value = to_dict(value)
        out[name] = value
    return out


_SCALARS = frozenset({str, int, float, bool, type(None)})


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build ``cls`` from a dict, ignoring unknown keys (newer peers)."""
    kwargs: dict[str, Any] = {}
    for name in _field_names(cls):
        if name not in data:
            continue
        value = data[name]
        sub = _NESTED.get((cls, name))
        if sub is not None and value is not None:
            if isinstance(value, list):
                value = [from_dict(sub, v) for v in value]
            else:
                value = from_dict(sub, value)
        kwargs[name] = value
    return cls(**kwargs)


# ---------------------------------------------------------------- submission


@dataclass
class JobSubmit:
    """Everything sbatch (or srun/salloc later) asks for.

    Resource fields follow sbatch's options; ``None`` means "not given", so the
    controller can apply partition and cluster defaults.
    """

    script: str
    name: str
    work_dir: str
    submit_dir: str
    submit_host: str
    environment: dict[str, str] = field(default_factory=dict)
    alloc_sid: int = 0  # the submitting shell's session id (scontrol's AllocNode:Sid)
    export: str = "ALL"  # ALL | NONE | list as given to --export
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    nodes_min: int | None = None
    nodes_max: int | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None
    mem_per_node: int | None = None  # --mem (0 = whole node)
    mem_per_cpu: int | None = None
    mem_per_gpu: int | None = None
    gpus_per_node: int | None = None  # GPUs per node from --gres/--gpus-per-node
    gpus_total: int | None = None  # --gpus
    gpu_type: str | None = None
    tres_per_node: str | None = None  # as Slurm shows it, e.g. "gres:gpu:2"
    tres_per_job: str | None = None
    time_limit: int | None = None  # minutes; None = partition default
    time_unlimited: bool = False  # --time=0 / UNLIMITED given explicitly
    std_out: str | None = None
    std_err: str | None = None
    std_in: str | None = None
    open_mode: str | None = None  # None: JobFileAppend decides (truncate by default)
    hold: bool = False
    comment: str | None = None
    req_nodes: list[str] = field(default_factory=list)
    exc_nodes: list[str] = field(default_factory=list)
    exclusive: bool = False
    constraint: str | None = None
    test_only: bool = False
    command: str | None = None  # path of the script as given, for Command=
    nice: int = 0
    umask: str | None = None
    requeue: bool | None = None
    echo_env: dict[str, str] = field(default_factory=dict)  # SLURM_GPUS etc. echoes
    allocation: bool = False  # srun/salloc: no batch script; the command holds it
    # --signal=[B:]SIG[@secs]: SIG goes to the job's steps (with B: the batch shell only)
    # once, warn_time seconds before the time limit
    warn_signal: int | None = None
    warn_time: int = 0
    warn_batch: bool = False
    # --begin (Unix s), --dependency in its stored form (slurmlite.dependency), and
    # --kill-on-invalid-dep (None: DependencyParameters decides)
    begin_time: float | None = None
    dependency: str | None = None
    kill_invalid_dep: bool | None = None
    # None: ``script`` is the script's text; "base64": its bytes in base64, for a script
    # that is not UTF-8 (slurmlite.scriptbytes)
    script_encoding: str | None = None
    array: str | None = None  # --array as given (``0-15:4``, ``1,3,5-7%2``); slurmlite.arrays
    script_args: list[str] = field(default_factory=list)  # ``sbatch job.sh a b``: [a, b]
    # --mail-type in its canonical form (slurmlite.mailtype) and --mail-user (None: the
    # submitting user; an http(s) URL: a JSON webhook instead of a mail)
    mail_type: str | None = None
    mail_user: str | None = None


@dataclass
class SubmitResult:
    job_id: int
    test_only_message: str | None = None


# ------------------------------------------------------------------ reading


@dataclass
class NodeAlloc:
    """What one job holds on one node."""

    node: str
    cpus: int
    mem: int
    gpus: list[int] = field(default_factory=list)


@dataclass
class StepInfo:
    job_id: int
    step_id: str  # "batch", "extern", "0", "1", ...
    name: str
    state: str
    exit_code: int | None
    start_time: float | None
    end_time: float | None
    nodes: list[str]
    cpus: int
    mem: int = 0
    ntasks: int = 1


@dataclass
class JobInfo:
    job_id: int
    name: str
    user: str
    uid: int
    gid: int
    group: str
    account: str
    qos: str
    partition: str
    state: str  # base state, long name: PENDING, RUNNING, COMPLETED, ...
    flags: list[str]  # state flags: COMPLETING, CONFIGURING, ...
    reason: str  # Slurm reason name ("None" when there is none)
    priority: int
    submit_time: float
    work_dir: str
    submit_dir: str
    num_nodes: int
    num_cpus: int
    num_tasks: int
    cpus_per_task: int
    time_limit: int | None  # minutes, None = UNLIMITED
    state_desc: str | None = None
    nice: int = 0
    eligible_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    nodes_max: int | None = None
    ntasks_per_node: int | None = None
    mem_per_node: int | None = None
    mem_per_cpu: int | None = None
    mem_per_gpu: int | None = None
    tres_per_node: str | None = None
    tres_per_job: str | None = None
    gpus: int = 0  # total GPUs of the job
    nodes: list[str] = field(default_factory=list)
    alloc: list[NodeAlloc] = field(default_factory=list)
    tasks_per_node: list[int] = field(default_factory=list)  # parallel to ``alloc``
    batch_host: str | None = None
    exit_code: int | None = None
    derived_exit_code: int | None = None
    restarts: int = 0
    restart_causes: str = ""  # slurmlite: why each restart happened (slurmlite.restarts)
    # why the last run ended, in words (slurmlite.failures): scontrol's SystemComment
    system_comment: str | None = None
    command: str | None = None
    std_out: str | None = None
    std_err: str | None = None
    std_in: str | None = None
    comment: str | None = None
    req_nodes: list[str] = field(default_factory=list)
    exc_nodes: list[str] = field(default_factory=list)
    exclusive: bool = False
    constraint: str | None = None
    cancelled_by: int | None = None
    requeue: bool = True
    last_sched_eval: float | None = None
    steps: list[StepInfo] = field(default_factory=list)
    array_job_id: int | None = None
    array_task_id: int | None = None
    # a pending array's tasks not yet split off, with its throttle (``0-9%2``; slurmlite.arrays)
    array_task_str: str | None = None
    array_max_tasks: int | None = None  # the array's %N throttle
    alloc_node: str | None = None  # the host sbatch ran on
    alloc_sid: int = 0  # its session id
    # backfill's plan for a pending job: expected start (Unix s) and planned nodes
    sched_start: float | None = None
    sched_nodes: list[str] = field(default_factory=list)
    # what the job still waits for, as scontrol shows it: afterok:50(unfulfilled)
    dependency: str | None = None
    mail_type: str | None = None  # canonical --mail-type (None: no mail)
    mail_user: str | None = None  # where its notifications go (slurmlite.mailtype)
    # measured usage of the current run, one summary per node (accounting answers only;
    # slurmlite.usage.combine makes the job's figures)
    usage: list[NodeUsage] = field(default_factory=list)


@dataclass
class NodeInfo:
    name: str
    addr: str
    hostname: str
    port: int
    cpus: int
    real_memory: int
    gres: str  # "gpu:2" or "gpu:a100:4" or "(null)"
    gpus: int
    state: str  # base: IDLE, MIXED, ALLOCATED, DOWN, UNKNOWN, COMPLETING
    flags: list[str]  # DRAIN, NOT_RESPONDING, COMPLETING, INVALID_REG
    alloc_cpus: int = 0
    alloc_mem: int = 0
    alloc_gpus: list[int] = field(default_factory=list)
    reason: str | None = None
    reason_user: str | None = None
    reason_time: float | None = None
    features: list[str] = field(default_factory=list)
    weight: int = 1
    partitions: list[str] = field(default_factory=list)
    boot_time: float | None = None
    slurmd_start_time: float | None = None
    last_busy_time: float | None = None
    version: str | None = None
    arch: str | None = None
    os: str | None = None
    cpu_load: float | None = None
    free_mem: int | None = None
    # GPUs no job may get: in use outside the scheduler, or freed less than the settle
    # time ago (controller.nodes.outside_gpus); counted in GresUsed, not in alloc_gpus
    outside_gpus: list[int] = field(default_factory=list)


@dataclass
class PartitionInfo:
    name: str
    nodes: list[str]
    default: bool
    max_time: int | None  # minutes, None = UNLIMITED
    default_time: int | None  # minutes, None = NONE
    state: str  # UP, DOWN, DRAIN, INACTIVE
    priority_job_factor: int = 1
    priority_tier: int = 1
    total_cpus: int = 0
    total_nodes: int = 0
    total_mem: int = 0
    total_gpus: int = 0
    qos: str | None = None  # the partition's QOS= (its limits apply to its jobs)


# ------------------------------------------------------------ job actions


@dataclass
class CancelRequest:
    job_ids: list[int] = field(default_factory=list)
    # job references as text (``57``, ``57_9``, ``57_[1-3]``: ``slurmlite.jobref``)
    refs: list[str] = field(default_factory=list)
    signal: int | None = None  # None = terminate (TERM, KillWait, KILL)
    user: str | None = None
    name: str | None = None
    states: list[str] = field(default_factory=list)
    partition: str | None = None
    batch_only: bool = False
    full: bool = False


@dataclass
class CancelResult:
    job_id: int
    error: str | None = None  # message text from slurmlite.errors
    errno: int = 0
    job: str | None = None  # the reference it answers for (``57_9``); None: ``job_id``


@dataclass
class NodeUpdate:
    """``scontrol update nodename=... state=... reason=...`` (admins only)."""

    names: list[str]
    state: str | None = None  # DRAIN | RESUME | DOWN | UNDRAIN | IDLE
    reason: str | None = None


# ---------------------------------------------------- controller <-> agent
# The schemas between the controller and its agents live in slurmlite/protocol_agent.py
# (what flows which way is described there); they are part of this module's namespace.
from slurmlite.protocol_agent import CompletionAck as CompletionAck  # noqa: E402
from slurmlite.protocol_agent import CompletionAcks as CompletionAcks  # noqa: E402
from slurmlite.protocol_agent import CompletionBatch as CompletionBatch  # noqa: E402
from slurmlite.protocol_agent import JobCompletion as JobCompletion  # noqa: E402
from slurmlite.protocol_agent import LaunchSpec as LaunchSpec  # noqa: E402
from slurmlite.protocol_agent import NodeHeartbeat as NodeHeartbeat  # noqa: E402
from slurmlite.protocol_agent import NodeRegister as NodeRegister  # noqa: E402
from slurmlite.protocol_agent import NoteSpec as NoteSpec  # noqa: E402
from slurmlite.protocol_agent import SignalSpec as SignalSpec  # noqa: E402
from slurmlite.protocol_agent import TailSpec as TailSpec  # noqa: E402

_NESTED: dict[tuple[type, str], type] = {
    (JobInfo, "alloc"): NodeAlloc,
    (JobInfo, "steps"): StepInfo,
    (CompletionBatch, "completions"): JobCompletion,
    (CompletionAcks, "results"): CompletionAck,
    (JobInfo, "usage"): NodeUsage,
    (NodeUsage, "summary"): UsageSummary,
    (UsageSummary, "gpus"): GpuUsage,
    (NodeHeartbeat, "usage"): UsageSummary,
    (JobCompletion, "usage"): UsageSummary,
}


# ------------------------------------------------------------------ job steps (issue 5)
# The step and allocation schemas live in slurmlite/protocol_steps.py (the flow of a
# step is described there); they are part of this module's namespace.
from slurmlite.protocol_steps import AllocationUpdate as AllocationUpdate  # noqa: E402
from slurmlite.protocol_steps import StepGrant as StepGrant  # noqa: E402
from slurmlite.protocol_steps import StepInput as StepInput  # noqa: E402
from slurmlite.protocol_steps import StepLaunch as StepLaunch  # noqa: E402
from slurmlite.protocol_steps import StepNode as StepNode  # noqa: E402
from slurmlite.protocol_steps import StepRequest as StepRequest  # noqa: E402

_NESTED.update(
    {
        (StepGrant, "nodes"): StepNode,
        (StepGrant, "launches"): StepLaunch,
    }
)
