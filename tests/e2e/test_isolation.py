"""Isolation on a real cluster: hostile names stay text, an unknown uid never runs, and
``--mem`` is enforced where the agents have cgroups (the job ends OUT_OF_MEMORY)."""

from __future__ import annotations

import dataclasses
import pwd
import time

import pytest

from agent.cgroups import find_mount
from slurmlite.protocol import LaunchSpec
from tests.e2e.conftest import run_as

MOUNT = find_mount()
CARRIES_MEMORY = "mem_mib" in {f.name for f in dataclasses.fields(LaunchSpec)}


def test_names_comments_paths_and_values_are_never_run(cluster, jobdir):
    marker = jobdir / "pwned"  # where the commands below would create it: the job's cwd
    evil = "$(touch pwned)`touch pwned`;touch pwned"
    out = "out-$(touch pwned)-%j.txt"
    r = cluster.run(
        f"sbatch --parsable -J {q(evil)} --comment {q(evil)} -o {q(out)} "
        """--wrap 'printf "%s\\n" "$EVIL"'""",
        cwd=jobdir,
        EVIL=evil,
    )
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout)
    assert cluster.wait_done(jid) == "COMPLETED"
    path = jobdir / out.replace("%j", str(jid))
    assert path.read_text() == evil + "\n"  # the literal file name, the literal value
    listed = cluster.run(f"squeue -h -t all -j {jid} -o %j").stdout.strip()
    assert listed == evil
    assert not marker.exists()


def test_a_job_of_a_uid_unknown_on_the_node_fails_and_never_runs(cluster, jobdir):
    from cli import sbatch

    uid = next(u for u in range(1_999_999_900, 2_000_000_000) if not _has_entry(u))
    ghost = pwd.struct_passwd(("ghost", "x", uid, uid, "", "/nonexistent", "/bin/sh"))
    marker = jobdir / "ran"
    argv = ["--parsable", "--wrap", f"touch {marker}"]
    code, out, err = run_as(ghost, sbatch.main, argv, str(jobdir), cluster.env())
    assert code == 0, err
    jid = int(out)
    # FAILED 0:53 JobLaunchFailure, as this codebase reports any launch failure
    assert cluster.wait_done(jid) == "FAILED"
    row = cluster.run(f"sacct -n -P -X -j {jid} -o State,ExitCode").stdout.split()
    assert row == ["FAILED|0:53"]
    reason = cluster.run(f"squeue -h -t all -j {jid} -o %r").stdout.strip()
    assert reason in ("JobLaunchFailure", "User not found on host")
    time.sleep(0.2)  # (a started job would have touched it within milliseconds)
    assert not marker.exists()


@pytest.mark.skipif(
    MOUNT is None or not MOUNT.memory, reason="the agents need a writable cgroup memory controller"
)
@pytest.mark.skipif(
    not CARRIES_MEMORY, reason="the launch order carries no memory yet (LaunchSpec.mem_mib)"
)
def test_a_job_over_its_mem_ends_out_of_memory(cluster, jobdir):
    # 50 MiB allowed, 200 MiB asked for: the kernel kills python, the job ends OUT_OF_MEMORY
    jid = cluster.submit("""--mem=50M --wrap 'python3 -c "b = bytearray(200 << 20)"'""", jobdir)
    assert cluster.wait_done(jid) == "OUT_OF_MEMORY"
    row = cluster.run(f"sacct -n -P -X -j {jid} -o State,ExitCode").stdout.split()
    assert row == ["OUT_OF_MEMORY|0:125"]  # Slurm's raw status 253 -> "0:125"
    assert cluster.run(f"squeue -h -t all -j {jid} -o %t").stdout.strip() == "OOM"
    text = (jobdir / f"slurm-{jid}.out").read_text()
    assert f"oom-kill event(s) in StepId={jid}.batch" in text


def q(text: str) -> str:
    """Single-quoted for the test's own bash command line."""
    return "'" + text.replace("'", "'\\''") + "'"


def _has_entry(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
