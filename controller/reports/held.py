"""What a job held during a period: allocated TRES x time clipped to it, in SQL.

Every report sums the same quantity over the ``jobs`` table, so it is written
once, as SQLAlchemy Core expressions that run on SQLite and PostgreSQL alike
(the scalar minimum is ``min(a, b)`` on SQLite, ``LEAST(a, b)`` on PostgreSQL)::

    begin = max(start_time, period_start)
    stop  = min(now if the job still runs else end_time, period_end)
    secs  = stop - begin   if stop > begin   else 0

A running job's ``end_time`` is its projected end (start + time limit), so
its usage stops at ``now``; a job that never started (``start_time`` NULL)
held nothing.  Worked example: period 10:00-11:00, a job ran 09:30-10:20 ->
begin 10:00, stop 10:20, 1200 s; with 4 CPUs, 4800 CPU-seconds.

What it held: ``num_cpus`` (the controller sets it to the allocation's CPUs
at start) and its GPUs: ``gpus_total`` for ``--gpus=N``, else
``gpus_per_node`` x the nodes it got (``nodes`` is a comma list: commas + 1).
The scheduler allocates exactly what was asked, so this equals the GPUs in
the ``alloc`` JSON without parsing it for every row (100,000 rows a report).

Only the job's current run is known: a requeued job's earlier runs left no
times behind, so they are not counted.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float, and_, case, func, literal, or_

from controller.store.models import JobRow

JOBS = JobRow.__table__
C = JOBS.c
RUNNING_STATES = ("RUNNING", "SUSPENDED")


def _num(value: float) -> Any:
    return literal(float(value), Float)


def _least(dialect: str, a: Any, b: Any) -> Any:
    """The smaller of two values: SQLite's two-argument ``min()``, PostgreSQL's ``LEAST``."""
    return func.least(a, b) if dialect == "postgresql" else func.min(a, b)


def _greatest(dialect: str, a: Any, b: Any) -> Any:
    return func.greatest(a, b) if dialect == "postgresql" else func.max(a, b)


def stop_time(now: float) -> Any:
    """When the job's usage stops: ``now`` while it runs, else its ``end_time``."""
    running = or_(C.state.in_(RUNNING_STATES), C.end_time.is_(None))
    return case((running, _num(now)), else_=C.end_time)


def held_seconds(start: float, end: float, now: float, dialect: str) -> Any:
    """Seconds of [start, end) the job held its allocation (0 when none).

    ``dialect`` is the store's (``db.engine.dialect.name``): SQLite and
    PostgreSQL spell the scalar minimum differently, and a ``CASE`` ladder
    in their place cost a third of a 100,000-job report.
    """
    begin = _greatest(dialect, C.start_time, _num(start))
    stop = _least(dialect, stop_time(now), _num(end))
    return _greatest(dialect, stop - begin, _num(0.0))


def overlaps(start: float, end: float, now: float) -> Any:
    """Jobs that held something during [start, end) for more than no time."""
    stop = stop_time(now)
    return and_(
        C.start_time.is_not(None),
        C.state != "PENDING",
        C.start_time < end,
        stop > start,
        stop > C.start_time,
    )


def gpus_held() -> Any:
    """The job's GPUs: ``gpus_total``, else ``gpus_per_node`` x its node count."""
    nodes = func.length(C.nodes) - func.length(func.replace(C.nodes, ",", "")) + 1
    total = func.coalesce(C.gpus_total, 0)
    return case((total > 0, total), (C.nodes == "", 0), else_=C.gpus_per_node * nodes)


def tres_held(tres: str) -> Any:
    """How many of ``tres`` (``cpu`` or ``gres/gpu``) the job holds."""
    return C.num_cpus if tres == "cpu" else gpus_held()
