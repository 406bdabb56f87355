"""Retention: finished jobs older than ``PurgeJobAfter`` leave the store, archived first.

Slurm's slurmdbd purges its job records with ``PurgeJobAfter`` and, with
``ArchiveJobs=yes``, first writes them to a file in ``ArchiveDir``; this is
the same for slurmlite's store (the values: ``slurmlite.retention``).

A purge run (at start, then every hour):

1. cutoff = ``purge_cutoff(PurgeJobAfter, now)``; the jobs it purges are
   finished (COMPLETED and after), not COMPLETING, and ended at or before
   the cutoff.  A pending, running or completing job is never purged.
2. With ``ArchiveJobs=yes`` it creates one file for the run, owner-only,
   ``ArchiveDir/<cluster>_job_archive_<oldest end>_<cutoff>.jsonl`` (local
   times as ``2025-01-31T23:59:59``; ``.1``, ``.2`` added if it exists).
3. Then batches of ``BATCH`` jobs, oldest end first: read the jobs and
   their steps; append them to the file, flush and ``fsync``; only then
   delete them (steps and jobs, one transaction).  A failed write deletes
   nothing and ends the run (logged; the next run tries again).  A crash
   between the fsync and the commit leaves those jobs in the store and in the
   file: the next run archives them again, so a job may be in two files,
   never in none.  Between batches the run yields, so the scheduler's
   writes interleave with it (a batch of 1,000 took ~0.1-0.3 s with 1M
   jobs: ``bench.store_growth``).

The archive format, one JSON object a line::

    {"job": {<every jobs column>: value}, "steps": [{<every steps column>: value}]}

Columns are those of ``controller.store.models`` (times: epoch seconds;
``exit_code``: the raw wait status); e.g. ``jq -r '.job | [.id, .user,
.state] | @tsv' FILE`` lists them, and ``slurmlite archive show FILE``
prints them as sacct's default columns do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sqlalchemy import delete, func, select

from controller.store.db import Database
from controller.store.models import JobRow, StepRow
from slurmlite.config import Config
from slurmlite.retention import purge_cutoff
from slurmlite.states import JOB_STATES

log = logging.getLogger("slurmctld.retention")

BATCH = 1000
EVERY = 3600.0  # seconds between purge runs
_JOBS, _STEPS = JobRow.__table__, StepRow.__table__
_NOT_FINISHED = JOB_STATES[: JOB_STATES.index("COMPLETED")]  # PENDING, RUNNING, SUSPENDED


@dataclass
class PurgeRun:
    """What one run did: jobs purged, the archive written (None: none), batch times."""

    cutoff: float
    purged: int = 0
    archive: Path | None = None
    batch_ms: list[float] = field(default_factory=list)


def _purgeable(cutoff: float) -> Any:
    return (
        _JOBS.c.state.not_in(_NOT_FINISHED)  # = in FINISHED; NOT IN lets SQLite walk end_time
        & ~_JOBS.c.flags.like("%COMPLETING%")
        & (_JOBS.c.end_time <= cutoff)
    )


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def archive_path(directory: str, cluster: str, oldest: float, cutoff: float) -> Path:
    """A new file's name for a run (never an existing file's)."""
    base = Path(directory) / f"{cluster}_job_archive_{_stamp(oldest)}_{_stamp(cutoff)}.jsonl"
    path, n = base, 0
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}.{n}")
    return path


class Retention:
    """Purges (and archives) one store's old finished jobs, as the module doc says."""

    def __init__(self, db: Database, cfg: Callable[[], Config], clock: Callable[[], float]):
        self.db, self.cfg, self.clock = db, cfg, clock
        self.stopped = False  # set when the controller stops: the run ends after its batch

    def run(self, pause: Callable[[], None] = lambda: None) -> PurgeRun | None:
        """One purge run now (None: no ``PurgeJobAfter``); ``pause`` runs between batches."""
        cfg = self.cfg()
        if cfg.purge_job_after is None:
            return None
        done = PurgeRun(purge_cutoff(cfg.purge_job_after, self.clock()))
        with self.db.read() as s:
            oldest = s.execute(select(func.min(_JOBS.c.end_time)).where(_purgeable(done.cutoff)))
            first = oldest.scalar()
        if first is None:
            return done
        out: IO[str] | None = None
        try:
            if cfg.archive_jobs:
                done.archive = archive_path(cfg.archive_dir, cfg.cluster_name, first, done.cutoff)
                out = self._create(done.archive)
            while True:
                t0 = time.perf_counter()
                n = self.batch(done.cutoff, out)
                if n:
                    done.batch_ms.append((time.perf_counter() - t0) * 1000)
                done.purged += n
                if n < BATCH or self.stopped:
                    break
                pause()
        finally:
            if out is not None:
                out.close()
        log.info(
            "event=purge jobs=%d cutoff=%s archive=%s batches=%d max_batch_ms=%.0f",
            done.purged, _stamp(done.cutoff), done.archive or "-", len(done.batch_ms),
            max(done.batch_ms, default=0.0),
        )  # fmt: skip
        return done

    def batch(self, cutoff: float, out: IO[str] | None) -> int:
        """Archive (when ``out``) then delete up to BATCH purgeable jobs; how many."""
        with self.db.read() as s:
            conn = s.connection()
            q = select(_JOBS).where(_purgeable(cutoff)).order_by(_JOBS.c.end_time, _JOBS.c.id)
            jobs = [dict(r._mapping) for r in conn.execute(q.limit(BATCH))]
            ids = [j["id"] for j in jobs]
            steps: dict[int, list[dict[str, Any]]] = {}
            if ids and out is not None:
                for st in conn.execute(select(_STEPS).where(_STEPS.c.job_id.in_(ids))):
                    steps.setdefault(st.job_id, []).append(dict(st._mapping))
        if not ids:
            return 0
        if out is not None:
            lines = [json.dumps({"job": j, "steps": steps.get(j["id"], [])}) for j in jobs]
            self.write(out, "".join(line + "\n" for line in lines))
        with self.db.write_rows() as conn:
            # the same test again, inside the transaction: only what is still purgeable goes
            keep = select(_JOBS.c.id).where(_JOBS.c.id.in_(ids), _purgeable(cutoff))
            gone = [r[0] for r in conn.execute(keep)]
            if gone:
                conn.execute(delete(_STEPS).where(_STEPS.c.job_id.in_(gone)))
                conn.execute(delete(_JOBS).where(_JOBS.c.id.in_(gone)))
        return len(gone)

    @staticmethod
    def _create(path: Path) -> IO[str]:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        dirfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)  # the file's name survives a crash too
        finally:
            os.close(dirfd)
        return os.fdopen(fd, "w", encoding="utf-8")

    @staticmethod
    def write(out: IO[str], text: str) -> None:
        """Append and make durable; raises OSError (then nothing is deleted)."""
        out.write(text)
        out.flush()
        os.fsync(out.fileno())

    async def loop(self) -> None:
        """Run at start, then every EVERY seconds; batches yield to the event loop."""
        aloop = asyncio.get_running_loop()
        while True:
            try:
                pause = lambda: time.sleep(0.05)  # noqa: E731  (lets queued writers in)
                await aloop.run_in_executor(None, self.run, pause)
            except Exception:
                log.exception("event=purge_failed next_try_in_s=%d", EVERY)
            await asyncio.sleep(EVERY)
