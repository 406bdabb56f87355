"""A running step as srun sees it: one stream per node in, srun's stdout/stderr out.

:class:`StepRun` sends each node's signed ``StepLaunch`` (from the
controller's ``StepGrant``, unchanged) to that node's agent and reads the
answer -- JSON lines, one thread per node -- while the main thread stays
free for signals:

* ``{"task": t, "out": b64}`` / ``"err"``: bytes for :class:`Output`, which
  writes them to srun's stdout or stderr, a whole line at a time per task
  (``-u``/``--pty``: as they come), labelled with ``-l``, only task N's with
  ``-o N``/``-e N``;
* ``{"task": t, "exit": raw}``: the task ended; when the node's stream ends
  its failed tasks are reported (``srun: error: n1: task 0: Exited with exit
  code 1``, ``slurmlite.stepreport``);
* ``{"error": text}`` or an unreachable agent: the node could not start its
  tasks -- ``srun: error: Task launch for StepId=N.S failed on node n1:
  text`` -- and ``launch_failed`` is set for srun to end the step.

:class:`StdinPump` copies srun's standard input to the nodes that hold the
reading tasks (``POST /v1/steps/input``, base64, then ``eof``), starting
only once a node has accepted its launch.  Signals and window sizes go the
same way (:meth:`StepRun.signal`, :meth:`StepRun.resize`).

Worked example (``srun -N2 -n4 -l hostname``): node n1 streams tasks 0-1,
n2 tasks 2-3; srun prints ``0: n1``, ``1: n1``, ``2: n2``, ``3: n2`` in
arrival order and exits 0 once both streams have ended.
"""

from __future__ import annotations

import base64
import os
import sys
import threading
import time

from cli.agent_http import AgentConnection, AgentError
from slurmlite.stepreport import LineLabeler, failed_task_lines, label_width

TYPE_CHECKING = False  # importing typing costs a command ~3 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

INPUT_PATH = "/v1/steps/input"
LAUNCH_PATH = "/v1/steps"


class Output:
    """srun's side of the tasks' stdout and stderr (thread-safe)."""

    def __init__(
        self,
        ntasks: int,
        label: bool = False,
        unbuffered: bool = False,
        out_task: int | None = None,
        err_task: int | None = None,
        stdout: BinaryIO | None = None,
        stderr: BinaryIO | None = None,
    ) -> None:
        self._streams = {
            "out": stdout or sys.stdout.buffer,
            "err": stderr or sys.stderr.buffer,
        }
        self._only = {"out": out_task, "err": err_task}
        self._label, self._raw = label, unbuffered and not label
        self._width = label_width(ntasks)
        self._buffers: dict[tuple[int, str], LineLabeler] = {}
        self._lock = threading.Lock()
        self.broken = False  # srun's stdout went away (``srun ... | head``)

    def _labeler(self, task: int, stream: str) -> LineLabeler:
        key = (task, stream)
        labeler = self._buffers.get(key)
        if labeler is None:
            labeler = self._buffers[key] = LineLabeler(task, self._width)
            if not self._label:
                labeler.prefix = b""
        return labeler

    def _emit(self, stream: str, data: bytes) -> None:
        if not data or (self.broken and stream == "out"):
            return
        target = self._streams[stream]
        try:
            target.write(data)
            target.flush()
        except (BrokenPipeError, ValueError):
            self.broken = self.broken or stream == "out"

    def write(self, task: int, stream: str, data: bytes) -> None:
        """Bytes task ``task`` wrote on ``stream`` (``out`` or ``err``)."""
        only = self._only.get(stream)
        if only is not None and task != only:
            return
        with self._lock:
            self._emit(stream, data if self._raw else self._labeler(task, stream).feed(data))

    def task_done(self, task: int) -> None:
        """The task ended: write what is left of its last lines."""
        with self._lock:
            for stream in ("out", "err"):
                labeler = self._buffers.pop((task, stream), None)
                if labeler is not None:
                    self._emit(stream, labeler.flush())

    def message(self, line: str) -> None:
        """A line of srun's own on stderr (``srun: error: ...``)."""
        with self._lock:
            self._emit("err", (line + "\n").encode())

    def close(self) -> None:
        for task, _stream in list(self._buffers):
            self.task_done(task)


class NodeRun:
    """One node's part of the step: where its agent is and what it reported."""

    def __init__(self, node: Any, launch: dict[str, Any]) -> None:
        self.name: str = node.node
        self.addr: str = node.addr
        self.port: int = int(node.port)
        self.tasks: list[int] = list(node.tasks)
        self.launch = launch
        self.exits: dict[int, int] = {}
        self.error: str | None = None
        self.ready = threading.Event()  # the agent accepted the launch
        self.done = threading.Event()


