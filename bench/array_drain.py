"""array_drain: a job array of ``true`` from one submission to its last task.

``python -m bench.array_drain --tasks N`` (default 10,000; ``bench.run``'s
quick mode uses 300) starts a 4-node local cluster (4 CPUs each) and prints,
for an array of N tasks that each append their index to one file:

* the submit time of the whole array (one request, one commit);
* the time until every task has ended, and tasks per second;
* the controller's resident memory at the start and at the end;
* with ``--kill-midway``: the same while the controller is killed with
  SIGKILL once half the tasks have run and started again on the same store;
* the number of tasks that ran (lines in the file) and of distinct indices:
  both must be exactly N, or the figure is refused.

A baseline in the same run: as many plain ``true`` jobs (up to 1,000) submitted
over 16 connections, drained on the same cluster, in jobs per second.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import BenchCluster, Figure, bench_cluster, submit_many, wait_for

NODES = "anode[1-4]"


def rss_mb(cl: BenchCluster) -> float:
    pid = int((cl.directory / "run" / "slurmctld.pid").read_text().split()[0])
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _finished(cl: BenchCluster, ids: list[int]) -> int:
    client = cl.client()
    try:
        jobs = client.get_jobs(job_ids=ids, all_states=True)
    finally:
        client.close()
    live = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED")
    return len([j for j in jobs if j.state not in live])


def _restart(cl: BenchCluster) -> None:
    pidfile = cl.directory / "run" / "slurmctld.pid"
    pid = int(pidfile.read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 10, "the killed controller to go")
    env = {**os.environ, **cl.env}
    subprocess.run(
        [sys.executable, "-m", "controller.main", "-f", str(cl.conf)], check=True, env=env
    )


def array_run(tasks: int, kill: bool, log: Callable[[str], None]) -> list[Figure]:
    extra = (f"MaxArraySize={tasks + 1}",)
    with bench_cluster(cpus_per_node=4, log=log, nodelist=NODES, extra_conf=extra) as cl:
        ran = cl.work / "ran.txt"
        req = cl.request(
            f"--array=0-{tasks - 1}",
            "--output=/dev/null",
            "--wrap",
            f"echo $SLURM_ARRAY_TASK_ID >> {ran}",
        )
        rss_start = rss_mb(cl)
        client = cl.client()
        try:
            t0 = time.perf_counter()
            jid = client.submit(req).job_id
            submit_ms = (time.perf_counter() - t0) * 1000
        finally:
            client.close()
        killed = False

        def done() -> bool:
            nonlocal killed
            lines = ran.read_text().count("\n") if ran.exists() else 0
            if kill and not killed and lines >= tasks // 2:
                killed = True
                _restart(cl)
            if lines < tasks:
                return False
            client = cl.client()
            try:
                jobs = client.get_jobs(job_ids=[jid], all_states=True)
            finally:
                client.close()
            return all(j.state == "COMPLETED" for j in jobs) and len(jobs) == tasks

        wait_for(done, 120 + tasks * 0.2, f"{tasks} array tasks to end", every=0.5)
        drain = time.perf_counter() - t0
        rss_end = rss_mb(cl)
        indices = ran.read_text().split()
        if len(indices) != tasks or len(set(indices)) != tasks:
            raise RuntimeError(f"{len(indices)} runs of {len(set(indices))} indices, not {tasks}")
        base_n = min(tasks, 1000)
        plain = cl.request("--output=/dev/null", "--wrap", "true")
        t1 = time.perf_counter()
        ids, _ = submit_many(cl, plain, base_n)
        wait_for(lambda: _finished(cl, ids) == base_n, 120 + base_n * 0.2, "baseline", every=0.5)
        base_s = time.perf_counter() - t1
    how = "SIGKILL of slurmctld halfway, restarted" if kill else "no fault"
    key = "array-kill" if kill else "array"
    return [
        Figure(
            key=f"{key}-submit",
            label=f"submit a {tasks:,}-task array ({how})",
            value=submit_ms,
            unit="ms",
            how="one sbatch request: one row, one commit",
            reference="target < 50 ms",
            target=50,
        ),
        Figure(
            key=f"{key}-rate",
            label=f"drain a {tasks:,}-task array of true on 4 nodes x 4 CPUs ({how})",
            value=tasks / drain,
            unit="tasks/s",
            how=f"{drain:.1f} s until every task ended; {len(indices):,} runs, all indices once",
            reference=f"baseline: {base_n:,} plain jobs at {base_n / base_s:.0f} jobs/s; target >= 200",
            target=200,
            higher_is_better=True,
            detail=f"controller RSS {rss_start:.0f} MB at start, {rss_end:.0f} MB at end",
        ),
    ]


def array_drain(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    tasks = 300 if quick else 10_000
    return array_run(tasks, False, log) + array_run(tasks, True, log)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.array_drain")
    p.add_argument("--tasks", type=int, default=10_000)
    p.add_argument("--kill-midway", action="store_true")
    args = p.parse_args()
    for f in array_run(max(2, args.tasks), args.kill_midway, print):
        print(f"{f.label}: {f.value:.1f} {f.unit} ({f.how}; {f.reference}) {f.detail or ''}")


if __name__ == "__main__":
    main()
