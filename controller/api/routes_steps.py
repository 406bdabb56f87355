"""Routes of job steps and of allocations without a batch script (users, authenticated).

    POST /v1/jobs/{job_id}/steps        StepRequest      -> StepGrant
    POST /v1/jobs/{job_id}/allocation   AllocationUpdate -> AllocationState

A refusal is Slurm's errno in the usual error body (``SlurmError.as_answer``):
``ESLURM_NODES_BUSY`` (409) tells srun to wait and ask again, as Slurm's
"step creation temporarily disabled"; ``ESLURM_JOB_PENDING`` (409),
``ESLURM_ALREADY_DONE`` (409), ``ESLURM_ACCESS_DENIED`` (403) and
``ESLURM_INVALID_JOB_ID`` (404) are final.  The rules live in
``controller.steps.create`` and ``controller.steps.allocations``; these routes only run
them off the event loop and dispatch the orders that follow.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel

from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import AllocationUpdateModel, StepGrantModel, StepRequestModel
from controller.steps.allocations import update_allocation
from controller.steps.create import create_step
from slurmlite.protocol import AllocationUpdate, StepRequest, from_dict, to_dict
from slurmlite.wire_limits import INT32_MAX

router = APIRouter(prefix="/v1/jobs", tags=["steps"])
JobIdPath = Annotated[int, Path(ge=0, le=INT32_MAX)]


class AllocationState(BaseModel):
    """The allocation after the update: srun/salloc learn how it stands."""

    job_id: int
    state: str  # base state: RUNNING, PENDING, COMPLETED, FAILED, CANCELLED, TIMEOUT ...
    reason: str
    exit_code: int | None = None


@router.post("/{job_id}/steps", response_model=StepGrantModel, operation_id="create_step")
async def create(job_id: JobIdPath, body: StepRequestModel, caller: UserCaller, ctl: Ctl):  # type: ignore[valid-type]
    req = from_dict(StepRequest, body.model_dump())  # type: ignore[attr-defined]
    grant = await asyncio.to_thread(
        create_step, ctl.db, ctl.cfg, ctl.signer, ctl.clock(), caller, job_id, req
    )
    return to_dict(grant)


@router.post("/{job_id}/allocation", response_model=AllocationState, operation_id="allocation")
async def allocation(
    job_id: JobIdPath,
    body: AllocationUpdateModel,  # type: ignore[valid-type]
    caller: UserCaller,
    ctl: Ctl,
) -> AllocationState:
    upd = from_dict(AllocationUpdate, body.model_dump())  # type: ignore[attr-defined]
    row, orders = await asyncio.to_thread(
        update_allocation, ctl.db, ctl.clock(), caller, job_id, upd
    )
    for order in orders:  # the steps still running end on their nodes
        asyncio.create_task(ctl.loop.dispatch(order))
    if upd.end:
        ctl.loop.wake()  # its resources may be free for other jobs
    return AllocationState(
        job_id=row.id, state=row.state, reason=row.reason, exit_code=row.exit_code
    )
