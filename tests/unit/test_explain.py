"""``explain``: why a pending job waits, read from the plan, with verified suggestions.

The snapshots are small and built by ``tests.builders``; running jobs are
added with ``dataclasses.replace`` and hold exactly what their nodes show as
allocated.  Times are relative to ``NOW``; ``HOUR`` = 3600 s.

The plan comes from ``backfill.backfill_pass`` (the pass that gives
estimates).  ``NOW`` here is a whole number of minutes (36,000 s), so the
ends of running jobs fall on backfill's 60-second resolution and estimates
come out exact.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from slurmlite.protocol import NodeAlloc
from slurmlite.protocol_policy import GpuHolder, JobExplanation
from slurmlite.scheduler.backfill import backfill_pass
from slurmlite.scheduler.explain import JobNotPending, explain
from slurmlite.scheduler.explain_suggest import head_of_queue, start_of, with_job
from slurmlite.scheduler.snapshot import RunningJob, Snapshot
from tests.builders import a_job, a_node, a_partition, a_policy, a_snapshot

NOW = 36_000.0  # 600 min: a multiple of bf_resolution (60 s)
HOUR = 3600.0
POLICY = a_policy(def_mem_per_cpu=1000)


def _snap(*args, **kw) -> Snapshot:  # type: ignore[no-untyped-def]
    return a_snapshot(*args, now=NOW, **kw)


def _with_running(snap: Snapshot, *running: RunningJob) -> Snapshot:
    return dataclasses.replace(snap, running=running)


def _explain(snap: Snapshot, job_id: int, **kw) -> JobExplanation:  # type: ignore[no-untyped-def]
    return explain(snap, POLICY, job_id, **kw)  # the pass of SchedulerType: backfill


def gpu_node_all_held() -> Snapshot:
    # n1: 4 CPUs, 8000 MiB, 2 GPUs; running job 1 (alice) holds 1 CPU, 1000 MiB and
    # both GPUs until NOW + 1 h.  Job 2 (bob) asks --gres=gpu:1 --time=2:00:00.
    held = a_node("n1", gpus=2, alloc_cpus=1, alloc_mem=1000, alloc_gpus=[0, 1])
    snap = _snap([held], [a_job(2, user="bob", gpus_per_node=1, time_limit=120)])
    one = RunningJob(1, "alice", start_time=NOW - 60, end_time=NOW + HOUR,
                     allocs=(NodeAlloc("n1", 1, 1000, [0, 1]),))  # fmt: skip
    return _with_running(snap, one)


def test_gpu_job_blocked_by_a_running_job_names_it_and_waits_for_its_end():
    out = _explain(gpu_node_all_held(), 2)
    assert out.reason == "Resources" and not out.starts_now
    # both GPUs come back when job 1 ends at NOW + 1 h: that is the estimate
    assert out.estimated_start == NOW + HOUR
    assert out.planned_nodes == ["n1"]
    [blocker] = out.blockers
    assert (blocker.job_id, blocker.kind, blocker.user) == (1, "running", "alice")
    assert blocker.gpus == ["n1:0", "n1:1"] and blocker.end == NOW + HOUR
    [n1] = out.nodes
    # needs 1 CPU (3 free), 1 x 1000 MiB (7000 free), 1 GPU (none free)
    assert (n1.fits_now, n1.cpus_needed, n1.cpus_free, n1.mem_free) == (False, 1, 3, 7000)
    assert n1.gpus_busy == [GpuHolder(0, 1), GpuHolder(1, 1)]
    assert n1.problems == ["GPUs: needs 1, none free (0: job 1, 1: job 1)"]


def test_no_suggestion_when_no_change_starts_it_sooner():
    # one GPU is the least it can ask; a shorter --time frees no GPU; no other
    # partition, no explicit memory: nothing is offered, and the report says so
    out = _explain(gpu_node_all_held(), 2)
    assert out.suggestions == []
    assert any("no change" in note for note in out.notes)


def reservation_gap() -> Snapshot:
    # n1 with 2 GPUs; job 1 runs on GPU 0 until NOW + 1 h.  Job 2 (priority 10) wants
    # both GPUs for 2 h: reserved from NOW + 1 h to NOW + 3 h.  Job 3 (priority 1)
    # wants one GPU for 2 h: GPU 1 is free now, but NOW..NOW+2h overlaps job 2's
    # reservation, so job 3 waits until NOW + 3 h.  60 minutes would fit in the gap.
    n1 = a_node("n1", gpus=2, alloc_cpus=1, alloc_mem=1000, alloc_gpus=[0])
    jobs = [
        a_job(2, priority=10, gpus_per_node=2, time_limit=120),
        a_job(3, priority=1, gpus_per_node=1, time_limit=120),
    ]
    one = RunningJob(1, "alice", start_time=NOW - 60, end_time=NOW + HOUR,
                     allocs=(NodeAlloc("n1", 1, 1000, [0]),))  # fmt: skip
    return _with_running(_snap([n1], jobs), one)


def test_shorter_time_suggestion_quotes_exactly_what_the_pass_returns():
    snap = reservation_gap()
    out = _explain(snap, 3)
    assert out.estimated_start == NOW + 3 * HOUR  # after job 2's 2 h from NOW + 1 h
    assert [(b.job_id, b.kind) for b in out.blockers] == [(1, "running"), (2, "reservation")]
    [time] = [s for s in out.suggestions if s.option == "time"]
    assert (time.value, time.flag) == ("1:00:00", "--time=1:00:00")
    # the check the issue demands: the quoted start is the pass's own answer for the
    # changed snapshot (and here: now, in the gap before job 2's reservation)
    job3 = next(j for j in snap.pending if j.job_id == 3)
    changed = with_job(snap, dataclasses.replace(job3, time_limit=60))
    assert time.start == start_of(backfill_pass(changed, POLICY), 3, NOW) == NOW


def test_another_partition_is_suggested_when_its_nodes_are_free():
    # gpu partition: n1, fully taken by job 1 until NOW + 1 h; cpu partition: n2, idle.
    # Job 5 (-n 1, 30 min) in gpu waits for NOW + 1 h; in cpu it starts now.
    busy = a_node("n1", alloc_cpus=4, alloc_mem=4000)
    parts = [a_partition("gpu", ["n1"]), a_partition("cpu", ["n2"])]
    snap = _snap([busy, a_node("n2")], [a_job(5, "gpu", time_limit=30)], parts)
    one = RunningJob(1, start_time=NOW, end_time=NOW + HOUR,
                     allocs=(NodeAlloc("n1", 4, 4000, []),))  # fmt: skip
    out = _explain(_with_running(snap, one), 5)
    assert out.estimated_start == NOW + HOUR
    part = [s for s in out.suggestions if s.option == "partition"]
    assert [(s.flag, s.start) for s in part] == [("--partition=cpu", NOW)]
    assert out.nodes[0].problems == ["CPUs: needs 1, 0 of 4 free"]


def test_held_job_says_so_and_suggests_nothing():
    snap = _snap([a_node("n1")], [a_job(4, held="JobHeldUser")])
    out = _explain(snap, 4)
    assert out.reason == "JobHeldUser"
    assert out.reason_text == "its owner held it"
    assert out.estimated_start is None and out.suggestions == [] and out.blockers == []
    assert any("scontrol release 4" in note for note in out.notes)


def test_job_that_fits_starts_now_with_nothing_to_explain():
    out = _explain(_snap([a_node("n1")], [a_job(1)]), 1)
    assert out.starts_now and out.estimated_start == NOW and out.reason == "None"
    assert out.suggestions == [] and out.blockers == [] and out.notes == []


def test_time_limit_above_partition_max_time_gets_the_max_time_suggested():
    # MaxTime=60 and --time=2:00:00: the pass skips it (PartitionTimeLimit, no
    # estimate); --time=1:00:00 (the MaxTime itself, the mildest change) starts it now
    snap = _snap(
        [a_node("n1")], [a_job(1, time_limit=120)], [a_partition("debug", ["n1"], max_time=60)]
    )
    out = _explain(snap, 1)
    assert out.reason == "PartitionTimeLimit" and out.estimated_start is None
    assert [(s.flag, s.start) for s in out.suggestions] == [("--time=1:00:00", NOW)]
    # as asked it can never run: the report says so and names MaxTime with the fitting --time
    assert out.never == [
        "partition debug allows at most 1:00:00 (MaxTime); ask for --time=1:00:00 or less"
    ]
    assert out.notes[0].startswith("as asked it can never run")


def test_queue_place_and_priority_factors():
    # debug: n1; other: n2.  Queue by priority: 7 (30), 8 (20, other), 9 (10), 6 (held, 0).
    parts = [a_partition("debug", ["n1"]), a_partition("other", ["n2"])]
    jobs = [
        a_job(7, priority=30),
        a_job(8, "other", priority=20),
        a_job(9, priority=10),
        a_job(6, priority=0, held="JobHeldUser"),
    ]
    snap = _snap([a_node("n1"), a_node("n2")], jobs, parts)
    factors = {
        "weighted": {"age": 5.0, "fairshare": 4.0, "tres": {"gres/gpu": 1.0}, "nice": 0},
        "norm": {"age": 0.5},
        "direct": False,
    }
    out = _explain(snap, 9, factors=factors)
    q = out.queue
    assert q is not None
    # third of 4 overall; second of the 3 debug jobs; 1 eligible job ahead on n1 (7)
    assert (q.position, q.pending, q.partition_position, q.partition_pending) == (3, 4, 2, 3)
    assert q.ahead_on_nodes == 1
    assert out.factors == {"age": 5.0, "fairshare": 4.0, "tres:gres/gpu": 1.0, "nice": 0.0}
    assert out.norm_factors == {"age": 0.5}


def test_node_report_names_down_excluded_and_feature_problems():
    nodes = [a_node("n1", usable=False), a_node("n2"), a_node("n3", features=["fast"])]
    snap = _snap(nodes, [a_job(1, exc_nodes=["n2"], features="fast")])
    out = _explain(snap, 1)
    problems = {n.node: n.problems for n in out.nodes}
    assert problems == {
        "n1": ["not usable: down, drained or not responding", "features: needs fast, has none"],
        "n2": ["excluded (--exclude)", "features: needs fast, has none"],
        "n3": [],
    }
    assert out.starts_now and out.planned_nodes == ["n3"]


def test_unknown_job_is_refused_and_the_report_is_deterministic():
    snap = reservation_gap()
    with pytest.raises(JobNotPending):
        _explain(snap, 99)
    assert _explain(snap, 3) == _explain(snap, 3)


def test_the_head_of_the_queue_gives_every_job_the_start_the_whole_queue_gives():
    # explain runs its passes on the queue cut after the job (head_of_queue): jobs
    # behind it cannot move its start.  40 mixed jobs on 3 GPU nodes, every job checked.
    rng = random.Random(6)
    nodes = [a_node(f"n{i}", cpus=8, mem=16000, gpus=4) for i in (1, 2, 3)]
    jobs = [
        a_job(
            i,
            priority=rng.randint(1, 5),
            user=rng.choice(["ann", "ben"]),
            ntasks=rng.choice([1, 2, 4]),
            gpus_per_node=rng.choice([0, 1, 2, 4]),
            time_limit=rng.choice([10, 30, 60, 120]),
        )
        for i in range(1, 41)
    ]
    snap = _snap(nodes, jobs)
    full = backfill_pass(snap, POLICY)
    for job in jobs:
        head = backfill_pass(head_of_queue(snap, job.job_id), POLICY)
        assert start_of(head, job.job_id, NOW) == start_of(full, job.job_id, NOW), job.job_id
    assert len(full.starts) >= 3 and len(full.estimates) >= 10  # the check covered both kinds
