"""Whole-process command times: ``sbatch``, ``squeue`` (empty and with a full queue), ``sacct``.

What a user waits for is the whole process: interpreter start, imports,
reading ``slurm.conf``, one request over the Unix socket, formatting.  So
each run is the installed console script started with ``subprocess.run``
(as a shell would), timed with ``time.perf_counter`` from just before the
fork to the exit, its output captured and checked (exit 0, the expected
number of lines) so a fast failure never passes for a fast command.  One
untimed warm-up run first fills the page cache; then ``runs`` timed runs
give the median and the 90th percentile (nearest rank: of 20 runs the
18th fastest).

Benchmarks:

* ``startup``: ``squeue`` on an empty queue, ``sbatch --wrap true`` (the
  jobs really run), then ``sacct -j ID`` for the first of those jobs once it
  has completed.
* ``queue``: ``squeue`` with 1,000 and then 10,000 pending jobs, submitted
  held (``JobSubmit(hold=True)``, i.e. ``sbatch --hold``) through the API in
  bursts of 16 connections so they stay pending; the fill rates are printed
  too, because they show how submission slows as the queue grows.  Beside
  each squeue figure: the median of the same listing as one request
  (``get_job_rows`` with squeue's default fields, answer parsed) on a
  kept-alive connection: the controller's share of the command's time.

When real Slurm is installed (``bench.realslurm``), each benchmark then
starts a throwaway one and times the same commands, the real ``squeue`` and
``sbatch`` programs, the same way (its queue filled by 16 concurrent
``sbatch --hold`` processes: it has no submission API), and prints them
beside slurmlite's with the ratio.  ``sacct`` is not: real ``sacct`` needs
slurmdbd and MariaDB, so its row keeps the issue's reference.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

from bench import realslurm
from bench.common import (
    BenchCluster,
    Figure,
    bench_cluster,
    fmt,
    median,
    p90,
    submit_many,
    wait_for,
)

Target = BenchCluster | realslurm.RealSlurm  # where a command runs: slurmlite or real Slurm
HOW = "median of {n} runs of the console script (fresh process, subprocess, wall clock)"
REF = "reference: Slurm 22.05 measured {} on this kind of machine"


def time_command(
    cluster: Target,
    argv: list[str],
    runs: int,
    check: Callable[[str], bool] = lambda out: True,
) -> list[float]:
    """Milliseconds of ``runs`` whole-process runs of ``argv``, after one warm-up run."""
    exe = [cluster.command(argv[0]), *argv[1:]]
    times: list[float] = []
    for i in range(runs + 1):
        started = time.perf_counter()
        r = subprocess.run(
            exe,
            cwd=cluster.work,
            env=cluster.env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        elapsed = (time.perf_counter() - started) * 1000
        if r.returncode != 0 or not check(r.stdout):
            raise RuntimeError(
                f"{' '.join(argv)} failed (exit {r.returncode}): "
                f"{r.stderr.strip() or r.stdout[-300:]}"
            )
        if i:
            times.append(elapsed)
    return times


def command_figure(
    key: str, label: str, times: list[float], target: float | None, reference: str
) -> Figure:
    return Figure(
        key=key,
        label=label,
        value=median(times),
        unit="ms",
        how=HOW.format(n=len(times)),
        reference=reference,
        target=target,
        detail=f"p90 {fmt(p90(times))} ms",
        stat="median",
    )


def same_run(figure: Figure, times: list[float]) -> None:
    """Attach real Slurm's timings of the same command to ``figure``."""
    figure.slurm = median(times)
    figure.slurm_detail = f"p90 {fmt(p90(times))} ms"


def submitted(out: str) -> bool:
    return out.startswith("Submitted batch job ")


