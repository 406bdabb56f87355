"""``salloc``: get an allocation, run a command in it here, then give it back.

    salloc [options] [command [args...]]       (no command: your $SHELL)

salloc requests the resources (the same options and arithmetic as sbatch,
``slurmlite.srun_request``), waits for them (``cli.allocation``: ``salloc:
Pending job allocation N`` / ``job N queued and waiting for resources`` when
they are busy, then ``salloc: Granted job allocation N``), and runs the
command *on this host* with the allocation's variables (``SLURM_JOB_ID``,
``SLURM_JOB_NODELIST``, ``SLURM_NNODES``, ``SLURM_TASKS_PER_NODE``...,
``slurmlite.allocenv``), so that ``srun`` inside it makes steps of the job.
When the command ends, ``salloc: Relinquishing job allocation N`` and the
allocation ends with the command's status; salloc exits with that status
(128 + the signal if the command was killed by one).

While the command runs, salloc ignores Ctrl-C (the command, in the
foreground, gets it), passes TERM and HUP on to it, and keeps the
allocation alive; if the allocation is
revoked (``scancel``, time limit), salloc says ``salloc: Job allocation N
has been revoked.`` and sends the command SIGHUP.

Examples::

    salloc -N2 --gres=gpu:1
    salloc -n4 srun hostname
"""

from __future__ import annotations

import _socket  # not socket: its enums cost start-up time
import os
import signal
import sys

from cli.common import built_or_exit, current_umask, error_exit, get_client
from slurmlite.errors import SlurmError
from slurmlite.srun_request import SrunCommand, build_salloc

TYPE_CHECKING = False  # importing typing costs a command ~3 ms
if TYPE_CHECKING:
    from typing import Any

PROG = "salloc"


def _status_code(status: int) -> int:
    """Raw wait status -> shell-style exit status (128 + signal)."""
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def run(cmd: SrunCommand) -> int:
    import subprocess

    from cli.allocation import Allocation, AllocationFailed
    from slurmlite.allocenv import allocation_environment

    assert cmd.submit is not None
    try:
        client = get_client(PROG)
    except SlurmError as e:
        print(f"{PROG}: error: {e.full}", file=sys.stderr)
        return error_exit()
    cmd.submit["alloc_sid"] = os.getsid(0)
    alloc = Allocation(client, PROG, cmd.quiet)
    try:
        job = alloc.request(cmd.submit)
    except AllocationFailed as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        return error_exit()
    env = allocation_environment(
        os.environ,
        job,
        client.config.cluster_name,
        cmd.submit["submit_host"],
        cmd.submit["echo_env"],
    )
    status = 1 << 8
    child: Any = None

    def revoked() -> None:
        print(f"{PROG}: Job allocation {alloc.job_id} has been revoked.", file=sys.stderr)
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGHUP)

    saved: dict[int, object] = {}
    try:
        try:
            child = subprocess.Popen(cmd.argv, env=env, cwd=cmd.submit["work_dir"])
        except OSError as e:
            print(f"{PROG}: error: {cmd.argv[0]}: {e.strerror}", file=sys.stderr)
        else:  # the command, in the foreground, handles Ctrl-C; salloc waits for it
            saved = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGQUIT)}
            for number in (signal.SIGTERM, signal.SIGHUP):  # passed on: the command ends first
                saved[number] = signal.signal(number, lambda n, _f: child.send_signal(n))
            alloc.keep_alive(revoked)
            _pid, status = os.waitpid(child.pid, 0)  # retried after a signal (PEP 475)
            child.returncode = _status_code(status)
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        if not alloc.revoked.is_set() and not cmd.quiet:
            print(f"{PROG}: Relinquishing job allocation {alloc.job_id}", file=sys.stderr)
        alloc.release(status)
    return _status_code(status) if child is not None else error_exit()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    cmd = built_or_exit(
        lambda: build_salloc(args, os.environ, os.getcwd(), _socket.gethostname(), current_umask()),
        PROG,
    )
    if cmd is None:
        return
    sys.exit(run(cmd))


if __name__ == "__main__":
    main()
