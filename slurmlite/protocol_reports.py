"""Wire schemas of the usage reports (issue 15): what ``sreport`` and ``slurmlite report`` get.

The companion of ``slurmlite.protocol`` for ``GET /v1/reports/usage`` and
``GET /v1/reports/lab``; the same conventions hold (times are Unix seconds,
``None`` when unknown).  The controller's pydantic models
(``controller/api/schemas.py``) mirror these field for field.

Usage is in *TRES-seconds*: a job holding 4 CPUs for 30 minutes of the
period used 4 x 1800 = 7200 CPU-seconds.  The commands turn seconds into
minutes, hours or percentages; the controller never rounds.

Example: ``GET /v1/reports/usage?start=1800000000&end=1800086400&tres=cpu``
answers a ``UsageReport`` whose ``tres`` holds one ``ClusterTres("cpu",
count=4, alloc_secs=7200.0, ...)`` and whose ``assocs`` holds
``AssocUsage("alice", "lab", jobs=1, secs={"cpu": 7200.0})``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmlite.protocol import _NESTED

# TRES the reports know, in Slurm's spelling (sreport --tres=cpu,gres/gpu)
REPORT_TRES = ("cpu", "gres/gpu")


@dataclass
class ClusterTres:
    """One TRES of the whole cluster over the period (sreport cluster utilization)."""

    tres: str  # "cpu" or "gres/gpu"
    count: int  # how many the nodes have (as configured/registered now)
    alloc_secs: float  # held by jobs, clipped to the period
    down_secs: float  # on nodes down (only the current down spell is known)
    idle_secs: float  # neither allocated nor down
    reported_secs: float  # alloc + down + idle (= count x period unless overcommitted)


@dataclass
class AssocUsage:
    """What one user used under one account over the period."""

    user: str
    account: str
    jobs: int  # jobs that held resources during the period
    secs: dict[str, float] = field(default_factory=dict)  # TRES -> TRES-seconds


@dataclass
class AccountLink:
    """An account and its parent (None for root): the tree the reports roll usage up."""

    account: str
    parent: str | None = None


@dataclass
class UsageReport:
    """``GET /v1/reports/usage``: the period's usage by cluster, account and user."""

    cluster: str
    start: float
    end: float
    now: float
    tres: list[ClusterTres] = field(default_factory=list)
    assocs: list[AssocUsage] = field(default_factory=list)
    accounts: list[AccountLink] = field(default_factory=list)
    own_only: bool = False  # PrivateData=usage: only the caller's rows are listed


@dataclass
class LabRow:
    """One user's (or account's) period in ``slurmlite report``."""

    name: str
    jobs: int  # jobs that held resources during the period
    cpu_hours: float  # CPUs x hours, clipped to the period
    gpu_hours: float
    mean_wait_s: float | None  # start - eligible, over jobs that started in the period
    ended: int  # jobs that ended in the period
    completed: int  # of those, COMPLETED
    gpu_util: float | None  # mean GPU utilization, percent, weighted by GPU-hours; None: unmeasured
    measured_gpu_hours: float = 0.0  # the GPU-hours gpu_util is the mean over


@dataclass
class LabReport:
    """``GET /v1/reports/lab``: jobs, hours, waits and outcomes per user or account."""

    start: float
    end: float
    now: float
    by: str  # "user" or "account"
    rows: list[LabRow] = field(default_factory=list)
    own_only: bool = False


_NESTED.update(
    {
        (UsageReport, "tres"): ClusterTres,
        (UsageReport, "assocs"): AssocUsage,
        (UsageReport, "accounts"): AccountLink,
        (LabReport, "rows"): LabRow,
    }
)
