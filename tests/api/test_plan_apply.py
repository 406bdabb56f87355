"""The loop's scheduling step (controller.sched.apply): which pass runs when, and
what it leaves in the store — reasons, starts, estimates — as users see them
through the list API, squeue --start and sbatch --test-only.

The test cluster: n1, n2 with 2 CPUs, 4000 MB and 2 GPUs each, DefMemPerCPU=1000,
SchedulerParameters=bf_interval=1 (tests/api/conftest.py); the clock is fake
and starts at t0 = 1,800,000,000 (a multiple of 60, so backfill's resolution
does not round the times below).
"""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import update

from cli import squeue_format as sf
from controller.sched import apply, gather, willrun
from controller.store.models import JobRow
from slurmlite.protocol import JobCompletion, JobInfo, from_dict
from slurmlite.reasons import UnknownReason
from slurmlite.scheduler.passes import main_pass
from slurmlite.scheduler.snapshot import Plan, Policy, Snapshot
from slurmlite.timefmt import fmt_timestamp

T0 = 1_800_000_000.0


class EstimatingPass:
    """A stand-in full pass: the main pass, plus for every job it leaves waiting on
    Resources an estimate at the earliest end of a running job, on that job's
    first node (what any backfill gives on this two-node cluster).  Counts its runs."""

    def __init__(self) -> None:
        self.calls: list[Snapshot] = []
        self.silent = False  # True: no estimates at all

    def __call__(self, snap: Snapshot, policy: Policy) -> Plan:
        self.calls.append(snap)
        plan = main_pass(snap, policy)
        ends = sorted((r.end_time, r.nodes[0]) for r in snap.running if r.end_time is not None)
        if ends and not self.silent:
            for job_id, reason in plan.reasons.items():
                if reason in ("Resources", "Priority"):
                    plan.estimates[job_id] = ends[0][0]
                    plan.planned_nodes[job_id] = (ends[0][1],)
        return plan


@pytest.fixture
def fake(harness) -> EstimatingPass:
    full = EstimatingPass()
    harness.ctl.sched.full_pass = full
    return full


def _done(h, job_id: int) -> None:  # type: ignore[no-untyped-def]
    h.ctl.jobs.complete(
        "n1", JobCompletion(node="n1", job_id=job_id, restarts=0, step_id="batch", exit_code=0)
    )


def _fill_cluster(h, minutes: int | None = 10) -> int:  # type: ignore[no-untyped-def]
    """A job holding every CPU of n1 and n2 (4 tasks), started at t0; its id."""
    fields = {"time_limit": minutes} if minutes is not None else {"time_unlimited": True}
    big = h.submit(name="big", ntasks=4, **fields)["job_id"]
    h.tick()
    assert h.job(big)["state"] == "RUNNING"
    return big


def test_running_jobs_are_in_the_snapshot_with_their_allocation_and_limit(harness):
    h = harness
    big = _fill_cluster(h)
    waiting = h.submit(ntasks=1)["job_id"]
    snap, _ = gather.take(h.ctl.db, h.ctl.cfg, h.ctl.nodes, h.clock())
    [running] = snap.running
    # started at t0 with --time=10: holds both nodes until t0 + 600 at the latest
    assert (running.job_id, running.start_time, running.end_time) == (big, T0, T0 + 600)
    assert running.nodes == ("n1", "n2") and running.cpus == 4
    assert [j.job_id for j in snap.pending] == [waiting]
    assert snap.pending[0].account and snap.pending[0].qos  # the job's, as stored
    with h.ctl.db.write() as s:  # cancelled but still completing on its nodes: still holds them
        s.execute(
            update(JobRow)
            .where(JobRow.id == big)
            .values(state="CANCELLED", flags="COMPLETING", end_time=T0 + 5)
        )
    snap, _ = gather.take(h.ctl.db, h.ctl.cfg, h.ctl.nodes, h.clock())
    assert [(r.job_id, r.end_time) for r in snap.running] == [(big, T0 + 5)]
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_estimates_are_written_listed_kept_by_event_passes_and_cleared_on_start(harness, fake):
    h = harness
    big = _fill_cluster(h)  # full pass 1 (start-up)
    waiting = h.submit(name="waiting", ntasks=1, time_limit=5)["job_id"]
    h.tick()  # same second: an event pass (main pass only), no estimate yet
    assert len(fake.calls) == 1
    assert h.job(waiting)["sched_start"] is None and h.job(waiting)["sched_nodes"] == []

    h.pass_time(1)  # bf_interval=1 has gone by: the next pass is a full one
    h.tick()
    assert len(fake.calls) == 2
    job = h.job(waiting)
    assert job["reason"] == "Resources"
    assert (job["sched_start"], job["sched_nodes"]) == (T0 + 600, ["n1"])  # big's end
    assert h.ctl.loop.last_plan is not None and h.ctl.loop.last_plan.estimates == {
        waiting: T0 + 600
    }
    assert h.ctl.loop.last_snapshot is fake.calls[-1]

    h.tick()  # an event pass keeps backfill's estimate
    assert len(fake.calls) == 2 and h.job(waiting)["sched_start"] == T0 + 600

    _done(h, big)
    h.tick()  # still within the second: the main pass starts it, and the estimate goes
    assert len(fake.calls) == 2
    job = h.job(waiting)
    assert job["state"] == "RUNNING"
    assert (job["sched_start"], job["sched_nodes"]) == (None, [])
    h.agents.take("launch", 2)
    h.agents.assert_nothing_else()


