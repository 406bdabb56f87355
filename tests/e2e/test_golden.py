"""The same command on a slurmlite cluster prints what Slurm 22.05 printed.

Each golden file holds one command (first line), its stdout, ``[stderr]`` and
``[exit N]``.  EXACT files do not depend on job ids, times or the capture
host, so stdout, stderr and the exit code must match byte for byte.  SHAPE
files differ only in job ids: every number is replaced by ``N`` on both sides
before comparing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import GOLDEN

EXACT = [
    "00_sbatch_version",
    "00_sinfo_version",
    "30_scontrol_show_hostlist",
    "30_scontrol_show_hostlistsorted",
    "30_scontrol_show_hostnames",
    "30_scontrol_show_hostnames_padded",
    "40_sbatch_bad_account",
    "40_sbatch_bad_gres_name",
    "40_sbatch_bad_mem_unit",
    "40_sbatch_bad_option",
    "40_sbatch_bad_partition",
    "40_sbatch_bad_qos",
    "40_sbatch_bad_time",
    "40_sbatch_empty_stdin",
    "40_sbatch_missing_file",
    "40_sbatch_no_args_wrap_missing",
    "40_sbatch_no_shebang",
    "40_sbatch_too_many_gpus",
    "40_sbatch_too_much_mem",
    "50_scontrol_show_job_nonexistent",
    "50_squeue_nonexistent",
    "50_squeue_nonexistent_h",
    "50_sinfo_o_P",
    "50_sinfo_P_m_noconvert",
    "52_scancel_bad_id",
    "52_scancel_nonexistent",
    "52_scancel_nonexistent_signal",
    "52_scancel_nonexistent_verbose",
    "60_sacct_nonexistent",
    "60_squeue_helpformat",
]
SHAPE = [
    "01_sbatch_wrap",
    "01_sbatch_parsable",
    "01_sbatch_parsable_cluster",
    "01_sbatch_stdin",
    "40_sbatch_too_many_nodes",
    "41_sbatch_N3_pending_reason",
]


def load(name: str) -> tuple[str, str, str, int]:
    lines = (GOLDEN / f"{name}.txt").read_text().split("\n")
    command = lines[0][2:]
    out: list[str] = []
    err: list[str] = []
    target = out
    code = None
    for line in lines[1:]:
        m = re.fullmatch(r"\[exit (\d+)\]", line)
        if m:
            code = int(m.group(1))
            break
        if line == "[stderr]":
            target = err
            continue
        target.append(line)
    assert code is not None, name
    return command, "".join(x + "\n" for x in out), "".join(x + "\n" for x in err), code


def numbers_away(text: str) -> str:
    return re.sub(r"\d+", "N", text)


@pytest.fixture
def workdir(jobdir: Path) -> Path:
    (jobdir / "noshebang.sh").write_text("echo no interpreter line\n")
    return jobdir


pytestmark = pytest.mark.skipif(not GOLDEN.is_dir(), reason="golden files not available")


@pytest.mark.parametrize("name", EXACT)
def test_exact(cluster, workdir, name):
    command, out, err, code = load(name)
    r = cluster.run(command, cwd=workdir)
    assert (r.stdout, r.stderr, r.returncode) == (out, err, code)


@pytest.mark.parametrize("name", SHAPE)
def test_same_but_ids(cluster, workdir, name):
    command, out, err, code = load(name)
    command = command.replace("-M anchor", "-M anchor")  # the test cluster is also called anchor
    r = cluster.run(command, cwd=workdir)
    assert (numbers_away(r.stdout), numbers_away(r.stderr), r.returncode) == (
        numbers_away(out),
        numbers_away(err),
        code,
    )
    cluster.run("scancel -u $(id -un) -t PENDING")
