"""Wire schemas between the controller and its agents: registration, heartbeats, orders.

Kept beside ``slurmlite.protocol`` (which re-exports every name, so callers import
them from there) only to keep each file short; the same rules apply: plain
dataclasses, field names as on the wire, ``None`` for "not given".

What flows which way:

* agent -> controller: :class:`NodeRegister` when the agent starts (who I am and
  what I have), :class:`NodeHeartbeat` every heartbeat interval (the jobs it
  holds, load, usage so far), and a :class:`CompletionBatch` of
  :class:`JobCompletion` items for every step that ended and is not yet
  acknowledged;
* controller -> agent: :class:`CompletionAcks` (one :class:`CompletionAck` per
  completion), :class:`LaunchSpec` (run a batch script), :class:`SignalSpec`
  (signal or terminate a job), :class:`NoteSpec` (add a line to a running
  job's stderr) and :class:`TailSpec` (read the end of a job's output), each
  signed with a ``slurmlite.credential``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmlite.usage import UsageSummary


@dataclass
class NodeRegister:
    """Agent -> controller: who I am and what I have."""

    name: str
    addr: str
    port: int
    hostname: str
    cpus: int
    real_memory: int
    gpus: list[str]  # GPU model names, one per device, NVML order
    gpu_type: str | None
    running_jobs: list[int] = field(default_factory=list)
    boot_time: float | None = None
    start_time: float | None = None
    version: str = ""
    arch: str = ""
    os: str = ""  # uname system, release and version: "Linux 6.1.0-18-amd64 #1 SMP ..."
    cpu_load: float | None = None  # five-minute load average; None = not known
    free_mem: int | None = None  # MiB never used (MemFree); None = not known


@dataclass
class NodeHeartbeat:
    """Agent -> controller, every heartbeat interval: still here, holding these jobs.

    ``cpu_load`` and ``free_mem`` refresh what registration said (``None``:
    not measured this time, the controller keeps the last value).
    """

    running_jobs: list[int] = field(default_factory=list)
    cpu_load: float | None = None
    free_mem: int | None = None
    usage: list[UsageSummary] = field(default_factory=list)  # running jobs, so far (cumulative)
    # GPUs in use outside the scheduler (agent.gpu_outside): node GPU index -> reason;
    # None: not looked (detection off, or no look yet): the controller keeps what it knew
    outside_gpus: dict[int, str] | None = None


@dataclass
class JobCompletion:
    """Agent -> controller: a batch step ended (retried until acknowledged)."""

    node: str
    job_id: int
    restarts: int
    step_id: str
    exit_code: int  # raw wait status
    start_time: float | None = None
    end_time: float | None = None
    launch_failed: bool = False
    reason: str | None = None  # e.g. "JobLaunchFailure"
    detail: str | None = None  # why, in a few words, e.g. "User not found on host"
    # a site script on the node failed (slurmlite.scriptenv): "prolog" (nothing ran: the
    # controller drains the node and requeues the job held) or "epilog" (drains the node)
    failed_script: str | None = None
    # the agent killed the run because it was cut off from the controller (agent.cutoff):
    # not the job's own end; the controller requeues the job if it still runs here
    fenced: bool = False
    usage: UsageSummary | None = None  # the run's final usage on this node (sampled at the end)
    # why the run never started, as a sentence for the job's SystemComment (slurmlite.failures)
    cause: str | None = None
    mem_peak: int = 0  # bytes: the cgroup's memory peak of a run the OOM killer ended (0: unknown)


@dataclass
class CompletionBatch:
    """Agent -> controller: every completion the agent still owes, in one request.

    The controller records them in one transaction and answers one
    :class:`CompletionAck` per item; the agent deletes a spool file only for
    an item acknowledged ``ok``.  Every item must name the signing node.
    """

    completions: list[JobCompletion] = field(default_factory=list)


@dataclass
class CompletionAck:
    """Controller -> agent: one completion of a batch is recorded (or was already)."""

    job_id: int
    restarts: int
    ok: bool = True  # durable: the agent may forget it
    changed: bool = False  # False: a duplicate or a stale run, nothing changed


@dataclass
class CompletionAcks:
    results: list[CompletionAck] = field(default_factory=list)


@dataclass
class LaunchSpec:
    """Controller -> agent: run the batch script of one job.

    ``credential`` (see ``slurmlite.credential``) covers job, step, uid, gid,
    nodes, the script's SHA-256 and an expiry; the agent checks it before it
    spawns anything.
    """

    credential: str
    job_id: int
    restarts: int
    step_id: str
    name: str
    uid: int
    gid: int
    user: str
    script: str  # the stored form (slurmlite.scriptbytes): text, or a marker and base64
    work_dir: str
    environment: dict[str, str]  # the final environment, built by the controller
    std_out: str  # expanded path, absolute
    std_err: str  # expanded path, absolute (same as std_out when merged)
    std_in: str
    open_mode: str
    # the job's GPUs on this node, as the plan chose them: the node's indices (0..k-1),
    # not renumbered per job; the environment's GPU variables say the same, and an
    # agent whose node owns a subset of a machine's GPUs points them at the
    # machine's devices from this field (agent.gres.device_indices)
    gpus: list[int]
    kill_wait: int
    time_limit_s: int | None = None
    mem_mib: int = 0  # the job's memory on this node (the cgroup's limit); 0: no limit
    script_args: list[str] = field(default_factory=list)  # the script's "$1" "$2" ...


@dataclass
class SignalSpec:
    """Controller -> agent: signal or terminate a job's processes."""

    credential: str
    job_id: int
    restarts: int
    signal: int | None  # None = terminate: SIGCONT, SIGTERM, KillWait, SIGKILL
    kill_wait: int = 30
    message: str | None = None  # written to the job's stderr first (timeouts)
    batch_only: bool = False  # scancel -b: the batch shell only
    full: bool = False  # scancel -f: the batch shell, its children and the steps


@dataclass
class NoteSpec:
    """Controller -> agent: append one line to a running batch job's stderr (op ``note``).

    The controller's word to the job's user while the job goes on, e.g. the
    idle-GPU warning (``controller.sched.idlegpus``).  One line: the agent
    refuses text with a line break (422) and writes it as the kill message
    is written (``agent.killing``: as the job's user, no symlink followed).
    """

    credential: str
    job_id: int
    restarts: int
    line: str


@dataclass
class TailSpec:
    """Controller -> agent: the last ``limit`` bytes of a batch job's output files (op ``tail``).

    For the dashboard's job page when the output is on the batch host only.
    The controller derives ``paths`` (stdout, then stderr when separate:
    ``controller.sched.launch.output_paths``) and checks who asks; the agent
    reads each as the job's ``uid``/``gid`` (no symlink followed, regular
    files only, nothing created: ``agent.tail``).  Read-only, yet signed like
    every order: the credential binds the whole body, paths and uid included.
    """

    credential: str
    job_id: int
    restarts: int
    uid: int
    gid: int
    paths: list[str]
    limit: int