def test_a_full_pass_clears_estimates_it_no_longer_gives_and_those_of_held_jobs(harness, fake):
    h = harness
    _fill_cluster(h)
    a, b = h.submit(ntasks=1)["job_id"], h.submit(ntasks=1)["job_id"]
    h.pass_time(1)
    h.tick()
    assert h.job(a)["sched_start"] == h.job(b)["sched_start"] == T0 + 600
    with h.ctl.db.write() as s:  # scontrol hold b: it leaves the snapshot
        s.execute(update(JobRow).where(JobRow.id == b).values(hold="JobHeldUser", priority=0))
    fake.silent = True
    h.tick()  # event pass: nothing cleared
    assert h.job(a)["sched_start"] == h.job(b)["sched_start"] == T0 + 600
    h.pass_time(1)
    h.tick()  # full pass without estimates: both gone
    assert (h.job(a)["sched_start"], h.job(a)["sched_nodes"]) == (None, [])
    assert h.job(b)["sched_start"] is None
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_plan_naming_a_reason_outside_the_vocabulary_is_refused_and_nothing_written(harness):
    h = harness
    _fill_cluster(h)
    waiting = h.submit(ntasks=1)["job_id"]
    h.tick()
    assert h.job(waiting)["reason"] == "Resources"

    def buggy(snap: Snapshot, policy: Policy) -> Plan:  # a pass with a typo in a reason
        plan = main_pass(snap, policy)
        plan.reasons[waiting] = "Resource"
        return plan

    h.ctl.sched.full_pass = buggy
    with pytest.raises(UnknownReason, match="'Resource'"):
        apply.schedule(h.ctl.sched, apply.PassState())  # no full pass yet: a full one
    assert h.job(waiting)["reason"] == "Resources"  # the transaction was rolled back


def test_bf_interval_minus_one_disables_backfill_and_builtin_has_one_pass(harness, fake):
    h = harness
    params = {**h.ctl.policy.scheduler_parameters, "bf_interval": "-1"}
    h.ctl.policy = dataclasses.replace(h.ctl.policy, scheduler_parameters=params)
    _fill_cluster(h)
    h.submit(ntasks=1)
    for _ in range(3):
        h.pass_time(2)
        h.tick()
    assert fake.calls == []  # every pass was the main pass
    assert h.ctl.loop.last_plan is not None  # ... and a full one
    h.ctl.policy = dataclasses.replace(h.ctl.policy, scheduler_type="sched/builtin")
    h.tick()
    h.tick()
    assert len(fake.calls) == 2  # sched/builtin: its one pass, every time
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_squeue_start_and_scontrol_show_the_estimate(harness, fake):
    h = harness
    _fill_cluster(h)
    waiting = h.submit(name="waiting", ntasks=1)["job_id"]
    other = h.submit(name="other", ntasks=1, hold=True)["job_id"]
    h.pass_time(1)
    h.tick()
    columns, _ = sf.parse_format(sf.START_FORMAT)
    ctx = sf.Ctx(h.clock())

    def line(job_id: int) -> str:
        return sf.row_line(sf.Row.of(from_dict(JobInfo, h.job(job_id))), columns, ctx)

    # %.19S is the estimate (t0 + 600), %20Y the planned nodes; without: N/A and (null)
    assert fmt_timestamp(T0 + 600) in line(waiting) and " n1 " in line(waiting)
    assert " N/A " in line(other) and "(null)" in line(other)
    from cli.scontrol_show import job_lines

    text = "\n".join(job_lines(from_dict(JobInfo, h.job(waiting)), h.clock()))
    assert f"StartTime={fmt_timestamp(T0 + 600)} " in text and " SchedNodeList=n1" in text
    text = "\n".join(job_lines(from_dict(JobInfo, h.job(other)), h.clock()))
    assert "StartTime=Unknown " in text and "SchedNodeList" not in text
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def _test_only(h, **fields):  # type: ignore[no-untyped-def]
    return h.post_job(test_only=True, name="probe", **fields)


