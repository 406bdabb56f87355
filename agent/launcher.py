"""Starting batch scripts on this node and finding them again after a restart.

Starting (``Launcher.start``)
-----------------------------
1. ``<spool>/job<ID>/`` (agent-owned, 0711: the user may pass, not list or
   plant files) gets the script as ``script`` (0700, owned by the user), an
   empty ``status`` and the FIFO ``gate`` (both owned by the user).  The
   directory of a finished run of the same user is reused when there is one
   (``agent.rundirs``: creating files is dear on some file systems).
2. The wrapper (``agent.wrapper``) starts in a new session, already as the
   job's uid, gid and groups (agent root).  It forks the job, which, as the
   user, opens stdin, stdout and stderr (one file when ``std_err ==
   std_out``), enters the work directory, exports ``SLURM_TASK_PID`` (its own
   pid) and ``exec``-s ``setsid``, ``env`` and the script, which keeps that pid.
3. Until then the wrapper's stderr is a pipe to the agent: the wrapper
   writes the job's pid there, the job writes why it could not start, if it
   could not, on a line of its own (``FAIL_MARK``).  ``start`` reads it to
   the end, so it returns once the script runs, or raises
   :class:`LaunchError`.  Only those two lines decide: a start fails when the
   job said so or no pid came, never because of other text on the pipe (an
   ``LD_PRELOAD`` the loader cannot load makes it warn at every exec).
4. ``launch.json`` records both pids with their start times, so that a
   restarted agent adopts the run (``adopt``) instead of losing it.

``start`` is ``spawn`` (steps 1-2), reading the pipe, ``settle`` (3-4).  The
agent calls the parts itself and reads the pipe from its event loop, so one
thread starts many jobs at once: while one wrapper gets going (most of a
start), the next is spawned.  A spawn costs the agent little: when the job's
user is the agent's own (uid, gid and groups), ``subprocess`` can ``vfork``.

Files are opened by the user, never by root, so a job writes only where its
user may, and the agent's own credentials never change.  Truncate mode
empties the files first; every open is O_APPEND, so steps sharing a file do
not overwrite each other.  As in Slurm 22.05 (golden
``20_output_missing_dir.txt``) the output directory is never created: an
unopenable file fails the launch -> FAILED ``0:53`` (raw status 53),
reason ``JobLaunchFailure``.  A missing work directory is no failure: a line
goes to stderr and the script runs in /tmp.

After a restart (``job_ids``, ``adopt``, ``ran``, ``forget``)
--------------------------------------------------------------
Every ``job<ID>`` directory is one run that the controller has not yet
acknowledged: running (adopted and watched), ended with a ``status`` (to
report), or ended unrecorded (the controller decides).  ``forget`` drops
a run's directory (parked for reuse, or removed) once its completion is
acknowledged, so a completion is sent until acknowledged and never after.

As whom and where (``agent.confine``)
------------------------------------
The wrapper runs as the job's user with the groups ``initgroups`` gives,
and the login variables the environment lacks come from the password entry
(``agent.identity``); a uid without an entry on this node fails the launch
("User not found on host") before anything is spawned.  Where the node has
cgroups (``agent.isolation``), the job is born in its own cgroup with its
memory limit (``agent.cgroups``): the wrapper waits on its stdin until the
agent has moved it in, forks the job, and is moved out again in ``settle``.

Seam: the agent codes against :class:`Supervisor` (``start``/``adopt``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import stat
import subprocess
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from agent.cgroups import CgroupTree, JobCgroup
from agent.confine import (
    LAUNCH_FAILED_REASON,
    LAUNCH_FAILED_STATUS,
    LaunchError,
    credentials,
    enter_cgroup,
    make_cgroup,
)
from agent.identity import JobUser, fill_login_env
from agent.isolation import Isolation, open_tree
from agent.launch_causes import open_cause
from agent.rundirs import RunDirs, fresh_file, gate_fifo
from agent.running import BatchRun, load_meta
from agent.wrapper import (
    FAIL_MARK,
    PID_MARK,
    WRAPPER,
    ExitRecord,
    job_command,
    locale_drop_works,
    read_started,
    read_status,
    write_status,
)
from slurmlite.clock import Clock, monotonic_clock, system_clock
from slurmlite.filepattern import resolve_output
from slurmlite.protocol import LaunchSpec
from slurmlite.scriptbytes import stored_bytes

__all__ = [
    "LAUNCH_FAILED_REASON",
    "LAUNCH_FAILED_STATUS",
    "ExitRecord",
    "LaunchError",
    "Launcher",
    "BatchRun",
    "Spawn",
    "Supervisor",
    "kill_message",
    "read_status",
    "write_status",
]

log = logging.getLogger(__name__)

# Held while a script is open for writing and while a spawn forks and execs.
# A child forked while another thread writes a script inherits that file open
# for writing until it execs; the script's own exec would then fail (ETXTBSY).
# Popen returns once its child has exec'ed, so the two never overlap; the
# slow part of a start (waiting for the wrapper's report) runs unlocked, and
# several starts overlap there.
_EXEC_LOCK = threading.Lock()


def kill_message(job_id: int, node: str, when: str, due: str | None = "TIME LIMIT") -> str:
    """The line written to a job's stderr when the node kills it.

    ``kill_message(18, "n1", "2026-11-30T02:28:43")`` ->
    ``slurmstepd-n1: error: *** JOB 18 ON n1 CANCELLED AT 2026-11-30T02:28:43 DUE TO TIME LIMIT ***``
    (golden ``60_timeout_job_output.txt``).
    """
    suffix = f" DUE TO {due}" if due else ""
    return f"slurmstepd-{node}: error: *** JOB {job_id} ON {node} CANCELLED AT {when}{suffix} ***"


def _explain(lines: list[str]) -> str:
    """The wrapper's report -> ``cannot open output file /x: Directory nonexistent``.

    The job's ``FAIL_MARK`` line names what it could not open; the line just
    before it (the PID line aside: the wrapper writes that concurrently) is the
    shell's own message, whose last part is the reason.  Lines before those,
    such as a loader's warnings, are left out.
    """
    lines = [line.strip() for line in lines if line.strip()]
    marked = [i for i, line in enumerate(lines) if line.startswith(FAIL_MARK)]
    if not marked:  # the wrapper ended before saying anything of its own
        return "; ".join(line for line in lines if not line.startswith(PID_MARK))
    first = marked[0]
    ours = lines[marked[-1]][len(FAIL_MARK) :]
    before = [line for line in lines[:first] if not line.startswith(PID_MARK)]
    return f"{ours}: {before[-1].rsplit(': ', 1)[-1]}" if before else ours


@dataclass
class Spawn:
    """A start under way: the wrapper runs, its report on ``proc.stderr`` is still unread."""

    spec: LaunchSpec
    job_dir: Path
    proc: subprocess.Popen[bytes]
    std_err: str  # where the job's stderr goes (the kill message is appended there)
    user: JobUser | None = None  # None: the agent's own user
    cgroup: JobCgroup | None = None


class Supervisor(ABC):
    """Starts batch scripts and finds them again after an agent restart."""

    @abstractmethod
    def start(self, spec: LaunchSpec) -> BatchRun:
        """Spawn the job's batch script; raises :class:`LaunchError`."""

    @abstractmethod
    def adopt(self, job_id: int) -> BatchRun | None:
        """The job as a previous agent left it, or ``None`` if unknown here."""


