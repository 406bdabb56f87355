"""The same-run comparison with real Slurm: ratios as printed, and the throwaway Slurm's lifecycle.

The first tests need no Slurm.  The last ones start the distribution's
real Slurm (``bench.realslurm.session``) and are skipped where it is not
installed or the test does not run as root (slurmd must): they check that
a job really runs on it, and that leaving the block (a failed measurement,
Ctrl-C, a daemon that cannot start) leaves no daemon, job or directory.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from bench import realslurm
from bench.common import Figure, wait_for
from bench.run import table


def test_ratio_is_slurmlite_over_slurm_in_the_figure_s_direction():
    # a time: 41 ms against Slurm's 8.2 ms is 41 / 8.2 = 5, five times slower
    t = Figure("sbatch", "sbatch --wrap true", 41.0, "ms", "how", "ref", target=50, slurm=8.2)
    assert t.ratio == pytest.approx(5.0)
    assert t.ratio_text == "slurmlite/Slurm 5 (slurmlite 5x slower)"
    assert "| Slurm (same run): 8.20 ms; slurmlite/Slurm 5 (slurmlite 5x slower) | ref" in (
        t.describe()
    )
    # a rate: 2,900/s against 290/s is 10, ten times faster
    r = Figure("api", "api", 2900.0, "/s", "how", "ref", higher_is_better=True, slurm=290.0)
    assert r.ratio_text == "slurmlite/Slurm 10 (slurmlite 10x faster)"
    # a time below Slurm's: 70 ms against 2,800 ms is 0.025, 40 times faster
    lat = Figure("latency", "latency", 70.0, "ms", "how", "ref", slurm=2800.0)
    assert lat.ratio_text == "slurmlite/Slurm 0.025 (slurmlite 40x faster)"


def test_summary_shows_measured_slurm_else_the_reference():
    measured = Figure("sbatch", "sbatch --wrap true", 41.0, "ms", "how", "ref", 50, slurm=8.2)
    unmeasured = Figure("sacct", "sacct -j ID", 60.0, "ms", "how", "ref", 50)
    head, _rule, row1, row2 = table([measured, unmeasured])
    assert "Slurm 22.05 same run (slurmlite/Slurm) or reference" in head
    assert "measured 8.20 ms (5)" in row1
    assert "92 ms" in row2  # bench.run.REFERENCE["sacct"]
    # no measurement at all: the column is the reference, as before
    assert "Slurm 22.05 reference" in table([unmeasured])[0]


def test_not_wanted_yields_none_silently(monkeypatch):
    monkeypatch.setattr(realslurm, "WANTED", False)
    lines: list[str] = []
    with realslurm.session(lines.append) as slurm:
        assert slurm is None
    assert lines == []


def test_console_scripts_of_the_same_name_are_not_real_slurm(tmp_path, monkeypatch):
    for name in (*realslurm.DAEMONS, *realslurm.COMMANDS):
        script = tmp_path / name
        script.write_text("#!/usr/bin/env python3\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(realslurm, "SEARCH", ())
    found = realslurm.find()
    assert isinstance(found, str) and "slurmctld" in found and "sbatch" in found


needs_slurm = pytest.mark.skipif(
    not isinstance(realslurm.find(), dict) or os.geteuid() != 0,
    reason="real Slurm (slurmctld, slurmd, slurm-client, munge) not installed, or not root",
)


def ours(conf: Path) -> list[int]:
    """Processes whose environment names this throwaway Slurm's slurm.conf."""
    return realslurm.RealSlurm({}, conf.parent).leftovers()


@needs_slurm
def test_a_job_runs_and_a_failed_measurement_leaves_nothing_behind():
    lines: list[str] = []
    running: list[int] = []
    with realslurm.session(lines.append) as slurm:
        assert slurm is not None
        conf = slurm.conf
        job = slurm.run("sbatch", "--parsable", "--wrap", "sleep 300").strip()
        # a loaded machine (the whole suite beside it) may take a while to start the job;
        # any error in the block is swallowed and logged, so the checks come after it
        wait_for(lambda: slurm.states().get(int(job)) == "RUNNING", 120, "the job to run")
        # RUNNING comes before slurmstepd has started the job's shell: wait for it too
        wait_for(lambda: len(ours(conf)) >= 5, 60, "the job's slurmstepd and shell")
        running = ours(conf)
        raise RuntimeError("boom")  # swallowed: the bench goes on with the reference
    assert any("real Slurm measurement failed: boom" in line for line in lines), lines
    # three daemons plus the job's slurmstepd and shell: all named by the conf
    assert len(running) >= 5
    assert not conf.parent.exists()
    assert ours(conf) == []
    assert all(p.poll() is not None for p in slurm.procs)


@needs_slurm
def test_ctrl_c_propagates_after_stopping_everything():
    with pytest.raises(KeyboardInterrupt), realslurm.session(print) as slurm:
        assert slurm is not None
        raise KeyboardInterrupt
    assert not slurm.directory.exists()
    assert ours(slurm.conf) == [] and all(p.poll() is not None for p in slurm.procs)


@needs_slurm
def test_a_daemon_that_cannot_start_is_reported_and_cleaned_up(tmp_path, monkeypatch):
    bad = tmp_path / "slurm.conf.in"
    bad.write_text("ClusterName=x\nNoSuchParameter=1\n")
    monkeypatch.setattr(realslurm, "CONF", bad)
    made: list[str] = []
    mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: made.append(mkdtemp(**kw)) or made[-1])
    lines: list[str] = []
    with realslurm.session(lines.append, timeout=20) as slurm:
        assert slurm is None
    assert len(lines) == 1 and "real Slurm did not start: slurmctld exited (1)" in lines[0]
    assert "NoSuchParameter" in lines[0]  # the daemon's own complaint, from its log
    assert len(made) == 1 and not Path(made[0]).exists()
    assert ours(Path(made[0]) / "slurm.conf") == []
