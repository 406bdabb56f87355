"""Starting one task of a job step: as the job's user, in the job's cgroup, its argv as given.

A task is started like a batch script (``agent.launcher``) in what
matters to the user -- uid, gid, ``initgroups`` groups and the login
variables the environment lacks (``agent.confine``, ``agent.identity``),
born inside the job's cgroup, its files opened by the user, a missing
work directory replaced by /tmp with Slurm's message -- with two
differences: a task is the agent's child (srun's stream dies with the
agent anyway, see ``agent.steps``), and its argv is run directly, never
through a shell that would interpret the user's words.

The task runs under ``TASK_WRAPPER``, a few lines of ``/bin/sh`` that take
every value as an argument, and end by ``exec``-ing the argv, so the task
keeps the wrapper's pid (its ``SLURM_TASK_PID``, ``$$``), which leads a new
session and process group (``agent.steps`` signals the session)::

    sh -c TASK_WRAPPER slurmstepd GATE IN OUT ERR WORKDIR NODE argv...

1. ``GATE`` (a FIFO, or empty without cgroups): wait until the agent has
   moved this process into the job's cgroup, so that everything the task
   starts is born inside.  The agent holds the FIFO open for reading and
   writing from before the start until the task ends, so the wrapper's
   ``open`` never blocks, whenever it comes; its ``read`` returns once the
   agent writes a line, after the move.  (A pipe passed by descriptor would
   do without a file, but dash redirects single-digit descriptors only, and
   the descriptor would leak into the task.)
2. ``IN``/``OUT``/``ERR``: files to open as the user ("" = keep the pipe
   or terminal the agent gave; ``ERR == OUT``: both to one file).  Output
   files are created or emptied before any task starts (``prepare_files``),
   once per distinct path, so tasks sharing a file (``-o out.txt``) do not
   empty each other's output; tasks then append;
3. ``cd`` to the work directory, else /tmp with Slurm's line on stderr;
4. ``exec`` the argv; a command that cannot be found gets Slurm's
   ``execve(): <cmd>: No such file or directory`` and exit status 2.

Standard streams from the agent: a pipe per stream to stream back to srun
(or the terminal of ``--pty``, ``agent.pty``), a pipe for stdin when the
task reads srun's stdin, else ``/dev/null``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from agent.cgroups import JobCgroup
from agent.confine import CGROUP_FAILED, LaunchError
from agent.pty import ctty_command, open_pty
from agent.rundirs import gate_fifo
from agent.stepio import StdinFeed

__all__ = ["TASK_WRAPPER", "Task", "TaskPlan", "Where", "close_gate", "prepare_files", "spawn_task"]

# $1 gate FIFO, $2 stdin file, $3 stdout file, $4 stderr file, $5 work dir, $6 node, $7... argv
TASK_WRAPPER = r"""
set -f
[ -z "$1" ] || { read -r _ <"$1"; } 2>/dev/null || exit 1
fail() { printf 'slurmstepd-%s: error: cannot open %s file %s\n' "$6" "$1" "$2" >&2; exit 1; }
[ -z "$2" ] || command exec 0<"$2" || fail input "$2"
[ -z "$3" ] || command exec 1>>"$3" || fail output "$3"
if [ -n "$4" ]; then
  if [ "$4" = "$3" ]; then exec 2>&1; else command exec 2>>"$4" || fail error "$4"; fi
fi
if ! CDPATH= cd -- "$5" 2>/dev/null; then
  printf "slurmstepd-%s: error: couldn't chdir to '%s': going to /tmp instead\n" "$6" "$5" >&2
  cd /tmp || exit 1
fi
node=$6
shift 6
if ! command -v -- "$1" >/dev/null 2>&1; then
  printf 'slurmstepd-%s: error: execve(): %s: No such file or directory\n' "$node" "$1" >&2
  exit 2
fi
SLURM_TASK_PID=$$
export SLURM_TASK_PID
exec "$@"
"""

# $@: files to create or empty, as the user; says which one failed and why
_PREPARE = r"""
for f; do
  err=$( { : >"$f"; } 2>&1 ) || { printf '%s\n%s\n' "$f" "$err"; exit 1; }
