"""Throughput: jobs run end to end, and submissions the API commits per second.

``throughput`` -- 1,000 jobs that run ``true`` (100 with ``--quick``) on a
2-node cluster with 64 CPUs per node, so 128 can run at once.  They are
submitted in one burst through the API (16 keep-alive connections, see
``bench.common.submit_many``), and the clock runs from just before the burst
until the API shows every one of them finished (no job left pending,
running or completing).  Waiting polls one job, the last submitted, every
0.1 s, then the whole active list every 0.05 s, so that the watching costs
the controller little.  Afterwards the accounting must show every job
COMPLETED, or the figure is refused.  jobs/s = jobs / seconds; e.g. 1,000
jobs in 4.0 s -> 250 jobs/s.

``api`` -- 2,000 submissions (200 with ``--quick``) of a held ``true`` job
(held, so nothing runs and the figure is the submission path alone: HTTP
over the Unix socket, peer credentials, validation, one commit each, the
scheduler woken), shared by 16 threads with a ``ControllerClient`` each, on
the default SQLite store.  submissions/s = submissions / seconds from the
first request to the last answer.  PostgreSQL is not measured: the store
does not run on PostgreSQL yet.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from bench.common import Figure, bench_cluster, submit_many, wait_for
from slurmlite.states import is_finished


def _all_finished(client, last_id: int) -> Callable[[], bool]:  # type: ignore[no-untyped-def]
    """A cheap poll: first only the last job, then the (short) list of active jobs."""
    seen_last = False

    def check() -> bool:
        nonlocal seen_last
        if not seen_last:
            jobs = client.get_jobs(job_ids=[last_id], all_states=True)
            seen_last = (
                bool(jobs) and is_finished(jobs[0].state) and "COMPLETING" not in jobs[0].flags
            )
            return False
        return not client.get_jobs()

    return check


def end_to_end(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    count = 100 if quick else 1000
    with bench_cluster(cpus_per_node=64, log=log) as cl:
        req = cl.request("--wrap", "true")
        client = cl.client()
        try:
            started = time.perf_counter()
            ids, submit_secs = submit_many(cl, req, count)
            wait_for(_all_finished(client, ids[-1]), 600, f"{count} jobs to finish", every=0.05)
            elapsed = time.perf_counter() - started
            states = Counter(j.state for j in client.get_accounting() if j.job_id in set(ids))
        finally:
            client.close()
    if states != Counter({"COMPLETED": count}):
        raise RuntimeError(f"not every job completed: {dict(states)}")
    figure = Figure(
        key="throughput",
        label=f"end to end, {count:,} true jobs on 2 x 64 CPUs",
        value=count / elapsed,
        unit="jobs/s",
        how=(
            f"{count:,} jobs submitted in one burst over 16 API connections, clock from the burst "
            "until the API showed all finished; all COMPLETED"
        ),
        reference=(
            "reference: Slurm 22.05 measured 1.7 jobs/s (default), 4.7 with "
            "batch_sched_delay=0, ~23 at best, on this kind of machine"
        ),
        target=200,
        higher_is_better=True,
        detail=f"{elapsed:.1f} s in all; the burst itself took {submit_secs:.1f} s",
    )
    log(figure.describe())
    return [figure]


def _submissions(count: int, log: Callable[[str], None], store_url: str | None) -> float:
    """Seconds to submit ``count`` held jobs over 16 connections (checked: all distinct, all pending)."""
    with bench_cluster(log=log, store_url=store_url) as cl:
        held = cl.request("--wrap", "true", "--hold")
        ids, secs = submit_many(cl, held, count, threads=16)
        client = cl.client()
        try:
            pending = len(client.get_jobs(states={"PENDING"}))
        finally:
            client.close()
    if pending != count or len(set(ids)) != count:
        raise RuntimeError(
            f"expected {count} distinct pending jobs, found {pending} ({len(set(ids))} ids)"
        )
    return secs


def _postgresql_rate(count: int, log: Callable[[str], None]) -> str:
    """The same measurement on a throwaway PostgreSQL server, as text for the figure's detail."""
    from tests.pg import PgServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        return "PostgreSQL: not measured (no PostgreSQL server binaries here)"
    server = PgServer.start(bindir)
    try:
        _name, url = server.create_database()
        secs = _submissions(count, log, url)
    finally:
        server.stop()
    return f"PostgreSQL (throwaway server, fsync off): {count / secs:,.1f} submissions/s ({count:,} in {secs:.1f} s)"


def api(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    count = 200 if quick else 2000
    secs = _submissions(count, log, None)
    postgres = _postgresql_rate(count, log)
    figure = Figure(
        key="api",
        label="API submissions, 16 keep-alive connections, SQLite",
        value=count / secs,
        unit="submissions/s",
        how=(
            f"{count:,} held submissions (one commit each) shared by 16 threads, each with its own "
            "ControllerClient over the Unix socket; wall clock from first request to last answer"
        ),
        reference="reference: Slurm 22.05 measured ~290 sequential sbatch/s on this kind of machine",
        target=2000,
        higher_is_better=True,
        detail=f"{count:,} in {secs:.1f} s; {postgres}",
    )
    log(figure.describe())
    return [figure]
