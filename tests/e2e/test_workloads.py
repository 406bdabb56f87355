"""``slurmlite run --file train.yaml`` on the real 2-node cluster, and its sbatch twin.

The seed pair of the migration guide, scaled down: a 2-node job whose command
runs once per node and does a CPU gloo ``all_reduce`` instead of training,
written once as an ``sbatch`` + ``srun`` script and once as the managed
runtimes' YAML.  Both must succeed with the same world size.  Then the rest
of what a run does: retries, overrides, per-node logs, snapshots stored
once, environments, secrets, and privacy towards another user.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest

from tests.e2e.conftest import run_as, wait_for

TRAIN = """\
import os
import torch
import torch.distributed as dist

rank, world = int(os.environ["NODE_RANK"]), int(os.environ["NUM_NODES"])
where = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
dist.init_process_group("gloo", init_method=where, rank=rank, world_size=world)
t = torch.tensor([rank + 1.0])
dist.all_reduce(t)
print(f"rank {rank} world {dist.get_world_size()} sum {t.item():g}", flush=True)
dist.destroy_process_group()
"""

SBATCH = """\
#!/bin/bash
#SBATCH --job-name=gloo-sbatch
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:2
#SBATCH --time=5
srun python {code}/train.py
"""

YAML = """\
experiment_name: gloo-yaml
compute:
  accelerator_type: GPU_2x
  num_accelerators: 4
code_source:
  type: snapshot
  snapshot:
    root_path: ./code
command: |
  echo "node $NODE_RANK of $NUM_NODES attempt $ATTEMPT run $RUN_ID gpus $LOCAL_WORLD_SIZE"
  python $CODE_SOURCE_PATH/train.py
env_variables:
  GREETING: hello
