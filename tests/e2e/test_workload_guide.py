"""The migration guide's pair, unchanged: 2 nodes x 8 GPUs as sbatch + srun torchrun, and as YAML.

``deploy/examples/workload/`` holds what a user brings: ``train.sbatch``
(the first node as master, ``srun torchrun --nproc_per_node=8`` per node)
and ``train.yaml`` (``GPU_8xH100``, 16 accelerators).  On a cluster of two
nodes with 8 fake ``h100`` GPUs each, both run as they are and report the
same world size, 16, from an ``all_reduce`` over every process (gloo on CPUs).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import local_cluster

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "workload"


@pytest.fixture(scope="module")
def lab():  # type: ignore[no-untyped-def]
    with local_cluster(
        "slurmlite-guide-", nodelist="g[1-2]", cpus_per_node=2, gpus_per_node=8, gpu_type="h100"
    ) as c:
        yield c


def test_the_guide_s_sbatch_script_and_yaml_both_run_unchanged(lab):
    work = lab.new_workdir()
    for name in ("train.py", "train.sbatch", "train.yaml"):
        shutil.copy(EXAMPLE / name, work / name)
    jid = lab.submit("train.sbatch", cwd=work)
    assert lab.wait_done(jid, timeout=240) == "COMPLETED", (
        work / f"llama-ft-{jid}.out"
    ).read_text()
    assert "world size 16, all_reduce sum 16" in (work / f"llama-ft-{jid}.out").read_text()
    r = lab.run("slurmlite run --file train.yaml --watch", cwd=work, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "world size 16, all_reduce sum 16" in r.stdout
