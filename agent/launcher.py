"""Running a batch script on this node: spawn, watch, signal, kill (no HTTP).

Starting (``Launcher.start``)
-----------------------------
1. ``<spool>/job<ID>/`` (agent-owned, 0711: the user may pass, not list or
   plant files) gets the script as ``script`` (0700, owned by the user).
2. A tiny ``/bin/sh`` wrapper starts in a new session (``setsid``: one
   process group for all the job starts), already as the job's uid, gid and
   groups (agent root).  As the user it opens stdin, stdout and stderr (one
   file when ``std_err == std_out``), enters the work directory, exports
   ``SLURM_TASK_PID=$$`` and ``exec``-s the script, which keeps that pid.
3. Until then the wrapper's stderr is a pipe to the agent: success closes it
   silently, failure writes why.  ``start`` reads it to the end, so it
   returns once the script runs, or raises :class:`LaunchError`.

Files are opened by the user, never by root, so a job writes only where its
user may, and the agent's own credentials never change.  Truncate mode
empties the files first; every open is O_APPEND, so steps sharing a file do
not overwrite each other.  As in Slurm 22.05 (golden
``20_output_missing_dir.txt``) the output directory is never created: an
unopenable file fails the launch -> FAILED ``0:53`` (raw status 53),
reason ``JobLaunchFailure``.  A missing work directory is no failure: a line
goes to stderr and the script runs in /tmp.

Watching and killing (``RunningJob``)
-------------------------------------
``poll``/``wait``/``wait_async`` give the raw wait status (``exit 3`` ->
768, SIGKILL -> 9), also kept in ``<spool>/job<ID>/status``.  ``terminate``
appends a message to the job's stderr, sends SIGCONT+SIGTERM to the group,
waits ``kill_wait`` s for it to empty, then SIGKILL.  Zombies count as gone
(orphans are not always reaped promptly in containers); processes that
leave the group (``setsid``, daemons) escape: confining them needs cgroups.

Seam: the agent codes against :class:`Supervisor` (``start``/``adopt``).
:class:`Launcher` keeps jobs as direct children: after an agent restart it
finds a live job again (``launch.json``) but cannot learn its status; a
crash-safe supervisor (a per-job wrapper writing ``status``) can replace it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal as _signal
import stat
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from slurmlite.filepattern import resolve_output
from slurmlite.protocol import LaunchSpec

__all__ = [
    "LAUNCH_FAILED_STATUS",
    "ExitRecord",
    "LaunchError",
    "Launcher",
    "RunningJob",
    "Supervisor",
    "kill_message",
]

log = logging.getLogger(__name__)

LAUNCH_FAILED_STATUS = 53  # raw wait status Slurm 22.05 records (sacct "0:53")
LAUNCH_FAILED_REASON = "JobLaunchFailure"

# $1 stdin, $2 stdout, $3 stderr ("" = with stdout), $4 open mode, $5 work dir,
# $6... the script.  Runs as the job's user; fd 2 is the agent's pipe until
# stderr is redirected.  "command" keeps a failed redirection of a special
# builtin from ending the shell before it can say why.
_WRAPPER = r"""
fail() { printf 'cannot open %s file %s\n' "$1" "$2" >&2; exit 1; }
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
SLURM_TASK_PID=$$
export SLURM_TASK_PID
shift 5
exec "$@"
"""


class LaunchError(Exception):
    """The job could not be started; report it as ``exit_status``/``reason``."""

    exit_status = LAUNCH_FAILED_STATUS
    reason = LAUNCH_FAILED_REASON


def kill_message(job_id: int, node: str, when: str, due: str | None = "TIME LIMIT") -> str:
    """The line written to a job's stderr when the node kills it.

    ``kill_message(18, "n1", "2026-11-30T02:28:43")`` ->
    ``slurmstepd-n1: error: *** JOB 18 ON n1 CANCELLED AT 2026-11-30T02:28:43 DUE TO TIME LIMIT ***``
    (golden ``60_timeout_job_output.txt``).
    """
    suffix = f" DUE TO {due}" if due else ""
    return f"slurmstepd-{node}: error: *** JOB {job_id} ON {node} CANCELLED AT {when}{suffix} ***"


@dataclass(frozen=True)
class ExitRecord:
    """``<spool>/job<ID>/status``: how one run of the batch script ended."""

    status: int  # raw wait status
    restarts: int
    reason: str | None = None  # "JobLaunchFailure" when it never started


def write_status(job_dir: Path, status: int, restarts: int, reason: str | None = None) -> None:
    """Atomically record ``status=768 restarts=0 [reason=...]``."""
    line = f"status={status} restarts={restarts}" + (f" reason={reason}" if reason else "")
    _write_atomic(job_dir / "status", line + "\n")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_status(job_dir: Path) -> ExitRecord | None:
    try:
        text = (job_dir / "status").read_text()
    except FileNotFoundError:
        return None
    fields = dict(item.split("=", 1) for item in text.split() if "=" in item)
    return ExitRecord(int(fields["status"]), int(fields.get("restarts", 0)), fields.get("reason"))


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start time in clock ticks) from /proc, None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2 :].split()  # fields 3.. (the name may hold spaces)
    return rest[0], int(rest[2]), int(rest[19])


def _is_live(pid: int, start: int | None = None) -> bool:
    """Runs (not a zombie) and, if ``start`` is given, is still the same process."""
    info = _proc_stat(pid)
    return info is not None and info[0] != "Z" and (start is None or info[2] == start)


def _group_has_live_members(pgid: int) -> bool:
    """Zombies do not count: orphans are not always reaped promptly (containers)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):
        return True
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = _proc_stat(int(name))
            if info is not None and info[1] == pgid and info[0] != "Z":
                return True
    return False


