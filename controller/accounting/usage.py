"""Keeping what jobs used: the agents' usage summaries in the ``job_usage`` table.

An agent sends, with each heartbeat, one :class:`~slurmlite.usage.UsageSummary`
per running job and once more in the job's completion.  A summary is
*cumulative* for one run of the job on one node, so the store keeps one row
per (job, run, node) and a newer summary replaces the row whole:

* newer means more samples, or as many samples and a later last sample
  (a repeated or late report changes nothing, so retries are harmless);
* a summary counts only from a node of the job's allocation, for the job's
  current run (``restarts``): a node cannot write another node's job, and
  a report of a run since requeued is stale and dropped.

Cost: :func:`record_usage` reads the batch's jobs in one query and writes
the batch in one ``INSERT .. ON CONFLICT DO UPDATE .. WHERE newer``
statement (SQLite and PostgreSQL both have it), so a heartbeat of 32 jobs
is two statements.

Example: n1 reports job 7 run 0 with 10 samples, then (a retry) the same 10
samples again, then 12: the row holds the 10-sample summary, unchanged by
the retry, then the 12-sample one.  A report of job 7 run 0 from n2 (not in
its allocation) or of run 1 while the job is in run 2 is ignored.

The accepted summaries also feed the per-GPU utilization rings of
:mod:`controller.accounting.usage_history` (no extra read: the differences
come from the readings it was given before).

:func:`usage_of` reads the rows of each job's current run and folds its
nodes together (:func:`slurmlite.usage.combine`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from controller.accounting.usage_history import UsageHistory
from controller.store import job_query
from controller.store.db import Database
from controller.store.job_query import JobQuery
from controller.store.models import JobRow
from controller.store.models_usage import JobUsageRow
from controller.store.rows import dict_of, job_info, split_list
from slurmlite.protocol import to_dict
from slurmlite.seff import efficiency_lines
from slurmlite.usage import GpuUsage, JobUsage, NodeUsage, UsageSummary, combine

_CHUNK = 500  # ids per IN (...) list


def _newer(a: UsageSummary, b: UsageSummary) -> bool:
    """Is ``a`` a later state of the same run than ``b``?"""
    return (a.samples, a.last_sample or 0.0) > (b.samples, b.last_sample or 0.0)


def _runs(session: Session, job_ids: list[int]) -> dict[int, tuple[int, str]]:
    """job id -> (current restarts, nodes comma list)."""
    out: dict[int, tuple[int, str]] = {}
    ids = sorted(set(job_ids))
    for i in range(0, len(ids), _CHUNK):
        q = select(JobRow.id, JobRow.restarts, JobRow.nodes).where(
            JobRow.id.in_(ids[i : i + _CHUNK])
        )
        for job_id, restarts, nodes in session.execute(q):
            out[job_id] = (restarts, nodes or "")
    return out


def _row_values(node: str, s: UsageSummary) -> dict[str, Any]:
    sampled = [g for g in s.gpus if g.samples]
    util = sum(g.util_avg for g in sampled) / len(sampled) if sampled else None
    return {
        "job_id": s.job_id,
        "restart": s.restarts,
        "node": node,
        "samples": s.samples,
        "first_sample": s.first_sample,
        "last_sample": s.last_sample,
        "cpu_seconds": s.cpu_seconds,
        "max_rss_bytes": s.max_rss_bytes,
        "rss_sum_bytes": s.rss_sum_bytes,
        "gpu_util_avg": util,
        "gpus": json.dumps([dataclasses.asdict(g) for g in s.gpus]),
    }


def _upsert(session: Session) -> Any:
    """The dialect's ``INSERT .. ON CONFLICT (job, run, node) DO UPDATE .. WHERE newer``."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(JobUsageRow)
    new, old = stmt.excluded, JobUsageRow.__table__.c
    columns = [
        c.name for c in JobUsageRow.__table__.c if c.name not in ("job_id", "restart", "node")
    ]
    newer = or_(
        new.samples > old.samples,
        (new.samples == old.samples)
        & (func.coalesce(new.last_sample, 0.0) > func.coalesce(old.last_sample, 0.0)),
    )
    return stmt.on_conflict_do_update(
        index_elements=["job_id", "restart", "node"],
        set_={name: getattr(new, name) for name in columns},
        where=newer,
    )


