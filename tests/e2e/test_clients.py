"""Real clients, unmodified, on the real local cluster (n1, n2: 2 CPUs each).

What a lab runs, as it runs it: the classic ``sbatch`` + ``srun`` + ``torchrun``
recipe and the srun-only style of PyTorch DDP (CPU, gloo), submitit's
``SlurmExecutor``, dask-jobqueue's ``SLURMCluster`` and lightning_fabric's
``SLURMEnvironment`` (which spec/clients.md describes command by command).
Nothing here adapts a client to slurmlite: the clients call ``sbatch``,
``srun``, ``sacct``, ``scancel`` and ``sinfo`` from ``PATH`` (the venv's bin,
``cluster.env()``) with ``SLURM_CONF`` pointing at the test cluster.

The clients are test extras (``pip install -e '.[test]'``).  Without them the
module is skipped, saying which are missing; with ``SLURMLITE_REQUIRE_CLIENTS=1``
(``.ci/run``) that is an error instead.

Importing torch takes seconds on two cores, so the PyTorch checks share two
jobs (``ddp_jobs``), submitted at once, and every job gets
``OMP_NUM_THREADS=1``.  The training scripts print each result line with one
write: two tasks of a node share the step's stdout, and ``print`` makes two
writes when stdout is unbuffered, so lines could interleave.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import wait_for

CLIENTS = ("torch", "submitit", "dask_jobqueue", "distributed", "lightning_fabric")
MISSING = [name for name in CLIENTS if importlib.util.find_spec(name) is None]
REQUIRED = os.environ.get("SLURMLITE_REQUIRE_CLIENTS") == "1"
WHY = f"real clients not installed: {', '.join(MISSING)} (pip install -e '.[test]')"

pytestmark = pytest.mark.skipif(bool(MISSING) and not REQUIRED, reason=WHY)


@pytest.fixture(scope="module", autouse=True)
def clients_installed() -> None:
    if MISSING:  # only reached with SLURMLITE_REQUIRE_CLIENTS=1
        pytest.fail(f"{WHY}; SLURMLITE_REQUIRE_CLIENTS=1 makes this an error")


@pytest.fixture
def as_submitter(cluster, monkeypatch):
    """This process's environment as a user's shell on the cluster: the clients run the
    commands with ``os.environ``.  Restored after the test."""
    for name in list(os.environ):
        if name.startswith(("SLURM_", "SBATCH_", "SQUEUE_", "SUBMITIT_")):
            monkeypatch.delenv(name)
    for name, value in cluster.env(OMP_NUM_THREADS="1").items():
        monkeypatch.setenv(name, value)
    return cluster


def job_processes(cluster, job_id: int | str) -> list[int]:  # type: ignore[no-untyped-def]
    """PIDs of live processes whose environment says they belong to this cluster's job."""
    marks = {f"SLURM_JOB_ID={job_id}".encode(), f"SLURM_CONF={cluster.conf}".encode()}
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                env = set(f.read().split(b"\0"))  # a zombie's is empty: it is gone
        except OSError:
            continue
        if marks <= env:
            pids.append(int(entry.name))
    return pids


# ------------------------------------------------------------------ PyTorch

TORCHRUN_TRAIN = """\
import os
import sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")  # torchrun's agent set the rendezvous variables
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
sys.stdout.write(f"torchrun rank={dist.get_rank()} world={dist.get_world_size()} "
                 f"local={os.environ['LOCAL_RANK']} "
                 f"node={os.environ['SLURMD_NODENAME']} sum={int(t.item())}\\n")
dist.destroy_process_group()
"""

# the srun-only style: no launcher, each task reads what slurmlite put in its environment
ENV_TRAIN = """\
import os
import sys
import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
sys.stdout.write(f"ddp rank={rank} world={world} local={os.environ['LOCAL_RANK']} "
                 f"node={os.environ['SLURMD_NODENAME']} master={os.environ['MASTER_ADDR']}:"
                 f"{os.environ['MASTER_PORT']} sum={int(t.item())}\\n")
dist.destroy_process_group()
"""

