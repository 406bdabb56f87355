"""What sprio lists: each pending job's priority and its factors, as JSON text.

``GET /v1/priorities`` (``controller.api.routes_priority``) answers a
``slurmlite.protocol_policy.PriorityListing``: the PriorityType, the weights
(``sprio -w``) and one ``JobPriorityInfo`` per job, in id order.  Which
jobs, as Slurm's controller picks them for sprio: pending, not held
(priority 0), already eligible (``eligible_time`` reached: a ``--begin`` in
the future is left out), matching every filter given; ``PrivateData=jobs``
hides other users' jobs from a non-operator, as squeue does.

The factors are the ``jobs.prio_factors`` text the priority service wrote
(``controller.accounting.priorities``), passed on without being decoded, so 10,000
pending jobs cost a query and a string join; a job that has none yet (stored
before multifactor was configured) is evaluated on the spot.  E.g. one job::

    {"priority_type":"priority/multifactor","weights":{"age":1000,...},
     "jobs":[{"job_id":7,...,"priority":750,"factors":{"norm":{...},...}}]}
"""

from __future__ import annotations

import json

from sqlalchemy import select

from controller.accounting.priorities import PriorityService
from controller.auth.callers import Caller
from controller.store.models import JobRow

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


def listing_json(
    svc: PriorityService,
    caller: Caller,
    ids: list[int] | None,
    users: list[str] | None,
    partitions: list[str] | None,
    now: float,
) -> str:
    """The ``PriorityListing`` answer at ``now`` as JSON text (see the module doc)."""
    cfg = svc.cfg
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
    private = {w.lower() for w in cfg.private_data}
    if "jobs" in private and not caller.admin:
        stmt = stmt.where(_JOBS.c.uid == caller.uid)
    with svc.db.read() as s:
        rows = s.connection().execute(stmt.order_by(_JOBS.c.id)).all()
    missing = [r.id for r in rows if not r.prio_factors]
    fresh: dict[int, tuple[int, str]] = {}
    if missing and svc.multifactor:
        with svc.db.read() as s:
            for row in s.scalars(select(JobRow).where(JobRow.id.in_(missing))):
                fresh[row.id] = svc.evaluate(row, now)
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
    p = svc.params
    weights = {name: p.weight(name) for name in ("age", "assoc", "fairshare", "jobsize")}
    weights.update(partition=p.partition, qos=p.qos, tres=p.tres_text)
    head = _encode({"priority_type": cfg.priority_type, "weights": weights})
    return f'{head[:-1]},"jobs":[{",".join(jobs)}]}}'