class StepRun:
    """Launch a granted step on its nodes and follow it to the end."""

    def __init__(
        self,
        grant: Any,
        output: Output,
        prog: str = "srun",
        connect: Callable[[str, int], AgentConnection] = AgentConnection,
    ) -> None:
        self.job_id, self.step_id = int(grant.job_id), int(grant.step_id)
        self.ntasks = int(grant.ntasks)
        self.nodes = [
            NodeRun(n, launch) for n, launch in zip(grant.nodes, grant.launches, strict=True)
        ]
        self.output, self.prog, self._connect = output, prog, connect
        self.report_failures = True  # off after the user aborted the step
        self.launch_failed = False
        self.bad_exit = False  # a task exited non-zero (for -K)
        self.first_exit: float | None = None  # monotonic time of the first task exit (for -W)
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"{self.job_id}.{self.step_id}"

    @property
    def exits(self) -> dict[int, int]:
        merged: dict[int, int] = {}
        for node in self.nodes:
            merged.update(node.exits)
        return merged

    def start(self) -> None:
        for node in self.nodes:
            threading.Thread(target=self._follow, args=(node,), daemon=True).start()

    def wait(self, timeout: float | None = None) -> bool:
        """True once every node's stream has ended."""
        for node in self.nodes:
            if not node.done.wait(timeout):
                return False
        return True

    def _follow(self, node: NodeRun) -> None:
        try:
            conn = self._connect(node.addr, node.port)
            for message in conn.stream(LAUNCH_PATH, node.launch, started=node.ready.set):
                self._handle(node, message)
        except AgentError as e:
            self._launch_failure(node, e.text or f"agent answered HTTP {e.status}")
        finally:
            for task in node.tasks:
                self.output.task_done(task)
            if self.report_failures and node.error is None:
                for line in failed_task_lines(self.prog, node.name, node.exits):
                    self.output.message(line)
            node.ready.set()
            node.done.set()

    def _handle(self, node: NodeRun, message: dict[str, Any]) -> None:
        task = message.get("task")
        if "error" in message:
            self._launch_failure(node, str(message["error"]))
        elif not isinstance(task, int):
            return
        elif "out" in message or "err" in message:
            stream = "out" if "out" in message else "err"
            self.output.write(task, stream, base64.b64decode(message[stream] or ""))
        elif "exit" in message:
            status = int(message["exit"])
            self.output.task_done(task)
            with self._lock:
                node.exits[task] = status
                self.bad_exit = self.bad_exit or status != 0
                if self.first_exit is None:
                    self.first_exit = time.monotonic()

    def _launch_failure(self, node: NodeRun, text: str) -> None:
        if node.error is None:
            node.error = text
            self.launch_failed = True
            self.output.message(
                f"{self.prog}: error: Task launch for StepId={self.label} failed on node "
                f"{node.name}: {text}"
            )

    # ------------------------------------------------------------ to the tasks

    def _post(self, node: NodeRun, extra: dict[str, Any], conn: AgentConnection | None) -> bool:
        body = {
            "credential": node.launch["credential"],
            "job_id": self.job_id,
            "step_id": self.step_id,
            **extra,
        }
        own = conn is None
        conn = conn or self._connect(node.addr, node.port)
        try:
            conn.post(INPUT_PATH, body)
            return True
        except AgentError:
            return False
        finally:
            if own:
                conn.close()

    def signal(self, signum: int) -> None:
        """Send ``signum`` to every task of the step (nodes still running)."""
        for node in self.nodes:
            if not node.done.is_set():
                self._post(node, {"signal": signum}, None)

    def resize(self, rows: int, cols: int) -> None:
        """The terminal's new size, for ``--pty`` (task 0's node)."""
        if self.nodes and not self.nodes[0].done.is_set():
            self._post(self.nodes[0], {"rows": rows, "cols": cols}, None)


class StdinPump:
    """Copy srun's stdin (``fd``) to the nodes whose tasks read it, then EOF."""

    def __init__(
        self, step: StepRun, stdin_task: int | None, fd: int = 0, close_fd: bool = False
    ) -> None:
        self.step, self.fd, self.close_fd = step, fd, close_fd
        self.targets = [
            n for n in step.nodes if stdin_task is None or stdin_task in n.tasks
        ] or step.nodes[:1]
        self._conns: dict[str, AgentConnection] = {}

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        return thread

    def _send(self, extra: dict[str, Any]) -> None:
        for node in list(self.targets):
            node.ready.wait()
            if node.done.is_set() or node.error is not None:
                self.targets.remove(node)
                continue
            conn = self._conns.get(node.name)
            if conn is None:
                conn = self._conns[node.name] = self.step._connect(node.addr, node.port)
            if not self.step._post(node, extra, conn):
                self.targets.remove(node)

    def run(self) -> None:
        while self.targets:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            if not data:
                break
            self._send({"data": base64.b64encode(data).decode()})
        self._send({"eof": True})
        for conn in self._conns.values():
            conn.close()
        if self.close_fd:
            os.close(self.fd)
