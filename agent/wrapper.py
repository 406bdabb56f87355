"""The per-job supervisor: a small ``/bin/sh`` wrapper, its gate and its status file.

Why a wrapper
-------------
An agent that is killed (``kill -9``, an upgrade, a crash) must not take its
jobs with it, and the exit status of a job that ends while no agent runs
must not be lost.  A job therefore never is the agent's child: the agent
starts a tiny shell, the *wrapper*, which forks the job, stays alive as its
parent and writes how it ended to ``<spool>/job<ID>/status``.  It costs one
sleeping ``sh`` per job (about 1 MiB), not a Python interpreter.

Process layout::

    agent (any number of restarts)
      `- wrapper  sh, own session, runs as the job's user, ignores TERM/HUP/...
           `- job (batch shell)  own session via setsid: pid = pgid = SLURM_TASK_PID

The job learns its pid (``SLURM_TASK_PID``) from the physical path of
``/proc/self`` (``cd -P``: one system call, where reading ``/proc/self/stat``
with ``read`` costs one per byte).

The job has its own session, so signalling or killing the job's process
group (cancel, time limit, ``scancel --signal``) never reaches the wrapper.
The wrapper ignores the usual signals only *after* forking the job: ignored
dispositions survive ``exec``, and a job must start with default ones.  For
the same reason the job is started through ``env --default-signal=INT,QUIT``:
an ``&`` list in a non-interactive shell starts with SIGINT and SIGQUIT
ignored, and no shell builtin can undo that (coreutils >= 8.31; without it
the job keeps them ignored and the agent logs a warning).  ``setsid`` and
``env`` are two of the four programs a start executes, so they run with
``LC_ALL=C`` when the job does not set ``LC_ALL`` (``env`` removes it again,
see ``job_command``).

Exact exit statuses: the gate
-----------------------------
A shell's ``wait`` gives ``$? = 128 + N`` for death by signal N, which cannot
tell ``exit 137`` from SIGKILL.  The kernel keeps the raw wait status of a
zombie in field 52 of ``/proc/<pid>/stat`` (Linux >= 3.5), readable by the
same user.  So the wrapper does not reap the job by itself: it blocks opening
the FIFO ``<spool>/job<ID>/gate`` for reading, and only a writer's open
releases it.  The agent watches the job (a pidfd) and, once the job is no
longer running, opens the gate.  In the same shell command the wrapper then
reads the zombie's ``/proc`` line (dash reaps children only between
commands), reaps it with ``wait``, and writes ``status=<raw> restarts=<n>``.
It cross-checks the raw status against ``$?`` and writes ``rc=<$?>`` when
they disagree or ``/proc`` said nothing (another shell as ``/bin/sh`` that
reaps at once, a setuid program as the job's last image).

dash reaps finished children after any builtin or function it runs, so a
job that ended before the wrapper reached the gate would be reaped early and
its status approximated.  Hence a handshake on the same FIFO: the job's
first act is to open the gate for reading, which blocks until the wrapper
opens it for writing -- in the very command that then closes that end and
waits at the gate for reading.  No builtin completes between the job's
release and the wrapper's wait, so the job cannot be reaped early however
fast it ends.  Should the job die before its half of the handshake, the
wrapper would wait for a reader forever; an agent that finds the job gone
and the gate without reader therefore also opens it for reading (without
blocking), which lets the wrapper go on to the gate (``BatchRun``).

While no agent runs, nobody opens the gate: a job that ends then stays a
zombie, holding its exact status, until the next agent adopts it and opens
the gate.  So no status is lost and none is approximated, whether the agent
was alive or not when the job ended.

Worked example: ``exit 3`` -> zombie field 52 = 768, ``wait`` gives 3;
768 >> 8 == 3 agrees -> ``status=768 restarts=0`` -> sacct ``3:0``.
``kill -9 $$`` -> field 52 = 9, ``$?`` = 137 = 128 + 9 -> ``status=9``.
A fallback ``rc=137`` is read as signal 9 (``decode_rc``).

Starting in the job's cgroup: the wrapper's first act is to read its
stdin to the end.  Without cgroups that is ``/dev/null`` (no wait); with
them it is a pipe the agent closes only after moving the wrapper into the
job's cgroup (``agent.cgroups``), so the job, forked next, is born there and
none of its processes can ever be outside it.  Once the job runs, the agent
moves the wrapper out again: killing the job's cgroup spares its wrapper.

Files in ``<spool>/job<ID>/`` (directory agent-owned, 0711): ``script``,
``launch.json`` (agent), ``gate`` and ``status`` (created empty by the agent,
owned by the job's user so the wrapper may use them; a user can only lie
about their own job's status).

``status`` says ``started pid=<job> wrapper=<pid> restarts=<n>`` from the
fork on (before the job's script can run: it waits at the gate), so an agent
killed between spawning a wrapper and writing ``launch.json`` leaves a run
its successor can still adopt (``read_started``: believed only if the job
is the wrapper's child and the wrapper is ours); the final record replaces
the line.  Reference: proc(5) ``/proc/pid/stat``
field 52, fifo(7), POSIX ``sh`` "Asynchronous Lists".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "WRAPPER",
    "FAIL_MARK",
    "PID_MARK",
    "ExitRecord",
    "decode_rc",
    "job_command",
    "locale_drop_works",
    "read_started",
    "read_status",
    "write_status",
]

PID_MARK = "slurmlite-job-pid="
# the job's line when it cannot start (a file it cannot open): the only sign of a failed
# start.  Any other text on the pipe -- a loader's warning about an LD_PRELOAD it cannot
# load, printed by every exec of a helper -- is noise, not a failure.
FAIL_MARK = "slurmlite-launch-failed="

# $1 stdin, $2 stdout, $3 stderr ("" = with stdout), $4 open mode, $5 work dir,
# $6 job dir, $7 restart count, $8... the job's command.  Runs as the job's
# user; fd 2 is the agent's pipe until redirected, and a start that fails says
# so there on a FAIL_MARK line, after the shell's own reason.  "command" keeps a failed
# redirection of a special builtin from ending the shell before it says why.
# The first "read" waits until the agent closes the wrapper's stdin (at once
# for /dev/null): with cgroups, the agent first moves the wrapper into the
# job's cgroup, so the job is born there.  Every value arrives as an argument
# or in the environment; none is ever part of the script's text.
WRAPPER = r"""
set -f
read -r _
fail() { printf 'slurmlite-launch-failed=cannot open %s file %s\n' "$1" "$2" >&2; exit 1; }
dir=$6 restarts=$7 raw=
zombie() {
  set -- ${1##*) }
  [ "$1" = Z ] || return 1
  [ $# -ge 50 ] && shift 49 && raw=$1
  return 0
}
(
  command : <"$dir/gate" || fail gate "$dir/gate"
  cd -P /proc/self 2>/dev/null && SLURM_TASK_PID=${PWD##*/} && cd / ||
    read -r SLURM_TASK_PID _ </proc/self/stat
  command exec 0<"$1" || fail input "$1"
  if [ "$4" != append ]; then
    command : >"$2" || fail output "$2"
    [ -z "$3" ] || command : >"$3" || fail error "$3"
  fi
  command exec 1>>"$2" || fail output "$2"
  if [ -z "$3" ]; then exec 2>&1; else command exec 2>>"$3" || fail error "$3"; fi
  if ! CDPATH= cd -- "$5" 2>/dev/null; then
    printf "slurmstepd%s: error: couldn't chdir to '%s': going to /tmp instead\n" \
      "${SLURMD_NODENAME:+-$SLURMD_NODENAME}" "$5" >&2
    cd /tmp || exit 1
  fi
  export SLURM_TASK_PID
  shift 7
  exec "$@"
) &
job=$!
trap '' HUP INT QUIT TERM USR1 USR2 ALRM PIPE
printf 'started pid=%s wrapper=%s restarts=%s\n' "$job" "$$" "$restarts" >"$dir/status"
printf 'slurmlite-job-pid=%s\n' "$job" >&2
exec 2>/dev/null
if read -r line 4>"$dir/gate" 4>&- 3<"$dir/gate" <"/proc/$job/stat"; then
  until zombie "$line"; do
    read -r line 3<"$dir/gate" <"/proc/$job/stat" || break
  done
fi
wait "$job"
rc=$?
case $raw in '' | *[!0-9]*) raw= ;; esac
if [ -n "$raw" ]; then
  if [ $((raw & 127)) -ne 0 ]; then want=$((128 + (raw & 127))); else want=$((raw >> 8)); fi
  [ "$want" -eq "$rc" ] || raw=
fi
if [ -n "$raw" ]; then res="status=$raw"; else res="rc=$rc"; fi
printf '%s restarts=%s\n' "$res" "$restarts" >"$dir/status"
"""


def job_command(script: Path, c_locale: bool = False) -> list[str]:
    """``setsid [env --default-signal=INT,QUIT [-u LC_ALL]] <script>``, absolute paths.

    ``c_locale`` (for a job whose environment has no ``LC_ALL``): the caller
    runs the wrapper with ``LC_ALL=C``, and ``env`` removes it before the
    script starts, so the script sees the job's environment exactly while the
    two helpers skip loading the user's locale (about a third of a
    millisecond each, per job).  Use ``locale_drop_works()`` first.
    """
    setsid, env = _helpers()
    if env is None:
        return [setsid, str(script)]
    drop = ["-u", "LC_ALL"] if c_locale else []
    return [setsid, env, "--default-signal=INT,QUIT", *drop, str(script)]


def locale_drop_works() -> bool:
    """Can ``job_command(..., c_locale=True)`` remove ``LC_ALL`` again (``env`` is there)?"""
    return _helpers()[1] is not None


_HELPERS: tuple[str, str | None] | None = None


def _helpers() -> tuple[str, str | None]:
    """``setsid`` and, when it resets signals, ``env`` (else None, with a warning)."""
    global _HELPERS
    if _HELPERS is None:
        setsid = shutil.which("setsid", path="/usr/bin:/bin:/usr/sbin:/sbin")
        if setsid is None:
            raise FileNotFoundError("setsid (util-linux) not found: jobs need their own session")
        env = shutil.which("env", path="/usr/bin:/bin")
        if env is None or not _env_resets_signals(env):
            import logging

            logging.getLogger(__name__).warning(
                "event=no_default_signal: jobs start with SIGINT/SIGQUIT ignored; "
                "install coreutils >= 8.31 for env --default-signal"
            )
            env = None
        _HELPERS = (setsid, env)
    return _HELPERS


def _env_resets_signals(env: str) -> bool:
    try:
        r = subprocess.run([env, "--default-signal=INT,QUIT", "true"], capture_output=True)
    except OSError:
        return False
    return r.returncode == 0


@dataclass(frozen=True)
class ExitRecord:
    """``<spool>/job<ID>/status``: how one run of the batch script ended."""

    status: int  # raw wait status
    restarts: int
    reason: str | None = None  # "JobLaunchFailure" when it never started


def decode_rc(rc: int) -> int:
    """A shell's ``$?`` -> raw wait status: 129..192 = death by signal 1..64.

    ``decode_rc(3) == 768``, ``decode_rc(137) == 9`` (also for ``exit 137``:
    the ambiguity the gate exists to avoid).
    """
    if 128 < rc <= 128 + 64:
        return rc - 128
    return (rc & 0xFF) << 8


def write_status(job_dir: Path, status: int, restarts: int, reason: str | None = None) -> None:
    """Atomically record ``status=768 restarts=0 [reason=...]`` (agent side)."""
    line = f"status={status} restarts={restarts}" + (f" reason={reason}" if reason else "")
    tmp = job_dir / "status.tmp"
    tmp.unlink(missing_ok=True)
    tmp.write_text(line + "\n")
    os.replace(tmp, job_dir / "status")


def read_started(job_dir: Path) -> dict[str, int] | None:
    """``{"pid", "wrapper_pid", "restarts"}`` from a ``started`` line, else ``None``.

    Believed only if ``pid`` is now a child of ``wrapper_pid`` and that is a
    wrapper of this very directory: a user may write the file, not fake that."""
    from agent.procfs import parent_of

    try:
        fd = os.open(job_dir / "status", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        words = f.read(256).decode(errors="replace").split()
    fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    try:
        if words[:1] != ["started"]:
            return None
        pid, wrapper, restarts = (int(fields[k]) for k in ("pid", "wrapper", "restarts"))
        with open(f"/proc/{wrapper}/cmdline", "rb") as c:
            argv = c.read().split(b"\0")
    except (IndexError, KeyError, ValueError, OSError):
        return None
    ours = "slurmlite-wrapper" in _decoded(argv[3:4]) and str(job_dir) in _decoded(argv[4:10])
    if not ours or parent_of(pid) != wrapper:
        return None
    return {"pid": pid, "wrapper_pid": wrapper, "restarts": restarts}


def _decoded(parts: list[bytes]) -> list[str]:
    return [p.decode(errors="replace") for p in parts]


def read_status(job_dir: Path) -> ExitRecord | None:
    """The record, or ``None`` while empty, missing or unreadable."""
    try:
        fd = os.open(job_dir / "status", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        text = f.read(256).decode(errors="replace")
    fields = dict(item.split("=", 1) for item in text.split() if "=" in item)
    try:
        if "status" in fields:
            status = int(fields["status"])
        elif "rc" in fields:
            status = decode_rc(int(fields["rc"]))
        else:
            return None
        restarts = int(fields.get("restarts", 0))
    except ValueError:
        return None
    return ExitRecord(status, restarts, fields.get("reason"))
