"""One run of a batch script as the agent sees it: watch, release, signal, kill.

A ``BatchRun`` names two processes (see ``agent.wrapper``): the *job* (the
batch shell, ``pid``; its process group ``pgid == pid``) and its *wrapper*
(``wrapper_pid``), which reaps the job and writes ``status``.  (A node's
other kind of run is a job step's tasks, ``agent.steps.StepRun``; the
scheduler's ``RunningJob`` is something else again: a job's allocation as
policy sees it.)  The agent that launched the job has the wrapper as its
child; an agent that adopted the job after a restart watches both through
``/proc`` and pidfds.  Either way the end is seen in three steps:

1. the job stops running (pidfd readable, or ``/proc`` says zombie/gone);
2. the agent opens the job's gate: the wrapper reads the zombie's raw wait
   status, reaps it and writes ``status``; the agent retries the gate on
   every poll while the wrapper lives (a wrapper between two opens of the
   gate would otherwise miss it);
3. the wrapper is gone: ``status`` is read; ``self.status`` is the raw wait
   status (``exit 3`` -> 768, SIGKILL -> 9), or ``None`` when nothing was
   recorded (the wrapper was killed, the node rebooted).

``terminate`` appends a message to the job's stderr, sends SIGCONT+SIGTERM
to the job's processes, waits ``kill_wait`` s for them to end, then
SIGKILL.  The wrapper is in another session (and cgroup) and never gets
these.  "The job's processes" are its cgroup when it has one
(``agent.cgroups``): nothing escapes, not even ``setsid`` or a double fork;
without one, its process group, which such processes leave.

With a cgroup, the end of a run also (step 3) reads the cgroup's OOM count:
a run in which the kernel killed a process for want of memory is recorded
as raw status ``SIG_OOM`` (253; the controller ends the job OUT_OF_MEMORY,
as Slurm does), with Slurm's notice in the job's stderr; then whatever is
left in the cgroup is killed and the cgroup removed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.cgroups import SIG_OOM, CgroupTree, JobCgroup
from agent.killing import JobSignals
from agent.procfs import is_live, pidfd, stat_of, zombie_status
from agent.wrapper import decode_rc, read_started, read_status, write_status
from slurmlite.clock import Clock, monotonic_clock, system_clock

__all__ = ["OOM_REASON", "BatchRun"]

log = logging.getLogger(__name__)

OOM_REASON = "OutOfMemory"  # the status record's reason once an OOM kill was seen


class BatchRun(JobSignals):
    """Handle on one run; ``done`` once its wrapper is gone and ``status`` read."""

    _POLL_S = 0.05
    _GATE_RETRY_S = 0.002

    def __init__(
        self,
        job_id: int,
        restarts: int,
        pid: int,
        job_dir: Path,
        std_err: str | None,
        uid: int,
        wrapper_pid: int = 0,
        wrapper: subprocess.Popen[bytes] | None = None,
        start_ticks: int | None = None,
        wrapper_ticks: int | None = None,
        started: float | None = None,
        gid: int | None = None,
        groups: list[int] | None = None,
        cgroup: JobCgroup | None = None,
        node: str = "",
        clock: Clock = system_clock,
        timer: Clock = monotonic_clock,
    ) -> None:
        self.job_id = job_id
        self.restarts = restarts
        self.pid = pid
        self.pgid = pid  # the job is a session leader: its pid names the group
        self.job_dir = job_dir
        self.std_err = std_err
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.cgroup = cgroup
        self.node = node
        # called once when the job's process is first seen ended, before it is reaped and
        # its cgroup removed (agent.sampling takes its last sample there)
        self.on_end: Callable[[BatchRun], None] | None = None
        self.wrapper_pid = wrapper_pid
        self.clock = clock  # Unix seconds: when the run started and ended
        self.timer = timer  # monotonic seconds: the kill sequence's waits
        self.started = started if started is not None else clock()
        self.ended: float | None = None
        self.status: int | None = None
        self.done = False
        # lines for the job's stderr found while finishing (the OOM notice): written by
        # ``wait``/``wait_async`` (in a thread there: writing as the user may take a while)
        self.notices: list[str] = []
        self.mem_peak = 0  # bytes: the cgroup's memory peak, read when the OOM killer struck
        self._wrapper = wrapper
        if start_ticks is None and (info := stat_of(pid)):
            start_ticks = info[2]
        if wrapper_ticks is None and wrapper_pid and (info := stat_of(wrapper_pid)):
            wrapper_ticks = info[2]
        self._start_ticks = start_ticks
        self._wrapper_ticks = wrapper_ticks
        self._group_gone = pid <= 0  # never signal group 0: that is the agent's own
        self._gate_missed = False
        self._seen_status: int | None = None  # read from the zombie by this agent, if alive then
        self._lock = threading.Lock()
        self._fds = {"job": pidfd(pid, start_ticks), "wrapper": pidfd(wrapper_pid, wrapper_ticks)}

    # ------------------------------------------------------------ records

    def record(self) -> None:
        """Write ``launch.json`` so a restarted agent can find both processes.

        Written in place (a reused run directory keeps the file's inode, see
        ``agent.rundirs``): cut short by a crash, it holds a prefix of a JSON
        object, which is no JSON, and reads as no record, like a missing file.
        """
        meta = {
            "pid": self.pid,
            "start": self._start_ticks,
            "wrapper_pid": self.wrapper_pid,
            "wrapper_start": self._wrapper_ticks,
            "restarts": self.restarts,
            "std_err": self.std_err,
            "uid": self.uid,
            "gid": self.gid,
            "groups": self.groups,
            "cgroup": str(self.cgroup.path) if self.cgroup else None,
            "node": self.node,
            "started": self.started,
        }
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(self.job_dir / "launch.json", flags, 0o644), "wb") as f:
            f.write(json.dumps(meta).encode())

    @classmethod
    def adopted(
        cls,
        job_id: int,
        job_dir: Path,
        tree: CgroupTree | None = None,
        clock: Clock = system_clock,
        timer: Clock = monotonic_clock,
    ) -> BatchRun:
        """Rebuild from ``launch.json`` + ``status`` left by an earlier agent.

        Running (job or wrapper alive: watched), finished (``status`` read), or
        finished unrecorded (``done`` with ``status`` None).  The run's cgroup
        is found again in ``tree`` (our own cgroups only)."""
        # no launch.json: the earlier agent died between the spawn and writing it
        meta = load_meta(job_dir) or read_started(job_dir) or {}
        cgroup = tree.adopt(meta.get("cgroup")) if tree is not None else None
        wrapper_pid = int(meta.get("wrapper_pid", 0))
        if cgroup is not None and wrapper_pid in cgroup.pids() and tree is not None:
            tree.park_wrapper(wrapper_pid)  # the earlier agent died before moving it out
        record = read_status(job_dir)
        restarts = int(meta.get("restarts", record.restarts if record else 0))
        job = cls(
            job_id,
            restarts,
            int(meta.get("pid", 0)),
            job_dir,
            meta.get("std_err"),
            int(meta.get("uid", os.geteuid())),
            wrapper_pid=wrapper_pid,
            start_ticks=meta.get("start"),
            wrapper_ticks=meta.get("wrapper_start"),
            started=meta.get("started"),
            gid=meta.get("gid"),
            groups=meta.get("groups"),
            cgroup=cgroup,
            node=str(meta.get("node") or ""),
            clock=clock,
            timer=timer,
        )
        if not job._wrapper_live() and not job._job_live():
            job._finish()
            job.flush_notices()
        return job

    # ------------------------------------------------------------ watching

    def _job_live(self) -> bool:
        return self.pid > 0 and is_live(self.pid, self._start_ticks)

    def _wrapper_live(self) -> bool:
        if self._wrapper is not None:
            return self._wrapper.poll() is None  # our child: this reaps it
        return self.wrapper_pid > 0 and is_live(self.wrapper_pid, self._wrapper_ticks)

    def _open_gate(self) -> None:
        """Let the wrapper reap the job (it waits for a writer's open)."""
        gate = self.job_dir / "gate"
        flags = os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            os.close(os.open(gate, os.O_WRONLY | flags))
            self._gate_missed = False
        except OSError:
            # no reader right now (ENXIO): the wrapper is a few instructions
            # short of the gate (a job that ended at once), or waits for a job
            # that died before its handshake (a reader's open releases it, see
            # agent.wrapper); retry very soon
            try:
                os.close(os.open(gate, os.O_RDONLY | flags))
            except OSError:
                pass
            self._gate_missed = True

    def _finish(self) -> None:
        record = read_status(self.job_dir)
        ok = record is not None and record.restarts == self.restarts
        self.status = record.status if ok and record else None
        if ok and self._seen_status is not None and _same_meaning(self._seen_status, self.status):
            # the wrapper may have fallen back to the shell's $? (128+N cannot tell
            # "exit 137" from SIGKILL); what this agent read from the zombie is exact
            self.status = self._seen_status
        if ok:
            try:
                self.ended = (self.job_dir / "status").stat().st_mtime
            except OSError:
                self.ended = self.clock()
        else:
            self.ended = self.clock()
            log.warning(
                "job=%s restarts=%s ended without a status record", self.job_id, self.restarts
            )
        if self.cgroup is not None:
            kills = self.cgroup.oom_kills()
            if ok and record and record.reason != OOM_REASON and kills:
                self._out_of_memory(kills)
            self.cgroup.retire()  # what the script left running ends with it
        self.done = True

    def _out_of_memory(self, kills: int) -> None:
        """Record the run as ended by the OOM killer (written first: survives a crash)."""
        self.status = SIG_OOM
        write_status(self.job_dir, SIG_OOM, self.restarts, OOM_REASON)
        if self.cgroup is not None:
            self.mem_peak = self.cgroup.memory_peak()  # for the job's SystemComment
        where = f"slurmstepd-{self.node}" if self.node else "slurmstepd"
        self.notices.append(
            f"{where}: error: Detected {kills} oom-kill event(s) in StepId={self.job_id}.batch. "
            "Some of your processes may have been killed by the cgroup out-of-memory handler."
        )
        log.info("event=oom_kill job=%s kills=%s", self.job_id, kills)

    def _close_fds(self) -> None:
        """Close the pidfds (after the waiters are done with them)."""
        fds = getattr(self, "_fds", {})
        for name, fd in list(fds.items()):
            fds[name] = None
            if fd is not None:
                os.close(fd)

    def __del__(self) -> None:
        self._close_fds()

    def poll(self) -> bool:
        """True once the run has ended and its status (if any) is known."""
        with self._lock:
            if self.done:
                return True
            if self._job_live():
                return False
            if self._seen_status is None:
                self._seen_status = zombie_status(self.pid, self._start_ticks)
            if self.on_end is not None:
                hook, self.on_end = self.on_end, None
                hook(self)
            if self._wrapper_live():
                self._open_gate()
                return False
            self._finish()
            return True

    def _waitable(self) -> tuple[int | None, float]:
        """What to wait on next (the job's pidfd, then its wrapper's) and for how long."""
        if self._job_live():
            return self._fds["job"], 0.5
        if self._gate_missed:
            return None, self._GATE_RETRY_S
        return self._fds["wrapper"], 0.5

    def wait(self) -> int | None:
        """Block until the run has ended; its raw wait status."""
        while not self.poll():
            fd, timeout = self._waitable()
            if fd is None:
                time.sleep(min(timeout, self._POLL_S))
            else:
                select.select([fd], [], [], timeout)
        self._close_fds()
        self.flush_notices()
        return self.status

    def flush_notices(self) -> None:
        """Append the notices found while finishing to the job's stderr, in order."""
        while self.notices:
            self.write_stderr(self.notices.pop(0))

    async def wait_async(self) -> int | None:
        """``wait`` for asyncio: pidfds watched by the loop, else polling."""
        loop = asyncio.get_running_loop()
        while not self.poll():
            fd, timeout = self._waitable()
            if fd is None:
                await asyncio.sleep(min(timeout, self._POLL_S))
                continue
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, lambda f=ready: f.done() or f.set_result(None))
            try:
                await asyncio.wait_for(ready, timeout=timeout)
            except TimeoutError:
                pass
            finally:
                loop.remove_reader(fd)
        self._close_fds()
        if self.notices:  # before the status is reported, off the event loop
            await asyncio.to_thread(self.flush_notices)
        return self.status


def load_meta(job_dir: Path) -> dict[str, Any]:
    """``launch.json`` as a dict ({} when missing or broken)."""
    try:
        meta = json.loads((job_dir / "launch.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _same_meaning(exact: int, recorded: int | None) -> bool:
    """Does a shell's view of a run's end (``recorded``, maybe decoded from ``$?``) fit ``exact``?"""
    if recorded is None:
        return False
    shell_rc = 128 + (exact & 0x7F) if exact & 0x7F else (exact >> 8) & 0xFF
    return recorded in (exact, decode_rc(shell_rc))
