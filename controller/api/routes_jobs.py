"""Job routes: submit, list, accounting, cancel (users, over the Unix socket)."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query, Response

from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import (
    CancelRequestModel,
    CancelResults,
    JobList,
    JobSubmitModel,
    SubmitResultModel,
)
from slurmlite.protocol import CancelRequest, JobSubmit, from_dict, to_dict

router = APIRouter(prefix="/v1", tags=["jobs"])
ListQuery = Annotated[list[str] | None, Query()]


def _job_list(jobs: list[dict]) -> Response:  # type: ignore[type-arg]
    """The JobList answer, serialised directly: re-validating thousands of jobs
    through the response model would cost more than building them."""
    body = json.dumps({"jobs": jobs}, separators=(",", ":"))
    return Response(content=body, media_type="application/json")


def _ids(values: list[str] | None) -> list[int] | None:
    """``?ids=3,4&ids=7`` -> [3, 4, 7]; no parameter -> None (all jobs); ``abc`` matches no job."""
    if not values:
        return None
    return [int(x) for x in _csv(values) or [] if x.isdigit()]


def _csv(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out = [v for item in values for v in item.split(",") if v]
    return out or None


@router.post("/jobs", response_model=SubmitResultModel)
def submit(body: JobSubmitModel, caller: UserCaller, ctl: Ctl):  # type: ignore[valid-type]
    req = from_dict(JobSubmit, body.model_dump())  # type: ignore[attr-defined]
    job_id, message = ctl.jobs.submit(caller, req)
    if not req.test_only:
        ctl.loop.wake()
    return {"job_id": job_id, "test_only_message": message}


@router.get("/jobs", response_model=JobList)
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
):
    job_ids = _ids(ids)
    wanted = set(_csv(states) or []) or None
    jobs = ctl.jobs.list_jobs(
        caller,
        job_ids=job_ids,
        users=_csv(users),
        names=_csv(names),
        partitions=_csv(partitions),
        states=wanted,
        all_states=all_states,
        with_steps=steps,
        as_dicts=True,
    )
    return _job_list(jobs)


@router.get("/accounting", response_model=JobList)
def accounting(
    caller: UserCaller,
    ctl: Ctl,
    ids: ListQuery = None,
    users: ListQuery = None,
    names: ListQuery = None,
    states: ListQuery = None,
    start: float | None = None,
    end: float | None = None,
):
    job_ids = _ids(ids)
    wanted = set(_csv(states) or []) or None
    jobs = ctl.jobs.list_jobs(
        caller,
        job_ids=job_ids,
        users=_csv(users),
        names=_csv(names),
        states=wanted,
        all_states=wanted is None,
        with_steps=True,
        accounting=True,
        start=start,
        end=end,
        as_dicts=True,
    )
    return _job_list(jobs)


@router.post("/jobs/cancel", response_model=CancelResults)
async def cancel(body: CancelRequestModel, caller: UserCaller, ctl: Ctl):  # type: ignore[valid-type]
    import asyncio

    req = from_dict(CancelRequest, body.model_dump())  # type: ignore[attr-defined]
    outcome = await asyncio.to_thread(ctl.jobs.cancel, caller, req)
    for order in outcome.orders:
        asyncio.create_task(ctl.loop.dispatch(order))
    ctl.loop.wake()
    return {"results": [to_dict(r) for r in outcome.results]}
