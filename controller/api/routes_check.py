"""``slurmlite check``: the store's invariants, on demand (administrators only).

``GET /v1/check`` lists the violations (read-only); ``POST /v1/check/repair``
mends them in one transaction beside the running loop (the store's write
lock keeps the two from racing), logs one ``event=invariant_repair`` line
each, and sends the orders a repair needs (a node failure's terminate
orders).  A caller who is not an operator gets Slurm's "Access/permission
denied".  The rules: ``controller.sched.invariants``.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import CheckOut, InvariantViolation
from controller.sched.invariants import Report, Violation
from slurmlite import errors
from slurmlite.errors import SlurmError

router = APIRouter(prefix="/v1", tags=["admin"])


def _out(v: Violation) -> InvariantViolation:
    return InvariantViolation(rule=v.rule, job=v.job, step=v.step, what=v.what, line=v.line())


def _answer(report: Report) -> CheckOut:
    return CheckOut(
        violations=[_out(v) for v in report.violations],
        repairs=[_out(v) for v in report.repairs],
    )


@router.get("/check", response_model=CheckOut)
async def check(caller: UserCaller, ctl: Ctl) -> CheckOut:
    if not caller.admin:
        raise SlurmError(errors.ESLURM_ACCESS_DENIED)
    return _answer(await asyncio.to_thread(ctl.check, False))


@router.post("/check/repair", response_model=CheckOut)
async def repair(caller: UserCaller, ctl: Ctl) -> CheckOut:
    if not caller.admin:
        raise SlurmError(errors.ESLURM_ACCESS_DENIED)
    report = await asyncio.to_thread(ctl.check, True)
    ctl.send(report)
    if report.repairs:
        ctl.loop.wake()  # freed nodes, requeued jobs: schedule again
    return _answer(report)
