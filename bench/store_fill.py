"""A store with years of history, filled fast: the data behind ``bench.store_growth``.

The rows are copies of what the real controller wrote: :func:`template`
starts a throwaway cluster (``bench.common.bench_cluster``), runs one
``sbatch --wrap true`` to completion and reads back its ``jobs`` row and its
``batch`` step row.  :func:`fill` then writes ``rows`` variations of them
with SQLAlchemy Core ``executemany`` (5,000 rows a statement, one
transaction per 50,000), ids in submit order as the controller hands them
out, spread the way a lab's history is:

* submit times evenly over the last 730 days (the newest two hours ago), a
  wait of 0-20 minutes, a run time of 1 minute to 8 hours (mostly short);
  an end that would fall in the future is moved to a minute ago, so today
  holds about ``rows / 730`` jobs;
* 60 users, the busiest ~25 times the quietest (weights ``1 / rank``),
  each in one of 12 accounts; partitions ``debug`` 60 %, ``gpu`` 25 %,
  ``long`` 15 %;
* states COMPLETED 70 %, FAILED 12 %, CANCELLED 10 %, TIMEOUT 5 %,
  OUT_OF_MEMORY 2 %, NODE_FAIL 1 %, with matching exit codes; the batch
  step ends as its job did.

Then ``live`` pending jobs (two thirds held, the rest waiting for nodes
that never come: the benchmark starts no agents, so nothing changes under
it) and the job-id counter past them.  The pseudo-random choices are seeded,
so two fills of one size are the same history.

Example: ``fill(url, 1_000_000, tpl, now, live=300)`` on SQLite writes
~1,000,000 jobs + 1,000,000 steps (measured by the benchmark, printed).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

from alembic import command
from sqlalchemy import insert, select, text, update

from bench.common import bench_cluster, wait_for
from controller.store.db import make_engine
from controller.store.migrate import alembic_config
from controller.store.models import JobRow, MetaRow, StepRow

DAY = 86400.0
SPAN_DAYS = 730
USERS = [f"user{i:02d}" for i in range(60)]
ACCOUNTS = [f"acct{i:02d}" for i in range(12)]
PARTITIONS = (("debug", 60), ("gpu", 25), ("long", 15))
# state, share %, job exit code (raw wait status as stored), batch step state
STATES = (
    ("COMPLETED", 70, 0, "COMPLETED"),
    ("FAILED", 12, 256, "FAILED"),
    ("CANCELLED", 10, 15, "CANCELLED"),
    ("TIMEOUT", 5, 15, "CANCELLED"),
    ("OUT_OF_MEMORY", 2, 9, "OUT_OF_MEMORY"),
    ("NODE_FAIL", 1, 9, "NODE_FAIL"),
)
NAMES = ["train", "eval", "preprocess", "sweep", "infer", "bash", "wrap", "notebook"]
BATCH = 5_000
TXN = 50_000
_JOBS, _STEPS = JobRow.__table__, StepRow.__table__


def template(log: Callable[[str], None]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The jobs row and batch step row of one real ``sbatch --wrap true``, as stored."""
    with bench_cluster(log=log) as cl:
        client = cl.client()
        job_id = client.submit(cl.request("--wrap", "true", "-J", "template")).job_id

        def done() -> bool:
            jobs = client.get_accounting(job_ids=[job_id])
            return bool(jobs) and jobs[0].state == "COMPLETED" and not jobs[0].flags

        wait_for(done, 60, f"template job {job_id} to complete")
        client.close()
        engine = make_engine("sqlite:///" + str(cl.directory / "state" / "slurmlite.db"))
        try:
            with engine.connect() as conn:
                job = conn.execute(select(_JOBS).where(_JOBS.c.id == job_id)).one()
                step = conn.execute(
                    select(_STEPS).where(_STEPS.c.job_id == job_id, _STEPS.c.step_id == "batch")
                ).one()
        finally:
            engine.dispose()
    return dict(job._mapping), dict(step._mapping)


def before_index() -> str:
    """The revision just before 0010 (the history index): the "before" store's."""
    from alembic.script import ScriptDirectory

    down = ScriptDirectory.from_config(alembic_config()).get_revision("0010").down_revision
    assert isinstance(down, str)
    return down


