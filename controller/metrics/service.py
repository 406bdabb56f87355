"""What each ``/metrics/...`` endpoint answers, and the counters kept across restarts.

Sources, chosen so a scrape is cheap and never waits for the scheduler:

* jobs: counts kept up to date from the live job cache's changes
  (``controller.metrics.jobcounts`` following ``controller.store.live_cache``:
  the rows squeue lists, refreshed only where a commit changed them) — never
  a read of the whole jobs table, nor a count of every job; with 10,000
  pending jobs ``/metrics/jobs`` takes about 1 ms, right after a submission
  too (``bench/metrics_scrape.py``);
* nodes and partitions: ``NodeService.infos()``, as sinfo;
* scheduler: the loop's own figures (passes, the pass-duration histogram,
  the last full pass of the backfill) read without its lock;
* counters: ``metric_counters`` (``controller.metrics.counters``), one
  small query.

``sched_passes`` is the one counter not written with what it counts (a pass
that changes nothing writes nothing): :meth:`Metrics.save` stores it every
``SAVE_EVERY`` seconds and at stop, and a new controller starts from the
stored value.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from controller.metrics import counters, gpus, jobcounts, jobstats, nodestats
from controller.store.live_cache import view_of
from slurmlite.openmetrics import Exposition, Histogram

if TYPE_CHECKING:
    from controller.nodes.service import NodeService
    from controller.sched.loop import SchedulerLoop
    from controller.store.db import Database
    from slurmlite.clock import Clock
    from slurmlite.config import Config


class Controller(Protocol):
    """What the metrics read of the controller (``controller.context.Controller``); the
    package sits below the wiring and the job services, which count into it."""

    db: Database
    cfg: Config
    clock: Clock
    loop: SchedulerLoop
    nodes: NodeService


log = logging.getLogger("slurmctld.metrics")
SAVE_EVERY = 15.0  # seconds between saves of the pass counter
ENDPOINTS = (
    ("/metrics/jobs", "get job metrics"),
    ("/metrics/nodes", "get node metrics"),
    ("/metrics/partitions", "get partition metrics"),
    ("/metrics/jobs-users-accts", "get user and account jobs metrics"),
    ("/metrics/scheduler", "get scheduler metrics"),
)
_ENDED_STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")
_ENDED_STATES += ("PREEMPTED", "BOOT_FAIL", "DEADLINE")


class Metrics:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl
        self.submit_latency: Histogram | None = None  # the app's SubmitQueue's (set by the app)
        self._passes_base = counters.read(ctl.db).get(("sched_passes", ""), 0.0)
        self._task: asyncio.Task[None] | None = None
        self._stored: tuple[int, dict[counters.Key, float]] | None = None  # (view version, ...)

    # ----------------------------------------------------------- sources

    def job_stats(self, *groups: str | None) -> tuple[list[dict[str, jobstats.JobStats]], int]:
        """The job counts squeue's jobs give now (MinJobAge applies), summed per each of
        ``groups`` (None: the cluster), and the live view's version they are of.

        The count is kept up to date by the live cache's changes
        (:mod:`controller.metrics.jobcounts`); what is done here, under the view's lock
        (never the scheduler's), is reading the rows changed since the last reader and
        summing a few dozen keys."""
        ctl = self.ctl
        cutoff = ctl.clock() - ctl.cfg.min_job_age
        view = view_of(ctl.db)
        with view.lock:
            rows = view.refresh(ctl.db, cutoff)
            counts = jobcounts.of(view).at(rows, cutoff)
            return [jobstats.fold(counts, g) for g in groups], view.version

    def _job_figures(self) -> tuple[jobstats.JobStats, dict[counters.Key, float]]:
        """The cluster's job counts and the stored counters, read again only after a job
        row changed: every counter but ``sched_passes`` is bumped in a transaction that
        writes a job row, which bumps the live view's version."""
        (cluster,), version = self.job_stats(None)
        stats = cluster.get("", jobstats.JobStats())
        cached = self._stored
        if cached is not None and cached[0] == version:
            return stats, cached[1]
        stored = counters.read(self.ctl.db)
        self._stored = (version, stored)
        return stats, stored

    def passes(self) -> float:
        return self._passes_base + self.ctl.loop.passes

    # --------------------------------------------------------- endpoints

    def jobs(self) -> str:
        out = Exposition()
        stats, stored = self._job_figures()
        jobstats.write(out, "slurm_jobs", stats, None)
        out.counter(
            "slurmlite_jobs_submitted", "Jobs submitted", stored.get(("jobs_submitted", ""), 0)
        )
        out.counter(
            "slurmlite_jobs_started", "Job runs started", stored.get(("jobs_started", ""), 0)
        )
        out.declare("slurmlite_jobs_ended", "counter", "Jobs ended, by final state")
        for state in _ENDED_STATES:
            value = stored.get(("jobs_ended", f"state={state}"), 0)
            out.counter("slurmlite_jobs_ended", "", value, {"state": state})
        bounds = counters.QUEUE_WAIT_BOUNDS
        buckets = [stored.get(("queue_wait_bucket", f"le={b}"), 0) for b in bounds]
        buckets.append(stored.get(("queue_wait_bucket", "le=+Inf"), 0))
        out.histogram(
            "slurmlite_queue_wait_seconds",
            "Seconds from eligible to start, per job run",
            bounds,
            buckets,
            stored.get(("queue_wait_sum", ""), 0.0),
        )
        if self.submit_latency is not None:
            self.submit_latency.write(
                out, "slurmlite_submit_latency_seconds", "Seconds from request to committed job"
            )
        return out.text()

    def nodes(self) -> str:
        out = Exposition()
        nodestats.write_nodes(out, self.ctl.nodes.infos())
        gpus.write(out, self.ctl.db)
        return out.text()

    def partitions(self) -> str:
        out = Exposition()
        infos = {n.name: n for n in self.ctl.nodes.infos()}
        parts = self.ctl.nodes.partitions()
        (per_part,), _ = self.job_stats("partition")
        out.gauge("slurm_partitions", "Partitions in total", len(parts))
        for p in parts:
            at = {"partition": p.name}
            stats = per_part.get(p.name, jobstats.JobStats())
            jobstats.write(out, "slurm_partition_jobs", stats, at)
            nodestats.write_partition_nodes(out, p.name, [infos[n] for n in p.nodes if n in infos])
        return out.text()

    def users_accounts(self) -> str:
        out = Exposition()
        per_group, _ = self.job_stats("user", "account")
        for found, prefix, label in zip(
            per_group,
            ("slurm_user_jobs", "slurm_account_jobs"),
            ("username", "account"),
            strict=True,
        ):
            for name, stats in sorted(found.items()):
                jobstats.write(out, prefix, stats, {label: name})
        return out.text()

    def scheduler(self) -> str:
        out = Exposition()
        loop = self.ctl.loop
        full_passes, last_full = loop.full_passes  # plain numbers, read without a lock
        took = loop.pass_seconds
        count = sum(took.counts)
        (cluster,), _ = self.job_stats(None)
        pending = cluster.get("", jobstats.JobStats()).states.get("PENDING", 0)
        stored = counters.read(self.ctl.db)
        us = 1_000_000
        out.gauge("slurm_schedule_cycle_cnt", "Scheduling passes since start", loop.passes)
        out.gauge("slurm_schedule_cycle_last", "Last pass, microseconds", int(loop.last_took * us))
        out.gauge("slurm_schedule_cycle_tot", "Sum of pass times, microseconds", int(took.sum * us))
        mean = int(took.sum * us / count) if count else 0
        out.gauge("slurm_sched_mean_cycle", "Mean pass time, microseconds", mean)
        out.gauge("slurm_schedule_queue_len", "Pending jobs", pending)
        out.gauge("slurm_bf_cycle_cnt", "Backfill (full) passes since start", full_passes)
        out.gauge("slurm_bf_active", "Backfill pass running now (0: passes do not overlap)", 0)
        out.gauge("slurm_bf_when_last_cycle", "Time of the last backfill pass", int(last_full or 0))
        for name, key in (
            ("submitted", ("jobs_submitted", "")),
            ("started", ("jobs_started", "")),
            ("completed", ("jobs_ended", "state=COMPLETED")),
            ("canceled", ("jobs_ended", "state=CANCELLED")),
            ("failed", ("jobs_ended", "state=FAILED")),
        ):
            out.gauge(
                f"slurm_sdiag_jobs_{name}",
                f"Jobs {name} (ever: counters survive restarts)",
                stored.get(key, 0),
            )
        out.gauge("slurm_sched_stats_timestamp", "Time of these figures", int(self.ctl.clock()))
        out.counter("slurmlite_sched_passes", "Scheduling passes, across restarts", self.passes())
        took.write(out, "slurmlite_sched_pass_seconds", "Seconds per scheduling pass")
        return out.text()

    # ------------------------------------------------- pass counter upkeep

    def save(self) -> None:
        counters.save(self.ctl.db, "sched_passes", self.passes())

    def start(self) -> None:
        self._task = asyncio.create_task(self._keep())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        try:
            await asyncio.to_thread(self.save)
        except Exception:
            log.exception("event=metrics_save_failed")

    async def _keep(self) -> None:
        while True:
            await asyncio.sleep(SAVE_EVERY)
            try:
                await asyncio.to_thread(self.save)
            except Exception:
                log.exception("event=metrics_save_failed what=sched_passes")
