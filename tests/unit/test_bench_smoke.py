"""The benchmarks run and print their figures (never their speed: machines are noisy).

The smoke test runs the cheapest benchmark for real, in quick mode
(``python -m bench.run --quick --only startup``: a throwaway 2-node cluster,
3 timed runs of ``squeue``, ``sbatch`` and ``sacct``), and checks the lines a
reader relies on: each figure with its median, p90, target and the Slurm
22.05 reference, the note that no measurement of real Slurm was made, the
summary table, and that the cluster was stopped and its directory removed.
The ``steps`` benchmark runs the same way (3 ``srun -N2 -n4 true`` in a
``salloc``, 3 interactive ``srun -N1 true``): its figures have no target,
carry the batch launch beside them, and leave no salloc behind.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench.common import Figure, median, p90

ROOT = Path(__file__).resolve().parents[2]


def test_statistics_and_verdicts():
    # median of an even count is the mean of the middle two: (2 + 3) / 2
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    # nearest rank: ceil(0.9 * 20) = 18th smallest of 1..20
    assert p90([float(x) for x in range(20, 0, -1)]) == 18.0
    assert p90([7.0]) == 7.0
    time_fig = Figure("t", "t", 51.0, "ms", "how", "ref", target=50)
    assert time_fig.met == "no" and time_fig.target_text == "<= 50 ms"
    rate_fig = Figure("r", "r", 2500.0, "jobs/s", "how", "ref", target=2000, higher_is_better=True)
    assert rate_fig.met == "yes" and rate_fig.value_text == "2,500 jobs/s"
    assert Figure("q", "q", 1.0, "ms", "how", "ref").met == "n/a"


def test_unknown_benchmark_is_refused():
    r = subprocess.run(
        [sys.executable, "-m", "bench.run", "--only", "startup,nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "unknown benchmark nope" in r.stderr and "startup" in r.stderr
    assert "steps" in r.stderr  # the new benchmark is offered too


def test_quick_startup_prints_every_figure():
    r = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--only", "startup"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "the Slurm 22.05 column is what issue 3 quotes" in out
    expected = {
        "squeue, empty queue": ("<= 50 ms", "4 ms"),
        "sbatch --wrap true": ("<= 50 ms", "4 ms"),
        "sacct -j ID": ("<= 50 ms", "92 ms"),
    }
    for label, (target, ref) in expected.items():
        line = re.compile(
            rf"^{re.escape(label)}: median [\d.,]+ ms \(p90 [\d.,]+ ms\) \| target {re.escape(target)} "
            rf"\| reference: Slurm 22\.05 measured {re.escape(ref)}",
            re.M,
        )
        assert line.search(out), f"no figure line for {label!r} in:\n{out}"
    assert out.count("  how: median of 3 runs of the console script") == 3

    summary = out[out.index("== summary") :].splitlines()
    assert re.match(r"figure\s+slurmlite\s+Slurm 22\.05 reference\s+target\s+met\?$", summary[1])
    rows = summary[3:]
    assert [r.split("  ")[0] for r in rows] == list(expected)
    for row in rows:
        assert re.search(r"ms\s+<= 50 ms\s+(yes|no)$", row), row

    # the cluster was stopped and its directory removed
    started = re.search(r"cluster up in (\S+):", out)
    assert started and "cluster down in" in out
    assert not Path(started.group(1)).exists()
    assert started.group(1) not in Path("/etc/hosts").read_text()


def test_quick_steps_prints_both_figures_without_targets():
    r = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--only", "steps"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    labels = [
        "step launch, srun -N2 -n4 true inside an allocation",
        "interactive srun -N1 true, submit to exit",
    ]
    for label in labels:
        # no target (issue 5 sets none) and the batch launch of the same cluster beside it
        line = re.compile(
            rf"^{re.escape(label)}: median [\d.,]+ ms \(p90 [\d.,]+ ms, best [\d.,]+ ms; .*"
            r"batch job launch \(sbatch to the job's first line.*median [\d.,]+ ms over 2 jobs\) "
            r"\| target - \| reference: issue 5 quotes no Slurm 22\.05 figure$",
            re.M,
        )
        assert line.search(out), f"no figure line for {label!r} in:\n{out}"
    # 3 quick runs each, whole srun processes
    assert "  how: 3 runs, one after another, of the console script `srun -N2 -n4 true`" in out
    assert "  how: 3 runs, one after another, of the console script `srun -N1 true`" in out
    # how many steps had to wait for the previous one's CPUs is said, not judged: the agents
    # report a step's end just after srun sees it, so a wait is possible on a busy machine
    assert re.search(r"; [0-3] of 3 waited for CPUs;", out)

    rows = out[out.index("== summary") :].splitlines()[3:]
    assert [row.split("  ")[0] for row in rows] == labels
    for row in rows:
        assert re.search(r"ms\s+none quoted\s+-\s+n/a$", row), row

    started = re.search(r"cluster up in (\S+):", out)
    assert started and "cluster down in" in out
    assert not Path(started.group(1)).exists()
    # no salloc (nor its measuring program) outlived the benchmark
    leftovers = [
        p
        for p in Path("/proc").glob("[0-9]*/cmdline")
        if str(Path(started.group(1)).parent).encode() in _read(p) and b"salloc" in _read(p)
    ]
    assert leftovers == []


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended meanwhile
        return b""