FABRIC = """\
import os
import sys
from lightning_fabric.plugins.environments import SLURMEnvironment

env = SLURMEnvironment()
env.validate_settings(num_devices=2, num_nodes=2)  # needs SLURM_NTASKS_PER_NODE, SLURM_NNODES
sys.stdout.write(f"fabric detect={SLURMEnvironment.detect()} world={env.world_size()} "
                 f"global={env.global_rank()} local={env.local_rank()} node={env.node_rank()} "
                 f"host={os.environ['SLURMD_NODENAME']}\\n")
"""

TORCHRUN_JOB = """\
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1
srun bash -c 'torchrun --nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID --nproc_per_node=2 \
--master_addr=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) --master_port={port} train.py'
"""

SRUN_JOB = """\
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=2
srun --ntasks-per-node=2 python env_train.py
srun python fabric_env.py
"""


def port_is_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def ddp_jobs(cluster):
    """Both PyTorch jobs, submitted at once: (job id, output text) of the torchrun one and
    of the srun-only one (whose second step is the Lightning check)."""
    work = cluster.new_workdir()
    (work / "train.py").write_text(TORCHRUN_TRAIN)
    (work / "env_train.py").write_text(ENV_TRAIN)
    (work / "fabric_env.py").write_text(FABRIC)
    # the recipe's fixed port, or one derived from the job id if something holds it
    free = port_is_free(socket.gethostbyname("n1"), 29500)
    port = "29500" if free else "$((30000 + SLURM_JOB_ID % 10000))"
    (work / "torchrun.sh").write_text(TORCHRUN_JOB.format(port=port))
    (work / "srun_only.sh").write_text(SRUN_JOB)
    env = {"OMP_NUM_THREADS": "1"}
    r = cluster.run("sbatch --parsable torchrun.sh && sbatch --parsable srun_only.sh", work, **env)
    assert r.returncode == 0, r.stderr
    first, second = (int(x) for x in r.stdout.split())
    jobs = {}
    for jid in (first, second):
        state = cluster.wait_done(jid, timeout=120)
        jobs[jid] = (state, (work / f"slurm-{jid}.out").read_text())
    return (first, *jobs[first]), (second, *jobs[second])


def rows(text: str, prefix: str) -> list[dict[str, str]]:
    """``prefix k=v k=v`` lines -> dicts, sorted by rank (torch's warnings are other lines)."""
    found = [
        dict(word.split("=", 1) for word in line.split()[1:] if "=" in word)
        for line in text.splitlines()
        if line.startswith(prefix + " ")
    ]
    return sorted(found, key=lambda row: int(row.get("rank", row.get("global", "-1"))))


def test_node_names_resolve_to_the_nodes_addresses(cluster):
    # torchrun's --master_addr is `scontrol show hostnames | head -n1`: a node name
    for name in ("n1", "n2"):
        r = cluster.run(f"scontrol show node {name}")
        addr = re.search(r"NodeAddr=(\S+)", r.stdout).group(1)
        assert socket.gethostbyname(name) == addr


def test_the_classic_torchrun_recipe(cluster, ddp_jobs):
    (jid, state, text), _ = ddp_jobs
    assert state == "COMPLETED", text
    # 2 nodes x 2 processes; torchrun numbers node 0's first: rank = 2 * node_rank + local;
    # all_reduce sums rank + 1 over the 4 ranks: 1 + 2 + 3 + 4 = 10
    assert rows(text, "torchrun") == [
        {"rank": str(r), "world": "4", "local": str(r % 2), "node": f"n{1 + r // 2}", "sum": "10"}
        for r in range(4)
    ], text
    r = cluster.run(f"sacct -P -n -j {jid} -o JobID,State,ExitCode")
    assert f"{jid}.0|COMPLETED|0:0" in r.stdout.splitlines(), r.stdout