def test_test_only_gives_the_estimated_start_of_a_job_that_must_wait(harness, monkeypatch):
    h = harness
    try:
        from slurmlite.scheduler.backfill import backfill_pass  # noqa: F401
    except ImportError:  # the backfill pass is written in parallel: its stand-in meanwhile
        monkeypatch.setattr(willrun, "_full_pass", lambda: EstimatingPass())
    _fill_cluster(h)
    h.pass_time(30)
    r = _test_only(h, ntasks=1, time_limit=5)
    assert r.status_code == 200, r.text
    answer = r.json()
    # big ends at t0 + 600 at the latest; n1 comes first in slurm.conf
    assert answer["test_only_message"] == (
        f"Job {answer['job_id']} to start at {fmt_timestamp(T0 + 600)} using 1 processors "
        "on nodes n1 in partition debug"
    )
    jobs = h.client.get("/v1/jobs", params={"all_states": True}).json()["jobs"]
    assert answer["job_id"] not in [j["job_id"] for j in jobs]  # nothing was queued
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_test_only_fails_when_the_job_can_never_be_placed(harness, monkeypatch):
    h = harness
    try:
        from slurmlite.scheduler.backfill import backfill_pass  # noqa: F401
    except ImportError:
        monkeypatch.setattr(willrun, "_full_pass", lambda: EstimatingPass())
    h.ctl.cfg.partition("debug").state = "DOWN"  # accepted (it pends), never started
    r = _test_only(h, ntasks=1, time_limit=5)
    assert r.status_code >= 400, r.text
    assert "Partition in DOWN state" in r.text


def test_test_only_on_an_idle_cluster_starts_now(harness):
    h = harness
    r = _test_only(h, nodes_min=1)
    assert r.status_code == 200, r.text
    # golden 01_sbatch_test_only: "... using 1 processors on nodes n1 in partition debug"
    assert r.json()["test_only_message"].endswith(
        f"to start at {fmt_timestamp(T0)} using 1 processors on nodes n1 in partition debug"
    )


def test_the_real_backfill_pass_estimates_and_backfills_through_the_loop(harness):
    h = harness
    pytest.importorskip("slurmlite.scheduler.backfill")  # written in parallel
    assert h.ctl.policy.scheduler_type == "sched/backfill"
    _fill_cluster(h)  # 4 CPUs until t0 + 600
    wide = h.submit(name="wide", ntasks=4, time_limit=10)["job_id"]
    h.pass_time(1)
    h.tick()  # full pass: wide waits for big's end, on both nodes
    job = h.job(wide)
    assert job["state"] == "PENDING" and job["reason"] == "Resources"
    assert (job["sched_start"], job["sched_nodes"]) == (T0 + 600, ["n1", "n2"])
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_estimates_beyond_bf_window_are_not_shown():
    # bf_window = 1 day: a job behind an UNLIMITED one would start "in a year": N/A
    plan = Plan(estimates={7: 100.0 + 86_400, 8: 100.0 + 365 * 86_400})
    plan.planned_nodes.update({7: ("n1",), 8: ("n2",)})
    marks = {7: (None, None), 8: (5.0, "n2")}  # 8 had an estimate before
    got = apply.wanted_estimates(plan, marks, full=True, horizon=100.0 + 86_400)
    assert got == {7: (100.0 + 86_400, "n1"), 8: (None, None)}
