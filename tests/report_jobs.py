"""Builders of ``jobs`` rows with known times, for the usage reports' tests and benchmark.

A report only reads who ran (user, account), what was held (CPUs, GPUs,
nodes), when (submit, eligible, start, end) and how it ended; every other
column gets a plain value.  Rows go in with one SQLAlchemy Core
``executemany`` (the benchmark inserts 100,000 this way)::

    put_jobs(db, [a_job(1, "alice", start=T0, end=T0 + 3600, cpus=4)])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import insert

from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.models_usage import JobUsageRow

UIDS = {"alice": 1001, "bob": 1002, "carol": 1003, "root": 0}


def a_job(
    job_id: int,
    user: str,
    *,
    start: float | None,
    end: float | None,
    account: str = "lab",
    cpus: int = 1,
    gpus_per_node: int = 0,
    gpus_total: int | None = None,
    nodes: str = "n1",
    state: str = "COMPLETED",
    submit: float | None = None,
    eligible: float | None = None,
    restarts: int = 0,
) -> dict[str, Any]:
    """One ``jobs`` row as a dict of column values (submit: start, or end when never started)."""
    submitted = submit if submit is not None else (start if start is not None else end)
    uid = UIDS.get(user, 2000 + sum(map(ord, user)))
    return {
        "id": job_id, "name": "job", "uid": uid, "gid": uid, "user": user, "group": user,
        "account": account, "qos": "normal", "partition": "debug", "state": state,
        "flags": "", "reason": "None", "priority": 1, "nice": 0,
        "submit_time": submitted, "eligible_time": eligible if eligible is not None else submitted,
        "start_time": start, "end_time": end, "nodes_min": max(1, nodes.count(",") + 1),
        "cpus_per_task": 1, "num_cpus": cpus, "gpus_per_node": gpus_per_node,
        "gpus_total": gpus_total, "nodes": nodes, "alloc": "[]", "layout": "",
        "restarts": restarts, "restart_causes": "", "work_dir": "/tmp", "submit_dir": "/tmp",
        "submit_host": "vm", "alloc_sid": 0, "open_mode": "truncate", "req_nodes": "",
        "exc_nodes": "", "exclusive": False, "requeue": True, "script": "#!/bin/sh\n",
        "environment": "{}", "echo_env": "{}", "export": "ALL", "allocation": False,
        "warn_time": 0, "warn_batch": False, "dep_failed": False,
    }  # fmt: skip


def a_gpu_measure(job_id: int, util: float, node: str = "n1", restart: int = 0) -> dict[str, Any]:
    """One ``job_usage`` row: the run's mean GPU utilization on ``node`` (percent)."""
    return {
        "job_id": job_id, "restart": restart, "node": node, "samples": 10,
        "cpu_seconds": 0.0, "max_rss_bytes": 0, "rss_sum_bytes": 0.0,
        "gpu_util_avg": util, "gpus": "[]",
    }  # fmt: skip


def put_jobs(db: Database, jobs: Iterable[dict[str, Any]], batch: int = 5000) -> None:
    """Insert the rows in batches of ``batch`` (one transaction)."""
    rows = list(jobs)
    with db.write_rows() as conn:
        for i in range(0, len(rows), batch):
            conn.execute(insert(JobRow.__table__), rows[i : i + batch])


def put_measures(db: Database, measures: Iterable[dict[str, Any]]) -> None:
    rows = list(measures)
    if rows:
        with db.write_rows() as conn:
            conn.execute(insert(JobUsageRow.__table__), rows)
