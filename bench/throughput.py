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
over the Unix socket, peer credentials, validation, the commit that stores
the job before it is answered, the scheduler woken), shared by 16 threads
with a ``ControllerClient`` each, on the default SQLite store.
submissions/s = submissions / seconds from the first request to the last
answer.  Concurrent submissions share commits (``controller.jobs.submit_queue``:
each answer still waits for the commit of its own job), so the figure is
about how many requests the controller can parse, check and store, not
about fsyncs.  The detail shows the CPU time each side spent per
submission (slurmctld from /proc; the client's 16 threads run in this
process, and on a 2-core machine their ~0.15 ms is CPU the controller does
not get).  The same measurement then runs on a throwaway PostgreSQL server
(``tests.pg.PgServer``: Unix socket only, fsync off) and is printed beside
the SQLite figure; without the PostgreSQL server binaries it is skipped
with a note.

With real Slurm installed (``bench.realslurm``), each is measured again on
a throwaway one (one node with 128 CPUs: Debian's Slurm cannot run two
slurmd on one host) and printed beside slurmlite's with the ratio.  Real
Slurm has no submission API here, so its burst is 16 ``sbatch`` processes
at once, and finished means ``squeue`` lists nothing (then every job must
show COMPLETED in ``squeue -t all``); in full mode the run is repeated with
``SchedulerParameters=batch_sched_delay=0``.  Its ``api`` figure is
sequential ``sbatch --hold`` per second, as the issue's reference is, with
16 concurrent ``sbatch`` beside it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from bench import realslurm
from bench.common import Figure, bench_cluster, submit_many, wait_for
from cli.localcluster import read_pid
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
    runs = [("", "default SchedulerParameters")]
    if not quick:
        runs.append(("batch_sched_delay=0", "batch_sched_delay=0"))
    for params, name in runs:
        with realslurm.session(log, 128, 2 * count + 1000, params) as rs:
            if rs is not None:
                rate, secs = _slurm_end_to_end(rs, count)
                if figure.slurm is None:
                    figure.slurm, figure.slurm_detail = rate, f"{name}: {secs:.1f} s in all"
                else:
                    figure.slurm_detail += f"; {name}: {rate:.1f} jobs/s"
    log(figure.describe())
    return [figure]


def _slurm_end_to_end(slurm: realslurm.RealSlurm, count: int) -> tuple[float, float]:
    """(jobs/s, seconds) for ``count`` true jobs on real Slurm, burst from 16 sbatch at once."""
    started = time.perf_counter()
    ids, _ = realslurm.burst(slurm, ["--wrap", "true"], count)
    wait_for(lambda: slurm.active() == 0, 300, f"{count} jobs to finish on real Slurm", every=0.1)
    elapsed = time.perf_counter() - started
    states = slurm.states()
    done = Counter(states.get(i, "gone") for i in ids)
    if done != Counter({"COMPLETED": count}):
        raise RuntimeError(f"not every job completed on real Slurm: {dict(done)}")
    return count / elapsed, elapsed


@dataclass
class _Burst:
    """One api measurement: its duration and the CPU each side spent per submission."""

    count: int
    secs: float
    client_ms: float  # this process: the 16 client threads
    server_ms: float | None  # slurmctld, when /proc tells

    @property
    def rate(self) -> float:
        return self.count / self.secs

    def cpu_text(self) -> str:
        server = f"controller {self.server_ms:.2f} ms" if self.server_ms is not None else ""
        return ", ".join(x for x in (server, f"client {self.client_ms:.2f} ms") if x)


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU of process ``pid`` so far (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _submissions(count: int, log: Callable[[str], None], store_url: str | None) -> _Burst:
    """Submit ``count`` held jobs over 16 connections (checked: all distinct, all pending)."""
    with bench_cluster(log=log, store_url=store_url) as cl:
        held = cl.request("--wrap", "true", "--hold")
        ctld = read_pid(cl.directory / "run" / "slurmctld.pid")
        server0, client0 = _cpu_seconds(ctld), time.process_time()
        ids, secs = submit_many(cl, held, count, threads=16)
        server1, client1 = _cpu_seconds(ctld), time.process_time()
        client = cl.client()
        try:
            pending = len(client.get_jobs(states={"PENDING"}))
        finally:
            client.close()
    if pending != count or len(set(ids)) != count:
        raise RuntimeError(
            f"expected {count} distinct pending jobs, found {pending} ({len(set(ids))} ids)"
        )
    server = None if server0 is None or server1 is None else (server1 - server0) * 1000 / count
    return _Burst(count, secs, (client1 - client0) * 1000 / count, server)


def _postgresql_rate(count: int, log: Callable[[str], None]) -> str:
    """The same measurement on a throwaway PostgreSQL server, as text for the figure's detail."""
    from tests.pg import PgServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        return "PostgreSQL: not measured (no PostgreSQL server binaries here)"
    server = PgServer.start(bindir)
    try:
        _name, url = server.create_database()
        burst = _submissions(count, log, url)
    finally:
        server.stop()
    return (
        f"PostgreSQL (throwaway server, fsync off): {burst.rate:,.1f} submissions/s "
        f"({count:,} in {burst.secs:.1f} s; CPU per submission: {burst.cpu_text()})"
    )


def api(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    count = 200 if quick else 2000
    burst = _submissions(count, log, None)
    postgres = _postgresql_rate(count, log)
    figure = Figure(
        key="api",
        label="API submissions, 16 keep-alive connections, SQLite",
        value=burst.rate,
        unit="submissions/s",
        how=(
            f"{count:,} held submissions shared by 16 threads, each with its own ControllerClient "
            "over the Unix socket, each answered after the commit that stored it (concurrent "
            "ones share commits); wall clock from first request to last answer"
        ),
        reference="reference: Slurm 22.05 measured ~290 sequential sbatch/s on this kind of machine",
        target=2000,
        higher_is_better=True,
        detail=(
            f"{count:,} in {burst.secs:.1f} s; CPU per submission: {burst.cpu_text()}; {postgres}"
        ),
    )
    with realslurm.session(log, max_jobs=2 * count + 1000) as rs:
        if rs is not None:
            n = 30 if quick else 300
            started = time.perf_counter()
            for _ in range(n):
                rs.run("sbatch", "--hold", "--wrap", "true")
            secs = time.perf_counter() - started
            _ids, together = realslurm.burst(rs, ["--hold", "--wrap", "true"], n)
            figure.slurm = n / secs
            figure.slurm_detail = (
                f"{n} sequential sbatch --hold in {secs:.1f} s; 16 at once: {n / together:,.0f}/s"
            )
    log(figure.describe())
    return [figure]