class Launcher(Supervisor):
    """Runs batch scripts under per-job shell wrappers that outlive the agent.

    ``clock`` (Unix seconds) stamps when runs start and end; ``timer``
    (monotonic seconds) measures waits: kill grace, caches.  Both default to
    the real ones; a test passes a ``slurmlite.clock.FakeClock``.
    """

    def __init__(
        self,
        spool_dir: Path,
        isolation: Isolation | None = None,
        clock: Clock = system_clock,
        timer: Clock = monotonic_clock,
    ) -> None:
        self.clock = clock
        self.timer = timer
        self.spool_dir = Path(spool_dir)
        self.spool_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        mode = self.spool_dir.stat().st_mode
        if mode & 0o011 != 0o011 and os.geteuid() == 0:
            # job users must be able to pass through the spool to their script
            os.chmod(self.spool_dir, stat.S_IMODE(mode) | 0o011)
        self.rundirs = RunDirs(self.spool_dir)
        self.cgroups: CgroupTree | None = open_tree(
            isolation or Isolation(), self.spool_dir, timer=timer
        )
        if self.cgroups is not None:
            # cgroups of runs this spool no longer knows: their processes must not live on
            live = {(j, r) for j in self.job_ids() if (r := self.run_of(j)) is not None}
            self.cgroups.sweep(live)

    def job_dir(self, job_id: int) -> Path:
        return self.spool_dir / f"job{job_id}"

    def start(self, spec: LaunchSpec) -> BatchRun:
        """Spawn the job and wait for the wrapper's report: ``spawn``, read, ``settle``."""
        spawn = self.spawn(spec)
        assert spawn.proc.stderr is not None
        with spawn.proc.stderr:
            said = spawn.proc.stderr.read()
        return self.settle(spawn, said)

    def spawn(self, spec: LaunchSpec) -> Spawn:
        """Steps 1-2: prepare the run's directory and start its wrapper (not waited for).

        The caller reads ``proc.stderr`` to the end (blocking, or from an
        event loop) and hands what it said to ``settle``.
        """
        creds, user = credentials(spec, self.timer())
        job_dir = self.job_dir(spec.job_id)
        owner = (spec.uid, spec.gid) if creds else None
        uid = spec.uid if owner else os.geteuid()  # who the run's files will belong to
        try:
            self.rundirs.make(job_dir, uid)
            with _EXEC_LOCK:  # see _EXEC_LOCK: no spawn while a script is open for writing
                script = self._write_script(job_dir, spec, owner, uid)
            self._user_files(job_dir, owner, uid)
        except OSError as exc:
            write_status(job_dir, LAUNCH_FAILED_STATUS, spec.restarts, LAUNCH_FAILED_REASON)
            raise LaunchError(f"job {spec.job_id}: cannot prepare {job_dir}: {exc}") from exc
        paths = (spec.std_out, spec.std_err, spec.std_in)
        out, err, inp = (resolve_output(p, spec.work_dir) if p else "" for p in paths)
        err = "" if err in ("", out) else err
        mode = "append" if spec.open_mode == "append" else "truncate"
        env = dict(spec.environment)
        env.pop("SLURM_TASK_PID", None)  # the job sets the real one
        if user is not None:
            fill_login_env(env, user)
        argv = ["/bin/sh", "-c", WRAPPER, "slurmlite-wrapper"]
        argv += [inp or "/dev/null", out, err, mode, spec.work_dir, str(job_dir)]
        try:
            cgroup = make_cgroup(self.cgroups, spec)
        except LaunchError:
            write_status(job_dir, LAUNCH_FAILED_STATUS, spec.restarts, LAUNCH_FAILED_REASON)
            raise
        try:
            c_locale = "LC_ALL" not in env and locale_drop_works()
            if c_locale:
                env["LC_ALL"] = "C"  # for the helpers only: removed before the script runs
            argv += [str(spec.restarts), *job_command(script, c_locale), *spec.script_args]
            with _EXEC_LOCK:
                proc = subprocess.Popen(
                    argv,
                    cwd="/",
                    env=env,
                    start_new_session=True,
                    stdin=subprocess.PIPE if cgroup is not None else subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    **creds,  # type: ignore[arg-type]
                )
        except (OSError, ValueError) as exc:
            self._failed(job_dir, spec, cgroup)
            raise LaunchError(f"job {spec.job_id}: cannot spawn batch script: {exc}") from exc
        if cgroup is not None:
            try:
                enter_cgroup(proc, cgroup, spec.job_id)
            except LaunchError:
                self._failed(job_dir, spec, cgroup)
                raise
        return Spawn(spec, job_dir, proc, err or out, user, cgroup)

    def settle(self, spawn: Spawn, said: bytes) -> BatchRun:
        """Steps 3-4: the wrapper said the job's pid (it runs) or why it could not start."""
        spec, job_dir, proc = spawn.spec, spawn.job_dir, spawn.proc
        lines = said.decode(errors="replace").splitlines()
        pids = [line[len(PID_MARK) :] for line in lines if line.startswith(PID_MARK)]
        # failed: the job said so, or the wrapper ended without naming the job; other
        # text (a loader's warning on every exec) does not decide a start
        failed = any(line.startswith(FAIL_MARK) for line in lines)
        if failed or not pids or not pids[0].isdigit():
            if pids and pids[0].isdigit():
                # the job, ended or (the wrapper died before their handshake) stuck at
                # the gate; its pid is safe to use: the wrapper has not reaped it
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pids[0]), signal.SIGKILL)
            proc.kill()  # the wrapper ignores TERM
            proc.wait()
            with contextlib.suppress(OSError):
                os.unlink(job_dir / "gate")  # a failed run's directory is not reused
            self._failed(job_dir, spec, spawn.cgroup)
            detail = _explain(lines) or "the wrapper ended early"
            log.warning("event=launch_failed job=%s detail=%r", spec.job_id, detail)
            raise LaunchError(
                f"job {spec.job_id}: launch failed: {detail}", cause=open_cause(lines)
            )
        if spawn.cgroup is not None and self.cgroups is not None:
            try:
                self.cgroups.park_wrapper(proc.pid)  # killing the job must spare its wrapper
            except OSError as exc:
                log.warning("event=wrapper_not_parked job=%s error=%r", spec.job_id, str(exc))
        job = BatchRun(
            spec.job_id,
            spec.restarts,
            int(pids[0]),
            job_dir,
            spawn.std_err,
            spec.uid,
            wrapper_pid=proc.pid,
            wrapper=proc,
            gid=spec.gid,
            groups=list(spawn.user.groups) if spawn.user else None,
            cgroup=spawn.cgroup,
            node=spec.environment.get("SLURMD_NODENAME", ""),
            clock=self.clock,
            timer=self.timer,
        )
        job.record()
        log.debug(
            "event=spawned job=%s pid=%s wrapper=%s uid=%s",
            spec.job_id,
            job.pid,
            proc.pid,
            spec.uid,
        )
        return job

    def _failed(self, job_dir: Path, spec: LaunchSpec, cgroup: JobCgroup | None) -> None:
        write_status(job_dir, LAUNCH_FAILED_STATUS, spec.restarts, LAUNCH_FAILED_REASON)
        if cgroup is not None:
            cgroup.retire()

    def _write_script(
        self, job_dir: Path, spec: LaunchSpec, owner: tuple[int, int] | None, uid: int
    ) -> Path:
        path = job_dir / "script"
        with os.fdopen(fresh_file(path, 0o700, owner, uid), "wb") as f:
            f.write(stored_bytes(spec.script))  # byte for byte as submitted
        return path

    @staticmethod
    def _user_files(job_dir: Path, owner: tuple[int, int] | None, uid: int) -> None:
        """The empty ``status`` and the FIFO ``gate``, both the wrapper's to use."""
        os.close(fresh_file(job_dir / "status", 0o600, owner, uid))
        gate_fifo(job_dir / "gate", owner, uid)

    # ------------------------------------------------------- after a restart

    def job_ids(self) -> list[int]:
        """Every job with a directory in this spool, in id order."""
        ids = []
        for path in self.spool_dir.glob("job*"):
            if path.name[3:].isdigit() and path.is_dir():
                ids.append(int(path.name[3:]))
        return sorted(ids)

    def run_of(self, job_id: int) -> int | None:
        """The restart count of the run this spool holds for ``job_id``, if any."""
        job_dir = self.job_dir(job_id)
        meta = load_meta(job_dir) or read_started(job_dir) or {}
        if "restarts" in meta:
            return int(meta["restarts"])
        record = read_status(job_dir)
        return record.restarts if record else None

    def adopt(self, job_id: int) -> BatchRun | None:
        """A run started by an earlier agent: running (watched: signals and
        ``terminate`` work, the end is seen and its status read), finished
        (``status`` from the record, ``None`` if it ended unrecorded), or
        ``None`` when this spool knows nothing of the job."""
        job_dir = self.job_dir(job_id)
        if not job_dir.is_dir() or self.run_of(job_id) is None:
            return None
        return BatchRun.adopted(job_id, job_dir, self.cgroups, self.clock, self.timer)

    def forget(self, job_id: int, restarts: int) -> bool:
        """Drop the run's directory (its completion was acknowledged): parked for
        reuse (``agent.rundirs``) or removed.

        Only that run: a newer run of the same job (requeued here) stays."""
        if self.run_of(job_id) != restarts:
            return False
        job_dir = self.job_dir(job_id)
        if self.cgroups is not None:  # normally gone when the run ended; a busy one is retried
            self.cgroups.retry()
            path = self.cgroups.job_path(job_id, restarts)
            if path.is_dir():
                JobCgroup(path, self.cgroups.version, self.cgroups).retire()
        if not self.rundirs.park(job_dir):
            shutil.rmtree(job_dir, ignore_errors=True)
        return True
