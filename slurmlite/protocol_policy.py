"""Wire schemas of the scheduling-policy features (issue 6): plain dataclasses.

The companion of ``slurmlite.protocol`` for what sprio, sshare, sacctmgr and
``slurmlite explain`` receive; the same conventions hold (times are Unix
seconds, ``None`` when unknown; time limits minutes; memory MiB).  The
controller's pydantic models (``controller/api/schemas.py``) mirror these
field for field.  Each helper adds its classes here without reordering the
others'.

Example: ``GET /v1/jobs/7/explain`` answers a ``JobExplanation`` whose
``suggestions`` hold ``Suggestion(option="time", value="1:00:00",
start=1800000000.0, ...)``: with ``--time=1:00:00`` the pass starts job 7 now.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmlite.protocol import _NESTED

# ------------------------------------------------------- slurmlite explain (H7)


@dataclass
class QueuePlace:
    """Where a pending job stands in the queue order of spec §4.1 (1-based)."""

    position: int  # among all pending jobs
    pending: int  # how many pending jobs there are
    partition_position: int  # among the pending jobs of its partition
    partition_pending: int
    ahead_on_nodes: int  # eligible jobs ahead of it whose partition shares nodes with its own


@dataclass
class GpuHolder:
    """A busy GPU of a node and the running job that holds it (None: not known)."""

    gpu: int
    job_id: int | None = None
    outside: bool = False  # in use outside the scheduler, or settling after it


@dataclass
class NodeLack:
    """One node of the job's partition: what the job would need there and what is missing."""

    node: str
    fits_now: bool
    problems: list[str] = field(default_factory=list)  # plain words, one per shortfall
    cpus_needed: int = 0
    cpus_free: int = 0
    mem_needed: int = 0  # MiB
    mem_free: int = 0
    gpus_needed: int = 0
    gpus_free: list[int] = field(default_factory=list)
    gpus_busy: list[GpuHolder] = field(default_factory=list)
    running: list[int] = field(default_factory=list)  # running jobs on the node


@dataclass
class Blocker:
    """A job that stands between this job and its start.

    ``kind``: ``running`` (its allocation frees what this job needs at ``end``),
    ``reservation`` (a higher pending job the plan reserved ``nodes`` for from
    ``start`` to ``end``), ``starting`` (a higher job the pass starts now) or
    ``priority`` (the higher job that stops its partition in the main pass).
    """

    job_id: int
    kind: str
    user: str = ""
    nodes: list[str] = field(default_factory=list)
    start: float | None = None
    end: float | None = None  # None: no time limit (UNLIMITED)
    cpus: int = 0
    gpus: list[str] = field(default_factory=list)  # "n1:0" per GPU it holds or will hold


@dataclass
class Suggestion:
    """A change to the request and the start the re-run pass gives with it."""

    option: str  # time | gpus | cpus | nodes | mem | partition
    value: str  # the option's new value as the user writes it
    flag: str  # the whole command-line change, e.g. "--time=1:00:00"
    start: float  # the verified start (Unix seconds)


@dataclass
class JobExplanation:
    """``slurmlite explain JOBID``: why a job waits, and what would make it start sooner."""

    job_id: int
    state: str  # PENDING; anything else comes with ``message`` only
    now: float
    message: str = ""
    user: str = ""
    partition: str = ""
    priority: int = 0
    factors: dict[str, float] = field(default_factory=dict)  # weighted, as sprio shows
    norm_factors: dict[str, float] = field(default_factory=dict)  # normalised, as sprio -n
    direct: bool = False  # priority set by an administrator
    queue: QueuePlace | None = None
    reason: str = "None"  # the plan's reason (spec §1.4); "None": it starts in this pass
    reason_text: str = ""
    starts_now: bool = False
    estimated_start: float | None = None
    planned_nodes: list[str] = field(default_factory=list)
    time_limit: int | None = None  # minutes, None = UNLIMITED
    nodes: list[NodeLack] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    waits_for: list[str] = field(default_factory=list)  # dependency and --begin
    # the limits it can never meet as asked, each with the request that fits; first = the fix
    never: list[str] = field(default_factory=list)
    user_limit: str = ""  # the per-user QOS limit holding it and which running jobs hold it