class RunningJob:
    """One run of a batch script: its process group, exit status and kill switch.

    ``status``: raw wait status once ``done`` (``None`` only for an adopted
    job that ended unrecorded)."""

    _POLL_S = 0.05

    def __init__(
        self,
        job_id: int,
        restarts: int,
        pid: int,
        job_dir: Path,
        std_err: str | None,
        uid: int,
        popen: subprocess.Popen | None = None,
        start_ticks: int | None = None,
    ) -> None:
        self.job_id = job_id
        self.restarts = restarts
        self.pid = pid
        self.pgid = pid  # session leader: its pid names the group
        self.job_dir = job_dir
        self.std_err = std_err
        self.uid = uid
        self.status: int | None = None
        self.done = False
        self._popen = popen
        info = _proc_stat(pid) if popen is not None else None
        self._start_ticks = info[2] if info else start_ticks
        self._group_gone = pid <= 0  # never signal group 0: that is the agent's own
        self._lock = threading.Lock()

    @classmethod
    def adopted(cls, job_id: int, job_dir: Path) -> RunningJob:
        """Rebuild from ``launch.json`` (+ ``status``) left by an earlier agent."""
        record = read_status(job_dir)
        try:
            meta = json.loads((job_dir / "launch.json").read_text())
        except (OSError, ValueError):
            meta = {}
        restarts = meta.get("restarts", record.restarts if record else 0)
        pid = meta.get("pid", 0)
        uid = meta.get("uid", os.geteuid())
        job = cls(job_id, restarts, pid, job_dir, meta.get("std_err"), uid, None, meta.get("start"))
        if record is not None and record.restarts == restarts:
            job.status, job.done = record.status, True
        elif not pid or not _is_live(pid, job._start_ticks):
            job.done = True
        return job

    def record_pid(self) -> None:
        """Write ``launch.json`` so a restarted agent can find this process."""
        keys = ("pid", "restarts", "std_err", "uid")
        meta = {key: getattr(self, key) for key in keys} | {"start": self._start_ticks}
        _write_atomic(self.job_dir / "launch.json", json.dumps(meta))

    def poll(self) -> bool:
        """True once the batch shell has ended (reaping it if it is our child)."""
        with self._lock:
            if self.done:
                return True
            if self._popen is None:  # adopted: watch, cannot reap
                if _is_live(self.pid, self._start_ticks):
                    return False
                record = read_status(self.job_dir)
                ok = record is not None and record.restarts == self.restarts
                self._finish(record.status if ok and record else None, write=False)
                return True
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self._finish(None, write=False)
                return True
            if pid == 0:
                return False
            self._finish(status, write=True)
            return True

    def _finish(self, status: int | None, write: bool) -> None:
        self.status, self.done = status, True
        if self._popen is not None and status is not None:
            self._popen.returncode = os.waitstatus_to_exitcode(status)
        if write and status is not None:
            write_status(self.job_dir, status, self.restarts)

    def wait(self) -> int | None:
        """Block until the batch shell ends; its raw wait status."""
        while not self.poll():
            if self._popen is not None:
                try:  # wait without reaping; poll() reaps under the lock
                    os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
                except ChildProcessError:
                    pass
            else:  # not our child: nothing to block on but time
                time.sleep(4 * self._POLL_S)
        return self.status

    async def wait_async(self) -> int | None:
        """``wait`` for asyncio: a pidfd watched by the loop, else a thread."""
        if self.poll():
            return self.status
        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            return await asyncio.to_thread(self.wait)
        loop = asyncio.get_running_loop()
        try:
            while not self.poll():
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_reader(fd, lambda f=ready: f.done() or f.set_result(None))
                try:
                    await ready
                finally:
                    loop.remove_reader(fd)
        finally:
            os.close(fd)
        return self.status

    def signal(self, sig: int, batch_only: bool = False) -> bool:
        """``sig`` to the whole process group or the batch shell; False: nobody left."""
        try:
            if batch_only and self.pid > 0 and not self.poll():
                os.kill(self.pid, sig)
            elif not batch_only and not self._group_gone:
                os.killpg(self.pgid, sig)
            else:
                return False
        except ProcessLookupError:
            return False
        return True

    def group_alive(self) -> bool:
        """Does any process of the job's group still run?"""
        self.poll()  # a reaped leader is no member
        if not self._group_gone and not _group_has_live_members(self.pgid):
            self._group_gone = True
        return not self._group_gone

    def terminate(
        self, kill_wait: float, message: str | None = None, unkillable_wait: float = 5.0
    ) -> bool:
        """Message, SIGCONT+SIGTERM, ``kill_wait`` s grace, SIGKILL.

        True when every process of the group is gone afterwards (False: some
        survived SIGKILL for ``unkillable_wait`` s, e.g. stuck in the kernel).
        """
        steps = self._terminate_steps(kill_wait, message, unkillable_wait)
        while (pause := next(steps)) is not None:
            time.sleep(pause)
        return self._group_gone

    async def terminate_async(
        self, kill_wait: float, message: str | None = None, unkillable_wait: float = 5.0
    ) -> bool:
        steps = self._terminate_steps(kill_wait, message, unkillable_wait)
        while (pause := next(steps)) is not None:
            await asyncio.sleep(pause)
        return self._group_gone

    def _terminate_steps(
        self, kill_wait: float, message: str | None, unkillable_wait: float
    ) -> Iterator[float | None]:
        """The kill sequence: yields pauses between checks, then ``None``."""
        if message:
            self.write_stderr(message)
        self.signal(_signal.SIGCONT)
        self.signal(_signal.SIGTERM)
        for grace, sig in ((kill_wait, _signal.SIGKILL), (unkillable_wait, None)):
            deadline = time.monotonic() + grace
            while self.group_alive() and time.monotonic() < deadline:
                yield self._POLL_S
            if not self.group_alive():
                break
            if sig is not None:
                log.info("job=%s alive after KillWait=%ss: SIGKILL", self.job_id, grace)
                self.signal(sig)
        else:
            log.warning("job=%s processes survive SIGKILL; drain the node", self.job_id)
        yield None

    def write_stderr(self, line: str) -> bool:
        """Append ``line`` to the job's stderr file, safely even as root.

        The file must already exist, be a regular file (no symlink followed)
        and, when the agent is root, belong to the job's user.
        """
        if not self.std_err:
            return False
        flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.std_err, flags)
        except OSError as exc:
            log.warning("job=%s cannot append to %s: %s", self.job_id, self.std_err, exc)
            return False
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or (os.geteuid() == 0 and info.st_uid != self.uid):
                log.warning("job=%s not the job's own file=%s", self.job_id, self.std_err)
                return False
            os.write(fd, (line.rstrip("\n") + "\n").encode())
            return True
        finally:
            os.close(fd)


