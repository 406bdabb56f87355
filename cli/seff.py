"""seff: how efficiently one job used what it held (Slurm's contrib ``seff``, plus GPUs).

``seff JOBID`` reads the job's accounting record (``/v1/accounting``, the
endpoint sacct reads, with the measured usage of its current run) and
prints :func:`slurmlite.seff.seff_text`: CPU and memory efficiency as
Slurm's seff computes them, then one line per GPU, the GPUs' mean, and at
most one advice line.

Command line, as the Perl original's: ``seff [-h] [-v] [-d] JOBID``;
``-h`` or a wrong argument count prints the usage and exits 1, ``-v`` the
version (exit 1, as seff does), ``-d`` adds the raw figures; ``--help``,
``--usage`` and ``--version`` are slurmlite's (exit 0).  A job the
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
from slurmlite.getopt import Getopt, OptionError, OptionTable
from slurmlite.option_rows import row

PROG = "seff"
VERSION = "seff Version 2.1"  # contrib/seff's words; version_text() adds slurmlite's


def version_text() -> str:
    """``seff Version 2.1 (slurmlite 0.1.0)``; the package metadata is read only here."""
    from slurmlite.version import slurmlite_version

    return f"{VERSION} (slurmlite {slurmlite_version()})"


USAGE = """\
Usage: seff [Options] <Jobid>
       Options:
       -h    Help menu
       -v    Version
       -d    Debug mode: display raw Slurm data
"""
# Perl seff's three letters, plus the long options every slurmlite command has;
# the help words and the longer explanation are in cli/help/seff.py.
SEFF = OptionTable(
    PROG,
    (
        row("", "d", key="debug"),
        row("", "h", key="brief"),  # Perl seff's -h: the usage above, exit 1
        row("", "v", key="short_version"),  # Perl seff's -v: the version, exit 1
        row("help"),
        row("usage"),
        row("version"),
    ),
    try_help=False,
)
_ID = re.compile(r"(\d+)(?:_(\d+))?")


def _parse(argv: Sequence[str]) -> tuple[str, bool]:
    """(job id text, debug); prints the usage or version and leaves for -h/-v/bad use.

    Each option acts when it is reached, as in the Perl original (``seff -v -h``
    prints the version)."""
    debug = False
    getopt = Getopt(SEFF, argv)
    try:
        for occurrence in getopt:
            key = occurrence.spec.key
            if key == "debug":
                debug = True
            elif key in ("short_version", "version"):
                print(version_text())
                raise SystemExit(1 if key == "short_version" else 0)
            elif key == "brief":
                print(USAGE, end="")
                raise SystemExit(1)
            else:  # --help, --usage
                from cli.help import show  # late: only --help/--usage load the help pages

                show(PROG, key)
                raise SystemExit(0)
    except OptionError as exc:
        name = exc.lines[0].split("'")[-2].lstrip("-") if "'" in exc.lines[0] else "?"
        print(f"Unknown option: {name}", file=sys.stderr)
        print(USAGE, end="")
        raise SystemExit(1) from None
    if len(getopt.positionals) != 1:
        print(USAGE, end="")
        raise SystemExit(1)
    return getopt.positionals[0], debug


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
