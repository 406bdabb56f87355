"""Job routes: submit, list, accounting, cancel (users, over the Unix socket).

Query parameters are text lists (``?ids=3,4&ids=7``); a value that cannot
name anything (``ids=abc``, an id beyond 32 bits) matches nothing; one with
a NUL character is refused (422: PostgreSQL cannot compare such text).  The
submission's answer links to what can be done with the new job next (list,
account, cancel, hold, release, requeue, update: OpenAPI ``links``), so
clients and schemathesis' state machine can follow.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, Response

from controller.accounting.usage import accounting_json
from controller.api.deps import Ctl, UserCaller
from controller.api.fastsubmit import SUBMIT_BODY, submit_job
from controller.api.schemas import (
    CancelRequestModel,
    CancelResults,
    JobList,
    JobTable,
    NoNul,
    SubmitResultModel,
)
from controller.auth.callers import Caller
from controller.context import Controller
from controller.store.job_query import JobQuery
from controller.store.rows import UnknownField
from slurmlite.protocol import CancelRequest, from_dict, to_dict
from slurmlite.wire_limits import INT32_MAX

router = APIRouter(prefix="/v1", tags=["jobs"])
ListQuery = Annotated[list[NoNul] | None, Query()]
Time = Annotated[float | None, Query(allow_inf_nan=False)]
_DIGITS = re.compile(r"[0-9]{1,10}")

# the new job's id, as later requests take it
_NEW_JOB = "$response.body#/job_id"
SUBMIT_LINKS: dict[str, Any] = {
    "ShowJob": {
        "operationId": "list_jobs",
        "parameters": {"ids": _NEW_JOB, "all_states": True, "steps": True},
        "description": "The job just submitted, as squeue/scontrol show it.",
    },
    "CancelJob": {
        "operationId": "cancel_jobs",
        "requestBody": {"job_ids": [_NEW_JOB]},
        "description": "scancel of the job just submitted.",
    },
    "AccountJob": {
        "operationId": "accounting",
        "parameters": {"ids": _NEW_JOB},
        "description": "The job's accounting record, as sacct shows it.",
    },
    **{
        f"{verb.capitalize()}Job": {
            "operationRef": f"#/paths/~1v1~1jobs~1{verb}/post",  # controller.api.routes_jobops
            "requestBody": {"job_ids": [_NEW_JOB]},
            "description": f"scontrol {verb} of the job just submitted.",
        }
        for verb in ("hold", "release", "requeue", "update")
    },
}


def _job_list(
    ctl: Controller, caller: Caller, q: JobQuery, fields: list[str] | None = None
) -> Response:
    """The listing, serialised by the controller itself (``job_query.to_json``): validating
    thousands of jobs through the response model would cost more than building them.
    ``fields`` names the JobInfo fields of a projection; an unknown one is a 400."""
    try:
        body = ctl.jobs.list_json(caller, q, fields)
    except UnknownField as e:
        raise HTTPException(status_code=400, detail=str(e)) from None
    return Response(content=body, media_type="application/json")


def _fields(values: list[str] | None) -> list[str] | None:
    """``?fields=job_id,state&fields=flags`` -> ["job_id", "state", "flags"]; absent -> None."""
    if values is None:
        return None
    return [v for item in values for v in item.split(",") if v]


def _ids(values: list[str] | None) -> list[int] | None:
    """``?ids=3,4&ids=7`` -> [3, 4, 7]; no parameter -> None (all jobs); ``abc`` and
    ``99999999999`` (beyond any job id) match no job."""
    if not values:
        return None
    ids = (int(x) for x in _csv(values) or [] if _DIGITS.fullmatch(x))
    return [i for i in ids if i <= INT32_MAX]


def _csv(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out = [v for item in values for v in item.split(",") if v]
    return out or None


@router.post(
    "/jobs",
    response_model=SubmitResultModel,
    openapi_extra={**SUBMIT_BODY, "responses": {"200": {"links": SUBMIT_LINKS}}},
)
async def submit(caller: UserCaller, request: Request) -> Response:  # type: ignore[valid-type]
    return await submit_job(caller, request)  # validation, group commit: see fastsubmit


@router.get("/jobs", response_model=JobList | JobTable, operation_id="list_jobs")
def list_jobs(
    caller: UserCaller,
    ctl: Ctl,
    ids: ListQuery = None,
    users: ListQuery = None,
    names: ListQuery = None,
    partitions: ListQuery = None,
    states: ListQuery = None,
    all_states: bool = False,
    steps: bool = False,
    fields: ListQuery = None,
):
    q = JobQuery(
        job_ids=_ids(ids),
        users=_csv(users),
        names=_csv(names),
        partitions=_csv(partitions),
        states=set(_csv(states) or []) or None,
        all_states=all_states,
        with_steps=steps,
    )
    return _job_list(ctl, caller, q, _fields(fields))


@router.get("/accounting", response_model=JobList, operation_id="accounting")
def accounting(
    caller: UserCaller,
    ctl: Ctl,
    ids: ListQuery = None,
    users: ListQuery = None,
    names: ListQuery = None,
    states: ListQuery = None,
    start: Time = None,
    end: Time = None,
):
    wanted = set(_csv(states) or []) or None
    q = JobQuery(
        job_ids=_ids(ids),
        users=_csv(users),
        names=_csv(names),
        states=wanted,
        all_states=wanted is None,
        with_steps=True,
        accounting=True,
        start=start,
        end=end,
    )
    # with each job's measured usage (JobInfo.usage: controller.accounting.usage)
    body = accounting_json(
        ctl.db, ctl.jobs.visible_to(caller, q), ctl.clock(), ctl.jobs.min_job_age
    )
    return Response(body, media_type="application/json")


@router.post("/jobs/cancel", response_model=CancelResults, operation_id="cancel_jobs")
async def cancel(body: CancelRequestModel, caller: UserCaller, ctl: Ctl):  # type: ignore[valid-type]
    import asyncio

    req = from_dict(CancelRequest, body.model_dump())  # type: ignore[attr-defined]
    outcome = await asyncio.to_thread(ctl.jobs.cancel, caller, req)
    for order in outcome.orders:
        asyncio.create_task(ctl.loop.dispatch(order))
    ctl.loop.wake()
    return {"results": [to_dict(r) for r in outcome.results]}