def record_usage(
    session: Session,
    node: str,
    summaries: list[UsageSummary],
    history: UsageHistory | None = None,
) -> None:
    """Store ``node``'s summaries that are newer than what is kept (module doc),
    and feed the accepted ones to ``history`` (the dashboard's sparklines)."""
    if not summaries:
        return
    runs = _runs(session, [s.job_id for s in summaries])
    best: dict[tuple[int, int], UsageSummary] = {}
    for s in summaries:
        run = runs.get(s.job_id)
        if run is None or run[0] != s.restarts or node not in split_list(run[1]):
            continue  # not this node's job, or a stale run
        key = (s.job_id, s.restarts)
        if key not in best or _newer(s, best[key]):
            best[key] = s  # one row per key: PostgreSQL refuses a statement touching a row twice
    if best:
        session.execute(_upsert(session), [_row_values(node, s) for s in best.values()])
        if history is not None:
            history.add(node, best.values())


def store_usage(
    db: Database, node: str, summaries: list[UsageSummary], history: UsageHistory | None = None
) -> None:
    """:func:`record_usage` in a transaction of its own (the heartbeat path)."""
    if summaries:
        with db.write() as s:
            record_usage(s, node, summaries, history)


def _summary(row: JobUsageRow) -> UsageSummary:
    return UsageSummary(
        job_id=row.job_id,
        restarts=row.restart,
        samples=row.samples,
        first_sample=row.first_sample,
        last_sample=row.last_sample,
        cpu_seconds=row.cpu_seconds,
        max_rss_bytes=row.max_rss_bytes,
        rss_sum_bytes=row.rss_sum_bytes,
        gpus=[GpuUsage(**g) for g in json.loads(row.gpus or "[]")],
    )


def node_usage_of(session: Session, job_ids: list[int]) -> dict[int, list[NodeUsage]]:
    """The current run's per-node summaries of each job that has any."""
    runs = _runs(session, job_ids)
    parts: dict[int, list[NodeUsage]] = {}
    ids = sorted(runs)
    for i in range(0, len(ids), _CHUNK):
        q = select(JobUsageRow).where(JobUsageRow.job_id.in_(ids[i : i + _CHUNK]))
        for row in session.scalars(q):
            if row.restart == runs[row.job_id][0]:
                parts.setdefault(row.job_id, []).append(NodeUsage(row.node, _summary(row)))
    for nodes in parts.values():
        nodes.sort(key=lambda p: p.node)
    return parts


def usage_of(session: Session, job_ids: list[int]) -> dict[int, JobUsage]:
    """The current run's usage of each job that has any (jobs without are absent)."""
    return {
        job_id: combine(job_id, nodes[0].summary.restarts, nodes)
        for job_id, nodes in sorted(node_usage_of(session, job_ids).items())
    }


def accounting_json(db: Database, q: JobQuery, now: float, min_job_age: float) -> str:
    """``/v1/accounting``'s answer for ``q`` (already narrowed to what the caller may see):
    the job listing, each job with its ``usage`` (per node).

    Jobs without usage keep the listing's cached text; the others are encoded
    again with the field added (``JobInfo.usage``, empty by default)."""
    rows = job_query.select_jobs(db, q, now, min_job_age, q.with_steps)
    with db.read() as s:
        usage = node_usage_of(s, [r.id for r in rows])
    head = len('{"jobs":[')
    parts = []
    for r in rows:
        if r.id in usage:
            d = dict_of(r.values)
            d["usage"] = [to_dict(n) for n in usage[r.id]]
            parts.append(json.dumps(d, separators=(",", ":")))
        else:
            parts.append(job_query.to_json([r], None)[head:-2])
    return '{"jobs":[' + ",".join(parts) + "]}"


def efficiency_summary(session: Session, row: JobRow) -> list[str]:
    """The efficiency lines of a finished job (``slurmlite.seff.efficiency_lines``)."""
    usage = usage_of(session, [row.id]).get(row.id)
    return efficiency_lines(job_info(row), usage, row.end_time or 0.0)
