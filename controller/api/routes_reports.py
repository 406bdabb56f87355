"""Usage reports: ``GET /v1/reports/usage`` (sreport) and ``GET /v1/reports/lab`` (slurmlite report).

Thin routes over ``controller.reports``: the period is Unix seconds
``[start, end)`` as the command worked it out (Slurm's time formats and
defaults are the command's business); the aggregate runs in a worker
thread.  Every authenticated user may ask; ``PrivateData=usage`` limits a
non-operator's rows to their own (``controller.reports.utilization.own_only``).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import LabReportModel, UsageReportModel
from controller.reports.lab import lab_report
from controller.reports.utilization import usage_report
from slurmlite.protocol import to_dict

router = APIRouter(prefix="/v1", tags=["reports"])

Seconds = Annotated[float, Query(ge=0, le=2**40, allow_inf_nan=False)]


@router.get("/reports/usage", response_model=UsageReportModel)
async def usage(
    caller: UserCaller,
    ctl: Ctl,
    start: Seconds,
    end: Seconds,
    tres: Annotated[str, Query(max_length=200)] = "cpu",
) -> dict[str, Any]:
    """Cluster, account and user usage in TRES-seconds (``tres``: comma list, cpu,gres/gpu)."""
    report = await asyncio.to_thread(
        usage_report, ctl.db, ctl.cfg, caller, start, end, ctl.clock(), tres.split(",")
    )
    return to_dict(report)


@router.get("/reports/lab", response_model=LabReportModel)
async def lab(
    caller: UserCaller,
    ctl: Ctl,
    start: Seconds,
    end: Seconds,
    by: Literal["user", "account"] = "user",
) -> dict[str, Any]:
    """Jobs, CPU/GPU-hours, mean wait, success rate and GPU utilization per user or account."""
    report = await asyncio.to_thread(
        lab_report, ctl.db, ctl.cfg, caller, start, end, ctl.clock(), by
    )
    return to_dict(report)
