"""``sbatch``: submit a batch script.

    sbatch [options] [script [args...]]      (script from a file, stdin, or --wrap)

Options, ``#SBATCH`` directives and ``SBATCH_*`` variables are read by
``slurmlite.sbatch_request.build_submit`` (command line > environment >
directives); this module only talks to the controller and prints Slurm's
answers: ``Submitted batch job N`` (nothing with digits before the id, which
dask-jobqueue parses), ``N`` or ``N;cluster`` with ``--parsable``, and
``sbatch: error: Batch job submission failed: <reason>`` with exit 1.

Examples::

    sbatch --wrap 'hostname'
    sbatch -N 2 --gres=gpu:4 --time=1:00:00 train.sh
    printf '#!/bin/sh\\necho hi\\n' | sbatch --parsable
"""

from __future__ import annotations

import _socket  # not socket: its enums cost start-up time
import os
import pwd
import sys

from cli.common import built_or_exit, current_umask, error_exit, get_client
from slurmlite.errors import SlurmError
from slurmlite.sbatch_request import build_submit

PROG = "sbatch"


def _read_stdin() -> bytes:
    return sys.stdin.buffer.read()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        user = str(os.getuid())
    cmd = built_or_exit(
        lambda: build_submit(
            args,
            os.environ,
            os.getcwd(),
            _read_stdin,
            _socket.gethostname(),
            user,
            umask=current_umask(),
        ),
        PROG,
        dashes="--",
    )
    if cmd is None:
        return
    assert cmd.fields is not None
    cmd.fields["alloc_sid"] = os.getsid(0)  # scontrol's AllocNode:Sid
    try:
        client = get_client(PROG)
        result = client.submit(cmd.fields)
    except SlurmError as e:
        if cmd.test_only:  # Slurm's will-run test reports its error this way, exit 1
            print(f"allocation failure: {e.message}", file=sys.stderr)
            sys.exit(1)
        if e.detail:
            print(f"{PROG}: error: {e.detail}", file=sys.stderr)
        print(f"{PROG}: error: Batch job submission failed: {e.message}", file=sys.stderr)
        sys.exit(error_exit())
    if cmd.test_only:
        print(f"{PROG}: {result.test_only_message}", file=sys.stderr)
        return
    if cmd.parsable:
        print(f"{result.job_id};{cmd.cluster}" if cmd.cluster else f"{result.job_id}")
    elif not cmd.quiet:
        suffix = f" on cluster {cmd.cluster}" if cmd.cluster else ""
        print(f"Submitted batch job {result.job_id}{suffix}")
    if cmd.wait:  # -W/--wait: exit with the job's exit code once it has ended
        from cli.sbatch_wait import wait_and_exit

        wait_and_exit(client, result.job_id)


if __name__ == "__main__":
    main()
