"""Batch environment (slurmlite.jobenv) against the Slurm 22.05 golden dumps.

The golden cluster: n1, n2 with 2 CPUs and 2 GPUs each, DefMemPerCPU=1000, user
alice (uid/gid 1001), controller 127.0.0.1:6917, submit host "vm".
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from slurmlite.jobenv import ArraySpan, batch_environment, master_port, task_layout
from slurmlite.protocol import JobInfo, NodeAlloc
from tests.unit.jobenv_golden import GOLDEN

# What `runuser` + `env -i PATH=... LANG=C.UTF-8` gave the golden jobs.
BASE_ENV = {
    "HOME": "/home/alice",
    "LANG": "C.UTF-8",
    "LOGNAME": "alice",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "SHELL": "/bin/bash",
    "USER": "alice",
}
_COMPARED = re.compile(r"(SLURM_|SLURMD_|CUDA|GPU_|ROCR|ZE_|ENVIRONMENT|HOSTNAME)")


def parse(block: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in block.strip().splitlines())


def a_job(job_id: int, allocs: list[NodeAlloc], **kw: Any) -> JobInfo:
    """A running job of alice in debug; one task per node unless told otherwise."""
    fields: dict[str, Any] = dict(
        job_id=job_id,
        name="job.sh",
        user="alice",
        uid=1001,
        gid=1001,
        group="alice",
        account="acct_a",
        qos="normal",
        partition="debug",
        state="RUNNING",
        flags=[],
        reason="None",
        priority=1,
        submit_time=0.0,
        work_dir="/home/alice/work",
        submit_dir="/home/alice/work",
        num_nodes=len(allocs),
        num_cpus=sum(a.cpus for a in allocs),
        num_tasks=len(allocs),
        cpus_per_task=1,
        time_limit=None,
        mem_per_cpu=1000,
        nodes=[a.node for a in allocs],
        alloc=allocs,
    )
    fields.update(kw)
    return JobInfo(**fields)


def env_for(job: JobInfo, node: str, **kw: Any) -> dict[str, str]:
    args: dict[str, Any] = dict(
        base_env=BASE_ENV,
        submit_host="vm",
        controller_host="127.0.0.1",
        controller_port=6917,
        node_gpu_count=2,
    )
    args.update(kw)
    return batch_environment(job, node, "anchor", "/etc/slurm/slurm.conf", **args)


def compared(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if _COMPARED.match(k)}


def test_golden_10_one_node_one_task() -> None:
    # sbatch -N 1 -n 1: ran on n2 with 1 CPU, 1000 MiB (DefMemPerCPU)
    job = a_job(24, [NodeAlloc("n2", 1, 1000)], name="env_1node.sh")
    env = env_for(job, "n2", ntasks_given=True)
    ours = compared(env)
    # the one deliberate difference: a GPU node hides its GPUs from a job without any
    assert ours.pop("CUDA_VISIBLE_DEVICES") == ""
    assert ours == parse(GOLDEN["10"])
    # the user's environment passes through; shells would show these too
    assert {k: env[k] for k in BASE_ENV} == BASE_ENV
    assert env["TMPDIR"] == "/tmp"
    assert env["PWD"] == "/home/alice/work"


def test_golden_12_two_nodes_one_task_each() -> None:
    # sbatch -N 2 --ntasks-per-node=1 -> 2 tasks, 1 CPU on each node, shell on n1
    allocs = [NodeAlloc("n1", 1, 1000), NodeAlloc("n2", 1, 1000)]
    job = a_job(26, allocs, name="env_2nodes.sh", num_tasks=2, ntasks_per_node=1)
    ours = compared(env_for(job, "n1"))
    assert ours.pop("CUDA_VISIBLE_DEVICES") == ""
    assert ours == parse(GOLDEN["12"])


def test_golden_13_gres_gpu1() -> None:
    # --gres=gpu:1 -> GPU 0 of n1; no -n, so no SLURM_NTASKS
    job = a_job(27, [NodeAlloc("n1", 1, 1000, [0])], name="env_gpu.sh", gpus=1)
    assert compared(env_for(job, "n1")) == parse(GOLDEN["13"])


def test_golden_14_gpus_per_node_two_nodes() -> None:
    # -N 2 --gpus-per-node=2 --ntasks-per-node=1: GPUs 0,1 on each node; option echoed
    allocs = [NodeAlloc("n1", 1, 1000, [0, 1]), NodeAlloc("n2", 1, 1000, [0, 1])]
    job = a_job(28, allocs, name="env_gpn.sh", num_tasks=2, ntasks_per_node=1, gpus=4)
    env = env_for(job, "n1", echo_env={"SLURM_GPUS_PER_NODE": "2"})
    assert compared(env) == parse(GOLDEN["14"])


def test_golden_15_options() -> None:
    # -J opts-job -c 2 --mem=500M -A acct_b -p long --gpus=1: 2 CPUs, GPU 0 of n2
    job = a_job(
        29,
        [NodeAlloc("n2", 2, 500, [0])],
        name="opts-job",
        account="acct_b",
        partition="long",
        cpus_per_task=2,
        mem_per_node=500,
        mem_per_cpu=None,
        gpus=1,
    )
    env = env_for(job, "n2", echo_env={"SLURM_GPUS": "1"})
    assert compared(env) == parse(GOLDEN["15"])


def test_golden_16_array_task() -> None:
    # --array=0-2: task 0 ran as job 31 on n1
    job = a_job(31, [NodeAlloc("n1", 1, 1000)], name="env_array.sh")
    job.array_job_id, job.array_task_id = 30, 0
    ours = compared(env_for(job, "n1", array=ArraySpan(count=3, min=0, max=2, step=1)))
    assert ours.pop("CUDA_VISIBLE_DEVICES") == ""
    assert ours == parse(GOLDEN["16"])


def test_stale_job_variables_of_the_submit_shell_are_replaced_or_dropped() -> None:
    # sbatch run inside another job: its SLURM_* must not leak into this one
    base = BASE_ENV | {
        "SLURM_JOB_ID": "999",
        "SLURM_NTASKS": "8",
        "SLURM_MEM_PER_NODE": "4000",
        "SLURM_STEP_ID": "0",
        "SLURM_JOB_GPUS": "1",
        "SLURM_TIME_FORMAT": "relative",  # a user knob, kept
        "TMPDIR": "/scratch/alice",
    }
    env = env_for(a_job(5, [NodeAlloc("n1", 1, 1000)]), "n1", base_env=base)
    assert env["SLURM_JOB_ID"] == "5"
    for gone in ("SLURM_NTASKS", "SLURM_MEM_PER_NODE", "SLURM_STEP_ID", "SLURM_JOB_GPUS"):
        assert gone not in env
    assert env["SLURM_MEM_PER_CPU"] == "1000"
    assert env["SLURM_TIME_FORMAT"] == "relative"
    assert env["TMPDIR"] == "/scratch/alice"


def test_distributed_training_variables_injected_and_recorded() -> None:
    allocs = [NodeAlloc("n1", 1, 1000), NodeAlloc("n2", 1, 1000)]
    env = env_for(a_job(28, allocs), "n1", master_addr="10.0.0.1")
    # MASTER_PORT = 20000 + 28 % 20000 = 20028
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["NUM_NODES"]) == ("10.0.0.1", "20028", "2")
    assert env["SLURMLITE_INJECTED"] == "MASTER_ADDR,MASTER_PORT,NUM_NODES"
    assert master_port(20005) == 20005  # 20000 + 20005 % 20000 = 20000 + 5


def test_users_own_training_variables_win_but_inherited_injections_do_not() -> None:
    base = BASE_ENV | {
        "MASTER_PORT": "29500",  # the user's own
        "MASTER_ADDR": "n7",  # injected by an enclosing job, says SLURMLITE_INJECTED
        "SLURMLITE_INJECTED": "MASTER_ADDR",
    }
    env = env_for(a_job(3, [NodeAlloc("n1", 1, 1000)]), "n1", base_env=base)
    assert env["MASTER_PORT"] == "29500"
    assert env["MASTER_ADDR"] == "n1"  # default: the job's first node
    assert env["SLURMLITE_INJECTED"] == "MASTER_ADDR,NUM_NODES"


def test_nothing_injected_removes_the_inherited_record() -> None:
    base = BASE_ENV | {"MASTER_ADDR": "a", "MASTER_PORT": "1", "NUM_NODES": "1"}
    base |= {"SLURMLITE_INJECTED": ""}
    env = env_for(a_job(3, [NodeAlloc("n1", 1, 1000)]), "n1", base_env=base)
    assert "SLURMLITE_INJECTED" not in env
    assert env["MASTER_ADDR"] == "a"


def test_gpu_env_styles() -> None:
    job = a_job(7, [NodeAlloc("n1", 1, 1000, [1])], gpus=1)
    cuda = env_for(job, "n1", gpu_env_style="cuda")  # AutoDetect=nvml: CUDA only
    assert cuda["CUDA_VISIBLE_DEVICES"] == "1"  # global index, not renumbered
    assert not {"GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"} & cuda.keys()
    none = env_for(job, "n1", gpu_env_style="none")  # count-only GPUs: no device variable
    assert "CUDA_VISIBLE_DEVICES" not in none
    assert (none["SLURM_JOB_GPUS"], none["SLURM_GPUS_ON_NODE"]) == ("1", "1")
    with pytest.raises(ValueError, match="gpu_env_style"):
        env_for(job, "n1", gpu_env_style="opencl")


def test_gpu_node_overrides_submit_device_list_but_gpuless_node_leaves_it() -> None:
    base = BASE_ENV | {"CUDA_VISIBLE_DEVICES": "3", "ROCR_VISIBLE_DEVICES": "3"}
    job = a_job(8, [NodeAlloc("n1", 1, 1000)])
    on_gpu_node = env_for(job, "n1", base_env=base, node_gpu_count=2)
    assert on_gpu_node["CUDA_VISIBLE_DEVICES"] == ""
    assert "ROCR_VISIBLE_DEVICES" not in on_gpu_node
    on_cpu_node = env_for(job, "n1", base_env=base, node_gpu_count=0)
    assert on_cpu_node["CUDA_VISIBLE_DEVICES"] == "3"


def test_memory_variable_choice() -> None:
    gpu_job = a_job(9, [NodeAlloc("n1", 1, 2048, [0])], mem_per_gpu=2048, mem_per_cpu=None)
    env = env_for(gpu_job, "n1")
    assert env["SLURM_MEM_PER_GPU"] == "2048"
    assert "SLURM_MEM_PER_CPU" not in env and "SLURM_MEM_PER_NODE" not in env
    # --mem=0: the whole node; the variable shows what this node gave (4000 MiB)
    whole = a_job(10, [NodeAlloc("n1", 2, 4000)], mem_per_node=0, mem_per_cpu=None)
    assert env_for(whole, "n1")["SLURM_MEM_PER_NODE"] == "4000"


def test_restart_count_only_after_requeue() -> None:
    job = a_job(11, [NodeAlloc("n1", 1, 1000)])
    assert "SLURM_RESTART_COUNT" not in env_for(job, "n1")
    job.restarts = 1
    assert env_for(job, "n1")["SLURM_RESTART_COUNT"] == "1"


def test_node_outside_the_job_is_an_error() -> None:
    with pytest.raises(ValueError, match="n2"):
        env_for(a_job(12, [NodeAlloc("n1", 1, 1000)]), "n2")


@pytest.mark.parametrize(
    ("ntasks", "cpus", "cpt", "per_node", "expected"),
    [
        (1, [1], 1, None, [1]),
        (2, [1, 1], 1, 1, [1, 1]),  # golden 12: 1(x2)
        (2, [2, 2], 1, None, [1, 1]),  # -N 2 -n 2 on 2-CPU nodes: one each, not 2,0
        (3, [2, 2], 1, None, [2, 1]),
        (5, [4, 1], 1, None, [4, 1]),  # rounds: (1,1) (2,-) (3,-) (4,-)
        (1, [2], 2, None, [1]),  # golden 15: 2 CPUs / -c 2 = room for 1
        (5, [1, 1], 1, None, [3, 2]),  # more tasks than CPUs: round robin
        (4, [4, 4], 1, 2, [2, 2]),  # --ntasks-per-node=2 caps each node
    ],
)
def test_task_layout(
    ntasks: int, cpus: list[int], cpt: int, per_node: int | None, expected: list[int]
) -> None:
    assert task_layout(ntasks, cpus, cpt, per_node) == expected


def test_tasks_per_node_and_cpus_compressed_in_node_order() -> None:
    # 3 nodes, CPUs 2,2,1, -n 5: rounds give (1,1,1) then (2,2,-) -> 2(x2),1
    allocs = [NodeAlloc("n1", 2, 0), NodeAlloc("n2", 2, 0), NodeAlloc("n3", 1, 0)]
    job = a_job(13, allocs, num_tasks=5)
    env = env_for(job, "n2", ntasks_given=True)
    assert env["SLURM_TASKS_PER_NODE"] == "2(x2),1"
    assert env["SLURM_JOB_CPUS_PER_NODE"] == "2(x2),1"
    assert env["SLURM_JOB_NODELIST"] == "n[1-3]"
    assert (env["SLURM_NTASKS"], env["SLURM_CPUS_ON_NODE"], env["HOSTNAME"]) == ("5", "2", "n2")
