"""Signalling a running job and killing it: the part of ``BatchRun`` that reaches its processes.

"The job's processes" are its cgroup when it has one (``agent.cgroups``):
every process it ever started, whatever session or process group it moved
to -- a double-forked ``setsid`` daemon included, since only root can move a
process out of a cgroup.  Without a cgroup they are the job's process group
(``pgid == pid`` of the batch shell), which such a process has left.  The
wrapper is never among them: it lives in its own session and, with cgroups,
its own cgroup (and its pid is spared should it still be in the job's).

The kill sequence (``terminate``, Slurm's order; KillWait from slurm.conf)::

    message -> stderr        e.g. "*** JOB 7 ON n1 CANCELLED AT ... ***"
    SIGCONT, SIGTERM         to every process (a stopped one must see TERM)
    wait up to kill_wait s   for all of them to end
    SIGKILL, repeated        each poll for unkillable_wait s: a process that
                             forked meanwhile is caught by the next round;
                             v2 kills a whole cgroup at once (cgroup.kill)
    still alive?             logged: stuck in the kernel, the node needs care

The waits are measured on the run's ``timer`` (a monotonic ``Clock``, see
``slurmlite.clock``), never read from ``time`` here: a test drives them with
a ``FakeClock``.

The message is appended as the job's user (``agent.identity.append_line``)
when the agent is root: root never opens a path a user chose.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import signal as _signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from agent.cgroups import JobCgroup
from agent.identity import append_line
from agent.procfs import group_has_live_members
from slurmlite.clock import Clock

__all__ = ["JobSignals"]

log = logging.getLogger("agent.running")


class JobSignals:
    """Signals, the kill sequence and stderr notices; mixed into ``BatchRun``."""

    _POLL_S = 0.05
    job_id: int
    pid: int
    pgid: int
    uid: int
    gid: int | None
    groups: list[int] | None
    wrapper_pid: int
    job_dir: Path
    std_err: str | None
    cgroup: JobCgroup | None
    timer: Clock  # monotonic seconds: the kill sequence's deadlines
    _group_gone: bool

    def poll(self) -> bool:
        raise NotImplementedError

    def _job_live(self) -> bool:
        raise NotImplementedError

    def signal(self, sig: int, batch_only: bool = False) -> bool:
        """``sig`` to every process of the job, or to the batch shell only.

        False: nobody was left to receive it."""
        try:
            if batch_only and self.pid > 0 and not self.poll() and self._job_live():
                os.kill(self.pid, sig)
            elif not batch_only and self.cgroup is not None and not self._group_gone:
                return self.cgroup.signal(sig, self._spare) > 0
            elif not batch_only and not self._group_gone:
                os.killpg(self.pgid, sig)
            else:
                return False
        except ProcessLookupError:
            return False
        return True

    @property
    def _spare(self) -> frozenset[int]:
        return frozenset((self.wrapper_pid,)) if self.wrapper_pid > 0 else frozenset()

    def group_alive(self) -> bool:
        """Does any process of the job (its cgroup, else its process group) still run?"""
        self.poll()
        if self._group_gone:
            return False
        if self.cgroup is not None:
            self._group_gone = not set(self.cgroup.pids()) - self._spare
        elif not group_has_live_members(self.pgid):
            self._group_gone = True
        return not self._group_gone

    def _kill_all(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill(self._spare)
        else:
            self.signal(_signal.SIGKILL)

    def terminate(
        self, kill_wait: float, message: str | None = None, unkillable_wait: float = 5.0
    ) -> bool:
        """Message, SIGCONT+SIGTERM, ``kill_wait`` s grace, SIGKILL.

        True when every process of the job is gone afterwards (False: some
        survived SIGKILL for ``unkillable_wait`` s, e.g. stuck in the kernel).
        """
        steps = self._terminate_steps(kill_wait, message, unkillable_wait)
        while (pause := next(steps)) is not None:
            time.sleep(pause)
        return self._group_gone

    async def terminate_async(
        self, kill_wait: float, message: str | None = None, unkillable_wait: float = 5.0
    ) -> bool:
        if message:  # written as the user by a short process: not on the event loop
            await asyncio.to_thread(self.write_stderr, message)
        steps = self._terminate_steps(kill_wait, None, unkillable_wait)
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
        deadline = self.timer() + kill_wait
        while self.group_alive() and self.timer() < deadline:
            yield self._POLL_S
        if self.group_alive():
            log.info("job=%s alive after KillWait=%ss: SIGKILL", self.job_id, kill_wait)
            deadline = self.timer() + unkillable_wait
            while True:
                self._kill_all()
                if not self.group_alive():
                    break
                if self.timer() >= deadline:
                    log.warning("job=%s processes survive SIGKILL; drain the node", self.job_id)
                    break
                yield self._POLL_S
        yield None

    def write_stderr(self, line: str) -> bool:
        """Append ``line`` to the job's stderr file, safely even as root.

        A root agent never opens the user's path itself: the line is
        appended by a short-lived process running as the job's user.
        Otherwise the file must already exist, be a regular file (no symlink
        followed) and, for root's own jobs, belong to root.
        """
        if not self.std_err:
            return False
        if os.geteuid() == 0 and self.uid != 0:
            gid = self.gid if self.gid is not None else _primary_gid(self.uid)
            if gid is None:
                return False
            return append_line(self.std_err, line, self.uid, gid, self.groups)
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


def _primary_gid(uid: int) -> int | None:
    """The uid's group from the password database (records of older agents lack ``gid``)."""
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return None
