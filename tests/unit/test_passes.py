"""The main pass: queue order, reasons, blocking, resources used within a pass."""

from __future__ import annotations

import random

import pytest

from slurmlite.scheduler.passes import main_pass, queue_order, schedule_pass
from slurmlite.scheduler.priority import initial_priority
from slurmlite.scheduler.registry import UnknownPluginError, scheduler_for
from slurmlite.scheduler.snapshot import Policy
from tests.builders import (
    a_busy_node,
    a_job,
    a_node,
    a_partition,
    a_policy,
    a_snapshot,
    allocs_of,
)

MEM_PER_CPU = a_policy(def_mem_per_cpu=1000)


def test_two_jobs_share_a_node_by_cpus_with_def_mem_per_cpu():
    # n1: 4 CPUs, 8000 MiB.  Each -n 2 job: 2 CPUs x 1000 MiB = 2000 MiB.
    # 2 + 2 = 4 CPUs and 4000 <= 8000 MiB: both start on n1.
    snap = a_snapshot([a_node("n1")], [a_job(1, ntasks=2), a_job(2, ntasks=2)])
    plan = main_pass(snap, MEM_PER_CPU)
    assert allocs_of(plan, 1) == {"n1": (2, 2000, [])}
    assert allocs_of(plan, 2) == {"n1": (2, 2000, [])}
    assert plan.reasons == {}


def test_without_any_memory_default_the_first_job_takes_the_whole_node():
    # No DefMemPerCPU: job 1 is charged all 8000 MiB, so job 2 cannot share n1
    # although 4 - 2 = 2 CPUs are free.
    snap = a_snapshot([a_node("n1")], [a_job(1, ntasks=2), a_job(2, ntasks=2)])
    plan = main_pass(snap, a_policy())
    assert allocs_of(plan, 1) == {"n1": (2, 8000, [])}
    assert plan.reasons == {2: "Resources"}


def test_memory_requests_share_a_node_until_memory_runs_out():
    # --mem=3000 each on 8000 MiB: 3000 + 3000 = 6000 fits, a third needs 9000 > 8000.
    jobs = [a_job(i, mem_per_node=3000) for i in (1, 2, 3)]
    plan = main_pass(a_snapshot([a_node("n1")], jobs), a_policy())
    assert plan.started_ids == [1, 2]
    assert plan.reasons == {3: "Resources"}


def test_gpu_jobs_share_a_node_by_gpu_index():
    # 2 GPUs; two --gres=gpu:1 jobs get GPU 0 and GPU 1; a third waits.
    jobs = [a_job(i, gpus_per_node=1) for i in (1, 2, 3)]
    plan = main_pass(a_snapshot([a_node("n1", gpus=2)], jobs), MEM_PER_CPU)
    assert allocs_of(plan, 1)["n1"][2] == [0]
    assert allocs_of(plan, 2)["n1"][2] == [1]
    assert plan.reasons == {3: "Resources"}


def test_blocked_job_gets_resources_and_the_rest_of_its_partition_priority():
    # n1 has 1 of 2 CPUs used, so -N 2 -c 2 cannot start: Resources.  Job 2 would fit
    # in the free CPU of n2 but waits behind it (no backfill in the main pass).
    nodes = [a_node("n1", cpus=2, alloc_cpus=1, alloc_mem=1000), a_node("n2", cpus=2)]
    jobs = [a_job(1, nodes_min=2, nodes_max=2, cpus_per_task=2), a_job(2), a_job(3)]
    plan = main_pass(a_snapshot(nodes, jobs), MEM_PER_CPU)
    assert plan.starts == []
    assert plan.reasons == {1: "Resources", 2: "Priority", 3: "Priority"}


def test_blocked_partition_withholds_its_nodes_from_an_overlapping_partition():
    # debug = n1, n2; long = n2, n3.  Job 1 (debug, -N 2) is blocked by the full n1,
    # so n2 is held back: job 2 in long lands on n3 although best fit says n2
    # (n2 has 2 free CPUs < n3's 4).
    nodes = [a_busy_node("n1"), a_node("n2", cpus=2), a_node("n3")]
    parts = [a_partition("debug", ["n1", "n2"]), a_partition("long", ["n2", "n3"])]
    jobs = [a_job(1, nodes_min=2, nodes_max=2), a_job(2, partition="long")]
    plan = main_pass(a_snapshot(nodes, jobs, parts), MEM_PER_CPU)
    assert plan.reasons == {1: "Resources"}
    assert list(allocs_of(plan, 2)) == ["n3"]
    # Without n3, the long job has nothing left and waits for Resources.
    parts = [a_partition("debug", ["n1", "n2"]), a_partition("long", ["n2"])]
    plan = main_pass(a_snapshot(nodes, jobs, parts), MEM_PER_CPU)
    assert plan.reasons == {1: "Resources", 2: "Resources"}


