"""``python -m bench.store_growth [--rows N] [--pg]``: the store as it grows (issue 19).

A lab keeps years of history; its commands must not feel it.  This fills a
store with ``--rows`` finished jobs (default 1,000,000; ``bench.store_fill``:
copies of a real job's rows, spread over two years, 60 users, three
partitions) plus 300 pending jobs, starts a real controller on it (no
agents: nothing changes under the measurement) and measures:

* start-up: ``slurmctld -D`` started -> its first answer to squeue's
  request (the live-jobs view loaded), median of 3 starts; target < 2 s;
* ``squeue`` (300 jobs listed): against the same live jobs on an empty
  store; target: unaffected;
* ``sacct -j N`` (a job from the middle of the history): target < 50 ms;
* ``sacct -u user00``: the default listing of the busiest user (today's
  jobs: what a non-root user's bare ``sacct`` sends); target < 300 ms;
* ``sacct`` as root: today's jobs of every user (for root the default).

Each command twice: the console script as a user runs it (fresh process,
wall clock, median of ``--runs``), and the controller's answer alone (the
same request on a kept-alive ``ControllerClient``: no Python start-up).
Three stores are measured: the live jobs alone ("empty"), the history
before migration 0010 (the store created at the revision before it and the
controller started with migrations off: ``bench.serve_before_index``), and the same
store after ``Database()`` migrated it (the index build is timed too).
``--pg`` does the same on a throwaway PostgreSQL (``tests.pg``, tuned for
throwaway data: fsync off); building its million rows takes minutes.

The figures depend on the machine; the README quotes one run and says on
what.  ``bench.run`` runs a small version (``growth``: 20,000 rows, after
only) so the whole suite of benchmarks stays quick.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.commands import SQUEUE_FIELDS, time_command
from bench.common import BIN, Figure, fmt, median
from bench.store_fill import before_index, create_store, fill, template
from cli.client import ControllerClient
from cli.localcluster import ClusterSpec, free_port, render_conf
from cli.sacct import midnight
from slurmlite.credential import generate_key_file
from slurmlite.errors import SlurmError

LIVE = 300
HEAVY = "user00"  # the busiest user of the fill
TARGETS = {"start": 2000.0, "sacct-j": 50.0, "sacct-user": 300.0}


@dataclass
class Site:
    """A controller's directory and configuration (the store is elsewhere), commands' env."""

    directory: Path
    url: str
    conf: Path = field(init=False)
    work: Path = field(init=False)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        d = self.directory
        for sub in ("state", "run", "log", "work"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        generate_key_file(d / "slurmlite.key")
        spec = ClusterSpec(d, nodelist="bnode[1-2]", cluster_name="growth", store_url=self.url,
                           extra_partitions=("gpu Nodes=ALL", "long Nodes=ALL"))  # fmt: skip
        names = ["bnode1", "bnode2"]
        addrs = {n: f"127.0.1.{i + 1}" for i, n in enumerate(names)}
        ports = {n: free_port() for n in names}
        self.conf = spec.conf
        self.conf.write_text(render_conf(spec, names, addrs, ports, free_port()))
        self.work = d / "work"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SACCT_"))}
        self.env["SLURM_CONF"] = str(self.conf)
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["PYTHONPYCACHEPREFIX"] = str(d / "pycache")

    def command(self, name: str) -> str:
        return str(BIN / name)

    def client(self) -> ControllerClient:
        return ControllerClient.from_env("bench", str(self.conf))


@contextmanager
def controller(site: Site, migrate: bool = True) -> Iterator[tuple[subprocess.Popen, float]]:
    """A controller on ``site``: (process, ms from its start to the first squeue answer)."""
    argv = ["-m", "controller.main", "-D", "-f", str(site.conf)]
    if not migrate:
        argv = ["-m", "bench.serve_before_index", str(site.conf)]
    log = open(site.directory / "log" / "slurmctld.out", "ab")
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], stdout=log, stderr=log,
                            stdin=subprocess.DEVNULL, env=site.env)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                client = site.client()
                client.get_job_rows(SQUEUE_FIELDS, all_states=True)
                client.close()
                break
            except SlurmError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"controller did not answer; see {log.name}") from None
                time.sleep(0.005)
        yield proc, (time.perf_counter() - started) * 1000
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def server_ms(call: Callable[[], object], runs: int) -> float:
    """Median ms of ``call`` (one request on a kept-alive connection), after a warm-up."""
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        call()
        if i:
            times.append((time.perf_counter() - t0) * 1000)
    return median(times)


def measure(site: Site, rows: int, runs: int, migrate: bool, log: Callable[[str], None]) -> dict:
    """Every figure of one store: {key: (cli ms | None, server ms)}."""
    starts = []
    for _ in range(3):
        with controller(site, migrate) as (_proc, ms):
            starts.append(ms)
    out: dict[str, tuple[float | None, float]] = {"start": (None, median(starts))}
    now = time.time()
    today = midnight(now)
    job = max(1, rows // 2)
    with controller(site, migrate):
        c = site.client()
        try:
            lines = lambda n: lambda o: len(o.splitlines()) == n  # noqa: E731
            sq = time_command(site, ["squeue"], runs, check=lines(LIVE + 1))
            sq_s = server_ms(lambda: c.get_job_rows(SQUEUE_FIELDS, all_states=True), runs)
            out["squeue"] = (median(sq), sq_s)
            if rows:
                j = time_command(site, ["sacct", "-j", str(job)], runs,
                                 check=lambda o: f"{job} " in o)  # fmt: skip
                j_s = server_ms(lambda: c.get_accounting(job_ids=[job]), runs)
                out["sacct-j"] = (median(j), j_s)
            n_user = len(c.get_accounting(users=[HEAVY], start=today))
            u = time_command(site, ["sacct", "-u", HEAVY, "-X", "-n"], runs)
            u_s = server_ms(lambda: c.get_accounting(users=[HEAVY], start=today), runs)
            out["sacct-user"] = (median(u), u_s)
            n_all = len(c.get_accounting(start=today))
            a = time_command(site, ["sacct", "-X", "-n"], runs)
            a_s = server_ms(lambda: c.get_accounting(start=today), runs)
            out["sacct-all"] = (median(a), a_s)
            log(f"    today: {n_user} jobs of {HEAVY}, {n_all} of all users (live ones included)")
        finally:
            c.close()
    return out


LABELS = {
    "start": "controller start -> first squeue answer",
    "squeue": f"squeue ({LIVE} pending jobs)",
    "sacct-j": "sacct -j N (one finished job)",
    "sacct-user": f"sacct -u {HEAVY} (today, busiest user)",
    "sacct-all": "sacct as root (today, every user)",
}


def report(columns: dict[str, dict], log: Callable[[str], None]) -> None:
    """One table: figure, target, then command / server ms for each store."""

    def cell(v: tuple[float | None, float] | None) -> str:
        if v is None:
            return "-"
        cli, srv = v
        return (f"{fmt(cli)} / " if cli is not None else "") + f"{fmt(srv)}"

    head = ["figure (ms: command / server)", "target", *columns]
    body = []
    for key, label in LABELS.items():
        target = TARGETS.get(key)
        tgt = f"< {fmt(target)}" if target else ("= empty" if key == "squeue" else "-")
        body.append([label, tgt, *(cell(col.get(key)) for col in columns.values())])
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    for r in [head, ["-" * w for w in widths], *body]:
        log("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def store_size(url: str) -> str:
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        return (
            f"{sum(p.stat().st_size for p in path.parent.glob(path.name + '*')) / 2**20:,.0f} MiB"
        )
    from sqlalchemy import text

    from controller.store.db import make_engine

    engine = make_engine(url)
    with engine.connect() as conn:
        size = conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
    engine.dispose()
    return f"{size / 2**20:,.0f} MiB"


def run(rows: int, pg: bool, runs: int, before: bool, log: Callable[[str], None]) -> dict:
    """Fill, measure empty / before / after; print the table; the columns."""
    base = Path(tempfile.mkdtemp(prefix="slurmlite-growth-"))
    server = None
    try:
        if pg:
            from tests.pg import PgServer, find_bindir

            bindir = find_bindir()
            if bindir is None:
                raise RuntimeError("--pg: PostgreSQL binaries (initdb, pg_ctl) not found")
            server = PgServer.start(bindir)
            urls = [server.create_database()[1] for _ in range(2)]
        else:
            urls = [f"sqlite:///{base}/empty/slurmlite.db", f"sqlite:///{base}/full/slurmlite.db"]
        kind = "PostgreSQL" if pg else "SQLite"
        log(f"store: {kind}; {rows:,} finished jobs + {LIVE} pending; {os.cpu_count()} CPUs")
        tpl = template(log)
        now = time.time()
        columns: dict[str, dict] = {}
        create_store(urls[0], "head")
        fill(urls[0], 0, tpl, now, LIVE, log)
        log("  empty store (the live jobs only):")
        columns["empty"] = measure(Site(base / "site-empty", urls[0]), 0, runs, True, log)
        create_store(urls[1], before_index() if before else "head")
        took = fill(urls[1], rows, tpl, now, LIVE, log)
        log(f"  filled {rows:,} jobs + steps in {took:.0f} s; store {store_size(urls[1])}")
        site = Site(base / "site-full", urls[1])
        if before:
            log(f"  before (store at {before_index()}, no history indexes):")
            columns[f"{rows:,} before"] = measure(site, rows, runs, False, log)
            from controller.store.db import Database

            t0 = time.perf_counter()
            Database(urls[1]).close()
            log(f"  migration to head (0010 indexes) took {time.perf_counter() - t0:.1f} s")
        log("  after (migrated to head):")
        columns[f"{rows:,} after"] = measure(site, rows, runs, True, log)
        if rows:
            purge_batches(urls[1], base / "archive", now, log)
        log(f"\n{kind}, {rows:,} finished jobs, median of {runs} runs (start-up: of 3):")
        report(columns, log)
        return columns
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(base, ignore_errors=True)


def purge_batches(url: str, directory: Path, now: float, log: Callable[[str], None]) -> None:
    """Time 5 purge batches (PurgeJobAfter=12months, archived) on the filled store."""
    from controller.jobs.retention import BATCH, Retention, archive_path
    from controller.store.db import Database
    from slurmlite.retention import Purge, purge_cutoff

    db = Database(url)
    try:
        cutoff = purge_cutoff(Purge(12, "months"), now)
        out = Retention._create(archive_path(str(directory), "growth", 0.0, cutoff))
        rt = Retention(db, lambda: None, lambda: now)  # type: ignore[arg-type, return-value]
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            rt.batch(cutoff, out)
            times.append((time.perf_counter() - t0) * 1000)
        out.close()
        log(f"  purge: a batch of {BATCH:,} jobs (archived, fsynced, deleted) took "
            f"{fmt(median(times))} ms (median of 5; max {fmt(max(times))} ms)")  # fmt: skip
    finally:
        db.close()


def growth(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    """``bench.run``'s small version: 2,000 / 20,000 rows, SQLite, after only."""
    rows = 2_000 if quick else 20_000
    cols = run(rows, False, 3 if quick else 5, False, log)
    after, empty = cols[f"{rows:,} after"], cols["empty"]
    how = f"{rows:,} finished jobs + {LIVE} pending in SQLite; median (bench.store_growth)"
    figs = []
    for key in ("start", "sacct-j", "sacct-user", "squeue"):
        cli, srv = after[key]
        target = TARGETS.get(key, empty[key][0] if key == "squeue" else None)
        figs.append(Figure(f"growth-{key}", f"{LABELS[key]}, {rows:,} jobs",
                           cli if cli is not None else srv, "ms", how, "-", target=target,
                           detail=f"controller {fmt(srv)} ms", stat="median"))  # fmt: skip
    return figs


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m bench.store_growth", description=__doc__)
    p.add_argument("--rows", type=int, default=1_000_000, help="finished jobs (1,000,000)")
    p.add_argument("--pg", action="store_true", help="PostgreSQL instead of SQLite")
    p.add_argument("--runs", type=int, default=10, help="timed runs of each command (10)")
    p.add_argument("--no-before", action="store_true", help="skip the store before 0010")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    run(args.rows, args.pg, args.runs, not args.no_before, lambda s: print(s, flush=True))
    print(f"(whole run {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
