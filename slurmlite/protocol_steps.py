"""Wire schemas of job steps and allocations (srun, salloc): see the flow below.

Kept beside ``slurmlite.protocol`` (which re-exports every name, so callers import
them from there) only to keep each file short; the same rules apply: plain
dataclasses, field names as on the wire, ``None`` for "not given".
"""

from __future__ import annotations

from dataclasses import dataclass, field

# ------------------------------------------------------------------ job steps (issue 5)
#
# How a step runs (srun inside an allocation):
#
# 1. srun -> controller ``POST /v1/jobs/{job_id}/steps`` with a :class:`StepRequest`
#    (the command, its exported environment and the step's shape).  The controller
#    lays the tasks out over the job's nodes, records the step (sacct ``N.0``), and
#    answers a :class:`StepGrant`: one :class:`StepLaunch` per node, each signed for
#    that node only (``credential``, claims cover the whole order).  Steps that do
#    not fit next to running steps: HTTP 409, errno ESLURM_NODES_BUSY; srun retries
#    (Slurm's "step creation temporarily disabled, retrying").
# 2. srun -> each agent ``POST /v1/steps`` with its StepLaunch, unchanged.  The answer
#    is a stream of JSON lines (NDJSON, ``application/x-ndjson``) until the node's
#    tasks are all done:
#        {"task": 0, "out": "<base64>"}   bytes the task wrote on stdout
#        {"task": 0, "err": "<base64>"}   ... on stderr
#        {"task": 0, "exit": 256}         the task ended: raw wait status
#        {"error": "text"}                the node could not start the step
#    Output that goes to files (``std_out``/``std_err`` patterns) is not streamed.
# 3. srun -> agent ``POST /v1/steps/input`` with a :class:`StepInput` (stdin bytes,
#    EOF, a signal, a window size) authorised by the same credential string.
# 4. The agent reports the node's part of the step to the controller as a
#    :class:`JobCompletion` with ``step_id`` "0", "1", ... and the highest raw status
#    of its tasks; the step ends in the store when every node has reported.
#
# An allocation without a batch script (srun outside an allocation, salloc) is a
# JobSubmit with ``allocation=True``: the controller starts it like any job but
# launches nothing; the command keeps it alive (``POST /v1/jobs/{id}/allocation``
# with an :class:`AllocationUpdate`) and ends it the same way.


@dataclass
class StepRequest:
    """srun -> controller: create step ``job_id``.N over the job's allocation."""

    argv: list[str]  # the command and its arguments, run without a shell
    work_dir: str
    environment: dict[str, str] = field(default_factory=dict)  # after --export
    name: str = ""  # --job-name, else argv[0]'s base name
    ntasks: int | None = None  # -n; None: one per node (or from ntasks_per_node)
    nodes: int | None = None  # -N; None: as many as the tasks need, at most the job's
    ntasks_per_node: int | None = None
    cpus_per_task: int = 1
    gpus_per_task: int | None = None
    gpus_per_node: int | None = None
    mem_per_node: int | None = None  # MiB; None: the job's share on each node
    distribution: str = ""  # block | cyclic; "": not given (block if ntasks > nnodes, else cyclic)
    nodelist: list[str] = field(default_factory=list)  # -w, expanded
    exclude: list[str] = field(default_factory=list)  # -x, expanded
    overlap: bool = False  # share CPUs/GPUs with running steps
    label: bool = False  # -l
    unbuffered: bool = False  # -u
    stdin_task: int | None = None  # -i N: only task N reads stdin; None: all tasks
    std_out: str = ""  # -o pattern (%t %n %N %j %A %a %s); "": streamed to srun
    std_err: str = ""  # -e pattern; "": streamed to srun
    std_in: str = ""  # -i FILE pattern; "": from srun (or /dev/null if none)
    pty: bool = False  # --pty: task 0 on a pseudo-terminal
    kill_on_bad_exit: bool = False  # -K
    time_limit: int | None = None  # minutes; None: the job's remaining time


@dataclass
class StepLaunch:
    """Controller -> (via srun) -> one agent: run this node's tasks of a step.

    ``credential`` (``slurmlite.credential``, signed with the node's orders key)
    covers every other field; srun forwards the order unchanged.
    """

    credential: str
    job_id: int
    step_id: int
    restarts: int
    node: str
    node_index: int  # SLURM_NODEID: this node's place in the step's node list
    uid: int
    gid: int
    user: str
    argv: list[str]
    work_dir: str
    environment: dict[str, str]  # the step's environment for this node, before per-task vars
    tasks: list[int]  # global task ids (SLURM_PROCID) on this node, in order
    ntasks: int  # the step's total
    num_nodes: int
    cpus_per_task: int
    gpus: list[int]  # the node's GPUs for this step, indices as in LaunchSpec.gpus
    gpus_per_task: int | None
    master_addr: str
    master_port: int
    label: bool
    unbuffered: bool
    stdin_task: int | None
    std_out: str  # pattern, expanded per task by the agent; "": streamed
    std_err: str
    std_in: str
    pty: bool
    kill_on_bad_exit: bool
    mem_mib: int  # the step's memory on this node; 0: the job's cgroup limit only
    kill_wait: int
    time_limit_s: int | None = None


@dataclass
class StepNode:
    """Where one node of a step is, for srun to reach its agent."""

    node: str
    addr: str
    port: int
    tasks: list[int]


@dataclass
class StepGrant:
    """Controller -> srun: the step's id, layout and one signed order per node."""

    job_id: int
    step_id: int
    nodes: list[StepNode]
    launches: list[StepLaunch]  # parallel to ``nodes``
    ntasks: int


@dataclass
class StepInput:
    """srun -> agent: stdin bytes, EOF, a signal or a window size for a running step."""

    credential: str  # the step's StepLaunch.credential for this node
    job_id: int
    step_id: int
    data: str = ""  # base64 of bytes for the tasks' stdin
    eof: bool = False
    signal: int | None = None
    rows: int | None = None  # --pty window size
    cols: int | None = None


@dataclass
class AllocationUpdate:
    """srun/salloc -> controller: keep an allocation alive, or end it."""

    end: bool = False
    exit_code: int = 0  # raw wait status of the command (for the job's ExitCode)
