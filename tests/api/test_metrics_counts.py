"""The job counts behind ``/metrics`` are kept by differences: they must equal a count
from scratch after any sequence of changes (``controller.metrics.jobcounts``).

Hypothesis drives the harness cluster (n1, n2: 2 CPUs and 2 GPUs each;
partitions debug and long; MinJobAge 300 s) through random submissions by
alice and bob, scheduling passes, ends, cancels, holds, releases, squeue
listings (which forget rows past MinJobAge), reloads of the live view and the
passing of time.  At every scrape in the sequence, and at its end, the job
series of ``/metrics/jobs``, ``/metrics/partitions`` and
``/metrics/jobs-users-accts`` must equal those rendered from the store's rows
counted from scratch (a fresh view, :func:`jobstats.tally`).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from controller.jobs.operations import JobOps
from controller.metrics import jobcounts, jobstats
from controller.store.live_cache import LiveJobs, view_of
from controller.store.models import JobRow
from slurmlite.openmetrics import Exposition
from slurmlite.protocol import CancelRequest, JobCompletion
from tests.api.conftest import ALICE, BOB, ROOT, Harness
from tests.api.test_metrics import METRICS, build, end, scrape

parser = pytest.importorskip("prometheus_client.openmetrics.parser")

JOB_PREFIXES = ("slurm_jobs", "slurm_partition_jobs", "slurm_user_jobs", "slurm_account_jobs")
PICK = st.integers(0, 50)  # which of the jobs an action applies to (modulo their number)
ACTIONS = st.one_of(
    st.tuples(
        st.just("submit"),
        st.sampled_from([ALICE, BOB]),
        st.sampled_from(["debug", "long"]),
        st.booleans(),  # held
        st.integers(0, 2),  # GPUs per node
    ),
    st.just(("tick",)),
    st.tuples(st.just("end"), PICK, st.sampled_from([0, 1])),  # exit code
    st.tuples(st.sampled_from(["cancel", "hold", "release"]), PICK),
    st.tuples(st.just("wait"), st.sampled_from([1, 150, 299, 301, 600])),
    st.just(("list",)),
    st.just(("reload",)),
    st.just(("scrape",)),
)


class Cluster:
    """The harness, named briefly in Hypothesis' report of a failing sequence."""

    def __init__(self, h: Harness) -> None:
        self.h = h

    def __repr__(self) -> str:
        return "the harness cluster"


@pytest.fixture
def metered(tmp_path, store_url):  # type: ignore[no-untyped-def]
    h = build(tmp_path, store_url, METRICS)
    yield h
    h.ctl.db.close()


@pytest.fixture
def cluster(metered) -> Cluster:  # type: ignore[no-untyped-def]
    return Cluster(metered)


def job_series(h: Harness, path: str) -> dict[tuple[str, tuple], float]:
    got = scrape(h, path)
    return {k: v for k, v in got.items() if k[0].startswith(JOB_PREFIXES)}


def from_scratch(h: Harness) -> dict[tuple[str, tuple], float]:
    """The job series of the three endpoints, from every row of the store counted anew."""
    cutoff = h.clock() - h.ctl.cfg.min_job_age
    rows = [r for r in LiveJobs().refresh(h.ctl.db, cutoff).values() if jobcounts.shown(r, cutoff)]
    out = Exposition()
    jobstats.write(out, "slurm_jobs", jobstats.tally(rows).get("", jobstats.JobStats()), None)
    per_part = jobstats.tally(rows, "partition")
    for p in ("debug", "long"):
        stats = per_part.get(p, jobstats.JobStats())
        jobstats.write(out, "slurm_partition_jobs", stats, {"partition": p})
    for group, prefix, label in (
        ("user", "slurm_user_jobs", "username"),
        ("account", "slurm_account_jobs", "account"),
    ):
        for name, stats in jobstats.tally(rows, group).items():
            jobstats.write(out, prefix, stats, {label: name})
    found = {}
    for family in parser.text_string_to_metric_families(out.text()):
        for s in family.samples:
            found[s.name, tuple(sorted(s.labels.items()))] = s.value
    return found


def check(h: Harness) -> None:
    scraped: dict[tuple[str, tuple], float] = {}
    for path in ("/metrics/jobs", "/metrics/partitions", "/metrics/jobs-users-accts"):
        scraped.update(job_series(h, path))
    assert scraped == from_scratch(h)


def jobs(h: Harness, *states: str) -> list[Any]:
    with h.ctl.db.read() as s:
        q = select(JobRow.id, JobRow.batch_host, JobRow.restarts).where(JobRow.state.in_(states))
        return list(s.execute(q.order_by(JobRow.id)))


def act(h: Harness, action: tuple) -> None:
    kind = action[0]
    if kind == "submit":
        _, who, partition, held, gpus = action
        h.as_user(who)
        h.submit(partition=partition, hold=held, gpus_per_node=gpus)
    elif kind == "tick":
        h.tick()
    elif kind == "end":
        running = jobs(h, "RUNNING")
        if running:
            jid, host, restarts = running[action[1] % len(running)]
            msg = JobCompletion(
                node=host, job_id=jid, restarts=restarts, step_id="batch", exit_code=action[2]
            )
            h.ctl.jobs.complete(host, msg)
    elif kind in ("cancel", "hold", "release"):
        live = jobs(h, "PENDING", "RUNNING") if kind == "cancel" else jobs(h, "PENDING")
        if live:
            jid = live[action[1] % len(live)][0]
            if kind == "cancel":
                h.ctl.jobs.cancel(ROOT, CancelRequest(job_ids=[jid]))
            else:
                getattr(JobOps(h.ctl.jobs), kind)(ROOT, [jid])
    elif kind == "wait":
        h.pass_time(action[1])
    elif kind == "list":
        h.client.get("/v1/jobs")  # squeue: the view forgets rows past MinJobAge
    elif kind == "reload":
        view_of(h.ctl.db).mark("all")  # a write the view cannot pin to rows
    else:
        check(h)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(ACTIONS, max_size=25))
def test_counts_equal_a_count_from_scratch_after_any_changes(cluster, steps):
    # one cluster for every example: each sequence starts where the last one left off
    for step in steps:
        act(cluster.h, step)
    check(cluster.h)


def test_a_finished_job_drops_out_when_min_job_age_passes(metered):
    h = metered
    jid = h.submit()["job_id"]
    h.tick()
    end(h, jid)  # ended now; MinJobAge is 300 s
    h.pass_time(299)
    assert job_series(h, "/metrics/jobs")["slurm_jobs_completed", ()] == 1
    h.pass_time(2)  # no job changes: only time passed
    m = job_series(h, "/metrics/jobs")
    assert (m["slurm_jobs_completed", ()], m["slurm_jobs", ()]) == (0, 0)
    users = job_series(h, "/metrics/jobs-users-accts")
    assert not users  # alice has no job shown any more: no series for her


def test_a_scrape_after_a_submission_counts_only_the_change(metered, monkeypatch):
    h = metered
    for _ in range(3):
        h.submit(hold=True)
    assert job_series(h, "/metrics/jobs")["slurm_jobs_pending", ()] == 3  # counted once
    recounts: list[int] = []
    real = jobcounts.count
    monkeypatch.setattr(jobcounts, "count", lambda rows: recounts.append(1) or real(rows))
    h.submit(hold=True)
    assert job_series(h, "/metrics/jobs")["slurm_jobs_hold", ()] == 4
    h.tick()
    h.pass_time(10)
    assert job_series(h, "/metrics/jobs")["slurm_jobs", ()] == 4
    assert recounts == []  # followed by differences, never counted again