def _explain(complaint: str) -> str:
    """Wrapper's report -> ``cannot open output file /x: Directory nonexistent``."""
    lines = [line.strip() for line in complaint.splitlines() if line.strip()]
    ours = [line for line in lines if line.startswith("cannot open ")]
    causes = [line.rsplit(": ", 1)[-1] for line in lines if line not in ours]
    if ours and causes:
        return f"{ours[-1]}: {causes[0]}"
    return "; ".join(lines)


class Supervisor(ABC):
    """Starts batch scripts and finds them again after an agent restart."""

    @abstractmethod
    def start(self, spec: LaunchSpec) -> RunningJob:
        """Spawn the job's batch script; raises :class:`LaunchError`."""

    @abstractmethod
    def adopt(self, job_id: int) -> RunningJob | None:
        """The job as a previous agent left it, or ``None`` if unknown here."""


class Launcher(Supervisor):
    """Runs batch scripts as direct children of the agent."""

    def __init__(self, spool_dir: Path) -> None:
        self.spool_dir = Path(spool_dir)
        self.spool_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        mode = self.spool_dir.stat().st_mode
        if mode & 0o011 != 0o011 and os.geteuid() == 0:
            # job users must be able to pass through the spool to their script
            os.chmod(self.spool_dir, stat.S_IMODE(mode) | 0o011)

    def job_dir(self, job_id: int) -> Path:
        return self.spool_dir / f"job{job_id}"

    def start(self, spec: LaunchSpec) -> RunningJob:
        creds = self._credentials(spec)
        job_dir = self.job_dir(spec.job_id)
        job_dir.mkdir(mode=0o711, exist_ok=True)
        os.chmod(job_dir, 0o711)
        for name in ("status", "launch.json"):
            (job_dir / name).unlink(missing_ok=True)
        script = self._write_script(job_dir, spec, chown=bool(creds))
        paths = (spec.std_out, spec.std_err, spec.std_in)
        out, err, inp = (resolve_output(p, spec.work_dir) if p else "" for p in paths)
        err = "" if err in ("", out) else err
        mode = "append" if spec.open_mode == "append" else "truncate"
        env = dict(spec.environment)
        env.pop("SLURM_TASK_PID", None)  # the wrapper sets the real one
        argv = ["/bin/sh", "-c", _WRAPPER, "slurmlite-launch"]
        argv += [inp or "/dev/null", out, err, mode, spec.work_dir, str(script)]
        pipes = {
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.DEVNULL,
            "stderr": subprocess.PIPE,
        }
        try:
            proc = subprocess.Popen(
                argv, cwd="/", env=env, start_new_session=True, **pipes, **creds
            )
        except (OSError, ValueError) as exc:
            write_status(job_dir, LAUNCH_FAILED_STATUS, spec.restarts, LAUNCH_FAILED_REASON)
            raise LaunchError(f"job {spec.job_id}: cannot spawn batch script: {exc}") from exc
        assert proc.stderr is not None
        with proc.stderr:
            complaint = proc.stderr.read().decode(errors="replace").strip()
        if complaint:
            proc.wait()
            write_status(job_dir, LAUNCH_FAILED_STATUS, spec.restarts, LAUNCH_FAILED_REASON)
            detail = _explain(complaint)
            log.warning("launch failed job=%s detail=%r", spec.job_id, detail)
            raise LaunchError(f"job {spec.job_id}: launch failed: {detail}")
        job = RunningJob(spec.job_id, spec.restarts, proc.pid, job_dir, err or out, spec.uid, proc)
        job.record_pid()
        log.info("launched job=%s pid=%s uid=%s", spec.job_id, proc.pid, spec.uid)
        return job

    def _credentials(self, spec: LaunchSpec) -> dict[str, object]:
        """Popen arguments that switch to the job's user ({} = stay as we are)."""
        me = os.geteuid()
        if me != 0:
            if spec.uid != me:
                raise LaunchError(
                    f"job {spec.job_id}: agent runs as uid {me} and cannot start a job "
                    f"for uid {spec.uid}; run slurmd as root to serve several users"
                )
            return {}
        try:
            groups = os.getgrouplist(spec.user, spec.gid)
        except OSError:
            groups = [spec.gid]
        return {"user": spec.uid, "group": spec.gid, "extra_groups": groups}

    def _write_script(self, job_dir: Path, spec: LaunchSpec, chown: bool) -> Path:
        path = job_dir / "script"
        path.unlink(missing_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(path, flags, 0o700), "wb") as f:
            os.fchmod(f.fileno(), 0o700)
            if chown:
                os.fchown(f.fileno(), spec.uid, spec.gid)
            f.write(spec.script.encode())
        return path

    def adopt(self, job_id: int) -> RunningJob | None:
        """A job started by an earlier agent: finished (``status`` from the
        record, or ``None`` if it ended unrecorded), still running (watched,
        not reapable), or ``None`` when this spool knows nothing of it."""
        job_dir = self.job_dir(job_id)
        return RunningJob.adopted(job_id, job_dir) if job_dir.is_dir() else None
