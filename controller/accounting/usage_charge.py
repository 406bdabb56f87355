"""Fair-share usage in the store: reset, decay, and charging the jobs that ran.

Every ``PriorityCalcPeriod`` (``controller.accounting.priorities``) one transaction does,
in Slurm's order (spec §3.1, ``slurmlite.scheduler.usage``):

1. reset: when a ``PriorityUsageResetPeriod`` boundary lies between the last
   reset (meta ``usage_reset_at``) and now, every association's usage is 0;
2. decay: every association's ``raw_usage`` is multiplied by ``D ** dt``,
   ``dt`` the seconds since meta ``usage_decayed_at`` (one UPDATE);
3. charge: every job that ran since its last charge adds
   ``dt_job * D ** dt_job * billing * UsageFactor`` (``usage.running_charge``)
   to its association, where ``dt_job`` runs from ``charged_until`` (or its
   start) to now (or its end, for a job that ended meanwhile: charged once
   more, up to its end).  ``charged_until`` moves to that moment, so no
   second of a run is charged twice.

The association charged is the job's (account, user) row; a user without
one is charged to the account's own row, and a job of an account without
any row is not charged (Slurm tracks no usage without an association).

Which jobs are looked at: running ones, and those that ended since the
previous charge (``end_time`` after the last decay, less a margin), so a
long history of finished jobs is not read every period.  On the very first
charge (no ``usage_decayed_at``) only running jobs count, from their start.

Worked example (H = 1 hour, D = 1 - 0.693/3600): a 4-CPU job charged up to
t=1000 and still running at t=1060 adds ``60 x D**60 x 4 = 237.24``
billing-seconds to its user; with ``TRESBillingWeights=CPU=1.0,GRES/gpu=8``
and 2 GPUs it would add ``60 x D**60 x 20 = 1186.2``.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from controller.accounting.priority_facts import PolicyFacts, held_tres
from controller.store.models import AssocRow, JobRow, MetaRow
from slurmlite.scheduler.billing import billing
from slurmlite.scheduler.usage import decay_factor, running_charge, should_reset
from slurmlite.states import is_finished

DECAYED_AT, RESET_AT = "usage_decayed_at", "usage_reset_at"
LATE_MARGIN = 300.0  # seconds: an end recorded just after a charge read the jobs
_RUN_STATES = ("RUNNING", "SUSPENDED")
_ASSOCS, _JOBS = AssocRow.__table__, JobRow.__table__

_ADD_USAGE = (
    update(_ASSOCS)
    .where(_ASSOCS.c.account == bindparam("b_account"), _ASSOCS.c.user == bindparam("b_user"))
    .values(raw_usage=_ASSOCS.c.raw_usage + bindparam("b_add"))
)
_CHARGED = (
    update(_JOBS).where(_JOBS.c.id == bindparam("b_id")).values(charged_until=bindparam("b_to"))
)


@dataclass
class UsageSettings:
    """The slurm.conf keys of usage: half-life (seconds), reset period, MAX_TRES."""

    half_life: float
    reset_period: str = "NONE"
    max_tres: bool = False
    tz: tzinfo | None = None  # reset boundaries are local time; None: this host's zone


@dataclass
class ChargeReport:
    """What one charge did (tests and the log read it)."""

    reset: bool = False
    decayed_by: float = 1.0  # the factor every usage was multiplied by
    charged: dict[tuple[str, str], float] = field(default_factory=dict)  # assoc -> added


def _meta(s: Session, key: str) -> float | None:
    row = s.get(MetaRow, key)
    return float(row.value) if row is not None else None


def _set_meta(s: Session, key: str, value: float) -> None:
    row = s.get(MetaRow, key)
    if row is None:
        s.add(MetaRow(key=key, value=repr(value)))
    else:
        row.value = repr(value)


def charge_usage(
    s: Session,
    now: float,
    facts: PolicyFacts,
    settings: UsageSettings,
    *,
    starting: bool = False,
) -> ChargeReport:
    """Steps 1-3 of the module doc inside ``s`` (the caller's write transaction).

    ``starting``: the first charge since the controller (re)read its
    configuration (``PriorityUsageResetPeriod=NOW`` acts then).
    """
    report = ChargeReport()
    tz = settings.tz or datetime.now().astimezone().tzinfo
    assert tz is not None
    last_reset = _meta(s, RESET_AT)
    if last_reset is None:
        _set_meta(s, RESET_AT, now)  # counting starts with the first controller
    elif should_reset(settings.reset_period, last_reset, now, tz, starting=starting):
        s.execute(update(_ASSOCS).values(raw_usage=0.0))
        _set_meta(s, RESET_AT, now)
        report.reset = True
    last = _meta(s, DECAYED_AT)
    if last is not None and now > last:
        factor = decay_factor(settings.half_life) ** (now - last)
        if factor != 1.0:
            s.execute(update(_ASSOCS).values(raw_usage=_ASSOCS.c.raw_usage * factor))
        report.decayed_by = factor
    _set_meta(s, DECAYED_AT, max(now, last or now))
    assocs = {(a, u) for a, u in s.execute(select(_ASSOCS.c.account, _ASSOCS.c.user))}
    adds, charged = _charges(s, now, last, facts, settings, assocs)
    if adds:
        s.execute(
            _ADD_USAGE,
            [{"b_account": a, "b_user": u, "b_add": v} for (a, u), v in adds.items()],
        )
    if charged:
        s.execute(_CHARGED, [{"b_id": i, "b_to": t} for i, t in charged])
    report.charged = adds
    return report


_CHARGE_COLUMNS = (
    _JOBS.c.id,
    _JOBS.c.state,
    _JOBS.c.account,
    _JOBS.c.user,
    _JOBS.c.qos,
    _JOBS.c.partition,
    _JOBS.c.start_time,
    _JOBS.c.end_time,
    _JOBS.c.charged_until,
    _JOBS.c.time_limit,
    _JOBS.c.alloc,
    _JOBS.c.nodes_min,
    _JOBS.c.num_cpus,
    _JOBS.c.mem_per_node,
    _JOBS.c.mem_per_cpu,
    _JOBS.c.mem_per_gpu,
    _JOBS.c.gpus_per_node,
    _JOBS.c.gpus_total,
    _JOBS.c.gpu_type,
)


@dataclass(frozen=True)
class Owed:
    """A job that ran since its last charge: the part not charged yet, ``[since, until)``,
    the TRES it holds, their billing and the billing-seconds that part adds."""

    job: Any  # its row (``_CHARGE_COLUMNS``)
    since: float
    until: float
    tres: Mapping[str, float]
    billing: float
    usage_factor: float  # its QOS's UsageFactor
    amount: float  # decayed over the part, as the charge adds it


def last_charge(s: Session) -> float | None:
    """When usage was last decayed and charged (None: never)."""
    return _meta(s, DECAYED_AT)


def owed(
    s: Session, now: float, last: float | None, facts: PolicyFacts, settings: UsageSettings
) -> list[Owed]:
    """Every job that ran since the charge at ``last`` (module doc, step 3) and what it
    owes at ``now``: what the next charge adds, and what ``sshare`` shows before it."""
    running = _JOBS.c.state.in_(_RUN_STATES)
    if last is None:
        wanted = running
    else:
        ended = _JOBS.c.end_time >= last - LATE_MARGIN
        wanted = running | (ended & _JOBS.c.start_time.is_not(None))
    out = []
    for job in s.execute(select(*_CHARGE_COLUMNS).where(wanted)):
        if job.start_time is None:
            continue
        if job.state in _RUN_STATES:
            until = now
        elif is_finished(job.state) and job.end_time is not None:
            until = min(job.end_time, now)
        else:
            continue
        since = job.start_time
        if job.charged_until is not None and job.charged_until > since:
            since = job.charged_until  # an older run's charge (requeued) does not count
        tres = held_tres(job.alloc, job)
        bill = billing(tres, facts.billing.get(job.partition), max_tres=settings.max_tres)
        factor = facts.qos_usage_factor.get(job.qos, 1.0)
        amount = running_charge(bill, until - since, settings.half_life, factor)
        out.append(Owed(job, since, until, tres, bill, factor, amount if until > since else 0.0))
    return out


def charged_association(
    account: str, user: str, assocs: Container[tuple[str, str]]
) -> tuple[str, str] | None:
    """Whose usage a job of ``user`` under ``account`` adds to: the user's association,
    else the account's own row, else nobody's (no association: not tracked)."""
    for owner in ((account, user), (account, "")):
        if owner in assocs:
            return owner
    return None


def _charges(
    s: Session,
    now: float,
    last: float | None,
    facts: PolicyFacts,
    settings: UsageSettings,
    assocs: set[tuple[str, str]],
) -> tuple[dict[tuple[str, str], float], list[tuple[int, float]]]:
    """Each association's addition, and each charged job's new ``charged_until``."""
    adds: dict[tuple[str, str], float] = {}
    charged: list[tuple[int, float]] = []
    for debt in owed(s, now, last, facts, settings):
        if debt.until <= debt.since:
            continue
        charged.append((debt.job.id, debt.until))
        owner = charged_association(debt.job.account, debt.job.user, assocs)
        if owner is not None:
            adds[owner] = adds.get(owner, 0.0) + debt.amount
    return adds, charged