timeout_minutes: 5
max_retries: 0
"""


@pytest.fixture
def project(cluster) -> Path:  # type: ignore[no-untyped-def]
    root = cluster.new_workdir()
    code = root / "code"
    code.mkdir()
    (code / "train.py").write_text(TRAIN)
    (code / ".gitignore").write_text("*.ckpt\n")
    (code / "big.ckpt").write_text("left out")
    (root / "train.yaml").write_text(YAML)
    (root / "job.sh").write_text(SBATCH.format(code=code))
    return root


def slurmlite(cluster, args: str, cwd: Path, timeout: float = 120, **env: str):  # type: ignore[no-untyped-def]
    return cluster.run(
        f"slurmlite {args}", cwd=cwd, timeout=timeout, XDG_CACHE_HOME=str(cwd / "cache"), **env
    )


def get_run(cluster, run_id: int, cwd: Path) -> dict:  # type: ignore[no-untyped-def]
    r = slurmlite(cluster, f"get run {run_id} --json", cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_sbatch_script_and_its_yaml_twin_both_succeed_with_the_same_world_size(
    cluster, project
):
    jid = cluster.submit("job.sh", cwd=project)
    assert cluster.wait_done(jid, timeout=90) == "COMPLETED"
    out = (project / f"slurm-{jid}.out").read_text()
    assert sorted(line for line in out.splitlines() if line.startswith("rank")) == [
        "rank 0 world 2 sum 3",
        "rank 1 world 2 sum 3",
    ]
    r = slurmlite(cluster, "run --file train.yaml --watch", project)
    assert r.returncode == 0, r.stderr + r.stdout
    run_id = int(r.stdout.splitlines()[0])
    assert "rank 0 world 2 sum 3" in r.stdout  # --watch follows node 0's log
    assert f"node 0 of 2 attempt 0 run {run_id} gpus 2" in r.stdout
    assert f"run {run_id}: ended COMPLETED, exit status 0" in r.stderr
    node1 = slurmlite(cluster, f"logs {run_id} --node 1", project).stdout
    assert f"node 1 of 2 attempt 0 run {run_id} gpus 2" in node1
    assert "rank 1 world 2 sum 3" in node1
    # it is a normal job underneath
    sacct = cluster.run(f"sacct -n -X -j {run_id} -o JobName%12,State,NNodes").stdout.split()
    assert sacct == ["gloo-yaml", "COMPLETED", "2"]
    run = get_run(cluster, run_id, project)
    assert [a["nodes"] for a in run["attempts"]] == [["n1", "n2"]]
    assert run["spec"]["env_variables"] == {"GREETING": "hello"}


def test_a_failing_command_is_retried_and_each_attempt_is_listed(cluster, project):
    text = YAML.replace("max_retries: 0", "max_retries: 2").replace(
        "  python $CODE_SOURCE_PATH/train.py\n",
        '  echo "try $ATTEMPT"; [ "$NODE_RANK" = 1 ] && exit 7; sleep 1\n',
    )
    (project / "fail.yaml").write_text(text)
    r = slurmlite(cluster, "run --file fail.yaml --watch", project)
    assert r.returncode == 7, r.stderr  # the failing node's exit code, not a killed node's
    run_id = int(r.stdout.splitlines()[0])
    run = get_run(cluster, run_id, project)
    assert (run["state"], run["retries"], run["max_retries"]) == ("FAILED", 2, 2)
    assert [(a["attempt"], a["state"], a["exit_code"] >> 8) for a in run["attempts"]] == [
        (0, "FAILED", 7), (1, "FAILED", 7), (2, "FAILED", 7)
    ]  # fmt: skip
    for attempt in range(3):
        log = slurmlite(cluster, f"logs {run_id} --node 1 --attempt {attempt}", project).stdout
        assert f"try {attempt}" in log
    human = slurmlite(cluster, f"get run {run_id}", project).stdout
    assert "retries used 2 of 2" in human and human.count("FAILED") == 4


def test_override_changes_the_node_count_and_the_snapshot_is_stored_once(cluster, project):
    first = slurmlite(
        cluster, "run -f train.yaml --override compute.num_accelerators=2 --watch", project
    )
    assert first.returncode == 0, first.stderr
    assert "node 0 of 1 attempt 0" in first.stdout and "rank 0 world 1 sum 1" in first.stdout
    run_id = int(first.stdout.splitlines()[0])
    assert get_run(cluster, run_id, project)["attempts"][0]["nodes"] == ["n1"]
    again = slurmlite(cluster, "run -f train.yaml --override compute.num_accelerators=2", project)
    assert "unchanged, already on the controller" in again.stderr, again.stderr
    snapshots = Path(cluster.directory, "state", "snapshots")
    sha = get_run(cluster, run_id, project)["snapshot"]
    assert (snapshots / f"{sha}.tar").is_file()
    assert "uploaded" in first.stderr or "unchanged" in first.stderr
    # the .gitignore'd checkpoint never left the submitting host
    import tarfile

    with tarfile.open(snapshots / f"{sha}.tar") as tar:
        assert sorted(tar.getnames()) == [".gitignore", "train.py"]


def test_the_same_idempotency_key_returns_the_first_run(cluster, project):
    args = "run -f train.yaml --override compute.num_accelerators=2 --idempotency-key k-17"
    one = slurmlite(cluster, args, project)
    two = slurmlite(cluster, args, project)
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout
    assert "already made run" in two.stderr


def wheel(path: Path, name: str = "tinypkg", value: str = "42") -> Path:
    """A pure-Python wheel made by hand (no build tools, no index)."""
    whl = path / f"{name}-0.1-py3-none-any.whl"
    info = f"{name}-0.1.dist-info"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr(f"{name}/__init__.py", f"VALUE = {value}\n")
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")
    return whl


def test_dependencies_build_an_environment_once_and_a_pip_failure_ends_the_attempt(
    cluster, project
):
    wheel(project / "code")
    text = YAML.replace(
        "  python $CODE_SOURCE_PATH/train.py\n",
        "  python -c \"import tinypkg; print('tiny', tinypkg.VALUE)\"\n",
    ).replace("num_accelerators: 4", "num_accelerators: 2")
    text += "environment:\n  dependencies:\n    - ./tinypkg-0.1-py3-none-any.whl\n"
    (project / "deps.yaml").write_text(text)
    first = slurmlite(cluster, "run -f deps.yaml --watch", project, timeout=240, PIP_NO_INDEX="1")
    assert first.returncode == 0, first.stderr + first.stdout
    assert "tiny 42" in first.stdout and "building the environment" in first.stdout
    second = slurmlite(cluster, "run -f deps.yaml --watch", project, timeout=240, PIP_NO_INDEX="1")
    assert second.returncode == 0 and "reusing the environment" in second.stdout, second.stdout
    (project / "bad.yaml").write_text(text.replace("./tinypkg-0.1", "./missing-0.1"))
    bad = slurmlite(cluster, "run -f bad.yaml --watch", project, timeout=240, PIP_NO_INDEX="1")
    assert bad.returncode == 1
    assert "the environment could not be built" in bad.stdout and "missing-0.1" in bad.stdout


def test_validation_errors_and_the_dry_run_submit_nothing(cluster, project):
    (project / "bad.yaml").write_text(YAML.replace("num_accelerators: 4", "num_accelerators: 3")
                                      .replace("timeout_minutes", "timeout_minute"))  # fmt: skip
    r = slurmlite(cluster, "run -f bad.yaml", project)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "slurmlite: error: bad.yaml:4: compute.num_accelerators: 3 is not a multiple of the 2 GPUs "
        "per node of GPU_2x",
        "slurmlite: error: bad.yaml:14: timeout_minute: unknown key (did you mean timeout_minutes?)",
    ]
    (project / "h100.yaml").write_text(YAML.replace("GPU_2x", "GPU_2xH100"))
    r = slurmlite(cluster, "run -f h100.yaml", project)
    assert r.returncode == 1
    assert "compute.accelerator_type: no node has GPUs of type H100" in r.stderr
    (project / "gone.yaml").write_text(YAML.replace("./code", "./nowhere"))
    r = slurmlite(cluster, "run -f gone.yaml", project)
    assert r.returncode == 1 and "root_path: no such folder: ./nowhere" in r.stderr
    before = cluster.run("squeue -h -t all -o %i").stdout
    dry = slurmlite(cluster, "run -f train.yaml --dry-run", project)
    assert dry.returncode == 0, dry.stderr
    assert "Workload gloo-yaml: 2 node(s) x 2 GPU(s)" in dry.stdout
    assert "#SBATCH --nodes=2" in dry.stdout and "#SBATCH --gres=gpu:2" in dry.stdout
    assert "Scheduler: Job" in dry.stdout and "to start at" in dry.stdout
    assert cluster.run("squeue -h -t all -o %i").stdout == before


@pytest.fixture(scope="module")
def dave():  # type: ignore[no-untyped-def]
    """Another user: ``nobody`` (no user is created: uids reused by parallel tests mislead)."""
    import pwd

    if os.geteuid() != 0:
        pytest.skip("acting as another user needs root")
    return pwd.getpwnam("nobody")


def test_secrets_reach_the_run_and_nobody_else(cluster, project, dave):
    r = cluster.run("printf 'tok-123' | slurmlite secret set team/token", cwd=project)
    digest = hashlib.sha256(b"tok-123").hexdigest()[:16]  # the file never holds the value
    assert r.returncode == 0, r.stderr
    text = YAML.replace("num_accelerators: 4", "num_accelerators: 2").replace(
        "  python $CODE_SOURCE_PATH/train.py\n",
        f'  [ "$(printf %s "$TOKEN" | sha256sum | cut -c1-16)" = {digest} ] && echo "token arrived"\n',
    )
    (project / "secret.yaml").write_text(text + "secrets:\n  TOKEN: team/token\n")
    r = slurmlite(cluster, "run -f secret.yaml --watch", project)
    assert r.returncode == 0 and "token arrived" in r.stdout, r.stderr + r.stdout
    run_id = int(r.stdout.splitlines()[0])
    shown = slurmlite(cluster, f"get run {run_id} --json", project).stdout
    assert "tok-123" not in shown and json.loads(shown)["secrets"] == ["TOKEN"]
    listed = slurmlite(cluster, "secret list", project).stdout
    assert "team/token" in listed and "tok-123" not in listed
    from cli.slurmlite import main

    def as_dave(args: list[str]) -> tuple[int, str, str]:
        return run_as(dave, lambda a: main(a, prog_name="slurmlite"), args, "/tmp",
                      cluster.env(HOME="/tmp", USER="nobody"))  # fmt: skip

    for args in (["get", "run", str(run_id)], ["logs", str(run_id)], ["cancel", str(run_id)]):
        code, out, err = as_dave(args)
        assert code == 210 and "Access/permission denied" in err, (args, err)  # as scancel
    code, out, _ = as_dave(["secret", "list"])
    assert code == 0 and "team/token" not in out
    assert slurmlite(cluster, "secret delete team/token", project).returncode == 0


def test_cancel_stops_a_run(cluster, project):
    text = YAML.replace("num_accelerators: 4", "num_accelerators: 2").replace(
        "  python $CODE_SOURCE_PATH/train.py\n", "  echo started; sleep 300\n"
    )
    (project / "long.yaml").write_text(text)
    r = slurmlite(cluster, "run -f long.yaml", project)
    run_id = int(r.stdout.strip())
    wait_for(lambda: "started" in slurmlite(cluster, f"logs {run_id}", project).stdout, 60, "start")
    assert slurmlite(cluster, f"cancel {run_id}", project).returncode == 0
    wait_for(lambda: get_run(cluster, run_id, project)["state"] == "CANCELLED", 30, "cancel")
    listed = slurmlite(cluster, "list runs --state CANCELLED", project).stdout
    assert str(run_id) in listed and "CANCELLED" in listed


def test_mlflow_tracks_the_run_its_attempts_and_node_0s_log(cluster, project):
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        if os.environ.get("SLURMLITE_REQUIRE_CLIENTS") == "1":
            raise
        pytest.skip("mlflow is not installed")
    uri = f"sqlite:///{project}/mlflow.db"
    text = YAML.replace("num_accelerators: 4", "num_accelerators: 4").replace(
        "  python $CODE_SOURCE_PATH/train.py\n",
        '  python -c "import os; from mlflow.tracking import MlflowClient as C; '
        "C().log_metric(os.environ['MLFLOW_RUN_ID'], 'node' + os.environ['NODE_RANK'], 1)\"\n",
    )
    (project / "tracked.yaml").write_text(text)
    r = slurmlite(
        cluster, "run -f tracked.yaml --watch", project, timeout=240, MLFLOW_TRACKING_URI=uri
    )
    assert r.returncode == 0, r.stderr + r.stdout
    run_id = int(r.stdout.splitlines()[0])
    mlflow_id = get_run(cluster, run_id, project)["mlflow_run_id"]
    os.environ["MLFLOW_TRACKING_URI"] = uri
    try:
        client = MlflowClient()
        run = client.get_run(mlflow_id)
        assert client.get_experiment(run.info.experiment_id).name == "gloo-yaml"
        assert run.info.run_name == "gloo-yaml" and run.info.status == "FINISHED"
        assert run.data.params["compute.num_accelerators"] == "4"
        assert run.data.params["env_variables.GREETING"] == "hello"
        assert run.data.tags["slurmlite.run_id"] == str(run_id)
        assert run.data.tags["attempt.0"] == "COMPLETED"
        assert set(run.data.metrics) == {"node0", "node1"}  # both nodes reached the same run
        assert [a.path for a in client.list_artifacts(mlflow_id, "logs")] == ["logs/attempt0.log"]
    finally:
        del os.environ["MLFLOW_TRACKING_URI"]


def test_logs_of_a_plain_batch_job_and_only_of_a_file_its_user_owns(cluster, project):
    jid = cluster.submit("--wrap 'echo plain-out; echo second'", cwd=project)
    assert cluster.wait_done(jid) == "COMPLETED"
    r = slurmlite(cluster, f"logs {jid}", project)
    assert r.returncode == 0 and r.stdout == "plain-out\nsecond\n", r.stderr
    assert slurmlite(cluster, f"logs {jid} --tail 1", project).stdout == "second\n"
    assert slurmlite(cluster, f"logs {jid} -f", project).stdout == "plain-out\nsecond\n"  # ended
    out = project / f"slurm-{jid}.out"
    out.unlink()
    out.symlink_to("/etc/shadow")  # the agent must not read through a link for anyone
    r = slurmlite(cluster, f"logs {jid}", project)
    assert r.returncode == 0 and r.stdout == ""


def test_ctrl_c_stops_the_watching_not_the_run(cluster, project):
    import signal
    import subprocess

    text = YAML.replace("num_accelerators: 4", "num_accelerators: 2").replace(
        "  python $CODE_SOURCE_PATH/train.py\n", "  echo watching-me; sleep 300\n"
    )
    (project / "watched.yaml").write_text(text)
    proc = subprocess.Popen(
        ["slurmlite", "run", "-f", "watched.yaml", "--watch"], cwd=project,
        env=cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        run_id = int(proc.stdout.readline())  # type: ignore[union-attr]
        wait_for(lambda: "watching-me" in slurmlite(cluster, f"logs {run_id}", project).stdout, 60)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130 and f"run {run_id} goes on" in err, err
    assert get_run(cluster, run_id, project)["state"] == "RUNNING"
    assert slurmlite(cluster, f"cancel {run_id}", project).returncode == 0
    wait_for(lambda: get_run(cluster, run_id, project)["state"] == "CANCELLED", 30, "cancel")