_NESTED.update(
    {
        (NodeLack, "gpus_busy"): GpuHolder,
        (JobExplanation, "queue"): QueuePlace,
        (JobExplanation, "nodes"): NodeLack,
        (JobExplanation, "blockers"): Blocker,
        (JobExplanation, "suggestions"): Suggestion,
    }
)


# ------------------------------------------------------------------- sshare (H8)


@dataclass
class ShareInfo:
    """One association as ``sshare`` prints it (``GET /v1/shares``).

    ``user`` None: an account row.  ``raw_shares`` is an int, ``"parent"``
    (``FairShare=parent``) or None (root).  Values None print blank;
    ``level_fs_inf`` stands for an infinite LevelFS (JSON has no infinity).
    ``tres_run_mins``: TRES -> count x minutes left of the running jobs below
    this association, in Slurm's TRES order (``cpu``, ``mem``, ``energy`` ...).
    """

    account: str
    user: str | None
    depth: int  # sshare indents the Account column one space per level
    raw_shares: int | str | None
    norm_shares: float
    raw_usage: float  # decayed billing-seconds
    norm_usage: float | None
    effective_usage: float
    fairshare: float | None
    level_fs: float | None
    level_fs_inf: bool = False
    grp_tres_mins: str = ""  # GrpTRESMins limits (not kept by slurmlite: always empty)
    tres_run_mins: dict[str, int] = field(default_factory=dict)


@dataclass
class SharesAnswer:
    """``GET /v1/shares``: every association in tree order (``sshare -a -l``).

    ``fair_tree`` False is ``PriorityFlags=NO_FAIR_TREE`` (no LevelFS column);
    ``now`` is when the usage was read.
    """

    fair_tree: bool
    now: float
    rows: list[ShareInfo] = field(default_factory=list)


_NESTED[(SharesAnswer, "rows")] = ShareInfo


# -------------------------------------------------------------------- sprio (H4)


@dataclass
class PriorityFactors:
    """One priority's factors, normalised (in [0, 1]) or weighted (``multifactor.Factors``)."""

    age: float = 0.0
    assoc: float = 0.0
    fairshare: float = 0.0
    jobsize: float = 0.0
    partition: float = 0.0
    qos: float = 0.0
    tres: dict[str, float] = field(default_factory=dict)  # "cpu" -> ..., "gres/gpu" -> ...
    site: int = 0
    nice: int = 0


@dataclass
class PriorityBreakdown:
    """``jobs.prio_factors`` as stored: both forms, and whether an operator set the value."""

    norm: PriorityFactors = field(default_factory=PriorityFactors)
    weighted: PriorityFactors = field(default_factory=PriorityFactors)
    direct: bool = False  # scontrol update Priority=N: factors all 0, PRIORITY is N


@dataclass
class JobPriorityInfo:
    """One row of ``sprio``: a pending, unheld, eligible job and its priority."""

    job_id: int
    partition: str
    user: str
    uid: int
    account: str
    qos: str
    priority: int
    factors: PriorityBreakdown = field(default_factory=PriorityBreakdown)


@dataclass
class PriorityWeights:
    """The PriorityWeight* keys (``sprio -w``); ``tres`` is PriorityWeightTRES as written."""

    age: int = 0
    assoc: int = 0
    fairshare: int = 0
    jobsize: int = 0
    partition: int = 0
    qos: int = 0
    tres: str = ""


@dataclass
class PriorityListing:
    """``GET /v1/priorities``: the plugin, its weights and the jobs asked for (by id)."""

    priority_type: str
    weights: PriorityWeights = field(default_factory=PriorityWeights)
    jobs: list[JobPriorityInfo] = field(default_factory=list)


_NESTED.update(
    {
        (PriorityBreakdown, "norm"): PriorityFactors,
        (PriorityBreakdown, "weighted"): PriorityFactors,
        (JobPriorityInfo, "factors"): PriorityBreakdown,
        (PriorityListing, "weights"): PriorityWeights,
        (PriorityListing, "jobs"): JobPriorityInfo,
    }
)
