"""Step launch latency: ``srun`` inside an allocation, and ``srun`` that makes its own.

Two figures, both whole ``srun`` processes (the installed console script,
interpreter start included) timed on the wall clock, after one untimed
warm-up run; each run must exit 0 or the benchmark fails:

* **step launch inside an allocation**: ``salloc -N2 -n4 PYTHON measure.py
  RUNS srun -N2 -n4 true``.  salloc runs its command on this host with the
  allocation's variables (``SLURM_JOB_ID``...), as a user's would;
  ``measure.py`` (written to the job dir from :data:`MEASURE`, stdlib only)
  starts the real ``srun`` ``RUNS + 1`` times one after another and prints
  the times as JSON.  So each run is what typing ``srun -N2 -n4 true`` in a
  salloc shell costs: a step request to the controller, four tasks over two
  nodes, their exit statuses collected, the step recorded as ended.  A run
  that had to wait for the previous step's CPUs says so on stderr (Slurm's
  ``step creation temporarily disabled``); how many did is printed.
* **interactive srun**: ``srun -N1 true`` with no allocation around it:
  request an allocation, wait for it, one step, release it.  Each run is
  waited for before the next, so the cluster is idle at every submission.

Beside them (the issue asks for it) the batch launch: ``sbatch`` to the job
script's first line, measured on the same cluster in the same run by the
``latency`` benchmark's code (:func:`bench.latency.run_jobs`, fewer jobs:
``latency`` gives the full figure).  Worked example of reading the output:
step launch 120 ms, interactive srun 180 ms and batch launch 60 ms say that
an allocation of its own costs srun ~60 ms over a step in an existing one.

Real Slurm, when installed, runs the same three in the same run on
``bench.realslurm``'s throwaway Slurm.  It has one node, so the step there
is ``srun -N1 -n4 true`` inside ``salloc -N1 -n4`` (printed in "how").
Its ``srun`` and ``salloc`` are found beside its ``sbatch``; if they are
missing or fail, the session logs why and the reference stays.  The issue
quotes no figure and sets no target: the targets are ``None`` (``n/a``).

Clean-up: salloc runs in a session of its own; on an error or timeout the
whole process group (salloc, measure.py, its srun) is killed, and the
clusters are stopped by their ``with`` blocks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from bench import realslurm
from bench.commands import time_command
from bench.common import BenchCluster, Figure, bench_cluster, fmt, median, p90
from bench.latency import run_jobs
from slurmlite.states import is_finished

Target = BenchCluster | realslurm.RealSlurm

# Run inside the allocation by any Python 3: ``measure.py RUNS ARGV...`` -> one JSON line.
MEASURE = """\
import json, subprocess, sys, time
runs, argv = int(sys.argv[1]), sys.argv[2:]
times, waited = [], 0
for i in range(runs + 1):  # the first run, untimed, warms the caches
    started = time.perf_counter()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    elapsed = (time.perf_counter() - started) * 1000
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed (exit {r.returncode}): {r.stderr.strip()}")
    if i:
        times.append(elapsed)
        waited += "temporarily disabled" in r.stderr
print(json.dumps({"times": times, "waited": waited}))
"""

REFERENCE = "reference: issue 5 quotes no Slurm 22.05 figure"


def in_allocation(
    cl: Target, nodes: int, tasks: int, runs: int, timeout: float = 300
) -> tuple[list[float], int]:
    """``srun -N nodes -n tasks true`` timed ``runs`` times inside ``salloc -N nodes -n tasks``.

    Returns (milliseconds per run, how many runs waited for a previous step).
    """
    script = cl.work / "measure.py"
    script.write_text(MEASURE)
    shape = [f"-N{nodes}", f"-n{tasks}"]
    argv = [cl.command("salloc"), *shape, sys.executable, str(script), str(runs)]
    argv += [cl.command("srun"), *shape, "true"]
    proc = subprocess.Popen(
        argv,
        cwd=cl.work,
        env=cl.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # salloc, measure.py and srun: one group to kill on failure
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"salloc {' '.join(shape)} (measuring srun) did not end within {timeout:.0f} s"
        ) from None
    finally:
        if proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lines = out.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"salloc {' '.join(shape)} (measuring srun) failed (exit {proc.returncode}): "
            f"{err.strip()[-500:]}"
        )
    answer = json.loads(lines[-1])
    return [float(t) for t in answer["times"]], int(answer["waited"])


def batch_launch(cl: Target, jobs: int, done: Callable[[int], bool]) -> list[float]:
    """Milliseconds from starting ``sbatch`` to the job's first line, ``jobs`` idle jobs."""
    times, _sbatch_times = run_jobs(cl, jobs, done)
    return times