def create_store(url: str, revision: str) -> None:
    """A new store migrated to ``revision`` (e.g. ``before_index()``: no history index)."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), revision)
    finally:
        engine.dispose()


def _weighted(pairs: list[tuple[Any, float]], rng: random.Random, n: int) -> list[Any]:
    values, weights = zip(*pairs, strict=True)
    return rng.choices(values, weights=weights, k=n)


def history(
    job: dict[str, Any],
    step: dict[str, Any],
    ids: range,
    total: int,
    now: float,
    rng: random.Random,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Finished jobs ``ids`` of a ``total``-job history (ids 1..total), with their batch steps."""
    n = len(ids)
    users = _weighted([(u, 1 / (i + 1)) for i, u in enumerate(USERS)], rng, n)
    accounts = {u: ACCOUNTS[i % len(ACCOUNTS)] for i, u in enumerate(USERS)}
    parts = _weighted([(p, w) for p, w in PARTITIONS], rng, n)
    states = _weighted([(s, w) for s, w, *_ in STATES], rng, n)
    codes = {s: (code, st) for s, _, code, st in STATES}
    first, last = now - SPAN_DAYS * DAY, now - 7200.0
    jobs, steps = [], []
    for i, jid in enumerate(ids):
        submit = first + (last - first) * (jid - 1) / max(1, total - 1) + rng.random()
        start = submit + rng.random() * 1200
        end = min(start + 60 + rng.expovariate(1 / 1800) % 28800, now - 60)
        user, state = users[i], states[i]
        code, step_state = codes[state]
        uid = 2000 + USERS.index(user)
        nodes = "bnode1" if jid % 3 else "bnode1,bnode2"
        alloc = json.loads(job["alloc"] or "[]")
        for a, name in zip(alloc, nodes.split(","), strict=False):
            a["node"] = name
        jobs.append(
            {
                **job,
                "id": jid,
                "name": NAMES[jid % len(NAMES)],
                "uid": uid,
                "gid": uid,
                "user": user,
                "group": user,
                "account": accounts[user],
                "partition": parts[i],
                "state": state,
                "reason": "None",
                "submit_time": submit,
                "eligible_time": submit,
                "last_sched_eval": start,
                "start_time": start,
                "end_time": end,
                "charged_until": end,
                "exit_code": code,
                "derived_exit_code": 0,
                "nodes": nodes,
                "batch_host": "bnode1",
                "alloc": json.dumps(alloc),
                "std_out": f"/home/{user}/slurm-{jid}.out",
                "work_dir": f"/home/{user}",
                "submit_dir": f"/home/{user}",
            }
        )
        steps.append(
            {
                **step,
                "job_id": jid,
                "state": step_state,
                "exit_code": code,
                "start_time": start + 0.05,
                "end_time": end,
                "nodes": "bnode1",
            }
        )
    return jobs, steps


def live_jobs(job: dict[str, Any], first_id: int, count: int, now: float) -> list[dict[str, Any]]:
    """``count`` pending jobs: two thirds held, the others waiting for nodes."""
    out = []
    for k in range(count):
        held = k % 3 != 2
        user = USERS[k % 10]
        out.append(
            {
                **job,
                "id": first_id + k,
                "name": NAMES[k % len(NAMES)],
                "uid": 2000 + k % 10,
                "gid": 2000 + k % 10,
                "user": user,
                "group": user,
                "account": ACCOUNTS[k % 10 % len(ACCOUNTS)],
                "partition": "debug",
                "state": "PENDING",
                "hold": "JobHeldUser" if held else None,
                "reason": "JobHeldUser" if held else "Priority",
                "submit_time": now - 600 + k,
                "eligible_time": None if held else now - 600 + k,
                "start_time": None,
                "end_time": None,
                "charged_until": None,
                "exit_code": None,
                "derived_exit_code": None,
                "nodes": "",
                "batch_host": None,
                "alloc": "[]",
                "layout": "",
                "flags": "",
            }
        )
    return out


def fill(
    url: str,
    rows: int,
    tpl: tuple[dict[str, Any], dict[str, Any]],
    now: float,
    live: int = 300,
    log: Callable[[str], None] = print,
) -> float:
    """Write the history and the live jobs into the (migrated, empty) store; seconds taken."""
    job, step = tpl
    rng = random.Random(19)
    started = time.perf_counter()
    engine = make_engine(url)
    try:
        done = 0
        while done < rows:
            n = min(TXN, rows - done)
            jobs, steps = history(job, step, range(done + 1, done + n + 1), rows, now, rng)
            with engine.begin() as conn:
                for k in range(0, n, BATCH):
                    conn.execute(insert(_JOBS), jobs[k : k + BATCH])
                    conn.execute(insert(_STEPS), steps[k : k + BATCH])
            done += n
            if done % 200_000 < TXN or done == rows:
                rate = done / (time.perf_counter() - started)
                log(f"    filled {done:,} / {rows:,} jobs ({rate:,.0f} jobs/s with their steps)")
        with engine.begin() as conn:
            if live:
                conn.execute(insert(_JOBS), live_jobs(job, rows + 1, live, now))
            conn.execute(
                update(MetaRow.__table__)
                .where(MetaRow.__table__.c.key == "next_job_id")
                .values(value=str(rows + live + 1))
            )
            if engine.dialect.name == "postgresql":
                conn.execute(text("ANALYZE jobs"))
                conn.execute(text("ANALYZE steps"))
    finally:
        engine.dispose()
    return time.perf_counter() - started
