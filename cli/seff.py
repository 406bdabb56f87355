"""seff: how efficiently one job used what it held (Slurm's contrib ``seff``, plus GPUs).

``seff JOBID`` reads the job's accounting record (``/v1/accounting``, the
endpoint sacct reads, with the measured usage of its current run) and
prints :func:`slurmlite.seff.seff_text`: CPU and memory efficiency as
Slurm's seff computes them, then one line per GPU, the GPUs' mean, and at
most one advice line.

Command line, as the Perl original's: ``seff [-h] [-v] [-d] JOBID``;
``-h`` or a wrong argument count prints the usage and exits 1, ``-v`` the
version (exit 1, as seff does), ``-d`` adds the raw figures.  A job the
accounting does not know: ``Job not found.`` on stderr, exit 2.  ``JOBID``
is ``N`` or an array task ``N_I``.

Example::

    $ seff 42
    Job ID: 42
    Cluster: lab
    User/Group: alice/alice
    State: COMPLETED (exit code 0)
    ...
    GPU 0 on g1: utilization 91.50% (max 100%), memory 20.00 GB of 80.00 GB (25.00%)
    GPU 1 on g1: utilization 0.00% (max 0%), memory 0.00 MB of 80.00 GB (0.00%)
    ...
    Advice: this job used 1 of its 2 GPUs; ask for --gpus=1
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Sequence

from cli.common import exit_from, get_client
from slurmlite.errors import CommandLineError, SlurmError

PROG = "seff"
VERSION = "seff Version 2.1"
USAGE = """\
Usage: seff [Options] <Jobid>
       Options:
       -h    Help menu
       -v    Version
       -d    Debug mode: display raw Slurm data
"""
HELP = (
    USAGE
    + """
Prints the CPU, memory and GPU efficiency of a job from its accounting
record: CPU time over cores x wall-clock time, memory peak over memory held,
and per GPU the mean and peak utilization and the memory peak, sampled by
the node agents every JobAcctGatherFrequency seconds.

GPU utilization is NVML's: the share of time a kernel was running on the
GPU, not how much of the GPU the kernels used.  100 % can still leave most
of its cores idle; a low figure does mean the GPU sat waiting.

Examples:
  seff 42          one job
  seff 57_3        one task of array 57
"""
)
_ID = re.compile(r"(\d+)(?:_(\d+))?")


def _parse(argv: Sequence[str]) -> tuple[str, bool]:
    """(job id text, debug); prints the usage or version and leaves for -h/-v/bad use."""
    debug, args = False, []
    for i, arg in enumerate(argv):
        if arg == "--":
            args += argv[i + 1 :]
            break
        if arg == "--help":
            print(HELP, end="")
            raise SystemExit(0)
        if arg == "--version":
            print(VERSION)
            raise SystemExit(0)
        if arg.startswith("-") and len(arg) > 1:
            for flag in arg[1:]:
                if flag == "d":
                    debug = True
                elif flag == "v":
                    print(VERSION)
                    raise SystemExit(1)
                elif flag == "h":
                    print(USAGE, end="")
                    raise SystemExit(1)
                else:
                    print(f"Unknown option: {flag}", file=sys.stderr)
                    print(USAGE, end="")
                    raise SystemExit(1)
            continue
        args.append(arg)
    if len(args) != 1:
        print(USAGE, end="")
        raise SystemExit(1)
    return args[0], debug


def run(argv: Sequence[str]) -> int:
    text, debug = _parse(argv)
    m = _ID.fullmatch(text.strip())
    if m is None:
        raise CommandLineError([f"{PROG}: error: Invalid job id specified: {text}"])
    job_id, task = int(m.group(1)), m.group(2)
    try:
        client = get_client(PROG)
        jobs = client.get_accounting(job_ids=[job_id])
    except SlurmError as exc:
        raise CommandLineError([f"{PROG}: error: Problem talking to the database: {exc}"]) from None
    job = _pick(jobs, job_id, None if task is None else int(task))
    if job is None:
        print("Job not found.", file=sys.stderr)
        return 2
    from cli.sacct_usage import usage_of
    from slurmlite.seff import seff_text

    usage = usage_of(job)
    if debug:
        print(f"Slurm data: {job.job_id} {job.user} {job.group} {job.state} "
              f"{job.num_cpus} {len(job.nodes)} {usage!r}\n")  # fmt: skip
    sys.stdout.write(seff_text(job, usage, cluster=client.config.cluster_name, now=time.time()))
    return 0


def _pick(jobs: list, job_id: int, task: int | None):  # type: ignore[no-untyped-def]
    """The record ``N`` or ``N_I`` names (``N`` alone: the job, else the array's first task)."""
    if task is not None:
        return next((j for j in jobs if j.array_job_id == job_id and j.array_task_id == task), None)
    exact = [j for j in jobs if j.job_id == job_id]
    if exact:
        return exact[0]
    tasks = sorted((j for j in jobs if j.array_job_id == job_id),
                   key=lambda j: -1 if j.array_task_id is None else j.array_task_id)  # fmt: skip
    return tasks[0] if tasks else None


def main(argv: Sequence[str] | None = None) -> None:
    exit_from(run, argv)


if __name__ == "__main__":
    main()
