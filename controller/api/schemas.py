"""Pydantic models of the JSON API, mirroring ``slurmlite.protocol``.

The wire schemas are defined once, as dataclasses in ``slurmlite.protocol``
(the commands and the agent use them without pydantic).  Each model here is
built from its dataclass field by field (same names, same types, same
defaults), so FastAPI validates requests, documents every route in
``/openapi.json`` and cannot drift from what the commands send;
``tests/unit/test_protocol_sync.py`` checks the mirror field by field.

Create schemas (requests) and read schemas (responses) are distinct models,
as they are distinct dataclasses.  A request model also carries what each
value may be (``slurmlite.wire_limits``): integers within their field's
range, finite floats, text without NUL characters, one of its words for a
field with a closed vocabulary (``wire_limits.CHOICES``: ``open_mode``,
``script_encoding``, scancel's ``states``) -- anything else is a 422 naming the field, never a value that fails later in the store (HTTP 500).
Answer models (``ANSWERS``) carry no such limits: the controller's own
values are not checked twice, and a check failing there would be a 500.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from slurmlite import protocol as p
from slurmlite.wire_limits import CHOICES, bounds, no_nul

_cache: dict[type, type[BaseModel]] = {}


# the answers' dataclasses: their mirrors carry no limits (see the module's docstring)
ANSWERS = frozenset(
    {
        p.SubmitResult,
        p.JobInfo,
        p.StepInfo,
        p.NodeAlloc,
        p.NodeInfo,
        p.PartitionInfo,
        p.CancelResult,
        p.CompletionAck,
        p.CompletionAcks,
        p.StepGrant,
        p.StepNode,
        p.StepLaunch,
        p.NodeUsage,
    }
)
NoNul = Annotated[str, AfterValidator(no_nul)]


def mirror(dc: type) -> type[BaseModel]:
    """A pydantic model with exactly the fields of dataclass ``dc`` (limited unless an answer)."""
    if dc in _cache:
        return _cache[dc]
    hints = typing.get_type_hints(dc)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(dc):
        tp = _swap(hints[f.name], None if dc in ANSWERS else f.name)
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (tp, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (tp, Field(default_factory=f.default_factory))
        else:
            fields[f.name] = (tp, ...)
    model = create_model(dc.__name__, __config__=ConfigDict(extra="ignore"), **fields)
    _cache[dc] = model
    return model


def _swap(tp: Any, limit: str | None) -> Any:
    """Replace nested protocol dataclasses by their mirrors inside a type; with ``limit``
    (the field's name), give ints its range, floats finiteness, strings no NUL."""
    if dataclasses.is_dataclass(tp):
        return mirror(tp)  # type: ignore[arg-type]
    if limit is not None and tp is int:
        lo, hi = bounds(limit)
        return Annotated[int, Field(ge=lo, le=hi)]
    if limit is not None and tp is float:
        return Annotated[float, Field(allow_inf_nan=False)]
    if limit is not None and tp is str:
        return typing.Literal[CHOICES[limit]] if limit in CHOICES else NoNul  # type: ignore[valid-type]
    args = typing.get_args(tp)
    if not args:
        return tp
    origin = typing.get_origin(tp)
    new = tuple(_swap(a, limit) for a in args)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return typing.Union[new]  # noqa: UP007
    return origin[new] if len(new) > 1 else origin[new[0]]


JobSubmitModel = mirror(p.JobSubmit)
SubmitResultModel = mirror(p.SubmitResult)
JobInfoModel = mirror(p.JobInfo)
NodeInfoModel = mirror(p.NodeInfo)
PartitionInfoModel = mirror(p.PartitionInfo)
CancelRequestModel = mirror(p.CancelRequest)
CancelResultModel = mirror(p.CancelResult)
NodeRegisterModel = mirror(p.NodeRegister)
NodeHeartbeatModel = mirror(p.NodeHeartbeat)
JobCompletionModel = mirror(p.JobCompletion)
NodeUpdateModel = mirror(p.NodeUpdate)
CompletionBatchModel = mirror(p.CompletionBatch)
CompletionAcksModel = mirror(p.CompletionAcks)
StepRequestModel = mirror(p.StepRequest)
StepGrantModel = mirror(p.StepGrant)
AllocationUpdateModel = mirror(p.AllocationUpdate)

WIRE_DATACLASSES = [
    p.JobSubmit,
    p.SubmitResult,
    p.JobInfo,
    p.StepInfo,
    p.NodeAlloc,
    p.NodeInfo,
    p.PartitionInfo,
    p.CancelRequest,
    p.CancelResult,
    p.NodeRegister,
    p.NodeHeartbeat,
    p.JobCompletion,
    p.NodeUpdate,
    p.CompletionBatch,
    p.CompletionAck,
    p.CompletionAcks,
    p.StepRequest,
    p.StepLaunch,
    p.StepNode,
    p.StepGrant,
    p.StepInput,  # srun -> agent: the agent mirrors it; listed so the check covers it
    p.AllocationUpdate,
    p.UsageSummary,  # in heartbeats and completions (slurmlite.usage)
    p.GpuUsage,
    p.NodeUsage,
]


class JobList(BaseModel):
    jobs: list[JobInfoModel]  # type: ignore[valid-type]


class NodeList(BaseModel):
    nodes: list[NodeInfoModel]  # type: ignore[valid-type]


class PartitionList(BaseModel):
    partitions: list[PartitionInfoModel]  # type: ignore[valid-type]


class CancelResults(BaseModel):
    results: list[CancelResultModel]  # type: ignore[valid-type]


class JobTable(BaseModel):
    """``GET /v1/jobs?fields=...``: the named JobInfo fields, one row of values per job."""

    fields: list[str]
    rows: list[list[Any]]


class ConfigItems(BaseModel):
    # (key, value) pairs; a pair as a 2-item list (a tuple's "prefixItems" schema
    # comes out of FastAPI as an OpenAPI 3.0 "items" array, which 3.1 refuses)
    items: list[Annotated[list[str], Field(min_length=2, max_length=2)]]


class ConfigFiles(BaseModel):
    # file name -> text: what a configless host caches (slurmlite.configless)
    files: dict[str, str]


class WhoAmI(BaseModel):
    uid: int
    gid: int
    user: str
    admin: bool


class HeartbeatOut(BaseModel):
    known: bool


class Ack(BaseModel):
    ok: bool
    changed: bool = False


class ReconfigureOut(BaseModel):
    warnings: list[str]


class Health(BaseModel):
    status: str
    cluster: str


class VersionInfo(BaseModel):
    # ``slurmlite version``: what the controller runs and the store it runs on
    slurmlite: str  # the package version (slurmlite.version)
    slurm: str  # the Slurm dialect spoken, e.g. 22.05.8
    python: str  # e.g. 3.11.9
    schema_head: str  # the store revision this controller's code expects (Alembic head)
    store_revision: str | None  # the revision the store is at (None: never migrated)
    store_kind: str  # sqlite or postgresql: the URL's kind, never the URL


# ------------------------------------------------------------------- sshare (H8)
# answers: no request limits (RawUsage and TRESRunMins exceed 32 bits)
from slurmlite import protocol_policy as pp  # noqa: E402

ANSWERS = ANSWERS | {pp.ShareInfo, pp.SharesAnswer}
SharesAnswerModel = mirror(pp.SharesAnswer)
WIRE_DATACLASSES += [pp.ShareInfo, pp.SharesAnswer]

# ------------------------------------------------------- slurmlite explain (H7)
# answers: no request limits (a priority reaches 2**32 - 1)
_EXPLAIN = {pp.JobExplanation, pp.QueuePlace, pp.NodeLack, pp.GpuHolder, pp.Blocker, pp.Suggestion}
ANSWERS = ANSWERS | _EXPLAIN
JobExplanationModel = mirror(pp.JobExplanation)
WIRE_DATACLASSES += sorted(_EXPLAIN, key=lambda dc: dc.__name__)

# -------------------------------------------------------------------- sprio (H4)
# answers: no request limits (a priority reaches 2**32 - 1)
from slurmlite import protocol_policy as pp  # noqa: E402

_SPRIO = {
    pp.PriorityFactors,
    pp.PriorityBreakdown,
    pp.JobPriorityInfo,
    pp.PriorityWeights,
    pp.PriorityListing,
}
ANSWERS = ANSWERS | _SPRIO
PriorityListingModel = mirror(pp.PriorityListing)
WIRE_DATACLASSES += sorted(_SPRIO, key=lambda dc: dc.__name__)


# ------------------------------------------------------- slurmlite check (issue 19)
class InvariantViolation(BaseModel):
    """One broken invariant (``controller.sched.invariants``); in a repair, what was done."""

    rule: str
    job: int
    step: str | None = None
    what: str
    line: str  # the same, as one ``rule=... job=... what="..."`` line


class CheckOut(BaseModel):
    violations: list[InvariantViolation]
    repairs: list[InvariantViolation]


# ---------------------------------------------- sreport, slurmlite report (issue 15)
# answers: no request limits (TRES-seconds exceed 32 bits)
from slurmlite import protocol_reports as pr  # noqa: E402

_REPORTS = {pr.ClusterTres, pr.AssocUsage, pr.AccountLink, pr.UsageReport, pr.LabRow, pr.LabReport}
ANSWERS = ANSWERS | _REPORTS
UsageReportModel = mirror(pr.UsageReport)
LabReportModel = mirror(pr.LabReport)
WIRE_DATACLASSES += sorted(_REPORTS, key=lambda dc: dc.__name__)
