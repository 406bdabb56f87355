"""``GET /v1/reports/usage``: the cluster's and each association's usage over a period.

One answer serves sreport's three reports (``cli/sreport.py`` shapes it):

* ``cluster utilization``: per TRES, the nodes' count and the period's
  allocated, down, idle and reported TRES-seconds;
* ``cluster AccountUtilizationByUser``: each (user, account)'s usage and the
  account tree (``accounts``), which the command rolls the usage up;
* ``user topusage``: the same rows, largest first.

How the cluster's figures are made without node-state history (Slurm keeps
an event table in slurmdbd; slurmlite's store keeps only each node's state
now)::

    count     = sum of the nodes' CPUs (or GPUs), as configured/registered now
    allocated = sum over jobs of held x seconds in the period  (controller.reports.held)
    down      = for each node down *now*: its CPUs x the part of the period
                since it went down (reason_time); earlier down spells are lost
    idle      = count x period - allocated - down   (never below 0)
    reported  = allocated + down + idle

Planned (reservations) and PLND Down do not exist in slurmlite: always 0.

Worked example: 2 nodes of 2 CPUs, period 1 h, one job with 2 CPUs for
30 min, n2 down for the last 15 min -> count 4, allocated 3600, down
2 x 900 = 1800, idle 4 x 3600 - 3600 - 1800 = 9000, reported 14400.

``PrivateData=usage`` (:func:`own_only`): a user who is not an operator
gets only their own rows; the cluster's totals stay whole (they name nobody).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlalchemy import func, select

from controller.auth.callers import Caller
from controller.reports.held import C, held_seconds, overlaps, tres_held
from controller.store.db import Database
from controller.store.models import AssocRow, NodeRow
from slurmlite import errors
from slurmlite.config import Config
from slurmlite.errors import SlurmError
from slurmlite.protocol_reports import (
    REPORT_TRES,
    AccountLink,
    AssocUsage,
    ClusterTres,
    UsageReport,
)


def own_only(cfg: Config, caller: Caller) -> bool:
    """Whether ``PrivateData=usage`` limits ``caller`` to their own usage (operators: never)."""
    return not caller.admin and "usage" in {w.lower() for w in cfg.private_data}


def check_period(start: float, end: float) -> None:
    """Refuse a period that is not a finite, non-empty interval of Unix time."""
    if not (math.isfinite(start) and math.isfinite(end) and 0 <= start < end):
        raise SlurmError(errors.ESLURM_INVALID_TIME_VALUE, f"period {start} - {end}")


def check_tres(tres: Sequence[str]) -> list[str]:
    """The TRES asked for, each once, in order; refuses one the reports do not know."""
    wanted = list(dict.fromkeys(t.strip().lower() for t in tres if t.strip()))
    unknown = [t for t in wanted if t not in REPORT_TRES]
    if unknown or not wanted:
        known = ",".join(REPORT_TRES)
        raise SlurmError(errors.ESLURM_INVALID_TRES, f"{','.join(unknown)} (known: {known})")
    return wanted


def usage_report(
    db: Database,
    cfg: Config,
    caller: Caller,
    start: float,
    end: float,
    now: float,
    tres: Sequence[str],
) -> UsageReport:
    """The usage answer for [start, end) at ``now`` (see the module doc)."""
    check_period(start, end)
    wanted = check_tres(tres)
    secs = held_seconds(start, end, now, db.engine.dialect.name)
    used = [func.sum(secs * tres_held(t)) for t in wanted]
    window = overlaps(start, end, now)
    mine = own_only(cfg, caller)
    per_assoc = select(C.user, C.account, func.count(), *used).where(window)
    if mine:
        per_assoc = per_assoc.where(C.uid == caller.uid)
    per_assoc = per_assoc.group_by(C.user, C.account)
    with db.read() as s:
        rows = s.execute(per_assoc).all()
        if mine:  # the cluster's totals cover everyone's jobs
            totals = list(s.execute(select(*used).where(window)).one())
        else:  # the sum of the groups: no second pass over the jobs
            totals = [sum(r[3 + i] or 0.0 for r in rows) for i in range(len(wanted))]
        nodes = s.execute(select(NodeRow.cpus, NodeRow.gpus, NodeRow.down, NodeRow.reason_time))
        nodes = nodes.all()
        tree = s.execute(select(AssocRow.account, AssocRow.parent).where(AssocRow.user == ""))
        tree = tree.all()
    # an association that held anything in the period is listed, with 0 for a TRES it lacked
    assocs = [
        AssocUsage(
            r[0], r[1], int(r[2]), {t: float(v or 0) for t, v in zip(wanted, r[3:], strict=True)}
        )
        for r in rows
    ]
    cluster = [
        _cluster_tres(t, float(total or 0.0), nodes, start, end, now)
        for t, total in zip(wanted, totals, strict=True)
    ]
    return UsageReport(
        cluster=cfg.cluster_name,
        start=start,
        end=end,
        now=now,
        tres=cluster,
        assocs=sorted(assocs, key=lambda a: (a.account, a.user)),
        accounts=[AccountLink(a, p) for a, p in sorted(tree)],
        own_only=mine,
    )


def _cluster_tres(
    tres: str, alloc: float, nodes: Sequence, start: float, end: float, now: float
) -> ClusterTres:
    """One TRES's row of ``cluster utilization`` (see the module doc for the formulas)."""
    count, down = 0, 0.0
    for cpus, gpus, is_down, since in nodes:
        have = cpus if tres == "cpu" else gpus
        count += have
        if is_down:
            begin = max(since or start, start)
            down += have * max(0.0, min(end, now) - begin)
    idle = max(0.0, count * (end - start) - alloc - down)
    return ClusterTres(tres, count, alloc, down, idle, alloc + down + idle)