done
"""


@dataclass
class TaskPlan:
    """What one task gets: its ids, environment and where its streams go."""

    task: int  # global rank (SLURM_PROCID)
    local: int  # rank on this node (SLURM_LOCALID)
    env: dict[str, str]
    std_in: str = ""  # file to read, "" = srun's stdin (or /dev/null)
    std_out: str = ""  # file to append to, "" = streamed
    std_err: str = ""  # file, "" = streamed; == std_out: the same file
    reads_stdin: bool = False  # gets a pipe for srun's stdin
    pty: bool = False  # runs on a pseudo-terminal (--pty, task 0)


@dataclass
class Task:
    """A started task: its process, the descriptors the agent reads, its stdin."""

    plan: TaskPlan
    proc: subprocess.Popen[bytes]
    outputs: list[tuple[str, int]]  # ("out" | "err", read end)
    stdin: StdinFeed | None
    terminal: int | None = None  # a duplicate of the pty master, for the window size
    status: int | None = None  # raw wait status once reaped
    cpu_seconds: float | None = None  # once reaped: its CPU time with its reaped children's
    pumps: list[object] = field(default_factory=list)
    gate: tuple[Path, int] | None = None  # the gate FIFO and the agent's descriptor on it

    @property
    def pid(self) -> int:
        return self.proc.pid


def prepare_files(paths: list[str], creds: dict[str, object]) -> None:
    """Create or empty each output file as the user (``creds``); ``LaunchError`` if one cannot be."""
    if not paths:
        return
    argv = ["/bin/sh", "-c", _PREPARE, "slurmstepd", *paths]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            cwd="/",
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
            timeout=30,
            **creds,  # type: ignore[arg-type]
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise LaunchError(f"cannot prepare output files: {exc}") from exc
    if done.returncode != 0:
        lines = done.stdout.decode(errors="replace").splitlines()
        path = lines[0] if lines else "?"
        cause = lines[-1].rsplit(": ", 1)[-1] if len(lines) > 1 else "cannot be created"
        why = f"cannot open output file {path}: {cause}"
        raise LaunchError(why, detail=why)


@dataclass
class Where:
    """Where a step's tasks run: as whom, in which cgroup, with which gates."""

    work_dir: str
    node: str
    creds: dict[str, object]  # Popen's user, group, extra_groups ({}: the agent's own)
    uid: int  # who owns the task's gate FIFO
    gid: int
    cgroup: JobCgroup | None = None
    gates: Path | None = None  # the directory of the gate FIFOs (with a cgroup)


def spawn_task(plan: TaskPlan, argv: list[str], where: Where, name: str) -> Task:
    """Start one task (see the module docstring); ``LaunchError`` if it cannot be.

    ``name`` names the task's gate FIFO in ``where.gates`` (unique on the node)."""
    cgroup = where.cgroup
    gate = _open_gate(where, name) if cgroup is not None else None
    theirs: list[int] = []  # the child's ends, closed here once it has them
    outputs: list[tuple[str, int]] = []
    feed: StdinFeed | None = None
    terminal: int | None = None
    prefix: list[str] = []
    try:
        if plan.pty:
            master, slave = open_pty()
            theirs.append(slave)
            stdin = stdout = stderr = slave
            outputs.append(("out", master))
            terminal = os.dup(master)
            feed = StdinFeed(os.dup(master), terminal=True)
            prefix = ctty_command()
        else:
            stdin = subprocess.DEVNULL
            if plan.reads_stdin and not plan.std_in:
                r, w = os.pipe()
                theirs.append(r)
                feed = StdinFeed(w)
                stdin = r
            stdout = _output("out", plan.std_out, theirs, outputs)
            stderr = _output("err", plan.std_err, theirs, outputs)
        args = [str(gate[0]) if gate else "", plan.std_in, plan.std_out, plan.std_err]
        full = [*prefix, "/bin/sh", "-c", TASK_WRAPPER, "slurmstepd", *args]
        proc = subprocess.Popen(
            [*full, where.work_dir, where.node, *argv],
            cwd="/",
            env=plan.env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=not plan.pty,  # with a pty, setsid --ctty does it
            **where.creds,  # type: ignore[arg-type]
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        _close_all(theirs, [fd for _, fd in outputs], terminal, feed)
        close_gate(gate)
        raise LaunchError(f"cannot start task {plan.task}: {exc}") from exc
    for fd in theirs:
        os.close(fd)
    if cgroup is not None and gate is not None:
        try:
            cgroup.add(proc.pid)
            os.write(gate[1], b"\n")  # moved: the wrapper may go on
        except OSError as exc:
            proc.kill()  # the gate stays shut: nothing may run outside the cgroup
            proc.wait()
            close_gate(gate)
            _close_all([], [fd for _, fd in outputs], terminal, feed)
            raise LaunchError(f"task {plan.task}: {exc}", detail=CGROUP_FAILED) from exc
    return Task(plan, proc, outputs, feed, terminal, gate=gate)


def _open_gate(where: Where, name: str) -> tuple[Path, int]:
    """The task's gate FIFO (owned by the user), held open for reading and writing."""
    assert where.gates is not None
    path = where.gates / name
    owner = (where.uid, where.gid) if where.creds else None
    try:
        gate_fifo(path, owner, where.uid)
        return path, os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise LaunchError(f"cannot make the gate {path}: {exc}", detail=CGROUP_FAILED) from exc


def close_gate(gate: tuple[Path, int] | None) -> None:
    """Close and remove a task's gate (its wrapper is past it, or will never be)."""
    if gate is not None:
        with contextlib.suppress(OSError):
            os.close(gate[1])
        with contextlib.suppress(OSError):
            os.unlink(gate[0])


def _output(name: str, path: str, theirs: list[int], outputs: list[tuple[str, int]]) -> int:
    """A pipe for a streamed output (its read end kept), or /dev/null when a file takes it."""
    if path:
        return subprocess.DEVNULL
    r, w = os.pipe()
    theirs.append(w)
    outputs.append((name, r))
    return w


def _close_all(
    fds: list[int], more: list[int], terminal: int | None, feed: StdinFeed | None
) -> None:
    for fd in [*fds, *more, *([terminal] if terminal is not None else [])]:
        with contextlib.suppress(OSError):
            os.close(fd)
    if feed is not None and feed.fd is not None:
        with contextlib.suppress(OSError):
            os.close(feed.fd)
        feed.fd = None
