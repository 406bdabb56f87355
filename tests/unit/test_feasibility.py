"""Submit-time checks ("never"), wait reasons ("not now") and --test-only ("now")."""

from __future__ import annotations

from slurmlite import errors
from slurmlite.scheduler.feasibility import (
    MEMORY_DETAIL,
    Rejection,
    check_submit,
    wait_reason,
    will_run_now,
)
from tests.builders import NOW, a_busy_node, a_job, a_node, a_partition, a_policy

# The golden cluster: n1, n2 with 2 CPUs, 4000 MiB and 2 GPUs each; DefMemPerCPU=1000.
NODES = [a_node(f"n{i + 1}", cpus=2, mem=4000, gpus=2, index=i) for i in range(2)]
DEBUG = a_partition("debug", ["n1", "n2"])
POLICY = a_policy(def_mem_per_cpu=1000)
NOT_AVAILABLE = errors.ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE


def check(job, partition=DEBUG, nodes=NODES, policy=POLICY):
    return check_submit(job, partition, nodes, policy)


def test_a_job_that_fits_an_idle_node_is_accepted():
    assert check(a_job(1, gpus_per_node=2, ntasks=2)) is None


def test_too_many_gpus_per_node_is_rejected_without_detail():
    # golden 40_sbatch_too_many_gpus.txt: --gres=gpu:5 > 2 GPUs on every node.
    assert check(a_job(1, gpus_per_node=5)) == Rejection(NOT_AVAILABLE)


def test_too_much_memory_is_rejected_with_the_memory_line():
    # golden 40_sbatch_too_much_mem.txt: --mem=100G = 102400 MiB > 4000 MiB.
    assert check(a_job(1, mem_per_node=102400)) == Rejection(NOT_AVAILABLE, MEMORY_DETAIL)


def test_memory_per_cpu_times_cpus_over_real_memory_is_rejected():
    # -c 2 --mem-per-cpu=3000: 2 x 3000 = 6000 MiB > 4000 MiB on each node.
    job = a_job(1, cpus_per_task=2, mem_per_cpu=3000)
    assert check(job) == Rejection(NOT_AVAILABLE, MEMORY_DETAIL)


def test_too_many_cpus_per_node_is_rejected():
    # -c 4 > 2 CPUs on every node; memory 4 x 1000 = 4000 still fits, so no memory line.
    assert check(a_job(1, cpus_per_task=4)) == Rejection(NOT_AVAILABLE)


def test_more_tasks_than_the_partition_can_ever_hold_is_rejected():
    # -n 5 > 2 nodes x 2 CPUs = 4.
    assert check(a_job(1, ntasks=5)) == Rejection(NOT_AVAILABLE)


def test_more_nodes_than_the_partition_has_is_accepted():
    # golden 40_sbatch_too_many_nodes.txt: -N 3 on 2 nodes is queued (PartitionNodeLimit).
    assert check(a_job(1, nodes_min=3, nodes_max=3)) is None


def test_busy_nodes_do_not_make_a_job_impossible():
    busy = [a_busy_node("n1", 2, 4000, 2, index=0), a_busy_node("n2", 2, 4000, 2, index=1)]
    assert check(a_job(1, gpus_per_node=2), nodes=busy) is None


def test_requested_node_outside_the_partition():
    rejection = check(a_job(1, req_nodes=["n3"]))
    assert rejection == Rejection(errors.ESLURM_REQUESTED_NODES_NOT_IN_PARTITION)


def test_requested_node_also_excluded_is_impossible():
    assert check(a_job(1, req_nodes=["n1"], exc_nodes=["n1"])) == Rejection(NOT_AVAILABLE)


def test_constraint_no_node_has():
    assert check(a_job(1, features="bigmem")) == Rejection(errors.ESLURM_INVALID_FEATURE)


def test_gpu_request_on_a_partition_without_gpus():
    cpu_only = [a_node("c1", cpus=2, mem=4000, index=0)]
    rejection = check(a_job(1, gpus_per_node=1), a_partition("cpu", ["c1"]), cpu_only)
    assert rejection == Rejection(NOT_AVAILABLE)


def test_drained_or_inactive_partition_refuses_submissions():
    for state in ("DRAIN", "INACTIVE"):
        part = a_partition("debug", ["n1", "n2"], state=state)
        assert check(a_job(1), part) == Rejection(errors.ESLURM_PARTITION_NOT_AVAIL)
    assert check(a_job(1), a_partition("debug", ["n1", "n2"], state="DOWN")) is None


def test_wait_reason_order_held_first_then_begin_time():
    job = a_job(1, held="JobHeldUser", begin_time=NOW + 60, time_limit=999)
    short = a_partition("debug", ["n1"], max_time=10, state="DOWN")
    assert wait_reason(job, short, NOW) == "JobHeldUser"
    job = a_job(1, begin_time=NOW + 60, time_limit=999)
    assert wait_reason(job, short, NOW) == "BeginTime"
    assert wait_reason(a_job(1, time_limit=999), short, NOW) == "PartitionDown"
    up = a_partition("debug", ["n1"], max_time=10)
    assert wait_reason(a_job(1, time_limit=999), up, NOW) == "PartitionTimeLimit"
    assert wait_reason(a_job(1, time_limit=10), up, NOW) is None


def test_wait_reason_counts_nodes_implied_by_tasks_per_node():
    # -n 6 --ntasks-per-node=2 needs ceil(6 / 2) = 3 nodes > 2 in the partition.
    job = a_job(1, ntasks=6, ntasks_per_node=2)
    assert wait_reason(job, DEBUG, NOW) == "PartitionNodeLimit"


def test_will_run_now_gives_the_placement_on_current_nodes():
    start = will_run_now(a_job(23), DEBUG, NODES, POLICY, NOW)
    # golden 01_sbatch_test_only.txt: "using 1 processors on nodes n1 in partition debug"
    assert start is not None and start.nodes == ("n1",) and start.cpus == 1


def test_will_run_now_is_none_when_busy_down_or_held():
    busy = [a_busy_node("n1", 2, 4000, 2, index=0), a_node("n2", 2, 4000, 2, index=1, usable=False)]
    assert will_run_now(a_job(1), DEBUG, busy, POLICY, NOW) is None
    assert will_run_now(a_job(1, held="JobHeldUser"), DEBUG, NODES, POLICY, NOW) is None
    down = a_partition("debug", ["n1", "n2"], state="DOWN")
    assert will_run_now(a_job(1), down, NODES, POLICY, NOW) is None