def test_srun_only_ddp_reads_the_rendezvous_from_the_environment(cluster, ddp_jobs):
    _, (jid, state, text) = ddp_jobs
    assert state == "COMPLETED", text
    got = rows(text, "ddp")
    # MASTER_ADDR: the step's first node (n1); MASTER_PORT: 20000 + job id mod 20000
    master = f"{socket.gethostbyname('n1')}:{20000 + jid % 20000}"
    assert got == [
        {
            "rank": str(r),
            "world": "4",
            "local": str(r % 2),
            "node": f"n{1 + r // 2}",  # block layout: ranks 0, 1 on n1
            "master": master,
            "sum": "10",
        }
        for r in range(4)
    ], text


def test_lightning_slurm_environment_in_a_two_by_two_step(ddp_jobs):
    _, (_jid, _state, text) = ddp_jobs
    got = rows(text, "fabric")
    assert got == [
        {
            "detect": "True",
            "world": "4",
            "global": str(r),
            "local": str(r % 2),
            "node": str(r // 2),
            "host": f"n{1 + r // 2}",
        }
        for r in range(4)
    ], text


# ---------------------------------------------------------------- submitit


def add(a: int, b: int) -> int:
    return a + b


def where_am_i() -> tuple[int, int, int, int, int]:
    import submitit

    env = submitit.JobEnvironment()
    return env.global_rank, env.local_rank, env.node, env.num_tasks, env.num_nodes


def sleep_long(pid_file: str) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(300)


def fail() -> None:
    raise ValueError("boom from the task")


@pytest.fixture
def executor(as_submitter):
    import submitit

    folder = as_submitter.new_workdir() / "submitit"
    ex = submitit.AutoExecutor(folder=folder, cluster="slurm")
    assert ex.cluster == "slurm"  # chosen because srun is on PATH
    ex.update_parameters(timeout_min=5)
    return ex


def test_submitit_returns_the_result_and_expands_the_task_patterns(executor):
    job = executor.submit(add, 2, 3)
    assert job.result() == 5
    folder = Path(executor.folder)
    # submitit's srun writes --output <folder>/%j_%t_log.out: %j and %t expanded by srun
    assert "Starting with JobEnvironment" in (folder / f"{job.job_id}_0_log.out").read_text()


def test_submitit_tasks_per_node_report_their_ranks(executor):
    executor.update_parameters(nodes=2, tasks_per_node=2)
    job = executor.submit(where_am_i)
    # (global rank, local rank, node, tasks, nodes) of the 4 tasks, block layout
    assert job.results() == [(r, r % 2, r // 2, 4, 2) for r in range(4)]
    folder = Path(executor.folder)
    assert sorted(p.name for p in folder.glob(f"{job.job_id}_*_log.out")) == [
        f"{job.job_id}_{t}_log.out" for t in range(4)
    ]


def test_submitit_cancel_ends_every_process_of_the_job(executor, as_submitter):
    pid_file = Path(executor.folder).parent / "sleeper.pid"
    job = executor.submit(sleep_long, str(pid_file))
    pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), 60, "the task"))
    # the batch shell, srun and the task itself at least
    assert pid in job_processes(as_submitter, job.job_id)
    job.cancel()  # scancel <id>, exit code checked
    wait_for(lambda: not job_processes(as_submitter, job.job_id), 20, "the job's processes to end")
    wait_for(lambda: job.done(force_check=True), 20, "submitit to see the job end")
    assert job.state.startswith("CANCELLED")


def test_submitit_failing_task_ends_failed(executor):
    job = executor.submit(fail)
    assert "boom from the task" in str(job.exception())
    state = wait_for(
        lambda: (s := job.get_info(mode="force").get("State")) not in (None, "RUNNING") and s,
        30,
        "sacct's final state",
    )
    assert state == "FAILED"


