"""A stand-in agent for srun's tests: POST /v1/steps answers JSON lines, /v1/steps/input records.

Each node's tasks are played by a *script*: a function ``script(agent,
launch, task) -> Iterator[dict]`` yielding the messages of one task (``out``
/``err`` as raw bytes here, encoded on the way out) and finally its exit.
Scripts can wait for srun's input through ``agent.inputs_until(...)``: every
``StepInput`` body the agent received is kept in ``agent.inputs`` in order.

The server is a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 speaking HTTP/1.1
with chunked answers, as a streaming ASGI server does; ``close()`` stops it.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[["FakeAgent", dict[str, Any], int], Iterator[dict[str, Any]]]


def says(text: str, status: int = 0, stream: str = "out") -> Script:
    """A task that writes ``text`` (``{task}`` and ``{node}`` filled in) and exits."""

    def script(agent: FakeAgent, launch: dict[str, Any], task: int) -> Iterator[dict[str, Any]]:
        yield {"task": task, stream: text.format(task=task, node=launch["node"]).encode()}
        yield {"task": task, "exit": status}

    return script


def cat(agent: FakeAgent, launch: dict[str, Any], task: int) -> Iterator[dict[str, Any]]:
    """A task that copies its stdin to stdout until EOF (``sh -s`` reading a script)."""
    seen = 0
    while True:
        inputs = agent.inputs_until(lambda items, n=seen: len(items) > n)
        for item in inputs[seen:]:
            if item.get("data"):
                yield {"task": task, "out": base64.b64decode(item["data"])}
            if item.get("eof"):
                yield {"task": task, "exit": 0}
                return
        seen = len(inputs)


def until_signal(agent: FakeAgent, launch: dict[str, Any], task: int) -> Iterator[dict[str, Any]]:
    """A task that runs until a terminating signal arrives; dies from it (raw status = signal)."""
    yield {"task": task, "out": b"running\n"}
    inputs = agent.inputs_until(lambda items: any(i.get("signal") in (2, 9, 15) for i in items))
    number = next(i["signal"] for i in inputs if i.get("signal") in (2, 9, 15))
    yield {"task": task, "exit": number}


class FakeAgent:
    def __init__(self, node: str, script: Script, error: str | None = None) -> None:
        self.node, self.script, self.error = node, script, error
        self.launches: list[dict[str, Any]] = []
        self.inputs: list[dict[str, Any]] = []
        self.launched = threading.Event()  # a launch arrived and its answer has begun
        self._cond = threading.Condition()
        agent = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/v1/steps/input":
                    with agent._cond:
                        agent.inputs.append(body)
                        agent._cond.notify_all()
                    data = b'{"status": "ok"}'
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                agent.launches.append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                agent.launched.set()
                for message in agent.messages(body):
                    line = json.dumps(message).encode() + b"\n"
                    self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def messages(self, launch: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if self.error:
            yield {"error": self.error}
            return
        for task in launch["tasks"]:  # tasks run one after the other: enough for tests
            for message in self.script(self, launch, task):
                for key in ("out", "err"):
                    if key in message:
                        message = {**message, key: base64.b64encode(message[key]).decode()}
                yield message

    def inputs_until(self, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        with self._cond:
            while not done(self.inputs):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.node}: inputs so far {self.inputs}")
                self._cond.wait(left)
            return list(self.inputs)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def grant(agents: list[FakeAgent], tasks: list[list[int]], job_id: int = 7, step_id: int = 0):
    """A StepGrant view (as ``ControllerClient.create_step`` returns it) for these agents."""
    from cli.client import Record

    nodes = [
        Record({"node": a.node, "addr": "127.0.0.1", "port": a.port, "tasks": t})
        for a, t in zip(agents, tasks, strict=True)
    ]
    launches = [
        {"credential": f"cred-{a.node}", "node": a.node, "tasks": t, "job_id": job_id,
         "step_id": step_id, "kill_wait": 1}
        for a, t in zip(agents, tasks, strict=True)
    ]  # fmt: skip
    ntasks = sum(len(t) for t in tasks)
    return Record(
        {
            "job_id": job_id,
            "step_id": step_id,
            "nodes": nodes,
            "launches": launches,
            "ntasks": ntasks,
        }
    )
