"""Step task environments (slurmlite.stepenv) against the Slurm 22.05 golden dumps.

Each golden test rebuilds the golden job (its header: command and script),
runs the step the script ran through the same functions the controller and
agent use (step_shape -> distribute -> step_environment -> task_environment)
and compares every variable Slurm set in each task.  Inputs carry the
golden's own ids, host names and srun ports, so only the task pids differ.

The golden cluster: n1, n2 with 2 CPUs and 2 GPUs each, DefMemPerCPU=1000,
user alice (uid/gid 1001), controller 127.0.0.1:6917, submit host "vm",
srun on 127.0.0.1.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from slurmlite.protocol import JobInfo, NodeAlloc
from slurmlite.stepenv import step_environment, task_environment
from slurmlite.steplayout import distribute, step_shape
from tests.e2e.golden_compare import CAPTURE_ENV, Norm, env_differences
from tests.golden_path import GOLDEN, needs_golden
from tests.unit.test_jobenv import BASE_ENV, a_job, env_for

VAR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.M)
PID = "4242"  # what the agent would add as SLURM_TASK_PID
TRAINING = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NUM_NODES", "NODE_RANK")
TRAINING += ("LOCAL_WORLD_SIZE", "RANK", "LOCAL_RANK")


def parse(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in VAR.finditer(text)}


def golden_text(name: str) -> str:
    return (GOLDEN / f"{name}.txt").read_text()


def golden_file(name: str, file: str) -> str:
    """The body of ``[file <file>]`` in golden ``name``, up to the next ``[...]`` line."""
    body = golden_text(name).split(f"[file {file}]\n", 1)[1]
    return re.split(r"^\[", body, maxsplit=1, flags=re.M)[0]


def render(env: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in sorted(env.items()))


def run_step(
    job: JobInfo,
    base: dict[str, str],
    *,
    ntasks: int | None = None,
    nodes: int | None = None,
    ntasks_per_node: int | None = None,
    step_id: int = 0,
    launch_port: int = 0,
    gpus_per_task: int | None = None,
    **kw: Any,
) -> list[dict[str, str]]:
    """Every task's environment, by rank: what the controller and the agents would build."""
    inside = base.get("SLURM_JOB_ID") == str(job.job_id)
    n, nn = step_shape(ntasks, nodes, ntasks_per_node, len(job.alloc), base if inside else {})
    allocs = job.alloc[:nn]
    per_node = distribute(n, [a.cpus // job.cpus_per_task for a in allocs], "")
    used = [(a, t) for a, t in zip(allocs, per_node, strict=True) if t]
    step_nodes, tasks = [a.node for a, _ in used], [t for _, t in used]
    out: dict[int, dict[str, str]] = {}
    for i, (alloc, ranks) in enumerate(used):
        node_env = step_environment(
            job,
            base,
            step_id,
            step_nodes,
            tasks,
            i,
            job.cpus_per_task,
            list(alloc.gpus),
            "10.0.0.1",
            20000 + job.job_id,
            "anchor",
            **(
                dict(
                    node_gpu_count=2,
                    controller_host="127.0.0.1",
                    controller_port=6917,
                    conf_path="/etc/slurm/slurm.conf",
                    submit_host="vm",
                    launch_addr="127.0.0.1",
                    launch_port=launch_port,
                )
                | kw
            ),
        )
        for local, rank in enumerate(ranks):
            mine = None
            if gpus_per_task:
                mine = alloc.gpus[local * gpus_per_task : (local + 1) * gpus_per_task]
            out[rank] = task_environment(node_env, rank, local, i, mine) | {"SLURM_TASK_PID": PID}
    return [out[r] for r in range(n)]


def batch_base(job: JobInfo, node: str, pid: str, **kw: Any) -> dict[str, str]:
    """srun's environment inside the golden's batch script: the batch shell's."""
    env = env_for(job, node, **kw)
    return env | {"SLURM_TASK_PID": pid, "SHLVL": "2", "_": "/usr/bin/srun"}


def assert_same_as_golden(golden: str, ours: dict[str, str], job_id: int) -> None:
    """Every variable Slurm set (the golden ran under ``env -i``) with the same value;
    nothing Slurm-like of ours that Slurm did not set, but slurmlite's documented extras."""
    norm = Norm({job_id: "job"})
    theirs = parse(golden)  # only the NAME=value lines (not "=== batch step env")
    assert env_differences(render(theirs), render(ours), norm, norm) == []
    keys = set(theirs) - CAPTURE_ENV - {"SLURM_TASK_PID"}
    assert {k: ours.get(k) for k in keys} == {k: theirs[k] for k in keys}  # node names too


# ------------------------------------------------------------------ goldens


@needs_golden
def test_golden_11_two_tasks_on_one_node() -> None:
    # sbatch -N 1 --ntasks-per-node=2 on n2 (2 CPUs); `srun --output=step-%j.%t.env env`
    job = a_job(25, [NodeAlloc("n2", 2, 2000)], name="env_2tasks.sh")
    job.num_tasks, job.ntasks_per_node = 2, 2
    base = batch_base(job, "n2", "10633")
    assert_same_as_golden(golden_file("11_env_1node_2tasks_srun", "slurm-25.out"), base, 25)
    # plain srun: SLURM_NTASKS=2 from the shell -> 2 tasks, block (2 > 1 node)
    envs = run_step(job, base, launch_port=33353)
    assert len(envs) == 2
    for t in (0, 1):
        golden = golden_file("11_env_1node_2tasks_srun", f"step-25.{t}.env (sorted)")
        assert_same_as_golden(golden, envs[t], 25)
    # the script's second srun is step 1; its tasks print their ids
    step1 = run_step(job, base, step_id=1, launch_port=33354)
    lines = sorted(
        f"task PROCID={e['SLURM_PROCID']} LOCALID={e['SLURM_LOCALID']} NODEID={e['SLURM_NODEID']}"
        f" STEP={e['SLURM_STEP_ID']} STEPID={e['SLURM_STEPID']}"
        for e in step1
    )
    assert lines == re.findall(r"^task .*$", golden_text("11_env_1node_2tasks_srun"), re.M)


@needs_golden
def test_golden_12_one_task_on_each_of_two_nodes() -> None:
    # sbatch -N 2 --ntasks-per-node=1 (1 CPU on n1 and n2); 2 tasks <= 2 nodes -> cyclic
    job = a_job(26, [NodeAlloc("n1", 1, 1000), NodeAlloc("n2", 1, 1000)], name="env_2nodes.sh")
    job.num_tasks, job.ntasks_per_node = 2, 1
    envs = run_step(job, batch_base(job, "n1", "10749"), launch_port=45593)
    for t in (0, 1):
        golden = golden_file("12_env_2nodes", f"step-26.{t}.env (sorted)")
        assert_same_as_golden(golden, envs[t], 26)
    # HOSTNAME is inherited from the batch shell on n1, even on n2 (as the golden shows)
    assert (envs[1]["HOSTNAME"], envs[1]["SLURMD_NODENAME"]) == ("n1", "n2")


@needs_golden
def test_golden_13_gres_gpu1_step_gpu_variables() -> None:
    # --gres=gpu:1 -> GPU 0 of n1; `srun env | grep -E 'SLURM_STEP|CUDA|GPU|SLURM_JOB_GPUS'`
    job = a_job(27, [NodeAlloc("n1", 1, 1000, [0])], name="env_gpu.sh", gpus=1)
    [env] = run_step(job, batch_base(job, "n1", "10877"), launch_port=43127)
    text = golden_text("13_env_gres_gpu1").split("(SLURM/CUDA/GPU only)\n", 1)[1]
    wanted = re.compile(r"SLURM_STEP|CUDA|GPU|SLURM_JOB_GPUS")
    assert {k: v for k, v in env.items() if wanted.search(k)} == parse(text)


@needs_golden
def test_golden_14_gpus_per_node_two_nodes() -> None:
    # -N 2 --gpus-per-node=2 --ntasks-per-node=1: the step gets GPUs 0,1 on each node
    allocs = [NodeAlloc("n1", 1, 1000, [0, 1]), NodeAlloc("n2", 1, 1000, [0, 1])]
    job = a_job(28, allocs, name="env_gpn.sh", num_tasks=2, ntasks_per_node=1, gpus=4)
    base = batch_base(job, "n1", "10971", echo_env={"SLURM_GPUS_PER_NODE": "2"})
    envs = run_step(job, base, launch_port=37075)
    for t in (0, 1):
        golden = golden_file("14_env_gpus_per_node2_2nodes", f"step-28.{t}.env (sorted)")
        assert_same_as_golden(golden, envs[t], 28)


@needs_golden
def test_golden_17_srun_outside_an_allocation() -> None:
    # srun -N2 -n2 env: srun made the allocation; its environment is the login's only
    text = golden_text("17_env_srun_direct_2nodes")
    task0, task1 = text.split("\n", 1)[1].split("====task1\n")
    login = {k: v for k, v in parse(task0).items() if k in CAPTURE_ENV}
    assert not any(k.startswith("SLURM") for k in login)
    job = a_job(33, [NodeAlloc("n1", 1, 1000), NodeAlloc("n2", 1, 1000)], name="env")
    envs = run_step(job, login, ntasks=2, nodes=2, launch_port=39487)
    assert_same_as_golden(task0, envs[0], 33)
    assert_same_as_golden(task1.split("[exit")[0], envs[1], 33)
    # nothing inherited from a batch shell: no memory, alias or distribution variables
    assert not {"SLURM_MEM_PER_CPU", "SLURM_DISTRIBUTION", "ENVIRONMENT"} & envs[0].keys()


@needs_golden
def test_golden_17_srun_step_in_env() -> None:
    # srun -n1 printenv SLURM_JOB_ID SLURM_STEP_ID SLURM_STEPID SLURM_NTASKS SLURM_PROCID
    job = a_job(35, [NodeAlloc("n1", 1, 1000)], name="printenv")
    [env] = run_step(job, dict(BASE_ENV), ntasks=1)
    names = ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_NTASKS", "SLURM_PROCID")
    printed = golden_text("17_srun_step_in_env").splitlines()[1:6]
    assert [env[k] for k in names] == printed


# ------------------------------------------------------- rendezvous variables

TWO_BY_TWO = [NodeAlloc("n1", 2, 2000), NodeAlloc("n2", 2, 2000)]


def test_every_task_gets_the_rendezvous_variables() -> None:
    # sbatch -N2 --ntasks-per-node=2; srun python train.py -> 2 x 2 = 4 ranks, block
    job = a_job(40, TWO_BY_TWO, num_tasks=4, ntasks_per_node=2)
    envs = run_step(job, batch_base(job, "n1", "1"))
    seen = [tuple(e[k] for k in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_NODEID")) for e in envs]
    assert seen == [
        ("0", "0", "0", "0"),
        ("1", "1", "0", "0"),
        ("2", "0", "1", "1"),
        ("3", "1", "1", "1"),
    ]
    for e in envs:
        assert (e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"], e["NUM_NODES"]) == ("4", "2", "2")
        assert (e["MASTER_ADDR"], e["MASTER_PORT"]) == ("10.0.0.1", "20040")  # 20000 + 40
        assert e["SLURMLITE_INJECTED"] == ",".join(TRAINING)
        assert e["RANK"] == e["SLURM_PROCID"] and e["WORLD_SIZE"] == e["SLURM_NTASKS"]


def test_batch_shell_gets_only_address_port_and_node_count() -> None:
    job = a_job(40, TWO_BY_TWO, num_tasks=4, ntasks_per_node=2)
    batch = env_for(job, "n1")
    assert batch["SLURMLITE_INJECTED"] == "MASTER_ADDR,MASTER_PORT,NUM_NODES"
    assert not {"WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "LOCAL_WORLD_SIZE"} & batch.keys()


def test_a_step_replaces_what_the_batch_shell_injected() -> None:
    # srun -N1 in a 2-node job: NUM_NODES is the step's (1), not the batch shell's (2)
    job = a_job(41, TWO_BY_TWO, num_tasks=2, ntasks_per_node=1)
    base = batch_base(job, "n1", "1", master_addr="192.168.0.1")
    assert (base["NUM_NODES"], base["MASTER_ADDR"]) == ("2", "192.168.0.1")
    [env] = run_step(job, base, nodes=1, ntasks=1)
    assert (env["NUM_NODES"], env["MASTER_ADDR"], env["WORLD_SIZE"]) == ("1", "10.0.0.1", "1")


def test_a_smaller_step_keeps_the_jobs_node_list_but_counts_its_own_nodes() -> None:
    # srun -N1 -n1 in a 2-node job: SLURM_NODELIST stays the allocation's (srun keeps the
    # allocation's list there), the counts and SLURM_STEP_NODELIST are the step's
    job = a_job(41, TWO_BY_TWO, num_tasks=2, ntasks_per_node=1)
    [env] = run_step(job, batch_base(job, "n1", "1"), nodes=1, ntasks=1)
    assert (env["SLURM_NODELIST"], env["SLURM_JOB_NODELIST"]) == ("n[1-2]", "n[1-2]")
    assert (env["SLURM_STEP_NODELIST"], env["SLURM_NNODES"], env["SLURM_JOB_NUM_NODES"]) == (
        "n1",
        "1",
        "2",
    )
    assert (env["SLURM_NTASKS"], env["SLURM_TASKS_PER_NODE"], env["SLURM_GTIDS"]) == ("1", "1", "0")


def test_the_users_own_values_are_kept_and_not_recorded() -> None:
    job = a_job(42, TWO_BY_TWO, num_tasks=2, ntasks_per_node=1)
    base = batch_base(job, "n1", "1", base_env=BASE_ENV | {"MASTER_PORT": "29500"})
    base |= {"RANK": "7"}  # exported in the script after the batch shell started
    envs = run_step(job, base)
    assert [e["MASTER_PORT"] for e in envs] == ["29500", "29500"]
    assert [e["RANK"] for e in envs] == ["7", "7"]
    assert [e["LOCAL_RANK"] for e in envs] == ["0", "0"]
    record = envs[1]["SLURMLITE_INJECTED"].split(",")
    assert "MASTER_PORT" not in record and "RANK" not in record and "LOCAL_RANK" in record


def test_a_step_inside_a_step_task_replaces_all_inherited_injections() -> None:
    # srun inside a task of step 0 (rank 3 of 4): its RANK etc. were injected, so they go
    job = a_job(43, TWO_BY_TWO, num_tasks=4, ntasks_per_node=2)
    outer = run_step(job, batch_base(job, "n1", "1"))[3]
    [inner] = run_step(job, outer, ntasks=1, nodes=1, step_id=1)
    assert (inner["RANK"], inner["LOCAL_RANK"], inner["WORLD_SIZE"]) == ("0", "0", "1")
    assert (inner["SLURM_STEP_ID"], inner["SLURM_PROCID"]) == ("1", "0")
    assert inner["SLURMLITE_INJECTED"] == ",".join(TRAINING)  # each name once


# ------------------------------------------------------------------ GPUs


def test_gpus_per_task_binds_distinct_gpus() -> None:
    # -n4 --gpus-per-task=1 on two nodes holding GPUs 2,3: task i gets the i-th GPU of its node
    allocs = [NodeAlloc("n1", 2, 2000, [2, 3]), NodeAlloc("n2", 2, 2000, [2, 3])]
    job = a_job(44, allocs, num_tasks=4, gpus=4)
    envs = run_step(job, batch_base(job, "n1", "1"), ntasks=4, gpus_per_task=1)
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["2", "3", "2", "3"]  # global indices
    assert [e["SLURM_STEP_GPUS"] for e in envs] == ["2", "3", "2", "3"]
    assert [e["ROCR_VISIBLE_DEVICES"] for e in envs] == ["2", "3", "2", "3"]
    assert {e["SLURM_GPUS_ON_NODE"] for e in envs} == {"2"}  # the step's count on the node


def test_gpus_per_task_in_cuda_style_touches_only_cuda() -> None:
    allocs = [NodeAlloc("n1", 2, 2000, [0, 1])]
    job = a_job(45, allocs, num_tasks=2, gpus=2)
    envs = run_step(job, {}, ntasks=2, gpus_per_task=1, gpu_env_style="cuda")
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["0", "1"]
    assert not {"GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"} & envs[0].keys()


def test_a_step_without_gpus_on_a_gpu_node_sees_none() -> None:
    # the batch shell had GPU 0; a step that got no GPU must not inherit the device list
    job = a_job(46, [NodeAlloc("n1", 1, 1000, [0])], gpus=1)
    base = batch_base(job, "n1", "1")
    assert base["CUDA_VISIBLE_DEVICES"] == "0"
    node_env = step_environment(
        job, base, 0, ["n1"], [[0]], 0, 1, [], "n1", 20046, "anchor", node_gpu_count=2
    )
    assert node_env["CUDA_VISIBLE_DEVICES"] == ""
    assert not {"ROCR_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE"} & node_env.keys()
    assert node_env["SLURM_JOB_GPUS"] == "0"  # inherited, as Slurm leaves it


# ------------------------------------------------------- other choices


def test_srun_jobid_from_another_jobs_shell_drops_that_jobs_variables() -> None:
    job = a_job(47, [NodeAlloc("n1", 1, 1000)])
    other = batch_base(a_job(99, [NodeAlloc("n2", 1, 1000)]), "n2", "1")
    [env] = run_step(job, other, in_allocation=True)
    assert (env["SLURM_JOB_ID"], env["SLURMD_NODENAME"]) == ("47", "n1")
    assert "SLURM_MEM_PER_CPU" not in env  # job 99's, not this step's
    assert env["SLURM_DISTRIBUTION"] == "cyclic"  # --jobid is a step in an existing allocation


def test_explicit_distribution_is_shown_even_outside_an_allocation() -> None:
    job = a_job(48, [NodeAlloc("n1", 2, 2000)])
    node_env = step_environment(
        job, {}, 0, ["n1"], [[0, 1]], 0, 1, [], "n1", 20048, "anchor", distribution="cyclic"
    )
    assert node_env["SLURM_DISTRIBUTION"] == "cyclic"
    assert "SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0" not in node_env


def test_step_options_are_echoed() -> None:
    job = a_job(49, [NodeAlloc("n1", 4, 4000)], cpus_per_task=2)
    node_env = step_environment(
        job,
        {},
        0,
        ["n1"],
        [[0, 1]],
        0,
        2,
        [],
        "n1",
        20049,
        "anchor",
        ntasks_per_node=2,
        cpus_on_node=4,
        work_dir="/scratch",
        echo_env={"SLURM_GPUS_PER_TASK": "1"},
    )
    assert node_env["SLURM_CPUS_PER_TASK"] == "2"
    assert node_env["SLURM_NTASKS_PER_NODE"] == "2"
    assert node_env["SLURM_GPUS_PER_TASK"] == "1"
    assert (node_env["PWD"], node_env["TMPDIR"], node_env["SLURM_UMASK"]) == (
        "/scratch",
        "/tmp",
        "0022",
    )


def test_inputs_that_cannot_describe_a_step_are_errors() -> None:
    job = a_job(50, [NodeAlloc("n1", 1, 1000)])
    args: tuple[Any, ...] = (job, {}, 0)
    with pytest.raises(ValueError, match="outside"):
        step_environment(*args, ["n1"], [[0]], 1, 1, [], "n1", 1, "c")
    with pytest.raises(ValueError, match="not allocated"):
        step_environment(*args, ["n9"], [[0]], 0, 1, [], "n9", 1, "c")
    with pytest.raises(ValueError, match="task lists"):
        step_environment(*args, ["n1"], [[0], [1]], 0, 1, [], "n1", 1, "c")
    with pytest.raises(ValueError, match="gpu_env_style"):
        step_environment(*args, ["n1"], [[0]], 0, 1, [], "n1", 1, "c", gpu_env_style="x")
    with pytest.raises(ValueError, match="distribution"):
        step_environment(*args, ["n1"], [[0]], 0, 1, [], "n1", 1, "c", distribution="plane=2")
