"""One job step's part on this node, while it runs: output out, input in, signals, its end.

``srun`` posts the node's signed ``StepLaunch`` to ``POST /v1/steps``; the
agent starts the node's tasks (``agent.steptable``, ``agent.tasks``) and
answers with a stream of JSON lines that lasts as long as they do::

    {"task": 0, "out": "aGkK"}     bytes task 0 wrote on stdout (base64)
    {"task": 1, "err": "..."}      ... on stderr
    {"task": 0, "exit": 256}       task 0 ended: raw wait status (here exit 1)

A task's ``exit`` line comes after all of its output.  The stream ends when
every task has ended and its output is drained; then the node's part of the
step is reported to the controller as a ``JobCompletion`` (step id "0",
"1", ...) through the completion spool, retried until acknowledged.

The step's processes are its tasks' sessions (each task leads one, see
``agent.tasks``; ``agent.procfs.session_members``).  Signals go to all of
them; when the last task has ended, what is left of the sessions (a
forgotten background job) is killed, as Slurm ends a step, and the output
is drained for at most ``DRAIN_S`` seconds more.

How a step is ended early:

* ``kill_on_bad_exit`` (``srun -K``): the first task that ends with a
  non-zero status gets the others on this node SIGKILLed;
* its time limit (``time_limit_s``): the line
  ``slurmstepd: error: *** STEP 7.0 ON n1 CANCELLED AT <time> DUE TO TIME LIMIT ***``
  on the step's stderr, SIGCONT + SIGTERM, ``kill_wait`` s, SIGKILL;
* a terminate order for its job (cancel, the job's time limit): the same,
  with the job's reason (``cancel_message``);
* srun gone: when the client's connection drops, Starlette cancels the
  response's stream (it listens for the ASGI ``http.disconnect`` while
  streaming); the stream's ``finally`` then detaches the step (output is
  dropped from then on) and terminates it, as Slurm kills a step whose
  srun died.

The exit status reported (``step_status``) follows srun's rule for its own
exit code: a task killed by signal N ranks as 128+N against exit codes, the
highest rank wins, a signal winning a tie.  E.g. exits 0, 3 and SIGKILL ->
ranks 0, 3, 137 -> raw status 9 (sacct ``0:9``); exit 200 beats SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal as _signal
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from agent.cgroups import JobCgroup
from agent.identity import append_line
from agent.procfs import session_members
from agent.pty import set_window
from agent.stepio import encode_event, output_event, pump, readable
from agent.tasks import Task, close_gate
from slurmlite.clock import Clock, system_clock
from slurmlite.protocol import JobCompletion, StepLaunch

__all__ = ["DRAIN_S", "StepRun", "cancel_message", "cancel_time", "step_status"]

DRAIN_S = 2.0  # output still read after the last task ended and the leftovers were killed
EVENTS = 256  # lines held for a slow client before the tasks' pipes are left to fill


def step_status(statuses: list[int]) -> int:
    """The highest raw status by srun's rule (see the module docstring); 0 for none."""

    def rank(status: int) -> tuple[int, bool]:
        if os.WIFSIGNALED(status):
            return 128 + os.WTERMSIG(status), True
        return os.WEXITSTATUS(status), False

    return max(statuses, key=rank, default=0)


def cancel_message(
    job_id: int, step_id: int, node: str, job_message: str | None, now: float
) -> str:
    """The step's line for a cancel, with the reason of the job's line if it has one.

    ``cancel_message(7, 0, "n1", None, now)`` ->
    ``slurmstepd: error: *** STEP 7.0 ON n1 CANCELLED AT 2026-01-02T03:04:05 ***``
    (``now`` in local time when the job's line gives no time)."""
    found = re.search(r"CANCELLED AT (\S+)( DUE (?:TO|to) [^*]*?)? \*\*\*", job_message or "")
    when = found.group(1) if found else cancel_time(now)
    due = (found.group(2) or "") if found else ""
    return f"slurmstepd: error: *** STEP {job_id}.{step_id} ON {node} CANCELLED AT {when}{due} ***"


