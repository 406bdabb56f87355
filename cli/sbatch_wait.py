"""``sbatch -W/--wait``: stay until the submitted job has ended, exit with its exit code.

As Slurm's sbatch: ``Submitted batch job N`` (or the bare id with
``--parsable``) is printed first, then sbatch polls the controller until the
job, or every task of an array, has ended; the exit status is the job's exit
code, for an array the highest of its tasks'.  A job that did not exit by
itself (killed by a signal, out of memory, past its time limit) gives 1.
Where Slurm would give 0 for a job cancelled before it ran (its exit code
was never set), this gives 1: ``sbatch --wait`` succeeding means the job ran
and completed.  Ctrl-C stops the waiting only; the job goes on.

Polling reuses the submission's connection and backs off from 0.1 s to 1 s,
so a short job is noticed quickly and a long one costs one request a second.
A job no longer in the live queue (``MinJobAge`` passed) is looked up in the
accounting records.  Example::

    $ sbatch --wait --wrap 'exit 3'; echo $?
    Submitted batch job 7
    3
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from cli.client import ControllerClient

PROG = "sbatch"
LIVE_STATES = frozenset({"PENDING", "RUNNING", "SUSPENDED"})
BUSY_FLAGS = frozenset({"COMPLETING", "CONFIGURING", "STAGE_OUT", "REQUEUE", "SIGNALING"})
FIELDS = ["job_id", "state", "flags", "exit_code"]
FIRST_DELAY, MAX_DELAY = 0.1, 1.0
INTERRUPTED = 130  # a shell's status for a command stopped by SIGINT


def ended(state: str, flags: list[str] | None) -> bool:
    return state not in LIVE_STATES and not BUSY_FLAGS.intersection(flags or ())


def exit_status(state: str, raw: int | None) -> int:
    """The exit status a job's end gives ``sbatch --wait``: its exit code when it
    exited by itself, else 1; never 0 unless it COMPLETED."""
    if raw is not None and raw & 0x7F == 0:  # WIFEXITED
        code = (raw >> 8) & 0xFF
    else:
        code = 0 if raw is None and state == "COMPLETED" else 1
    return code if code or state == "COMPLETED" else 1


class JobWatch:
    """The ended jobs (array tasks) seen so far, and whether any is still going."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.codes: dict[int, int] = {}  # ended job (task) id -> exit status

    def live(self, client: ControllerClient) -> bool | None:
        """Read the live queue: True while some task runs or waits; None when the
        controller no longer lists the job (nothing seen ended either)."""
        fields, rows = client.get_job_rows(FIELDS, job_ids=[self.job_id], all_states=True)
        if not rows:
            return None
        going = False
        for row in rows:
            job = dict(zip(fields, row, strict=False))
            if ended(job["state"], job.get("flags")):
                self.codes[int(job["job_id"])] = exit_status(job["state"], job.get("exit_code"))
            else:
                going = True
        return going

    def from_accounting(self, client: ControllerClient) -> bool:
        """The records of a job gone from the live queue; False when there are none."""
        for job in client.get_accounting(job_ids=[self.job_id]):
            if ended(job.state, getattr(job, "flags", None)):
                self.codes[int(job.job_id)] = exit_status(job.state, job.exit_code)
        return bool(self.codes)

    def status(self) -> int:
        return max(self.codes.values(), default=1)


def wait_for_job(
    client: ControllerClient,
    job_id: int,
    sleep: Callable[[float], Any] = time.sleep,
) -> int:
    """Poll until job ``job_id`` (all its tasks) has ended; its exit status for sbatch."""
    from slurmlite.errors import SlurmError

    watch = JobWatch(job_id)
    delay, complained = FIRST_DELAY, False
    while True:
        try:
            going = watch.live(client)
            if going is None:
                if watch.from_accounting(client) or watch.codes:
                    return watch.status()
                print(
                    f"{PROG}: error: Job {job_id} no longer found and exit code not found",
                    file=sys.stderr,
                )
                return 1
            if not going:
                return watch.status()
            complained = False
        except SlurmError as e:
            if not complained:  # said once per outage; the job is still out there
                print(
                    f"{PROG}: error: Currently unable to load job state information, retrying: {e}",
                    file=sys.stderr,
                )
                complained = True
        sleep(delay)
        delay = min(MAX_DELAY, delay * 2)


def wait_and_exit(client: ControllerClient, job_id: int) -> None:
    """sbatch's last act with ``--wait``: leave with the job's exit status."""
    sys.stdout.flush()  # "Submitted batch job N" is read by whoever waits with us
    try:
        code = wait_for_job(client, job_id)
    except KeyboardInterrupt:
        print(
            f"\n{PROG}: stopped waiting; job {job_id} goes on (scancel {job_id} stops it)",
            file=sys.stderr,
        )
        code = INTERRUPTED
    finally:
        client.close()
    sys.exit(code)
