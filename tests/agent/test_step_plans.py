"""What each task of a step gets, decided before anything starts (``agent.steptable.task_plans``)."""

from __future__ import annotations

from pathlib import Path

from agent.gres import GpuDevice
from agent.steptable import task_plans
from tests.agent.steprig import a_launch, fallback_stepenv

fallback_stepenv()


def test_gpus_per_task_are_split_in_order_over_the_nodes_tasks(tmp_path: Path) -> None:
    env = {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    launch = a_launch(
        tmp_path, ["true"], tasks=[4, 5], gpus=[0, 1, 2, 3], gpus_per_task=2, environment=env
    )
    plans = task_plans(launch, gpus=[])
    # local task i gets GPUs [2i, 2i + 2) of the node's four
    assert [p.env["CUDA_VISIBLE_DEVICES"] for p in plans] == ["0,1", "2,3"]
    assert [(p.task, p.local) for p in plans] == [(4, 0), (5, 1)]
    assert [p.env["SLURM_PROCID"] for p in plans] == ["4", "5"]


def test_output_patterns_are_expanded_per_task_and_stderr_follows_stdout(tmp_path: Path) -> None:
    env = {"SLURM_JOB_NAME": "train", "SLURM_ARRAY_JOB_ID": "40", "SLURM_ARRAY_TASK_ID": "3"}
    launch = a_launch(
        tmp_path,
        ["true"],
        tasks=[2, 3],
        node_index=1,
        step_id=4,
        environment=env,
        std_out="o-%t-%n-%N-%j-%s-%A-%a-%u-%x.txt",
        std_in="/data/in-%2t",
    )
    plans = task_plans(launch, gpus=[])
    work = tmp_path / "work"
    user = launch.user
    assert [p.std_out for p in plans] == [
        f"{work}/o-{t}-1-n1-7-4-40-3-{user}-train.txt" for t in (2, 3)
    ]
    assert [p.std_err for p in plans] == [p.std_out for p in plans]  # -o alone: both there
    assert [p.std_in for p in plans] == ["/data/in-02", "/data/in-03"]  # %2t: two digits


def test_stdin_reaches_all_tasks_or_the_one_named_and_the_pty_is_task_zeros(
    tmp_path: Path,
) -> None:
    every = task_plans(a_launch(tmp_path, ["cat"], tasks=[0, 1]), gpus=[])
    assert [p.reads_stdin for p in every] == [True, True]
    one = task_plans(a_launch(tmp_path, ["cat"], tasks=[0, 1], stdin_task=1), gpus=[])
    assert [p.reads_stdin for p in one] == [False, True]
    pty = task_plans(a_launch(tmp_path, ["bash"], tasks=[0, 1], pty=True), gpus=[])
    assert [p.pty for p in pty] == [True, False]
    files = task_plans(a_launch(tmp_path, ["x"], std_out="none", std_err="e.txt"), gpus=[])
    assert (files[0].std_out, files[0].std_err) == ("/dev/null", f"{tmp_path}/work/e.txt")


def test_on_a_node_owning_machine_gpus_2_and_3_the_tasks_see_those_devices(
    tmp_path: Path,
) -> None:
    devices = [GpuDevice(2, "g"), GpuDevice(3, "g")]  # the scheduler's GPUs 0 and 1 here
    env = {
        "CUDA_VISIBLE_DEVICES": "0,1",  # as the controller built it, the scheduler's numbers
        "SLURM_STEP_GPUS": "0,1",
        "SLURM_GPUS_ON_NODE": "2",
        "SLURM_JOB_GPUS": "1",  # inherited from the batch shell: not the step's to change
    }
    split = a_launch(
        tmp_path, ["true"], tasks=[0, 1], gpus=[0, 1], gpus_per_task=1, environment=env
    )
    plans = task_plans(split, devices)
    # local task i gets the node's GPU i: the machine's device 2 + i
    assert [p.env["CUDA_VISIBLE_DEVICES"] for p in plans] == ["2", "3"]
    assert [p.env["SLURM_STEP_GPUS"] for p in plans] == ["2", "3"]
    assert {p.env["SLURM_GPUS_ON_NODE"] for p in plans} == {"2"}
    assert {p.env["SLURM_JOB_GPUS"] for p in plans} == {"1"}
    shared = task_plans(a_launch(tmp_path, ["true"], gpus=[1], environment=env), devices)
    assert shared[0].env["CUDA_VISIBLE_DEVICES"] == shared[0].env["SLURM_STEP_GPUS"] == "3"
    assert split.environment == env  # the order itself is left as it came