def test_more_nodes_than_the_partition_has_pends_with_partition_node_limit():
    # -N 3 on a 2-node partition (golden 41_sbatch_N3_pending_reason.txt); it blocks
    # nobody: job 2 starts.
    snap = a_snapshot([a_node("n1"), a_node("n2")], [a_job(1, nodes_min=3), a_job(2)])
    plan = main_pass(snap, MEM_PER_CPU)
    assert plan.reasons == {1: "PartitionNodeLimit"}
    assert plan.started_ids == [2]


def test_time_limit_above_partition_max_time():
    parts = [a_partition("debug", ["n1"], max_time=60)]
    jobs = [a_job(1, time_limit=61), a_job(2, time_limit=None), a_job(3, time_limit=60)]
    plan = main_pass(a_snapshot([a_node("n1")], jobs, parts), MEM_PER_CPU)
    # 61 > 60 and UNLIMITED > 60 pend; exactly 60 runs.
    assert plan.reasons == {1: "PartitionTimeLimit", 2: "PartitionTimeLimit"}
    assert plan.started_ids == [3]


def test_partition_states():
    nodes = [a_node("n1"), a_node("n2"), a_node("n3")]
    parts = [
        a_partition("down", ["n1"], state="DOWN"),
        a_partition("inactive", ["n2"], state="INACTIVE"),
        a_partition("drain", ["n3"], state="DRAIN"),  # queued jobs still run
    ]
    jobs = [a_job(1, "down"), a_job(2, "inactive"), a_job(3, "drain"), a_job(4, "gone")]
    plan = main_pass(a_snapshot(nodes, jobs, parts), MEM_PER_CPU)
    assert plan.reasons == {1: "PartitionDown", 2: "PartitionInactive", 4: "PartitionInactive"}
    assert plan.started_ids == [3]


def test_requested_node_down_gives_req_node_not_avail_and_blocks_only_that_node():
    nodes = [a_node("n1"), a_node("n2", usable=False)]
    jobs = [a_job(1, req_nodes=["n2"]), a_job(2)]
    plan = main_pass(a_snapshot(nodes, jobs), MEM_PER_CPU)
    assert plan.reasons == {1: "ReqNodeNotAvail"}
    assert plan.unavailable_nodes == {1: ("n2",)}
    assert list(allocs_of(plan, 2)) == ["n1"]


def test_requested_busy_node_waits_for_resources_without_blocking_the_partition():
    # -w n1 on a full n1: Resources, only n1 held back; job 2 starts on n2.
    nodes = [a_busy_node("n1"), a_node("n2")]
    plan = main_pass(a_snapshot(nodes, [a_job(1, req_nodes=["n1"]), a_job(2)]), MEM_PER_CPU)
    assert plan.reasons == {1: "Resources"}
    assert list(allocs_of(plan, 2)) == ["n2"]


def test_held_and_future_jobs_are_skipped_without_blocking():
    jobs = [
        a_job(1, held="JobHeldUser", priority=0),
        a_job(2, held="JobHeldAdmin", priority=0),
        a_job(3, begin_time=20_000.0),  # now is 10_000
        a_job(4, external_reason="Dependency"),
        a_job(5, begin_time=9_000.0),  # already past: eligible
    ]
    plan = main_pass(a_snapshot([a_node("n1")], jobs), MEM_PER_CPU)
    assert plan.reasons == {
        1: "JobHeldUser",
        2: "JobHeldAdmin",
        3: "BeginTime",
        4: "Dependency",
    }
    assert plan.started_ids == [5]


def test_impossible_request_is_bad_constraints_and_blocks_nobody():
    # 8 GPUs per node on a 2-GPU node can never run.
    jobs = [a_job(1, gpus_per_node=8), a_job(2)]
    plan = main_pass(a_snapshot([a_node("n1", gpus=2)], jobs), MEM_PER_CPU)
    assert plan.reasons == {1: "BadConstraints"}
    assert plan.started_ids == [2]


