"""Backfill: start lower jobs early only when no higher job's promised start moves.

Every scenario: ``now`` = 10 h (a multiple of the 60 s resolution), GPU nodes of
32 CPUs / 64000 MiB, DefMemPerCPU=1000, jobs ``-n 1 --gres=gpu:G --time=M``
(1 CPU, 1000 MiB each).  Jobs are FIFO by id unless told otherwise.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import pytest

import slurmlite.scheduler.passes as passes
from slurmlite.scheduler.backfill import BackfillParams, backfill_pass
from slurmlite.scheduler.registry import scheduler_for
from slurmlite.scheduler.snapshot import NodeView, PendingJob, Plan, Policy, RunningJob, Snapshot
from tests.builders import (
    a_job,
    a_node,
    a_partition,
    a_policy,
    a_running_job,
    a_snapshot,
    an_alloc,
)

NOW = 36_000.0
HOUR = 3600.0


def gpu_node(name: str, gpus: int = 8) -> NodeView:
    return a_node(name, cpus=32, mem=64000, gpus=gpus)


def gpu_job(job_id: int, gpus: int, minutes: int | None, **kw: Any) -> PendingJob:
    return a_job(job_id, ntasks=1, gpus_per_node=gpus, time_limit=minutes, **kw)


def running(job_id: int, node: str, gpus: Sequence[int], ends_in: float | None) -> RunningJob:
    """A running 1-CPU job holding ``gpus`` on ``node``, ending ``ends_in`` s from now."""
    return a_running_job(job_id, an_alloc(node, 1, 1000, gpus), ends_in=ends_in, now=NOW)


def snapshot(
    nodes: Sequence[NodeView],
    pending: Sequence[PendingJob],
    runs: Sequence[RunningJob] = (),
    partitions: Any = None,
) -> Snapshot:
    """Nodes get the alloc_* fields the running jobs imply."""
    return a_snapshot(nodes, pending, partitions, now=NOW, running=runs)


def backfill(snap: Snapshot, **params: Any) -> Plan:
    policy = a_policy(
        def_mem_per_cpu=1000, scheduler_parameters={k: str(v) for k, v in params.items()}
    )
    return backfill_pass(snap, policy)


def gpus_of(plan: Plan, job_id: int) -> dict[str, list[int]]:
    start = next(s for s in plan.starts if s.job_id == job_id)
    return {a.node: list(a.gpus) for a in start.allocs}


def the_docstring_cluster(d_minutes: int = 180) -> Snapshot:
    # n1: 8 GPUs, job 1 holds GPUs 0-5 for one more hour; GPUs 6, 7 are free.
    # Queue: 2 (8 GPUs, 2 h), 3 (2 GPUs, 1 h), 4 (2 GPUs, d_minutes).
    return snapshot(
        [gpu_node("n1")],
        [gpu_job(2, 8, 120), gpu_job(3, 2, 60), gpu_job(4, 2, d_minutes)],
        [running(1, "n1", range(6), HOUR)],
    )


def test_a_short_job_starts_around_a_blocked_big_one():
    # Main pass: 2 needs 8 GPUs, 2 are free -> Resources; 3 and 4 get Priority.
    # Backfill: 2 reserves all 8 GPUs over [+1 h, +3 h).  3 holds GPUs 6, 7 over
    # [now, +1 h): it ends when the reservation begins, so it starts now.
    plan = backfill(the_docstring_cluster())
    assert plan.started_ids == [3]
    assert gpus_of(plan, 3) == {"n1": [6, 7]}
    assert plan.estimates[2] == NOW + HOUR
    assert plan.planned_nodes[2] == ("n1",)
    assert plan.reasons == {2: "Resources", 4: "Priority"}


def test_a_job_that_would_delay_the_reservation_waits_for_its_end():
    # 4 asks 3 h: over [now, +3 h) it would still hold 2 GPUs at +1 h, when job 2's
    # reservation needs all 8.  It waits; its earliest start is the reservation's end,
    # +1 h + 2 h = +3 h.
    plan = backfill(the_docstring_cluster(d_minutes=180))
    assert 4 not in plan.started_ids
    assert plan.estimates[4] == NOW + 3 * HOUR
    # with 60 minutes it would have fitted: shown by job 3 above; with 61 it does not
    plan = backfill(the_docstring_cluster(d_minutes=61))
    assert plan.started_ids == [3]


def test_sched_builtin_has_no_backfill_and_sched_backfill_does():
    snap = the_docstring_cluster()
    builtin = scheduler_for("sched/builtin")(snap, a_policy(def_mem_per_cpu=1000))
    assert builtin.starts == [] and builtin.estimates == {}
    assert scheduler_for("sched/backfill") is backfill_pass
    assert backfill(snap, bf_interval=-1).starts == []  # bf_interval=-1 turns it off


def easy_vs_conservative() -> Snapshot:
    # n1: all 4 GPUs busy for 1 h.  n2: GPUs 0, 1 busy for 2 h, GPUs 2, 3 free.
    # Queue: 2 (4 GPUs, 2 h), 3 (4 GPUs, 2 h), 4 (2 GPUs, 3 h).
    return snapshot(
        [gpu_node("n1", 4), gpu_node("n2", 4)],
        [gpu_job(2, 4, 120), gpu_job(3, 4, 120), gpu_job(4, 2, 180)],
        [running(1, "n1", range(4), HOUR), running(9, "n2", [0, 1], 2 * HOUR)],
    )


def test_conservative_backfill_reserves_for_every_blocked_job():
    # 2: n1 frees at +1 h -> reserves n1 [+1 h, +3 h).
    # 3: n2 frees at +2 h (n1 only at +3 h) -> reserves n2 [+2 h, +4 h).
    # 4: the 2 free GPUs of n2 for 3 h would overlap 3's reservation at +2 h: waits.
    #    Earliest: n1 after 2's reservation, +3 h.
    plan = backfill(easy_vs_conservative())
    assert plan.starts == []
    assert plan.estimates == {2: NOW + HOUR, 3: NOW + 2 * HOUR, 4: NOW + 3 * HOUR}
    assert plan.planned_nodes == {2: ("n1",), 3: ("n2",), 4: ("n1",)}


def test_easy_backfill_protects_only_the_first_blocked_job():
    # bf_job_part_count_reserve=1: only 2 reserves.  3 still gets its estimate (+2 h)
    # but no reservation, so 4 starts now on n2's free GPUs 2, 3 — and 3 will in
    # fact start later than +2 h: the price of EASY.
    plan = backfill(easy_vs_conservative(), bf_job_part_count_reserve=1)
    assert plan.started_ids == [4]
    assert gpus_of(plan, 4) == {"n2": [2, 3]}
    assert plan.estimates == {2: NOW + HOUR, 3: NOW + 2 * HOUR}


def test_per_resource_reservations_let_a_job_share_the_reserved_node():
    # n1: 8 GPUs, 0-5 busy for 1 h.  2 (4 GPUs, 2 h) reserves GPUs 0-3 over
    # [+1 h, +3 h).  3 (2 GPUs, 3 h) fits GPUs 6, 7, which no reservation needs: starts.
    snap = snapshot(
        [gpu_node("n1")],
        [gpu_job(2, 4, 120), gpu_job(3, 2, 180)],
        [running(1, "n1", range(6), HOUR)],
    )
    plan = backfill(snap)
    assert plan.started_ids == [3] and gpus_of(plan, 3) == {"n1": [6, 7]}
    # bf_whole_node_reserve=yes (Slurm): 2 reserves all of n1 over [+1 h, +3 h), so 3
    # would overlap it and waits until +3 h.
    plan = backfill(snap, bf_whole_node_reserve="yes")
    assert plan.starts == []
    assert plan.estimates == {2: NOW + HOUR, 3: NOW + 3 * HOUR}


def test_unlimited_running_jobs_leave_nothing_to_plan_around():
    # 1 holds 2 of 4 GPUs with no time limit: taken to end a year after it began,
    # beyond bf_window (1 day), so 2 gets an estimate but no reservation.
    snap = snapshot(
        [gpu_node("n1", 4)],
        [gpu_job(2, 4, 60), gpu_job(3, 2, 60)],
        [running(1, "n1", [0, 1], None)],
    )
    plan = backfill(snap)
    assert plan.estimates[2] == NOW - 60 + 365 * 86400
    assert plan.started_ids == [3]  # nothing reserved, so 3 takes the free GPUs


def test_unlimited_pending_jobs_cannot_be_backfilled():
    # Job 2 reserves all 4 GPUs over [+1 h, +2 h).  Job 3 without a time limit would
    # hold GPUs 2, 3 "for ever", across that reservation: it waits.  With --time=60
    # it would end at +1 h and start now.
    runs = [running(1, "n1", [0, 1], HOUR)]
    for minutes, starts in ((None, []), (60, [3])):
        snap = snapshot([gpu_node("n1", 4)], [gpu_job(2, 4, 60), gpu_job(3, 2, minutes)], runs)
        assert backfill(snap).started_ids == starts


def test_multi_node_estimate_and_planned_nodes():
    # -N 2 with 8 GPUs each: n1 frees at +1 h, n2 at +2 h -> both free at +2 h.
    snap = snapshot(
        [gpu_node("n1"), gpu_node("n2"), gpu_node("n3")],
        [a_job(2, nodes_min=2, nodes_max=2, gpus_per_node=8, time_limit=60)],
        [
            running(1, "n1", range(8), HOUR),
            running(3, "n2", range(8), 2 * HOUR),
            running(4, "n3", range(8), 5 * HOUR),
        ],
    )
    plan = backfill(snap)
    assert plan.estimates == {2: NOW + 2 * HOUR}
    assert plan.planned_nodes == {2: ("n1", "n2")}


def test_beyond_bf_window_an_estimate_but_no_reservation():
    # bf_window=60 min: job 2's start (+2 h) is past it, so it reserves nothing and
    # job 3 (4 GPUs, 3 h) starts now on n2 although it would delay job 2.
    snap = snapshot(
        [gpu_node("n1", 4), gpu_node("n2", 4)],
        [a_job(2, nodes_min=2, nodes_max=2, gpus_per_node=4, time_limit=60), gpu_job(3, 4, 180)],
        [running(1, "n1", range(4), 2 * HOUR)],
    )
    assert backfill(snap).started_ids == []  # default window: 2 reserves n1, n2 at +2 h
    plan = backfill(snap, bf_window=60)
    assert plan.started_ids == [3] and plan.estimates[2] == NOW + 2 * HOUR


def blocked_queue(users: Sequence[str]) -> Snapshot:
    # n1 fully busy for 1 h; every pending job needs a GPU: none starts, each one
    # examined gets an estimate.
    jobs = [gpu_job(10 + k, 1, 60, user=u) for k, u in enumerate(users)]
    return snapshot([gpu_node("n1", 2)], jobs, [running(1, "n1", [0, 1], HOUR)])


def test_bf_max_job_test_stops_examining():
    # 4 jobs, bf_max_job_test=2: jobs 10, 11 get estimates (+1 h, they fit side by
    # side on the 2 GPUs); 12, 13 are not examined and keep only their reason.
    plan = backfill(blocked_queue(["a"] * 4), bf_max_job_test=2)
    assert plan.estimates == {10: NOW + HOUR, 11: NOW + HOUR}
    assert plan.reasons[12] == plan.reasons[13] == "Priority"


def test_bf_max_job_user_examines_at_most_n_jobs_per_user():
    # alice has 10, 11, 12 and bob 13: with bf_max_job_user=1, 10 and 13 are examined.
    plan = backfill(blocked_queue(["alice", "alice", "alice", "bob"]), bf_max_job_user=1)
    assert sorted(plan.estimates) == [10, 13]


def test_the_plan_is_the_same_whatever_order_the_snapshot_lists_jobs():
    snap = easy_vs_conservative()
    jobs = list(snap.pending) + [gpu_job(5, 1, 30), gpu_job(6, 4, 600, priority=5)]
    reference = backfill(dataclasses.replace(snap, pending=tuple(jobs)))
    rng = random.Random(3)
    for _ in range(5):
        rng.shuffle(jobs)
        plan = backfill(dataclasses.replace(snap, pending=tuple(jobs)))
        assert plan == reference


def test_a_job_over_a_qos_limit_is_skipped_without_blocking(monkeypatch):
    # A stand-in tracker: user "greedy" is over a limit; every start is charged.
    charged: list[int] = []

    class Tracker:
        @classmethod
        def for_snapshot(cls, snapshot: Snapshot, policy: Policy) -> Tracker:
            return cls()

        def reason(self, job: PendingJob, start: Any = None) -> str | None:
            return "QOSMaxGRESPerUser" if job.user == "greedy" else None

        def charge(self, job: PendingJob, start: Any) -> None:
            charged.append(job.job_id)

    monkeypatch.setattr(passes, "LimitTracker", Tracker)
    # 2 (greedy) is skipped; 3 starts in the main pass; 4 (8 GPUs) blocks; 5 backfills.
    snap = snapshot(
        [gpu_node("n1")],
        [gpu_job(2, 2, 60, user="greedy"), gpu_job(3, 2, 60), gpu_job(4, 8, 60),
         gpu_job(5, 2, 60)],
        [running(1, "n1", [0, 1], HOUR)],
    )  # fmt: skip
    plan = backfill(snap)
    assert plan.reasons == {2: "QOSMaxGRESPerUser", 4: "Resources"}
    assert plan.started_ids == [3, 5] and charged == [3, 5]


def test_backfill_params_from_scheduler_parameters():
    assert BackfillParams.from_policy(Policy()) == BackfillParams()
    got = BackfillParams.from_policy(
        Policy(
            scheduler_parameters={
                "bf_window": "2880", "bf_resolution": "300", "bf_max_job_test": "10000",
                "bf_max_job_user": "5", "bf_job_part_count_reserve": "1", "bf_continue": "",
                "bf_whole_node_reserve": "yes", "bf_interval": "nonsense",
            }
        )
    )  # fmt: skip
    assert (got.bf_window, got.bf_resolution, got.bf_max_job_test) == (2880, 300, 10000)
    assert (got.bf_max_job_user, got.bf_job_part_count_reserve) == (5, 1)
    assert got.bf_continue and got.bf_whole_node_reserve
    assert got.bf_interval == 30  # unreadable value: Slurm's default
    assert (
        BackfillParams.from_policy(Policy(scheduler_parameters={"bf_window": "0"})).bf_window == 1
    )


@pytest.mark.parametrize(
    ("enforce", "expected"),
    [
        ([], True),
        (["associations", "limits"], True),
        (["safe"], True),
        (["qos"], False),
        (["associations"], False),
    ],
)
def test_accounting_storage_enforce_decides_whether_limits_apply(enforce, expected):
    class Config:
        accounting_storage_enforce = enforce

    assert Policy.from_config(Config()).enforce_limits is expected


def test_overlapping_partition_jobs_backfill_on_the_blocked_partitions_nodes():
    # debug = n1; all = n1, n2.  2 (debug, 8 GPUs) is blocked by job 1 on n1 and
    # reserves n1 from +1 h.  3 (all, 2 GPUs, 30 min) fits n1's free GPUs before that.
    snap = snapshot(
        [gpu_node("n1"), gpu_node("n2")],
        [gpu_job(2, 8, 60), gpu_job(3, 2, 30, partition="all", exc_nodes=["n2"])],
        [running(1, "n1", range(6), HOUR)],
        partitions=[a_partition("debug", ["n1"]), a_partition("all", ["n1", "n2"])],
    )
    plan = backfill(snap)
    assert plan.started_ids == [3] and gpus_of(plan, 3) == {"n1": [6, 7]}


def test_a_spread_job_is_planned_when_enough_cpus_free_on_all_its_nodes_together():
    # Two 2-CPU nodes, each with 1 CPU held for 1 h.  -n 4 (one CPU per task, any
    # number of nodes) needs 2 + 2 CPUs: each node has 1 CPU free from now on, which
    # is not enough; only at +1 h, when both give their CPU back, does it fit.
    runs = [
        a_running_job(1, an_alloc("n1", 1, 100), start_time=NOW, ends_in=HOUR, now=NOW),
        a_running_job(2, an_alloc("n2", 1, 100), start_time=NOW, ends_in=HOUR, now=NOW),
    ]
    nodes = [a_node("n1", cpus=2, mem=1000), a_node("n2", cpus=2, mem=1000)]
    snap = snapshot(nodes, [a_job(3, ntasks=4, time_limit=10, mem_per_cpu=100)], runs)
    plan = backfill(snap)
    assert plan.estimates == {3: NOW + HOUR}
    assert plan.planned_nodes == {3: ("n1", "n2")}


def test_backfill_picks_the_node_the_main_pass_would_pick_one_best_fit_key():
    # big (8 CPUs) is held until 1 h; A (-n 8 on one node) waits for it and blocks the
    # main pass.  B (-n 2, 10 min) is then placed by backfill among g (2 free GPUs,
    # 2 free CPUs), c1 (4 free CPUs) and c2 (3 free CPUs): best fit is c2 (fewest free
    # GPUs first, then fewest CPUs: 0 GPUs beats g's exact 2 CPUs) -- the node the main
    # pass gives B when A is not in its way.
    busy = a_node("big", cpus=8, alloc_cpus=8, alloc_mem=8000)
    nodes = [
        busy,
        a_node("g", gpus=2, alloc_cpus=2, alloc_mem=2000),
        a_node("c1"),
        a_node("c2", alloc_cpus=1, alloc_mem=1000),
    ]
    a = a_job(1, priority=9, ntasks=8, nodes_max=1, time_limit=60)
    b = a_job(2, ntasks=2, time_limit=10)
    held = (
        a_running_job(7, an_alloc("big", 8, 8000), ends_in=HOUR, now=NOW),
        a_running_job(8, an_alloc("c2", 1, 1000), now=NOW),  # UNLIMITED
    )
    policy = a_policy(def_mem_per_cpu=1000)
    both = dataclasses.replace(a_snapshot(nodes, [a, b], now=NOW), running=held)
    plan = backfill_pass(both, policy)
    assert plan.reasons == {1: "Resources"} and plan.planned_nodes[1] == ("big",)
    alone = passes.main_pass(dataclasses.replace(both, pending=(b,)), policy)
    assert [s.nodes for s in plan.starts] == [s.nodes for s in alone.starts] == [("c2",)]