def add_real_programs(rs: realslurm.RealSlurm) -> None:
    """Give ``rs`` Slurm's own ``srun`` and ``salloc``, found beside its ``sbatch``."""
    where = Path(rs.command("sbatch")).parent
    for name in ("srun", "salloc"):
        path = where / name
        if not (os.access(path, os.X_OK) and _is_elf(path)):
            raise RuntimeError(f"real Slurm's {name} not found beside its sbatch ({where})")
        rs.programs[name] = str(path)


def _is_elf(path: Path) -> bool:
    """A compiled program (slurmlite's Python console scripts share the names)."""
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def stats(times: list[float]) -> str:
    return f"p90 {fmt(p90(times))} ms, best {fmt(min(times))} ms"


def steps(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    runs = 3 if quick else 10
    jobs = 2 if quick else 5  # the batch launch beside them: the latency benchmark has the rest
    with bench_cluster(log=log) as cl:
        client = cl.client()

        def done(job_id: int) -> bool:
            found = client.get_jobs(job_ids=[job_id], all_states=True)
            return (
                bool(found) and is_finished(found[0].state) and "COMPLETING" not in found[0].flags
            )

        try:
            batch = batch_launch(cl, jobs, done)
        finally:
            client.close()
        step_times, waited = in_allocation(cl, 2, 4, runs)
        inter_times = time_command(cl, ["srun", "-N1", "true"], runs)
    beside = (
        f"beside it, batch job launch (sbatch to the job's first line, the latency benchmark's "
        f"measure) on this cluster: median {fmt(median(batch))} ms over {jobs} jobs"
    )
    step = Figure(
        key="step-launch",
        label="step launch, srun -N2 -n4 true inside an allocation",
        value=median(step_times),
        unit="ms",
        stat="median",
        how=(
            f"{runs} runs, one after another, of the console script `srun -N2 -n4 true` (whole "
            "process, wall clock, after one warm-up), timed by a small Python program that "
            "`salloc -N2 -n4` runs on this host in a 2-node, 4-task allocation"
        ),
        reference=REFERENCE,
        detail=f"{stats(step_times)}; {waited} of {runs} waited for CPUs; {beside}",
    )
    inter = Figure(
        key="srun-interactive",
        label="interactive srun -N1 true, submit to exit",
        value=median(inter_times),
        unit="ms",
        stat="median",
        how=(
            f"{runs} runs, one after another, of the console script `srun -N1 true` outside any "
            "allocation (it requests one, runs the step, releases it): whole process, wall "
            "clock, after one warm-up, idle cluster"
        ),
        reference=REFERENCE,
        detail=f"{stats(inter_times)}; {beside}",
    )
    with realslurm.session(log) as rs:
        if rs is not None:
            add_real_programs(rs)
            slurm_batch = batch_launch(rs, jobs, lambda _job_id: rs.active() == 0)
            slurm_beside = f"batch job launch median {fmt(median(slurm_batch))} ms"
            times, slurm_waited = in_allocation(rs, 1, 4, runs)
            step.slurm = median(times)
            step.slurm_detail = (
                f"{stats(times)}; {slurm_waited} of {runs} waited; {slurm_beside}; "
                "-N1 -n4: its throwaway Slurm has one node"
            )
            step.how += (
                "; real Slurm: `srun -N1 -n4 true` inside `salloc -N1 -n4` the same way (one node)"
            )
            times = time_command(rs, ["srun", "-N1", "true"], runs)
            inter.slurm = median(times)
            inter.slurm_detail = f"{stats(times)}; {slurm_beside}"
            inter.how += "; real Slurm: the same command"
    for figure in (step, inter):
        log(figure.describe())
    return [step, inter]
