"""Cut off from the controller: the agent kills its runs before they are run again elsewhere.

The controller marks a node DOWN after ``SlurmdTimeout`` seconds without
hearing from it and requeues its jobs onto other nodes.  A node whose link
to the controller is cut does not die: without this module its runs would go
on, and a requeued job would run twice at once, both writing the same
output and checkpoint files.  So the agent watches its own side of the
silence and fences itself: the runs are killed a little *before* the
controller can give their jobs away.

Rules (``ContactWatch``):

* **contact** is a request that got an answer from the controller (any
  status: the controller heard it) or a signed order from it.  An answered
  request counts from the moment it was *sent*, so the agent's silence is
  never shorter than the controller's.
* after ``fence_after = SlurmdTimeout - margin`` seconds without contact,
  ``margin = min(max(1, heartbeat), SlurmdTimeout / 2)``, the agent probes
  the controller's port with a bare TCP connect (``reachable``).  Only a
  probe that gets *no answer at all* (timeout, no route) means cut off:
  then every batch run and step here is terminated (``KillWait`` applies),
  once per outage.  A connection accepted or refused means the controller's
  host answers: the controller is stalled (SIGSTOP, a long pass) or down,
  and in both cases it is not counting this node's silence, so the runs
  are kept (``controller.nodes.service``: a stalled controller gives every
  node a fresh ``SlurmdTimeout``, a restarted one waits for reports).
* a fenced run still reports its end, marked ``fenced``.  The controller
  ignores it when the job was requeued meanwhile (the usual case); if it
  had not yet marked the node DOWN, it treats the run as lost on the node,
  like a vanished one (``controller.nodes.reconcile``): requeued or
  NODE_FAIL, never recorded as the job's own exit.
* ``SlurmdTimeout=0`` (nodes are never marked DOWN) disables fencing.

Example: SlurmdTimeout 6 s, heartbeat 1 s: margin 1 s, fence_after 5 s.  The
link is cut at t=100 just after a heartbeat sent at 99.9 was answered;
heartbeats time out from then on; at t=104.9 the probe gets no answer and
the runs get SIGTERM (SIGKILL after KillWait).  The controller marks the
node DOWN after t=105.9 and requeues.  Had the controller process merely
been stopped, the probe's connect would have been accepted and nothing
killed.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agent.launcher import kill_message
from agent.steps import cancel_message, cancel_time
from agent.steptable import StepTable
from slurmlite.clock import Clock
from slurmlite.config import Config

__all__ = ["ContactWatch", "Fencing", "reachable", "watch_forever"]

log = logging.getLogger("slurmd")
PROBE_TIMEOUT = 2.0  # seconds a probe's connect may take before the host counts as silent
ANSWERED = {errno.ECONNREFUSED, errno.ECONNRESET}  # the host is there; nobody listens


class ContactWatch:
    """How long the controller has been silent, and whether that calls for fencing."""

    def __init__(self, timeout: float, heartbeat: float, timer: Clock) -> None:
        self.timeout = float(timeout)
        self.heartbeat = float(heartbeat)
        self.timer = timer
        self.last = timer()  # an agent starts in contact: nothing runs yet
        self.fenced = False  # fenced during the current silence

    @property
    def enabled(self) -> bool:
        return self.timeout > 0

    @property
    def fence_after(self) -> float:
        """Seconds of silence after which the runs here must stop (module docstring)."""
        margin = min(max(1.0, self.heartbeat), self.timeout / 2)
        return self.timeout - margin

    def heard(self, sent_at: float | None = None) -> None:
        """The controller answered a request sent at ``sent_at`` (``timer`` s; default now)."""
        at = self.timer() if sent_at is None else sent_at
        if at > self.last:
            self.last = at
            self.fenced = False

    def silence(self) -> float:
        return self.timer() - self.last

    def due(self) -> bool:
        """Silent long enough to fence, and not fenced yet in this silence."""
        return self.enabled and not self.fenced and self.silence() >= self.fence_after


class Fencing:
    """The agent's side of a cut-off: kill what runs here (a mixin of ``AgentState``)."""

    name: str
    cfg: Config
    jobs: dict[tuple[int, int], Any]  # agent.daemon.Job
    steps: StepTable
    clock: Clock  # Unix seconds
    _fenced: set[tuple[int, int]]  # (job, restarts) killed by ``fence``, until their end

    def _keep(self, task: asyncio.Task[Any]) -> None:
        raise NotImplementedError  # AgentState keeps its background tasks

    def was_fenced(self, job_id: int, restarts: int) -> bool:
        """Did ``fence`` kill this run?  Asked once, when its end is reported."""
        key = (job_id, restarts)
        fenced = key in self._fenced
        self._fenced.discard(key)
        return fenced

    async def fence(self, silence: float) -> None:
        """Terminate every batch run and step here (``KillWait`` applies), with Slurm's line."""
        when = cancel_time(self.clock())
        due = "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS"
        jobs = list(self.jobs.values())
        steps = [r for r in self.steps.runs.values() if r.ended is None]
        log.warning(
            "event=fenced node=%s silence=%.1f jobs=%s steps=%d: the controller's host has "
            "not answered for SlurmdTimeout less a margin; terminating what runs here",
            self.name,
            silence,
            ",".join(str(j.job_id) for j in jobs) or "-",
            len(steps),
        )
        for run in steps:
            job_line = kill_message(run.launch.job_id, self.name, when, due)
            line = cancel_message(run.launch.job_id, run.launch.step_id, self.name, job_line, 0)
            run.cancel(self.cfg.kill_wait, line)
        for job in jobs:
            self._fenced.add((job.job_id, job.restarts))
            message = kill_message(job.job_id, self.name, when, due)
            self._keep(asyncio.ensure_future(job.proc.terminate_async(self.cfg.kill_wait, message)))


async def reachable(host: str, port: int, timeout: float = PROBE_TIMEOUT) -> bool:
    """Does ``host`` answer on ``port`` at all (accepted, refused or reset)?"""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return False
    except OSError as e:
        return e.errno in ANSWERED
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return True


async def watch_forever(
    watch: ContactWatch,
    host: str,
    port: int,
    fence: Callable[[float], Awaitable[None]],
    probe: Callable[[str, int], Awaitable[bool]] = reachable,
    every: float = 0.5,
) -> None:
    """Check ``watch`` every ``every`` s; when due and the probe finds no answer, ``fence``."""
    if not watch.enabled:
        return
    while True:
        await asyncio.sleep(every)
        if not watch.due():
            continue
        if await probe(host, port):
            continue  # the controller's host answers: it is stalled or down, not cut off
        if watch.due():  # contact may have come back while the probe waited
            watch.fenced = True
            await fence(watch.silence())
