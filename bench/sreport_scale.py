"""``python -m bench.sreport_scale [--jobs N] [--runs R] [--no-pg]``: usage reports at scale.

Issue 15's target: each report over 100,000 finished jobs in under a second.
For each store (SQLite; PostgreSQL too where ``tests.pg`` finds its
binaries) this starts a real cluster (``bench.common.bench_cluster``: a
controller and two agents of 4 GPUs on loopback), bulk-inserts ``--jobs``
finished jobs into its store with SQLAlchemy Core (``tests.report_jobs``:
the rows the reports read), spread over the 30 days before today 00:00
(60 users, 12 accounts, 1-16 CPUs, 0-4 GPUs for 40 % of them, 1 minute to
8 hours each, GPU utilization measured for half the GPU jobs), and times,
over the whole 30 days (every job in the period: the worst case):

* the service functions in process (``usage_report``, ``lab_report``):
  the SQL aggregate and the answer, no HTTP;
* the commands as a user runs them (a fresh process each, wall clock):
  ``sreport cluster utilization``, ``sreport cluster
  AccountUtilizationByUser``, ``sreport user topusage`` (each ``-t hours
  --tres=cpu,gres/gpu``) and ``slurmlite report``.

Medians of ``--runs`` runs after one warm-up, printed; no asserts.  The
figures depend on the machine (and on what else runs on it).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import BIN, bench_cluster
from controller.auth.callers import Caller
from controller.reports.lab import lab_report
from controller.reports.utilization import usage_report
from controller.store.db import Database
from slurmlite.config import load_config
from tests.report_jobs import a_gpu_measure, a_job, put_jobs, put_measures

DAY = 86400.0
DAYS = 30
ROOT = Caller(uid=0, gid=0, user="root", admin=True)
STATES = ["COMPLETED"] * 7 + ["FAILED", "CANCELLED", "TIMEOUT"]


def history(n: int, end: float, seed: int = 15) -> tuple[list[dict], list[dict]]:
    """``n`` finished jobs ending in the ``DAYS`` days before ``end``, and their measures."""
    rng = random.Random(seed)
    jobs, measures = [], []
    for i in range(1, n + 1):
        stop = end - rng.uniform(0, DAYS * DAY)
        start = stop - rng.uniform(60, 8 * 3600)
        gpus = rng.choice((1, 2, 4)) if rng.random() < 0.4 else 0
        user = rng.randrange(60)
        jobs.append(
            a_job(i, f"user{user:02d}", account=f"acct{user % 12:02d}", start=start, end=stop,
                  cpus=rng.randint(1, 16), gpus_per_node=gpus, nodes=f"bnode{1 + i % 2}",
                  submit=start - rng.uniform(0, 1200), state=rng.choice(STATES))
        )  # fmt: skip
        if gpus and rng.random() < 0.5:
            measures.append(a_gpu_measure(i, rng.uniform(0, 100), node=f"bnode{1 + i % 2}"))
    return jobs, measures


def median_ms(work: Callable[[], object], runs: int) -> float:
    work()  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def command(name: str, args: list[str], env: dict[str, str], cwd: Path) -> Callable[[], object]:
    """A run of the console script ``name`` (``python -m cli.NAME`` until it is installed)."""
    script = BIN / name
    exe = [str(script)] if script.exists() else [sys.executable, "-m", f"cli.{name}"]

    def run() -> object:
        r = subprocess.run([*exe, *args], env=env, cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{name} {' '.join(args)}: exit {r.returncode}: {r.stderr}")
        return r.stdout

    return run


def measure(label: str, url: str | None, n: int, runs: int) -> None:
    with bench_cluster(log=print, store_url=url, gpus_per_node=4) as cl:
        store = url or f"sqlite:///{cl.directory / 'state' / 'slurmlite.db'}"
        today = time.mktime(time.localtime()[:3] + (0, 0, 0, 0, 0, -1))
        jobs, measures = history(n, today)
        db = Database(store)
        started = time.perf_counter()
        put_jobs(db, jobs)
        put_measures(db, measures)
        print(f"{label}: {n:,} jobs, {len(measures):,} measures inserted "
              f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
        cfg = load_config(str(cl.conf))
        start, end, now = today - DAYS * DAY, today, time.time()
        tres = ["cpu", "gres/gpu"]
        figures = {
            "usage_report (service)": lambda: usage_report(db, cfg, ROOT, start, end, now, tres),
            "lab_report by user (service)": lambda: lab_report(
                db, cfg, ROOT, start, end, now, "user"
            ),
        }
        first = time.strftime("%Y-%m-%d", time.localtime(start))
        last = time.strftime("%Y-%m-%d", time.localtime(end))
        period = [f"start={first}", f"end={last}"]
        words = ["-t", "hours", "--tres=cpu,gres/gpu"]
        root = Path(__file__).resolve().parents[1]
        for report in (["cluster", "utilization"], ["cluster", "AccountUtilizationByUser"],
                       ["user", "topusage"]):  # fmt: skip
            figures[f"sreport {' '.join(report)} (command)"] = command(
                "sreport", [*words, *report, *period], cl.env, root
            )
        figures["slurmlite report (command)"] = command(
            "slurmlite", ["report", "--start", first, "--end", last], cl.env, root
        )
        for name, work in figures.items():
            print(f"  {label:10} {name:50} {median_ms(work, runs):8.1f} ms  (target < 1000)")
        db.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    args = parser.parse_args(argv)
    print(f"sreport_scale: {args.jobs:,} finished jobs, median of {args.runs}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    measure("SQLite", None, args.jobs, args.runs)
    if args.no_pg:
        return
    from tests.pg import PgServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        print("PostgreSQL: binaries not found, skipped")
        return
    server = PgServer.start(bindir)
    try:
        measure("PostgreSQL", server.create_database()[1], args.jobs, args.runs)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
