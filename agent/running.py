"""One run of a batch script as the agent sees it: watch, release, signal, kill.

A ``RunningJob`` names two processes (see ``agent.wrapper``): the *job*
(the batch shell, ``pid``; its process group ``pgid == pid``) and its
*wrapper* (``wrapper_pid``), which reaps the job and writes ``status``.
The agent that launched the job has the wrapper as its child; an agent
that adopted the job after a restart watches both through ``/proc`` and
pidfds.  Either way the end is seen in three steps:

1. the job stops running (pidfd readable, or ``/proc`` says zombie/gone);
2. the agent opens the job's gate: the wrapper reads the zombie's raw wait
   status, reaps it and writes ``status``; the agent retries the gate on
   every poll while the wrapper lives (a wrapper between two opens of the
   gate would otherwise miss it);
3. the wrapper is gone: ``status`` is read; ``self.status`` is the raw wait
   status (``exit 3`` -> 768, SIGKILL -> 9), or ``None`` when nothing was
   recorded (the wrapper was killed, the node rebooted).

``terminate`` appends a message to the job's stderr, sends SIGCONT+SIGTERM
to the job's process group, waits ``kill_wait`` s for it to empty, then
SIGKILL.  The wrapper is in another session and never gets these.
Processes that leave the group (``setsid``, daemons) escape: confining them
needs cgroups.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import signal as _signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.procfs import group_has_live_members, is_live, pidfd, stat_of, zombie_status
from agent.wrapper import decode_rc, read_status

__all__ = ["RunningJob"]

log = logging.getLogger(__name__)


class RunningJob:
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
    ) -> None:
        self.job_id = job_id
        self.restarts = restarts
        self.pid = pid
        self.pgid = pid  # the job is a session leader: its pid names the group
        self.job_dir = job_dir
        self.std_err = std_err
        self.uid = uid
        self.wrapper_pid = wrapper_pid
        self.started = started if started is not None else time.time()
        self.ended: float | None = None
        self.status: int | None = None
        self.done = False
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
            "started": self.started,
        }
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(self.job_dir / "launch.json", flags, 0o644), "wb") as f:
            f.write(json.dumps(meta).encode())

    @classmethod
    def adopted(cls, job_id: int, job_dir: Path) -> RunningJob:
        """Rebuild from ``launch.json`` + ``status`` left by an earlier agent.

        Running (job or wrapper alive: watched), finished (``status`` read), or
        finished unrecorded (``done`` with ``status`` None)."""
        meta = load_meta(job_dir)
        record = read_status(job_dir)
        restarts = int(meta.get("restarts", record.restarts if record else 0))
        job = cls(
            job_id,
            restarts,
            int(meta.get("pid", 0)),
            job_dir,
            meta.get("std_err"),
            int(meta.get("uid", os.geteuid())),
            wrapper_pid=int(meta.get("wrapper_pid", 0)),
            start_ticks=meta.get("start"),
            wrapper_ticks=meta.get("wrapper_start"),
            started=meta.get("started"),
        )
        if not job._wrapper_live() and not job._job_live():
            job._finish()
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
                self.ended = time.time()
        else:
            self.ended = time.time()
            log.warning(
                "job=%s restarts=%s ended without a status record", self.job_id, self.restarts
            )
        self.done = True

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
        return self.status

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
        return self.status

    # ------------------------------------------------------------ signals

    def signal(self, sig: int, batch_only: bool = False) -> bool:
        """``sig`` to the job's process group, or to the batch shell only.

        False: nobody was left to receive it."""
        try:
            if batch_only and self.pid > 0 and not self.poll() and self._job_live():
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
        self.poll()
        if not self._group_gone and not group_has_live_members(self.pgid):
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