def test_fifo_by_submit_time_then_id_when_all_weights_are_zero():
    # priority/multifactor with no weights: every job gets priority 1.
    policy = a_policy(def_mem_per_cpu=1000, priority_type="priority/multifactor")
    assert initial_priority(a_job(1), policy) == 1
    # One free CPU.  Job 9 was submitted first; 5 and 7 tie on time, 5 wins by id.
    jobs = [
        a_job(7, priority=1, submit_time=50.0),
        a_job(5, priority=1, submit_time=50.0),
        a_job(9, priority=1, submit_time=10.0),
    ]
    snap = a_snapshot([a_node("n1", cpus=1)], jobs)
    assert [j.job_id for j in queue_order(snap)] == [9, 5, 7]
    plan = main_pass(snap, policy)
    assert plan.started_ids == [9]
    assert plan.reasons == {5: "Resources", 7: "Priority"}


def test_priority_tier_comes_before_job_priority():
    parts = [a_partition("low", ["n1"]), a_partition("high", ["n1"], priority_tier=5)]
    jobs = [a_job(1, "low", priority=1000), a_job(2, "high", priority=1)]
    snap = a_snapshot([a_node("n1", cpus=1)], jobs, parts)
    plan = main_pass(snap, MEM_PER_CPU)
    assert plan.started_ids == [2]
    assert plan.reasons == {1: "Resources"}


def test_resources_are_used_up_within_the_pass():
    # 4 CPUs; jobs of 3, 2 and 1 CPUs in priority order: 3 starts, 2 does not fit
    # (4 - 3 = 1), and its partition is blocked so job 3 waits too.
    jobs = [a_job(1, ntasks=3, priority=30), a_job(2, ntasks=2, priority=20), a_job(3, priority=10)]
    plan = main_pass(a_snapshot([a_node("n1")], jobs), MEM_PER_CPU)
    assert plan.started_ids == [1]
    assert plan.reasons == {2: "Resources", 3: "Priority"}


def test_same_snapshot_gives_the_same_plan_whatever_the_input_order():
    nodes = [a_node(f"n{i}", cpus=2, gpus=1) for i in range(1, 5)]
    jobs = [a_job(i, ntasks=i % 3 + 1, gpus_per_node=i % 2, priority=i % 4) for i in range(1, 13)]
    first = main_pass(a_snapshot(nodes, jobs), MEM_PER_CPU)
    shuffled = list(jobs)
    random.Random(7).shuffle(shuffled)
    again = main_pass(a_snapshot(nodes, shuffled), MEM_PER_CPU)
    assert first == again
    assert first.starts and first.reasons  # some started, some wait


def test_scheduler_types_are_registered_and_unknown_ones_refused():
    snap = a_snapshot([a_node("n1")], [a_job(1)])
    for name in ("sched/builtin", "sched/backfill"):
        plan = schedule_pass(snap, a_policy(def_mem_per_cpu=1000, scheduler_type=name))
        assert plan.started_ids == [1]
    with pytest.raises(UnknownPluginError):
        scheduler_for("sched/wiki")


def test_basic_priority_counts_down_and_holds_are_zero():
    basic = a_policy(priority_type="priority/basic")
    assert initial_priority(a_job(1), basic, sequence=0) == 4294901759
    assert initial_priority(a_job(2), basic, sequence=1) == 4294901758
    assert initial_priority(a_job(3, held="JobHeldUser"), basic, sequence=2) == 0


def test_multifactor_priority_is_the_weighted_sum():
    # fairshare 10000 x 0.4 + age 1000 x 0.5 = 4000 + 500 = 4500
    policy = a_policy(
        priority_type="priority/multifactor", priority_weights={"fairshare": 10000, "age": 1000}
    )
    factors = {"fairshare": 0.4, "age": 0.5}
    assert initial_priority(a_job(1), policy, factors=factors) == 4500


def test_policy_from_config_reads_the_slurm_conf_keys(tmp_path):
    config = pytest.importorskip("slurmlite.config")
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=t\nSlurmctldHost=localhost\nDefMemPerCPU=1000\n"
        "SchedulerType=sched/builtin\nPriorityType=priority/basic\n"
        "NodeName=n1 CPUs=2 RealMemory=4000\nPartitionName=debug Nodes=n1 Default=YES\n"
    )
    policy = Policy.from_config(config.load_config(str(conf), env={}))
    assert (policy.def_mem_per_cpu, policy.def_mem_per_gpu) == (1000, 0)
    assert (policy.scheduler_type, policy.priority_type) == ("sched/builtin", "priority/basic")
