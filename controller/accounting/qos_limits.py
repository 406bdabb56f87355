"""QOS limits on the controller side: the QOS table, and what is refused at submit.

The scheduler decides which pending job waits for a limit
(``slurmlite.scheduler.limits``); this module reads the ``qos`` table for it
(:func:`load_qos`) and applies the limits Slurm applies when a job is
submitted (with ``AccountingStorageEnforce=limits``; slurmlite enforces them
by default, see :func:`enforce_limits`):

* ``MaxSubmitJobsPerUser``: a user who already has that many pending and
  running jobs in the QOS is refused — ``Job violates accounting/QOS policy
  (job submit limit, user's size and/or time limits)`` (ESLURM_ACCOUNTING_POLICY).
* ``MaxWall``, ``MaxTRESPerJob`` and a job bigger on its own than
  ``MaxTRESPerUser``: refused the same way only when the QOS has the flag
  ``DenyOnLimit``; otherwise the job is accepted and pends with the limit's
  reason (``QOSMaxWallDurationPerJobLimit``, ...), as in Slurm.
* A job without ``--time`` in a QOS with ``MaxWall`` gets MaxWall as its
  time limit (or the partition's, when lower).

Worked example: QOS ``normal`` has ``MaxSubmitJobsPerUser=2``; alice has one
job pending and one running: 2 + 1 = 3 > 2, her third ``sbatch`` is refused;
bob, with none, may submit two.

Cost (submissions arrive at thousands per second): the QOS table is cached
and reread only after a change to it (ORM events in this process) or, for
changes made elsewhere, after ``CACHE_SECONDS``; the job count is one query
on the indexed ``uid`` column, made only when the QOS has a
``MaxSubmitJobsPerUser`` limit.  Jobs validated but not yet stored (the
submit queue validates a whole batch before inserting it) are counted in
memory until the job-id counter shows their batch was stored.

Reference: ``S:src/slurmctld/acct_policy.c`` (``acct_policy_validate``),
``S:doc/man/man1/sacctmgr.1`` (DenyOnLimit) — behaviour only.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Select, bindparam, event, func, or_, select
from sqlalchemy.orm import ORMExecuteState, Session

from controller.store.db import Database
from controller.store.models import JobRow, MetaRow, QosRow
from slurmlite import errors
from slurmlite.config import Config
from slurmlite.errors import SlurmError
from slurmlite.scheduler.limits import (
    QosLimits,
    TresLimitError,
    job_demand,
    parse_tres_limits,
)
from slurmlite.scheduler.snapshot import PendingJob, Policy

CACHE_SECONDS = 5.0  # a change made by another process is seen after this long
ACTIVE_STATES = ("PENDING", "RUNNING", "SUSPENDED")  # what MaxSubmitJobsPerUser counts

_generation = 0  # bumped on every write to the qos table seen in this process
# engine -> (generation, when read, table): weak, so a closed store's entry goes with it
_cache: weakref.WeakKeyDictionary[Any, tuple[int, float, dict[str, QosLimits]]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


def _bump(*_args: Any) -> None:
    global _generation
    _generation += 1


for _what in ("after_insert", "after_update", "after_delete"):
    event.listen(QosRow, _what, _bump)


@event.listens_for(Session, "do_orm_execute")
def _on_execute(state: ORMExecuteState) -> None:
    """A bulk ``update(QosRow)``/``delete(QosRow)`` through a session changes the table too."""
    if (state.is_update or state.is_delete or state.is_insert) and any(
        m.class_ is QosRow for m in state.all_mappers
    ):
        _bump()


def invalidate() -> None:
    """Forget the cached QOS table (after writing it other than through the ORM)."""
    _bump()


def enforce_limits(cfg: Config) -> bool:
    """Are QOS limits enforced?  ``Policy.enforce_limits``, the one rule the passes
    follow too: yes unless ``AccountingStorageEnforce`` is set without limits
    (slurmlite's default is on; Slurm's is off)."""
    return Policy.from_config(cfg).enforce_limits


def qos_limits(row: QosRow) -> QosLimits:
    """One ``qos`` row as the scheduler sees it (an unreadable TRES string: no limit)."""

    def tres(text: str | None) -> dict[str, int]:
        try:
            return parse_tres_limits(text)
        except TresLimitError:
            return {}

    return QosLimits(
        name=row.name,
        priority=row.priority or 0,
        usage_factor=1.0 if row.usage_factor is None else row.usage_factor,
        max_wall=row.max_wall,
        max_jobs_pu=row.max_jobs_pu,
        max_submit_pu=row.max_submit_pu,
        max_tres_pu=tres(row.max_tres_pu),
        max_tres_pj=tres(row.max_tres_pj),
        flags=frozenset(f.strip() for f in (row.flags or "").split(",") if f.strip()),
    )


def load_qos(session: Session) -> dict[str, QosLimits]:
    """Every QOS by name; cached per store until the table changes (see module doc).

    The same dict is handed out until then: callers must not change it.
    """
    key = session.get_bind()
    now = time.monotonic()
    hit = _cache.get(key)
    if hit is not None and hit[0] == _generation and now - hit[1] < CACHE_SECONDS:
        return hit[2]
    gen = _generation
    table = {row.name: qos_limits(row) for row in session.scalars(select(QosRow))}
    with _lock:
        _cache[key] = (gen, now, table)
    return table


def chain(qos: QosLimits | None, partition_qos: QosLimits | None) -> list[QosLimits]:
    """The QOS whose limits apply, the one asked first first (``limits.LimitTracker.chain``)."""
    if partition_qos is None or (qos is not None and partition_qos.name == qos.name):
        return [qos] if qos is not None else []
    if qos is None:
        return [partition_qos]
    return [qos, partition_qos] if qos.has_flag("OverPartQOS") else [partition_qos, qos]


def _probe(values: Mapping[str, Any]) -> PendingJob:
    """The request in ``values`` (``SubmitValidator`` column values) as a pending job."""
    return PendingJob(
        job_id=0,
        priority=1,
        submit_time=0.0,
        partition=values.get("partition") or "",
        user=values.get("user") or "",
        nodes_min=values.get("nodes_min") or 1,
        nodes_max=values.get("nodes_max"),
        ntasks=values.get("ntasks"),
        ntasks_per_node=values.get("ntasks_per_node"),
        cpus_per_task=values.get("cpus_per_task") or 1,
        mem_per_node=values.get("mem_per_node"),
        mem_per_cpu=values.get("mem_per_cpu"),
        mem_per_gpu=values.get("mem_per_gpu"),
        gpus_per_node=values.get("gpus_per_node") or 0,
        gpus_total=values.get("gpus_total"),
        gpu_type=values.get("gpu_type"),
        time_limit=values.get("time_limit"),
    )


def over_job_limits(values: Mapping[str, Any], limits: list[QosLimits]) -> bool:
    """Does the request break MaxWall, MaxTRESPerJob, or MaxTRESPerUser on its own?"""
    wall = next((q.max_wall for q in limits if q.max_wall is not None), None)
    limit = values.get("time_limit")
    if wall is not None and (limit is None or limit > wall):
        return True
    demand = job_demand(_probe(values))
    for per in ("max_tres_pj", "max_tres_pu"):
        names = {n for q in limits for n in getattr(q, per)}
        for name in names:
            cap = next(getattr(q, per)[name] for q in limits if name in getattr(q, per))
            if demand.get(name, 0) > cap:
                return True
    return False


def check_submit_limits(
    session: Session | Connection,
    caller_user: str,
    req_values: dict[str, Any],
    qos: QosLimits,
    *,
    partition_qos: QosLimits | None = None,
    uid: int | None = None,
    in_flight: int = 0,
    held: int | None = None,
) -> None:
    """Refuse (``SlurmError(ESLURM_ACCOUNTING_POLICY)``) a submission over a limit.

    ``req_values`` are the job's column values (``partition``, ``time_limit``
    and the request); ``in_flight`` counts the user's jobs of this QOS
    accepted but not stored yet.  ``uid`` narrows the count by the indexed
    column (the user's name is compared too); ``held``, when given, is that
    count already made (:func:`active_count`).
    """
    limits = chain(qos, partition_qos)
    submit = next((q for q in limits if q.max_submit_pu is not None), None)
    if submit is not None:
        if held is None:
            held = active_count(session, caller_user, submit.name, req_values, partition_qos, uid)[
                0
            ]
        if held + in_flight + 1 > (submit.max_submit_pu or 0):
            raise SlurmError(errors.ESLURM_ACCOUNTING_POLICY)
    if any(q.has_flag("DenyOnLimit") for q in limits) and over_job_limits(req_values, limits):
        raise SlurmError(errors.ESLURM_ACCOUNTING_POLICY)


def active_count(
    session: Session | Connection,
    user: str,
    qos_name: str,
    values: Mapping[str, Any],
    partition_qos: QosLimits | None,
    uid: int | None,
) -> tuple[int, str | None]:
    """(the user's pending and running jobs that count in QOS ``qos_name``, the job-id
    counter) in one round trip.  They count: the jobs of that QOS and, when it is
    the partition's QOS, every job of the partition."""
    by_partition = partition_qos is not None and partition_qos.name == qos_name
    stmt = _active_statement(uid is not None, by_partition)
    params = {"user": user, "qos": qos_name, "uid": uid, "partition": values.get("partition")}
    held, counter = session.execute(stmt, params).one()
    return int(held or 0), counter


@lru_cache(maxsize=4)
def _active_statement(by_uid: bool, by_partition: bool) -> Select[tuple[int, str | None]]:
    """The statement of :func:`active_count`, built once (building costs more than running)."""
    in_qos = JobRow.qos == bindparam("qos")
    if by_partition:
        in_qos = or_(in_qos, JobRow.partition == bindparam("partition"))
    count = select(func.count()).where(
        JobRow.state.in_(ACTIVE_STATES), JobRow.user == bindparam("user"), in_qos
    )
    if by_uid:  # the indexed column narrows it first
        count = count.where(JobRow.uid == bindparam("uid"))
    counter = select(MetaRow.value).where(MetaRow.key == "next_job_id")
    return select(count.scalar_subquery(), counter.scalar_subquery())


class SubmitLimits:
    """What ``SubmitValidator.validate`` asks: one object per store (``for_db``).

    ``check`` resolves the job's QOS chain from the cached table, lowers an
    unasked time limit to MaxWall, and applies :func:`check_submit_limits`,
    opening a session only when a count is needed.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = threading.Lock()
        # (user, qos) -> (job-id counter when its last jobs were accepted, how many):
        # while the counter still reads the same, their batch is not stored yet
        self._accepted: dict[tuple[str, str], tuple[str | None, int]] = {}

    def table(self) -> dict[str, QosLimits]:
        with self.db.read() as s:
            return load_qos(s)

    def _cached_table(self) -> dict[str, QosLimits]:
        hit = _cache.get(self.db.engine)
        if hit is not None and hit[0] == _generation and time.monotonic() - hit[1] < CACHE_SECONDS:
            return hit[2]
        return self.table()

    def check(
        self,
        cfg: Config,
        enforce: bool,
        user: str,
        uid: int | None,
        values: dict[str, Any],
        qos_name: str,
        explicit_time: bool,
    ) -> int | None:
        """Refuse the submission or return its time limit (MaxWall when none was asked).

        ``enforce`` is ``Policy.enforce_limits`` (:func:`enforce_limits`)."""
        limit = values.get("time_limit")
        if not enforce:
            return limit
        table = self._cached_table()
        if not table:
            return limit
        part_qos_name = _partition_qos(cfg, values.get("partition"))
        limits = chain(table.get(qos_name), table.get(part_qos_name) if part_qos_name else None)
        if not limits:
            return limit
        wall = next((q.max_wall for q in limits if q.max_wall is not None), None)
        if wall is not None and not explicit_time and (limit is None or limit > wall):
            limit = values["time_limit"] = wall
        own, part = table.get(qos_name), table.get(part_qos_name or "")
        if any(q.max_submit_pu is not None for q in limits):
            first = limits[0] if own is None else own
            self._check_counted(user, uid, values, first, part, limits)
        elif any(q.has_flag("DenyOnLimit") for q in limits):
            if over_job_limits(values, limits):
                raise SlurmError(errors.ESLURM_ACCOUNTING_POLICY)
        return limit

    def _check_counted(
        self,
        user: str,
        uid: int | None,
        values: dict[str, Any],
        qos: QosLimits,
        part: QosLimits | None,
        limits: list[QosLimits],
    ) -> None:
        submit = next(q for q in limits if q.max_submit_pu is not None)
        key = (user, submit.name)
        # no ORM session (this runs per submission), one round trip
        with self._lock, self.db.engine.connect() as conn:
            held, counter = active_count(conn, user, submit.name, values, part, uid)
            # jobs accepted while the counter read the same are not stored yet
            seen, in_flight = self._accepted.get(key, (None, 0))
            in_flight = in_flight if seen == counter else 0
            check_submit_limits(
                conn,  # the count is made: no query left
                user,
                values,
                qos,
                partition_qos=part,
                uid=uid,
                in_flight=in_flight,
                held=held,
            )
            self._accepted[key] = (counter, in_flight + 1)

    @staticmethod
    def for_db(db: Database) -> SubmitLimits:
        """The one ``SubmitLimits`` of ``db`` (made on first use)."""
        found = _per_db.get(db)
        if found is None:
            found = _per_db.setdefault(db, SubmitLimits(db))
        return found


_per_db: weakref.WeakKeyDictionary[Database, SubmitLimits] = weakref.WeakKeyDictionary()


def _partition_qos(cfg: Config, partition: str | None) -> str | None:
    for p in cfg.partitions:
        if p.name == partition:
            return p.qos or None
    return None
