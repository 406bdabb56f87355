"""``GET /v1/jobs/{job_id}/explain``: why a job is pending (``slurmlite explain``).

The answer is ``controller.sched.explain_job``'s ``JobExplanation`` (a pass
over a fresh snapshot, the job's stored factors, who may see the job).  The
work (a pass plus up to ``explain_suggest.MAX_TRIALS`` trial passes) runs in
FastAPI's thread pool (a plain ``def`` route), never on the event loop.
A running job whose GPUs were flagged idle gets the flag's words added to
its message (``controller.sched.idlegpus``).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Path

from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import JobExplanationModel
from controller.sched.explain_job import explain_job as explain_for
from slurmlite.protocol import to_dict
from slurmlite.wire_limits import INT32_MAX

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
JobIdPath = Annotated[int, Path(ge=0, le=INT32_MAX)]


@router.get("/{job_id}/explain", response_model=JobExplanationModel, operation_id="explain_job")
def explain_job(job_id: JobIdPath, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    answer = explain_for(ctl.db, ctl.cfg, ctl.policy, ctl.nodes, caller, job_id, ctl.clock())
    idle = ctl.loop.idle_gpus.describe(job_id) if answer.state == "RUNNING" else None
    if idle is not None:
        answer = dataclasses.replace(answer, message=f"{answer.message}; {idle}")
    return to_dict(answer)
