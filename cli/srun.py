"""``srun``: run parallel tasks as a job step.

    srun [options] command [args...]

Inside an allocation (a batch script, a salloc shell, or ``--jobid N``) srun
creates the next step of that job; outside one it first requests an
allocation (``cli.allocation``: ``srun: job N queued and waiting for
resources`` when it cannot start at once), runs step 0 in it and releases
it at the end.  Either way:

1. ``POST /v1/jobs/N/steps`` (``StepRequest``); a step that does not fit
   next to the running ones is retried with a growing pause, after one
   ``srun: Job N step creation temporarily disabled, retrying (Requested
   nodes are busy)`` and, once created, ``srun: Step created for
   StepId=N.S``;
2. each node's signed order goes to its agent, the tasks' output streams
   back live (``cli.srun_io``), srun's stdin goes to the tasks (all of them,
   or ``-i N``), Ctrl-C and other signals act as in Slurm
   (``cli.srun_control``), ``--pty`` gives task 0 a terminal;
3. srun exits with the highest task exit code, 128 + the signal for a task
   killed by one (``slurmlite.stepreport``), after one ``srun: error: n1:
   task 0: Exited with exit code 1`` line per failed group of tasks.

``-K/--kill-on-bad-exit`` ends the step at the first task that fails;
``-W/--wait=S`` ends it S seconds after the first task ended.  Options and
``SLURM_*`` input variables: ``slurmlite.srun_request``.

Examples::

    srun -N2 -n4 -l hostname
    srun --ntasks-per-node=2 python train.py
    srun -N1 --gres=gpu:1 --pty bash
    srun --jobid 42 --overlap --pty bash
"""

from __future__ import annotations

import _socket  # not socket: its enums cost start-up time
import os
import signal
import sys
import time

from cli.common import built_or_exit, current_umask, error_exit, get_client
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.srun_request import SrunCommand, build_srun

TYPE_CHECKING = False  # importing typing costs a command ~3 ms
if TYPE_CHECKING:
    from typing import Any

PROG = "srun"
_BUSY_PAUSE = (0.1, 2.0)  # first and longest pause between step-creation attempts


def create_step(client: Any, job_id: int, request: dict[str, Any], quiet: bool = False) -> Any:
    """The StepGrant, once the step fits (raises SlurmError for any other refusal)."""
    pause, waited = _BUSY_PAUSE[0], False
    while True:
        try:
            grant = client.create_step(job_id, request)
        except SlurmError as e:
            if e.code != errors.ESLURM_NODES_BUSY:
                raise
            if not waited and not quiet:
                print(
                    f"{PROG}: Job {job_id} step creation temporarily disabled, retrying "
                    f"({e.message})",
                    file=sys.stderr,
                    flush=True,
                )
            waited = True
            time.sleep(pause)
            pause = min(pause * 1.5, _BUSY_PAUSE[1])
            continue
        if waited and not quiet:
            print(f"{PROG}: Step created for StepId={job_id}.{grant.step_id}", file=sys.stderr)
        return grant


def _step_error(job_id: int, e: SlurmError) -> list[str]:
    if e.code in (errors.ESLURM_INVALID_JOB_ID, errors.ESLURM_ALREADY_DONE):
        return [
            f"{PROG}: error: Unable to confirm allocation for job {job_id}: {e.message}",
            f"{PROG}: Check SLURM_JOB_ID environment variable. Expired or invalid job {job_id}",
        ]
    text = e.full if e.code == errors.SLURM_ERROR else e.message
    return [f"{PROG}: error: Unable to create step for job {job_id}: {text}"]


def run(cmd: SrunCommand) -> int:
    """Everything after the options: allocation (if needed), the step, the exit status."""
    from cli.step_runner import run_step  # here: keeps --help/--version fast

    try:
        client = get_client(PROG)
    except SlurmError as e:
        print(f"{PROG}: error: {e.full}", file=sys.stderr)
        return error_exit()
    env: dict[str, str] = dict(os.environ)
    alloc = None
    job_id = cmd.job_id
    if job_id is None:
        from cli.allocation import Allocation, AllocationFailed

        assert cmd.submit is not None
        cmd.submit["alloc_sid"] = os.getsid(0)
        alloc = Allocation(client, PROG, cmd.quiet)
        try:
            alloc.request(cmd.submit)
        except AllocationFailed as e:
            for line in e.lines:
                print(line, file=sys.stderr)
            return error_exit()
        job_id = alloc.job_id
        alloc.keep_alive()
        # The tasks get the job's variables from the step (slurmlite.stepenv), not
        # salloc's allocation variables: as in Slurm, a step srun allocated for shows
        # no SLURM_MEM_PER_CPU, SLURM_NODE_ALIASES or SLURM_DISTRIBUTION (golden 17).
    from slurmlite.resources import export_environment

    environment, export_warnings = export_environment(cmd.export, env)
    for warning in export_warnings:
        print(f"{PROG}: error: {warning}", file=sys.stderr)
    raw_status = 1 << 8
    try:
        try:
            grant = create_step(client, job_id, {**cmd.step, "environment": environment}, cmd.quiet)
        except SlurmError as e:
            for line in _step_error(job_id, e):
                print(line, file=sys.stderr)
            return error_exit()
        except KeyboardInterrupt:
            print(
                f"{PROG}: Cancelled pending job step with signal {int(signal.SIGINT)}",
                file=sys.stderr,
            )
            return error_exit()
        code, raw_status = run_step(grant, cmd, PROG)
        return code
    finally:
        if alloc is not None:
            alloc.release(raw_status)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    cmd = built_or_exit(
        lambda: build_srun(args, os.environ, os.getcwd(), _socket.gethostname(), current_umask()),
        PROG,
    )
    if cmd is None:
        return
    sys.exit(run(cmd))


if __name__ == "__main__":
    main()
