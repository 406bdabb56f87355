"""A workload -> its batch script, checked against the nodes; code folders -> snapshots."""

from __future__ import annotations

import io
import subprocess
import tarfile

import pytest

from slurmlite.workload.snapshot import SnapshotError, pack
from slurmlite.workload.spec import WorkloadError, load
from slurmlite.workload.translate import translate

NODES = [("g1", "gpu:h100:8", ["gpu"]), ("g2", "gpu:h100:8", ["gpu"]), ("c1", "(null)", ["cpu"])]


def workload(accel: str = "GPU_8xH100", total: int = 16, extra: str = ""):  # type: ignore[no-untyped-def]
    text = (
        f"experiment_name: ft\ncompute: {{accelerator_type: {accel}, num_accelerators: {total}}}\n"
        f"command: |\n  echo $NODE_RANK of $NUM_NODES\n  echo 'quoted \"text\"'\n{extra}"
    )
    return load(text, "t.yaml")


def test_nodes_gres_and_time_limit():
    job = translate(workload(extra="timeout_minutes: 90\n"), NODES)
    assert (job.nodes, job.gpus_per_node, job.gres, job.time_limit) == (2, 8, "gpu:h100:8", 90)
    lines = job.script.splitlines()
    assert lines[0] == "#!/bin/bash"
    for want in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1", "#SBATCH --gres=gpu:h100:8",
                 "#SBATCH --time=90", "#SBATCH --job-name=ft"):  # fmt: skip
        assert want in lines
    assert lines[-1] == "exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 slurmlite node-run"


def test_the_gpu_type_matches_without_case_and_any_type_without_a_name():
    assert translate(workload("GPU_8xh100"), NODES).gres == "gpu:h100:8"
    assert translate(workload("GPU_4x", 4), NODES).gres == "gpu:4"


def test_a_type_or_count_no_node_has_is_refused_naming_the_key():
    with pytest.raises(WorkloadError) as e:
        translate(workload("GPU_8xA100"), NODES)
    assert e.value.problems == [
        "compute.accelerator_type: no node has GPUs of type A100 (nodes have 8 x h100)"
    ]
    with pytest.raises(WorkloadError) as e:
        translate(workload("GPU_16xH100", 16), NODES)
    assert e.value.problems == [
        "compute.accelerator_type: no node has 16 GPUs of type H100 (at most: 8 x h100 per node)"
    ]
    with pytest.raises(WorkloadError):  # the partition's nodes have none
        translate(workload(extra="partition: cpu\n"), NODES)


def test_priority_classes_map_to_the_qos_the_admin_set():
    w = workload()
    w.priority_class = "CRITICAL"
    assert "#SBATCH --qos=high" in translate(w, NODES, {"CRITICAL": "high"}).script
    with pytest.raises(WorkloadError) as e:
        translate(w, NODES, {})
    assert "SlurmlitePriorityClassQOS" in e.value.problems[0]
    w.priority_class = "NORMAL"  # unmapped NORMAL: the user's default QOS
    assert "--qos" not in translate(w, NODES, {}).script


def test_the_script_carries_the_command_and_variables_exactly(tmp_path):
    w = workload(extra="env_variables: {LR: \"3e-4 'x'\"}\n")
    script = translate(w, NODES, snapshot="ab" * 32).script
    # the script's own lines, run by bash up to srun, export what node-run reads
    head = script.rsplit("\n", 2)[0] + "\n"
    probe = head + 'printf "%s\\n---\\n%s\\n" "$SLURMLITE_COMMAND" "$LR $SLURMLITE_SNAPSHOT"\n'
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout
    assert (
        out == f"echo $NODE_RANK of $NUM_NODES\necho 'quoted \"text\"'\n---\n3e-4 'x' {'ab' * 32}\n"
    )


def _names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.getnames()


def test_a_snapshot_leaves_out_git_caches_and_gitignored_paths(tmp_path):
    root = tmp_path / "proj"
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "data").mkdir()
    for rel in ("train.py", "sub/model.py", "sub/__pycache__/m.pyc", ".git/HEAD", "data/x.csv",
                "sub/last.ckpt", "keep.ckpt"):  # fmt: skip
        (root / rel).write_text(rel)
    (root / ".gitignore").write_text("data/\n*.ckpt\n!keep.ckpt\n")
    out = io.BytesIO()
    sha, size, files = pack(str(root), [], out, 1 << 20)
    assert _names(out.getvalue()) == [".gitignore", "keep.ckpt", "sub", "sub/model.py", "train.py"]
    assert files == 4 and size == len(out.getvalue())
    # the same content packs to the same bytes (times do not count), another to others
    (root / "train.py").touch()
    assert pack(str(root), [], io.BytesIO(), 1 << 20)[0] == sha
    (root / "train.py").write_text("changed")
    assert pack(str(root), [], io.BytesIO(), 1 << 20)[0] != sha


def test_include_paths_the_root_and_the_size_limit(tmp_path):
    root = tmp_path / "proj"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x.py").write_text("x")
    (root / "b.py").write_text("b" * 5000)
    out = io.BytesIO()
    pack(str(root), ["a"], out, 1 << 20)
    assert _names(out.getvalue()) == ["a", "a/x.py"]
    with pytest.raises(SnapshotError, match="include_paths: nope: not found"):
        pack(str(root), ["nope"], io.BytesIO(), 1 << 20)
    with pytest.raises(SnapshotError, match="root_path: no such folder"):
        pack(str(tmp_path / "missing"), [], io.BytesIO(), 1 << 20)
    with pytest.raises(SnapshotError, match="over the limit"):
        pack(str(root), [], io.BytesIO(), 4096)
