"""Step shape and task layout (slurmlite.steplayout): spec §6.8, §7.2 and srun's rules."""

from __future__ import annotations

import pytest

from slurmlite.jobenv import task_layout
from slurmlite.steplayout import (
    compress_counts,
    default_distribution,
    distribute,
    parse_distribution,
    step_shape,
    task_counts,
)

# ------------------------------------------------------------------ layout


def test_spec_example_block_and_cyclic() -> None:
    # spec §7.2: 3 nodes x 2 CPUs, 4 tasks. Deal: n0 n1 n2, then n0 -> counts [2, 1, 1]
    assert distribute(4, [2, 2, 2], "block") == [[0, 1], [2], [3]]
    assert distribute(4, [2, 2, 2], "cyclic") == [[0, 3], [1], [2]]


def test_golden_srun_label_hostname_layout() -> None:
    # golden 17_srun_label_hostname: srun -N2 -n4 on two 2-CPU nodes: ranks 0-3, two per node
    assert distribute(4, [2, 2]) == [[0, 1], [2, 3]]


def test_one_task_per_node_is_the_same_either_way() -> None:
    # golden 12: 2 tasks on 2 nodes, Slurm's default there is cyclic
    assert distribute(2, [1, 1], "cyclic") == distribute(2, [1, 1], "block") == [[0], [1]]


def test_nodes_without_a_task_are_kept_for_the_caller_to_drop() -> None:
    # 2 tasks over 3 nodes: one per node per round, node 2 gets none
    assert distribute(2, [4, 4, 4]) == [[0], [1], []]


def test_block_fills_by_rounds_not_node_by_node() -> None:
    # 2 nodes x 4 CPUs, 3 tasks: round 1 -> n0 n1, round 2 -> n0; ranks in blocks
    assert distribute(3, [4, 4]) == [[0, 1], [2]]


def test_uneven_slots() -> None:
    # slots [1, 3], 4 tasks: round 1 n0 n1, round 2 n1 (n0 full), round 3 n1 -> [1, 3]
    assert distribute(4, [1, 3]) == [[0], [1, 2, 3]]
    assert distribute(4, [1, 3], "cyclic") == [[0], [1, 2, 3]]


def test_oversubscription_continues_round_robin() -> None:
    # slots [2, 1], 5 tasks: deal n0 n1 | n0 | (all full) n0 n1 -> counts [3, 2]
    assert task_counts(5, [2, 1]) == [3, 2]
    assert distribute(5, [2, 1]) == [[0, 1, 2], [3, 4]]
    assert distribute(5, [2, 1], "cyclic") == [[0, 2, 3], [1, 4]]  # rank r = r-th card dealt


def test_a_node_with_no_slot_gets_tasks_only_when_oversubscribed() -> None:
    assert distribute(2, [0, 2]) == [[], [0, 1]]
    assert task_counts(3, [0, 1]) == [1, 2]  # n1, then round robin n0 n1


def test_every_rank_exactly_once() -> None:
    for dist in ("block", "cyclic"):
        for slots in ([1], [2, 2, 2], [3, 1, 2], [0, 5]):
            for n in range(1, 12):
                got = distribute(n, slots, dist)
                assert sorted(r for node in got for r in node) == list(range(n))
                assert [len(x) for x in got] == task_counts(n, slots)


def test_batch_task_layout_shares_the_deal() -> None:
    # jobenv.task_layout (SLURM_TASKS_PER_NODE of the batch shell) keeps its behaviour
    assert task_layout(3, [2, 2]) == [2, 1]
    assert task_layout(5, [1, 1]) == [3, 2]
    assert task_layout(4, [4, 4], cpus_per_task=2) == [2, 2]


def test_default_distribution() -> None:
    assert default_distribution(4, 2) == "block"
    assert default_distribution(2, 2) == "cyclic"
    assert default_distribution(1, 2) == "cyclic"
    assert distribute(4, [2, 2, 2], "") == [[0, 1], [2], [3]]  # "": default = block (4 > 3)


def test_distribution_option_forms() -> None:
    assert parse_distribution("cyclic:block,Pack") == "cyclic"
    assert parse_distribution("BLOCK") == "block"
    assert parse_distribution("*") == ""
    with pytest.raises(ValueError, match="Invalid --distribution specification"):
        parse_distribution("plane=2")


def test_compress_counts() -> None:
    # spec §6.8 examples
    assert compress_counts([2, 2, 2, 1]) == "2(x3),1"
    assert compress_counts([4]) == "4"
    assert compress_counts([4, 4]) == "4(x2)"
    assert compress_counts([1, 2, 1]) == "1,2,1"


# ------------------------------------------------------------------- shape

