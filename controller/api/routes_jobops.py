"""Routes of the job verbs: hold, release, requeue, update (users, authenticated).

Each takes a list of job ids and answers one result per id (a repeated id
once), in order:
``{"results": [{"job_id": 7, "error": null, "errno": 0}, ...]}`` (the shape
of a cancel's answer), so ``scontrol`` can print Slurm's ``<error> for job
<id>`` line for each refusal while the other ids are done.  A request the
API cannot read at all is a 422; nothing here answers 5xx for a client's
mistake.  The rules themselves are in ``controller.jobs.operations``.

    POST /v1/jobs/hold     {"job_ids": [7], "user_hold": false}
    POST /v1/jobs/release  {"job_ids": [7]}
    POST /v1/jobs/requeue  {"job_ids": [7], "hold": false}
    POST /v1/jobs/update   {"job_ids": [7], "time_limit": 30, "comment": "x"}
                           {"job_ids": [7], "priority": 5000, "nice": 10}
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from controller.api.deps import Ctl, UserCaller
from controller.jobs.operations import JobChanges, JobOps, OpOutcome

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

MAX_IDS = 10_000  # one request's ids; more is a client's mistake (422)
MAX_TEXT = 4096  # a job name or comment
INT32 = 2**31 - 1  # job ids and minutes are stored as 32-bit integers
# a job id, or a job reference as text (``57_9``, ``57_[1-3]``: ``slurmlite.jobref``)
RefText = Annotated[str, Field(max_length=256, pattern=r"^[0-9_\[\],:.\-]+$")]
JobIds = list[Annotated[int, Field(ge=0, le=INT32)] | RefText]
Minutes = Annotated[int, Field(ge=1, le=INT32)]
Text = Annotated[str, Field(max_length=MAX_TEXT, pattern=r"^[^\x00]*$")]  # no NUL: PostgreSQL
Priority = Annotated[int, Field(ge=0, le=0xFFFFFFFD)]  # scontrol's range; 0 holds the job
Nice = Annotated[int, Field(ge=-(2**31 - 3), le=2**31 - 3)]  # Slurm's NICE_OFFSET - 3


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HoldRequest(_Strict):
    job_ids: JobIds = Field(min_length=1, max_length=MAX_IDS)
    user_hold: bool = False  # ``scontrol uhold``: a user hold even from an operator


class ReleaseRequest(_Strict):
    job_ids: JobIds = Field(min_length=1, max_length=MAX_IDS)


class RequeueRequest(_Strict):
    job_ids: JobIds = Field(min_length=1, max_length=MAX_IDS)
    hold: bool = False  # ``scontrol requeuehold``


class UpdateRequest(_Strict):
    """What to change; a field left out (null) stays as it is."""

    job_ids: JobIds = Field(min_length=1, max_length=MAX_IDS)
    time_limit: Minutes | Literal["UNLIMITED"] | None = None
    name: Text | None = None
    comment: Text | None = None
    partition: Text | None = None
    requeue: bool | None = None
    priority: Priority | None = None
    nice: Nice | None = None
    # pending jobs only: "" drops the dependency; begin_time 0 means now
    dependency: Text | None = None
    begin_time: float | None = Field(default=None, ge=0, le=2**40)
    nodes_min: int | None = Field(default=None, ge=1, le=2**31 - 1)
    nodes_max: int | None = Field(default=None, ge=1, le=2**31 - 1)
    array_throttle: Annotated[int, Field(ge=0, le=INT32)] | None = None  # ArrayTaskThrottle


class JobOpResult(BaseModel):
    job_id: int
    error: str | None = None  # Slurm's message for ``errno``
    errno: int = 0  # 0: done
    job: str | None = None  # the reference answered for (``57_9``), when ids came as text


class JobOpResults(BaseModel):
    results: list[JobOpResult]


def _answer(outcome: OpOutcome) -> JobOpResults:
    return JobOpResults(
        results=[
            JobOpResult(job_id=r.job_id, error=r.error, errno=r.errno, job=r.job)
            for r in outcome.results
        ]
    )


@router.post("/hold", response_model=JobOpResults)
async def hold(body: HoldRequest, caller: UserCaller, ctl: Ctl) -> JobOpResults:
    ops = JobOps(ctl.jobs)
    return _answer(await asyncio.to_thread(ops.hold, caller, body.job_ids, body.user_hold))


@router.post("/release", response_model=JobOpResults)
async def release(body: ReleaseRequest, caller: UserCaller, ctl: Ctl) -> JobOpResults:
    # no wake-up: the loop's next regular pass (within a second) looks at the job, so
    # its reason reads None until then, as after a release in Slurm
    ops = JobOps(ctl.jobs)
    return _answer(await asyncio.to_thread(ops.release, caller, body.job_ids))


@router.post("/requeue", response_model=JobOpResults)
async def requeue(body: RequeueRequest, caller: UserCaller, ctl: Ctl) -> JobOpResults:
    ops = JobOps(ctl.jobs)
    outcome = await asyncio.to_thread(ops.requeue, caller, body.job_ids, body.hold)
    for order in outcome.orders:  # the old runs end on their nodes
        asyncio.create_task(ctl.loop.dispatch(order))
    ctl.loop.wake()  # their resources are free for other jobs
    return _answer(outcome)


@router.post("/update", response_model=JobOpResults)
async def update(body: UpdateRequest, caller: UserCaller, ctl: Ctl) -> JobOpResults:
    limit = body.time_limit
    changes = JobChanges(
        time_limit=limit if isinstance(limit, int) else None,
        unlimited=limit == "UNLIMITED",
        name=body.name,
        comment=body.comment,
        partition=body.partition,
        requeue=body.requeue,
        priority=body.priority,
        nice=body.nice,
        dependency=body.dependency,
        begin_time=body.begin_time,
        nodes_min=body.nodes_min,
        nodes_max=body.nodes_max,
        array_throttle=body.array_throttle,
    )
    ops = JobOps(ctl.jobs)
    outcome = await asyncio.to_thread(ops.update, caller, body.job_ids, changes)
    ctl.loop.wake()  # a new limit or partition may let the job start
    return _answer(outcome)