def test_submitit_map_array_runs_each_input_as_a_task_of_one_throttled_array(executor):
    executor.update_parameters(slurm_array_parallelism=2)
    jobs = executor.map_array(add, [1, 2, 3, 4, 5], [10, 20, 30, 40, 50])
    assert [j.result() for j in jobs] == [11, 22, 33, 44, 55]
    [array] = {j.job_id.split("_")[0] for j in jobs}  # one sbatch --array job
    assert [j.job_id for j in jobs] == [f"{array}_{i}" for i in range(5)]
    script = next(Path(executor.folder).glob("*submission.sh")).read_text()
    assert "#SBATCH --array=0-4%2" in script


class Resumable:
    """A submitit checkpointable task: preempted once, it resumes from its checkpoint."""

    def __init__(self, marker: str, progress: int = 0) -> None:
        self.marker, self.progress = marker, progress

    def __call__(self) -> tuple[int, str]:
        restarts = os.environ.get("SLURM_RESTART_COUNT", "0")
        if self.progress == 0:
            self.progress = 7  # work done before the preemption, kept by checkpoint()
            Path(self.marker).write_text(str(os.getpid()))
            time.sleep(300)  # preempted here
        return self.progress, restarts

    def checkpoint(self):  # type: ignore[no-untyped-def]
        import submitit

        return submitit.helpers.DelayedSubmission(Resumable(self.marker, self.progress))


def test_submitit_preemption_checkpoints_requeues_and_resumes(executor, as_submitter):
    marker = Path(executor.folder).parent / "preempted.pid"
    job = executor.submit(Resumable(str(marker)))
    wait_for(lambda: marker.exists() and marker.read_text(), 60, "the first run")
    script = next(Path(executor.folder).glob("*submission.sh")).read_text()
    assert "#SBATCH --signal=USR2@90" in script  # submitit's preemption signal
    # a preemption: the scheduler's warning signal reaches the task (the job's steps)
    r = as_submitter.run(f"scancel --signal=USR2 {job.job_id}")
    assert r.returncode == 0, r.stderr
    # submitit's handler pickled checkpoint(), ran scontrol requeue and exited; the second
    # run (SLURM_RESTART_COUNT=1) resumed from the checkpoint
    assert job.result() == (7, "1")
    # submitit's result() returns once the result file is written, which is before the
    # job's end reaches the controller: wait for the end, then read the restart count
    info = wait_for(
        lambda: (
            (out := as_submitter.run(f"scontrol show job {job.job_id}").stdout)
            and "JobState=COMPLETED" in out
            and out
        ),
        30,
        "the resumed job's end",
    )
    assert "Restarts=1" in info


# ------------------------------------------------------------ dask-jobqueue


def test_dask_jobqueue_scales_to_two_jobs_computes_and_closes(as_submitter):
    from dask_jobqueue import SLURMCluster
    from distributed import Client

    logs = as_submitter.new_workdir()
    dask_cluster = SLURMCluster(
        cores=1,
        memory="500MB",
        walltime="00:05:00",
        log_directory=str(logs),
        interface="lo",  # every node of the test cluster is this machine
        death_timeout=30,
    )
    try:
        dask_cluster.scale(jobs=2)
        with Client(dask_cluster) as client:
            client.wait_for_workers(2, timeout=60)
            job_ids = {job.job_id for job in dask_cluster.workers.values()}
            assert len(job_ids) == 2
            # each worker runs inside its own job
            assert set(client.run(lambda: os.environ["SLURM_JOB_ID"]).values()) == job_ids
            squares = client.gather(client.map(lambda x: x * x, range(10)))
            assert sum(squares) == 285  # 0 + 1 + 4 + ... + 81
    finally:
        dask_cluster.close()
    for jid in job_ids:  # close() scancels them
        assert as_submitter.wait_done(jid, timeout=30) == "CANCELLED"
        wait_for(lambda j=jid: not job_processes(as_submitter, j), 20, f"job {jid} to end")
