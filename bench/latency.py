"""Idle latency: from typing ``sbatch`` to the job's first line running.

The job script's first line writes the shell's clock to a file::

    #!/bin/bash
    echo $EPOCHREALTIME > "$SLURM_SUBMIT_DIR/stamp-$SLURM_JOB_ID"

The benchmark reads ``time.time()`` just before it starts ``sbatch
stamp.sh`` (the real console script, as a user would), waits for the file to
appear, and takes the difference: interpreter start and submission, the
commit, the scheduler noticing, the signed launch request to the agent, the
fork/exec of the batch shell.  Both clocks are the same machine's wall clock.
Each job is waited for until it has finished before the next one is
submitted, so the cluster is idle at every submission; the figure is the
median over the jobs (10, or 3 with ``--quick``), after one untimed job that
warms the caches.  The detail shows how much of it is the sbatch process
alone (the median of those times), the rest being the controller and agent.

Real Slurm 22.05 needs 1.8 s here because its main scheduler starts batch
jobs on a 3-second tick; slurmlite schedules as soon as a submission is
committed.  When real Slurm is installed (``bench.realslurm``), the same
jobs then run the same way on a throwaway one (the real ``sbatch``; a job
counts as finished when ``squeue`` no longer lists it), and its median is
printed beside slurmlite's with the ratio.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from bench import realslurm
from bench.common import BenchCluster, Figure, bench_cluster, fmt, median, p90, wait_for
from slurmlite.states import is_finished

SCRIPT = '#!/bin/bash\necho $EPOCHREALTIME > "$SLURM_SUBMIT_DIR/stamp-$SLURM_JOB_ID"\n'


def _stamp(path: Path) -> float | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return float(text) if text else None
    except ValueError:
        return None  # caught while the shell was writing it


def one_job(cl: BenchCluster | realslurm.RealSlurm, script: Path) -> tuple[float, float, int]:
    """(ms from launching sbatch to the job's first line, ms the sbatch process took, job id)."""
    started = time.time()
    r = subprocess.run(
        [cl.command("sbatch"), "--parsable", "-o", "/dev/null", str(script)],
        cwd=cl.work,
        env=cl.env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    if r.returncode != 0:
        raise RuntimeError(f"sbatch failed (exit {r.returncode}): {r.stderr.strip()}")
    sbatch_ms = (time.time() - started) * 1000
    job_id = int(r.stdout.strip().split(";")[0])
    stamp = cl.work / f"stamp-{job_id}"
    wait_for(lambda: _stamp(stamp) is not None, 30, f"job {job_id}'s first line", every=0.001)
    ran = _stamp(stamp)
    assert ran is not None
    return (ran - started) * 1000, sbatch_ms, job_id


def run_jobs(
    cl: BenchCluster | realslurm.RealSlurm, jobs: int, done: Callable[[int], bool]
) -> tuple[list[float], list[float]]:
    """One untimed warm-up job, then ``jobs`` timed ones, each waited for until
    ``done(job_id)`` before the next: (latencies in ms, sbatch process times in ms)."""
    script = cl.work / "stamp.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    times: list[float] = []
    sbatch_times: list[float] = []
    for i in range(jobs + 1):  # the first one, untimed, warms the caches
        ms, sbatch_ms, job_id = one_job(cl, script)
        if i:
            times.append(ms)
            sbatch_times.append(sbatch_ms)
        wait_for(lambda job_id=job_id: done(job_id), 30, f"job {job_id} to finish")
    return times, sbatch_times


def latency(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    jobs = 3 if quick else 10
    with bench_cluster(log=log) as cl:
        client = cl.client()

        def done(job_id: int) -> bool:
            jobs = client.get_jobs(job_ids=[job_id], all_states=True)
            return bool(jobs) and is_finished(jobs[0].state) and "COMPLETING" not in jobs[0].flags

        try:
            times, sbatch_times = run_jobs(cl, jobs, done)
        finally:
            client.close()
    figure = Figure(
        key="latency",
        label="idle latency, sbatch to the job's first line",
        value=median(times),
        unit="ms",
        stat="median",
        how=(
            f"{jobs} jobs one after another on an idle 2-node cluster; wall clock from just before "
            "starting the sbatch process to the time the job's first line wrote"
        ),
        reference=(
            "reference: Slurm 22.05 measured 1.8 s (1,800 ms, default 3 s batch tick) "
            "on this kind of machine"
        ),
        target=100,
        detail=(
            f"p90 {fmt(p90(times))} ms, best {fmt(min(times))} ms; the sbatch process alone took "
            f"{fmt(median(sbatch_times))} ms (median): a job may start before sbatch has exited"
        ),
    )
    with realslurm.session(log) as rs:
        if rs is not None:
            slurm_times, _ = run_jobs(rs, jobs, lambda _job_id: rs.active() == 0)
            figure.slurm = median(slurm_times)
            figure.slurm_detail = f"p90 {fmt(p90(slurm_times))} ms, best {fmt(min(slurm_times))} ms"
    log(figure.describe())
    return [figure]
