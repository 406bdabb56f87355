"""The route sprio reads: each pending job's priority and its factors.

    GET /v1/priorities?ids=7,8&users=alice&partitions=debug

answers a ``slurmlite.protocol_policy.PriorityListing``: the PriorityType,
the weights (``sprio -w``) and one ``JobPriorityInfo`` per job, in id order.
Which jobs, as Slurm's controller picks them for sprio: pending, not held
(priority 0), already eligible (``eligible_time`` reached: a ``--begin`` in
the future is left out), matching every filter given; ``PrivateData=jobs``
hides other users' jobs from a non-operator, as squeue does.

The factors are the ``jobs.prio_factors`` text the priority service wrote
(``controller.accounting.priorities``), passed on without being decoded, so 10,000
pending jobs cost a query and a string join; a job that has none yet (stored
before multifactor was configured) is evaluated on the spot.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

from fastapi import APIRouter, Query, Response
from sqlalchemy import select

from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import NoNul, PriorityListingModel
from controller.auth.callers import Caller
from controller.context import Controller
from controller.store.models import JobRow

router = APIRouter(prefix="/v1", tags=["priority"])
ListQuery = Annotated[list[NoNul] | None, Query()]  # NUL: 422 (PostgreSQL cannot compare it)

_JOBS = JobRow.__table__
_COLUMNS = (
    _JOBS.c.id,
    _JOBS.c.partition,
    _JOBS.c.user,
    _JOBS.c.uid,
    _JOBS.c.account,
    _JOBS.c.qos,
    _JOBS.c.priority,
    _JOBS.c.prio_factors,
)
_encode = json.JSONEncoder(separators=(",", ":")).encode


def _words(values: list[str] | None) -> list[str] | None:
    """``["7,8", "9"]`` -> ``["7", "8", "9"]``; None when nothing was given."""
    if not values:
        return None
    return [w for v in values for w in v.split(",") if w]


def listing_json(
    ctl: Controller,
    caller: Caller,
    ids: list[int] | None,
    users: list[str] | None,
    partitions: list[str] | None,
) -> str:
    """The ``PriorityListing`` answer as JSON text (see the module doc)."""
    now = ctl.clock()
    stmt = select(*_COLUMNS).where(
        _JOBS.c.state == "PENDING",
        _JOBS.c.hold.is_(None),
        _JOBS.c.priority != 0,
        _JOBS.c.eligible_time.is_not(None),
        _JOBS.c.eligible_time <= now,
    )
    if ids is not None:
        stmt = stmt.where(_JOBS.c.id.in_(ids))
    if users is not None:
        stmt = stmt.where(_JOBS.c.user.in_(users))
    if partitions is not None:
        stmt = stmt.where(_JOBS.c.partition.in_(partitions))
    private = {w.lower() for w in ctl.cfg.private_data}
    if "jobs" in private and not caller.admin:
        stmt = stmt.where(_JOBS.c.uid == caller.uid)
    with ctl.db.read() as s:
        rows = s.connection().execute(stmt.order_by(_JOBS.c.id)).all()
    missing = [r.id for r in rows if not r.prio_factors]
    fresh: dict[int, tuple[int, str]] = {}
    if missing and ctl.priorities.multifactor:
        with ctl.db.read() as s:
            for row in s.scalars(select(JobRow).where(JobRow.id.in_(missing))):
                fresh[row.id] = ctl.priorities.evaluate(row, now)
    jobs = []
    for r in rows:
        priority, factors = fresh.get(r.id, (r.priority, r.prio_factors or "{}"))
        head = _encode(
            {
                "job_id": r.id,
                "partition": r.partition,
                "user": r.user,
                "uid": r.uid,
                "account": r.account,
                "qos": r.qos,
                "priority": priority,
            }
        )
        jobs.append(f'{head[:-1]},"factors":{factors}}}')
    p = ctl.priorities.params
    weights = {name: p.weight(name) for name in ("age", "assoc", "fairshare", "jobsize")}
    weights.update(partition=p.partition, qos=p.qos, tres=p.tres_text)
    head = _encode({"priority_type": ctl.cfg.priority_type, "weights": weights})
    return f'{head[:-1]},"jobs":[{",".join(jobs)}]}}'


@router.get("/priorities", response_model=PriorityListingModel)
async def priorities(
    caller: UserCaller,
    ctl: Ctl,
    ids: ListQuery = None,
    users: ListQuery = None,
    partitions: ListQuery = None,
) -> Response:
    """Pending jobs' priorities and factors (sprio).  An id that is no number matches nothing."""
    id_words = _words(ids)
    job_ids = None
    if id_words is not None:
        job_ids = [int(w) for w in id_words if w.isdigit() and int(w) < 2**31]
    text = await asyncio.to_thread(
        listing_json, ctl, caller, job_ids, _words(users), _words(partitions)
    )
    return Response(content=text, media_type="application/json")