# what a batch shell of `sbatch -N2 --ntasks-per-node=4` exports
N2_TPN4 = {"SLURM_NTASKS": "8", "SLURM_JOB_NUM_NODES": "2", "SLURM_NTASKS_PER_NODE": "4"}


def test_plain_srun_inherits_the_allocation() -> None:
    # spec §7.2: 2 nodes x 4 tasks per node = 8 tasks on 2 nodes
    assert step_shape(None, None, None, 2, N2_TPN4) == (8, 2)


def test_no_task_count_anywhere_means_one_per_node() -> None:
    # golden 13/14 shells: `-N2` without -n exports no SLURM_NTASKS
    assert step_shape(None, None, None, 2, {"SLURM_JOB_NUM_NODES": "2"}) == (2, 2)
    assert step_shape(None, None, None, 3, {}) == (3, 3)  # srun --jobid from outside


def test_nnodes_is_read_when_job_num_nodes_is_absent() -> None:
    assert step_shape(None, None, None, 2, {"SLURM_NNODES": "2", "SLURM_NTASKS": "4"}) == (4, 2)


def test_command_line_wins_over_the_environment() -> None:
    warnings: list[str] = []
    assert step_shape(4, None, None, 2, N2_TPN4, warnings=warnings) == (4, 2)
    assert warnings == []  # 4 tasks != 2 x 4 but fewer than asked per node: silently dropped


def test_fewer_tasks_than_nodes_shrinks_the_step_with_slurms_warning() -> None:
    warnings: list[str] = []
    assert step_shape(1, None, None, 2, {"SLURM_JOB_NUM_NODES": "2"}, warnings=warnings) == (1, 1)
    assert warnings == ["Warning: can't run 1 processes on 2 nodes, setting nnodes to 1"]


def test_contradicting_ntasks_per_node_is_ignored_with_a_warning() -> None:
    warnings: list[str] = []
    # -n16 on 2 nodes at 4 per node cannot be: 16 != 2 x 4 and 16 > 4
    assert step_shape(16, None, None, 2, N2_TPN4, warnings=warnings) == (16, 2)
    assert warnings == [
        "Warning: can't honor --ntasks-per-node set to 4 which doesn't match the requested "
        "tasks 16 with the number of requested nodes 2. Ignoring --ntasks-per-node."
    ]


def test_fewer_nodes_recompute_the_inherited_task_count() -> None:
    # srun -N1 in `-N2 --ntasks-per-node=4`: 1 x 4 tasks (Slurm 23.11+), not all 8 on one node
    assert step_shape(None, 1, None, 2, N2_TPN4) == (4, 1)


def test_ntasks_per_node_on_the_command_line() -> None:
    # salloc -N2 (no task count), srun --ntasks-per-node=2: 2 x 2 = 4
    assert step_shape(None, None, 2, 2, {"SLURM_JOB_NUM_NODES": "2"}) == (4, 2)
    # -n 8 --ntasks-per-node=4 without any node count: ceil(8 / 4) = 2 of the job's 4 nodes
    assert step_shape(8, None, 4, 4, {}) == (8, 2)


def test_tasks_only_use_as_many_nodes_as_tasks() -> None:
    assert step_shape(3, None, None, 4, {}) == (3, 3)
    assert step_shape(8, None, None, 2, {}) == (8, 2)


def test_cpus_per_task_alone_fills_the_cpus() -> None:
    # -c 2 on nodes with 4 and 2 CPUs: 4 // 2 + 2 // 2 = 3 tasks
    assert step_shape(None, None, None, 2, {}, cpus_per_task=2, node_cpus=[4, 2]) == (3, 2)


def test_more_nodes_than_the_allocation_is_refused_in_srun_words() -> None:
    with pytest.raises(ValueError, match=r"^Only allocated 2 nodes asked for 3$"):
        step_shape(None, 3, None, 2, {"SLURM_JOB_NUM_NODES": "2"})
    with pytest.raises(ValueError, match="Task count specification invalid"):
        step_shape(0, None, None, 2, {})
    with pytest.raises(ValueError, match="Node count specification invalid"):
        step_shape(None, 0, None, 2, {})


def test_a_stale_node_count_in_the_environment_is_reported_and_replaced() -> None:
    warnings: list[str] = []
    env = {"SLURM_JOB_NUM_NODES": "3", "SLURM_NTASKS": "3"}
    assert step_shape(None, None, None, 2, env, warnings=warnings) == (2, 2)
    assert warnings == [
        "error: SLURM_JOB_NUM_NODES environment variable conflicts with allocated node "
        "count (3 != 2)."
    ]


def test_garbage_in_the_environment_is_ignored() -> None:
    assert step_shape(None, None, None, 2, {"SLURM_NTASKS": "x", "SLURM_JOB_NUM_NODES": ""}) == (
        2,
        2,
    )