def startup(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    runs = 3 if quick else 20
    figures: list[Figure] = []
    with bench_cluster(log=log) as cl:
        times = time_command(cl, ["squeue"], runs, check=lambda out: len(out.splitlines()) == 1)
        figures.append(
            command_figure("squeue-empty", "squeue, empty queue", times, 50, REF.format("4 ms"))
        )
        ids: list[int] = []

        def note_id(out: str) -> bool:
            if submitted(out):
                ids.append(int(out.split()[-1]))
            return submitted(out)

        times = time_command(cl, ["sbatch", "--wrap", "true"], runs, check=note_id)
        figures.append(
            command_figure("sbatch", "sbatch --wrap true", times, 50, REF.format("4 ms"))
        )
        first = ids[0]
        client = cl.client()
        try:
            wait_for(
                lambda: [j.state for j in client.get_accounting(job_ids=[first])] == ["COMPLETED"],
                60,
                f"job {first} to complete",
            )
        finally:
            client.close()
        # header, separator, the job and its .batch step
        times = time_command(
            cl,
            ["sacct", "-j", str(first)],
            runs,
            check=lambda out: len(out.splitlines()) == 4 and str(first) in out,
        )
        figures.append(
            command_figure(
                "sacct",
                "sacct -j ID",
                times,
                50,
                REF.format("92 ms (through slurmdbd and MariaDB)"),
            )
        )
    with realslurm.session(log) as rs:
        if rs is not None:
            times = time_command(rs, ["squeue"], runs, check=lambda out: len(out.splitlines()) == 1)
            same_run(figures[0], times)
            same_run(figures[1], time_command(rs, ["sbatch", "--wrap", "true"], runs, submitted))
            log("  (sacct -j ID not run on real Slurm: it needs slurmdbd and MariaDB)")
    for figure in figures:
        log(figure.describe())
    return figures


# pending count -> (target ms, Slurm 22.05 reference)
QUEUE_TARGETS = {
    1000: (60.0, REF.format("10 ms")),
    10000: (100.0, "reference: no Slurm 22.05 figure quoted for 10,000 pending"),
}


def queue(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    counts = [100] if quick else [1000, 10000]
    runs = 3 if quick else 10
    figures: list[Figure] = []
    with bench_cluster(log=log) as cl:
        held = cl.request("--wrap", "true", "--hold")
        have = 0
        for count in counts:
            ids, secs = submit_many(cl, held, count - have)
            log(
                f"  (filled the queue from {have:,} to {count:,} held jobs in {secs:.1f} s: "
                f"{len(ids) / secs:,.0f} submissions/s over 16 connections)"
            )
            have = count
            # a header line and one line per pending job
            times = time_command(
                cl, ["squeue"], runs, check=lambda out, n=count: len(out.splitlines()) == n + 1
            )
            target, ref = QUEUE_TARGETS.get(count, (None, "reference: none (quick mode count)"))
            figure = command_figure(
                f"squeue-{count}", f"squeue, {count:,} pending", times, target, ref
            )
            answer = listing_times(cl, count, runs)
            figure.detail += f"; the listing request alone {fmt(median(answer))} ms"
            figures.append(figure)
    with realslurm.session(log, max_jobs=2 * counts[-1] + 1000) as rs:
        if rs is not None:
            have = 0
            for count, figure in zip(counts, figures, strict=True):
                ids, secs = realslurm.burst(rs, ["--hold", "--wrap", "true"], count - have)
                log(
                    f"  (real Slurm: filled the queue from {have:,} to {count:,} held jobs in "
                    f"{secs:.1f} s: {len(ids) / secs:,.0f} sbatch/s from 16 at once)"
                )
                have = count
                times = time_command(
                    rs, ["squeue"], runs, check=lambda out, n=count: len(out.splitlines()) == n + 1
                )
                same_run(figure, times)
    for figure in figures:
        log(figure.describe())
    return figures


# squeue's default columns (%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R) as JobInfo fields
SQUEUE_FIELDS = ["job_id", "partition", "name", "user", "state", "flags", "start_time"]
SQUEUE_FIELDS += ["end_time", "num_nodes", "reason", "nodes"]


def listing_times(cluster: BenchCluster, count: int, runs: int) -> list[float]:
    """Milliseconds of ``runs`` projected listings (``GET /v1/jobs?fields=``) on one
    kept-alive connection, the answer parsed: the controller's share of a squeue."""
    client = cluster.client()
    try:
        times: list[float] = []
        for i in range(runs + 1):
            started = time.perf_counter()
            _fields, rows = client.get_job_rows(SQUEUE_FIELDS, all_states=True)
            elapsed = (time.perf_counter() - started) * 1000
            if len(rows) != count:
                raise RuntimeError(f"listed {len(rows)} jobs, expected {count}")
            if i:
                times.append(elapsed)
        return times
    finally:
        client.close()