class StepRun:
    """The running part of one step on this node (see the module docstring)."""

    def __init__(
        self,
        launch: StepLaunch,
        tasks: list[Task],
        on_end: Callable[[StepRun, JobCompletion], None],
        user_ids: tuple[int, int, list[int] | None],
        cgroup: JobCgroup | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self.launch = launch
        self.clock = clock  # Unix seconds: the step's start and end, its cancel line
        self.tasks = tasks
        self.cgroup = cgroup  # the job's, where every task was born
        self.on_end = on_end
        self.user_ids = user_ids  # (uid, gid, groups): who appends to the step's files
        self.events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(EVENTS)
        self.detached = False
        self.started = clock()
        self.ended: float | None = None
        self.all_exited = asyncio.Event()
        self.over = asyncio.Event()  # reported: the completion is spooled
        self._left = len(tasks)
        self._killed = False
        self._timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[Any]] = set()

    @property
    def name(self) -> str:
        return f"{self.launch.job_id}.{self.launch.step_id}"

    def start(self) -> None:
        """Watch the tasks, read their output, arm the time limit."""
        for t in self.tasks:
            for stream, fd in t.outputs:
                t.pumps.append(asyncio.create_task(pump(fd, self._emitter(t, stream))))
        self._spawn(self._run())
        limit = self.launch.time_limit_s
        if limit is not None and limit > 0:
            self._timer = asyncio.get_running_loop().call_later(limit, self._time_is_up)

    # ------------------------------------------------------------ the stream

    async def stream(self) -> AsyncIterator[bytes]:
        """The NDJSON answer: lines as they come, until the end; a dropped client detaches."""
        finished = False
        try:
            while True:
                event = await self.events.get()
                lines = []
                while event is not None:
                    lines.append(encode_event(event))
                    if self.events.empty() or len(lines) >= 64:
                        break
                    event = self.events.get_nowait()
                if lines:
                    yield b"".join(lines)
                if event is None:
                    finished = True
                    return
        finally:
            if not finished:
                self.detach()

    def detach(self, kill: bool = False) -> None:
        """The client is gone: drop output from now on and end the step (``kill``: at once)."""
        if self.ended is not None:
            return
        self.detached = True
        while not self.events.empty():
            self.events.get_nowait()  # wakes whoever waits to put
        if kill:
            self.signal(_signal.SIGKILL)
        else:
            self.cancel(self.launch.kill_wait)

    async def _emit(self, event: dict[str, Any] | None) -> None:
        if not self.detached:
            await self.events.put(event)

    def _emitter(self, t: Task, stream: str) -> Callable[[bytes], Any]:
        task = t.plan.task
        return lambda data: self._emit(output_event(task, stream, data))

    # ------------------------------------------------------------ input

    async def feed(
        self, data: bytes, eof: bool, sig: int | None, rows: int | None, cols: int | None
    ) -> None:
        """srun's input: window size, stdin bytes, end of file, a signal (in that order)."""
        if rows and cols:
            for t in self.tasks:
                if t.terminal is not None:
                    set_window(t.terminal, rows, cols)
        feeds = [t.stdin for t in self.tasks if t.stdin is not None]
        for f in feeds:
            if data:
                f.write(data)
            if eof:
                f.end()
        if sig:
            self.signal(sig)
        await asyncio.gather(*(f.drained() for f in feeds))

    # ------------------------------------------------------------ signals

    def signal(self, sig: int) -> int:
        """``sig`` to every process of the step; how many got it.

        The step's processes are looked for among its cgroup's (the job's)
        when it has one: a short list, where ``/proc`` may hold thousands."""
        among = self.cgroup.pids() if self.cgroup is not None else None
        sent = 0
        for pid in session_members([t.pid for t in self.tasks], among):
            try:
                os.kill(pid, sig)
                sent += 1
            except (ProcessLookupError, PermissionError):
                pass
        return sent

    async def terminate(self, kill_wait: float, message: str | None = None) -> None:
        """Message, SIGCONT + SIGTERM, up to ``kill_wait`` s for the tasks to end, SIGKILL."""
        if message:
            await self.notice(message)
        self.signal(_signal.SIGCONT)
        self.signal(_signal.SIGTERM)
        try:
            await asyncio.wait_for(self.all_exited.wait(), timeout=kill_wait)
        except TimeoutError:
            pass
        self.signal(_signal.SIGKILL)

    def cancel(self, kill_wait: float, message: str | None = None) -> None:
        """``terminate`` in the background (an order's answer does not wait for it)."""
        self._spawn(self.terminate(kill_wait, message))

    def announce(self, line: str) -> None:
        """``notice`` in the background."""
        self._spawn(self.notice(line))

    async def notice(self, line: str) -> None:
        """A line on the step's stderr: streamed as the first task's, or appended to its file."""
        first = self.tasks[0]
        path = first.plan.std_err
        if not path:
            await self._emit(output_event(first.plan.task, "err", (line + "\n").encode()))
            return
        uid, gid, groups = self.user_ids
        await asyncio.to_thread(append_line, path, line, uid, gid, groups)

    def _time_is_up(self) -> None:
        when = cancel_time(self.clock())
        line = (
            f"slurmstepd: error: *** STEP {self.name} ON {self.launch.node} "
            f"CANCELLED AT {when} DUE TO TIME LIMIT ***"
        )
        self.cancel(self.launch.kill_wait, line)

    # ------------------------------------------------------------ the end

    async def _run(self) -> None:
        lives = [asyncio.create_task(self._life(t)) for t in self.tasks]
        await self.all_exited.wait()
        if self._timer is not None:
            self._timer.cancel()
        self.signal(_signal.SIGKILL)  # what the tasks left behind ends with the step
        pumps = [p for t in self.tasks for p in t.pumps]
        if pumps:
            _, late = await asyncio.wait(pumps, timeout=DRAIN_S)  # type: ignore[arg-type]
            for p in late:
                p.cancel()
        await asyncio.gather(*lives)
        for t in self.tasks:
            if t.terminal is not None:
                os.close(t.terminal)
                t.terminal = None
        self.ended = self.clock()
        statuses = [t.status for t in self.tasks if t.status is not None]
        launch = self.launch
        done = JobCompletion(
            node=launch.node,
            job_id=launch.job_id,
            restarts=launch.restarts,
            step_id=str(launch.step_id),
            exit_code=step_status(statuses),
            start_time=self.started,
            end_time=self.ended,
        )
        self.on_end(self, done)
        self.over.set()
        if self.detached:  # a client still there (the agent stops) gets the end at least
            with contextlib.suppress(asyncio.QueueFull):
                self.events.put_nowait(None)
        else:
            await self._emit(None)

    async def _life(self, t: Task) -> None:
        t.status = await _reap(t)
        close_gate(t.gate)
        if t.stdin is not None:
            t.stdin.close()
        self._left -= 1
        if t.status != 0 and self.launch.kill_on_bad_exit and not self._killed:
            self._killed = True
            self.signal(_signal.SIGKILL)
        if self._left == 0:
            self.all_exited.set()
        if t.pumps:
            await asyncio.wait(t.pumps)  # type: ignore[arg-type]
        await self._emit({"task": t.plan.task, "exit": t.status})

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


async def _reap(t: Task) -> int:
    """Wait for the task (our child) to end and reap it: its raw wait status.

    ``wait4`` also gives the task's resource usage, which covers the children
    it reaped: its CPU time is kept (``Task.cpu_seconds``, ``agent.step_usage``)."""
    pid = t.proc.pid
    try:
        fd: int | None = os.pidfd_open(pid)
    except OSError:
        fd = None  # no pidfds (Linux < 5.3): poll
    try:
        while True:
            done, status, rusage = os.wait4(pid, os.WNOHANG)
            if done:
                t.cpu_seconds = rusage.ru_utime + rusage.ru_stime
                break
            if fd is None:
                await asyncio.sleep(0.05)
            else:
                await readable(fd)
    finally:
        if fd is not None:
            os.close(fd)
    t.proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
    return status


def cancel_time(now: float) -> str:
    """Unix seconds as Slurm writes them in a cancel line: local time, ``2026-01-02T03:04:05``."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now))
