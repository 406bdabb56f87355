"""A real agent on loopback for job-step tests: a signed step order, its NDJSON stream.

``serving(state)`` runs the agent's app under uvicorn on 127.0.0.1 (an
ephemeral port) in the test's event loop: streaming and a client that
drops its connection behave as on the wire, which an in-process ASGI
transport (it buffers whole answers) cannot show.  ``a_launch`` makes the
order the controller would sign for node n1 (``signing.signed``);
``Stream`` reads the answer line by line.

``slurmlite.stepenv`` is written alongside the agent's step code; until it
is there, ``fallback_stepenv`` puts a minimal stand-in (the per-task rank
variables only) in its place, for these tests only.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pwd
import socket
import sys
import types
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from agent.app import create_app
from agent.daemon import AgentState
from slurmlite.protocol import StepLaunch

DEADLINE = 30.0  # seconds any scenario may take


def fallback_stepenv() -> None:
    """Install a stand-in ``slurmlite.stepenv`` if the real one is not there yet."""
    try:
        import slurmlite.stepenv  # noqa: F401
    except ImportError:
        module = types.ModuleType("slurmlite.stepenv")

        def task_environment(
            node_env: dict[str, str],
            task: int,
            local_id: int,
            node_index: int,
            task_gpus: list[int] | None = None,
        ) -> dict[str, str]:
            env = dict(node_env)
            env.update(
                SLURM_PROCID=str(task),
                SLURM_LOCALID=str(local_id),
                SLURM_NODEID=str(node_index),
                RANK=str(task),
                LOCAL_RANK=str(local_id),
            )
            if task_gpus is not None:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, task_gpus))
            return env

        module.task_environment = task_environment  # type: ignore[attr-defined]
        sys.modules["slurmlite.stepenv"] = module


def a_launch(area: Path, argv: list[str], tasks: list[int] | None = None, **kw: Any) -> StepLaunch:
    """Step 7.0 on n1 for the current user, run in ``area/work``."""
    uid = os.geteuid()
    tasks = [0] if tasks is None else tasks
    fields: dict[str, Any] = dict(
        credential="",
        job_id=7,
        step_id=0,
        restarts=0,
        node="n1",
        node_index=0,
        uid=uid,
        gid=os.getegid(),
        user=pwd.getpwuid(uid).pw_name,
        argv=argv,
        work_dir=str(area / "work"),
        environment={"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "7"},
        tasks=tasks,
        ntasks=len(tasks),
        num_nodes=1,
        cpus_per_task=1,
        gpus=[],
        gpus_per_task=None,
        master_addr="127.0.0.1",
        master_port=20007,
        label=False,
        unbuffered=False,
        stdin_task=None,
        std_out="",
        std_err="",
        std_in="",
        pty=False,
        kill_on_bad_exit=False,
        mem_mib=0,
        kill_wait=2,
    )
    fields.update(kw)
    return StepLaunch(**fields)


@contextlib.asynccontextmanager
async def serving(state: AgentState) -> AsyncIterator[httpx.AsyncClient]:
    """The agent under uvicorn on loopback, and a client for it; both closed after."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(state), log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    served = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        assert not served.done(), "uvicorn did not start"
        await asyncio.sleep(0.01)
    client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=DEADLINE)
    try:
        yield client
    finally:
        await client.aclose()
        server.should_exit = True
        await served
        sock.close()


class Stream:
    """The events of one ``/v1/steps`` answer, read as they come."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()
        self.events: list[dict[str, Any]] = []

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Read until an event satisfies ``done``; that event."""
        async for line in self._lines:
            event = json.loads(line)
            self.events.append(event)
            if done(event):
                return event
        raise AssertionError(f"the stream ended first: {self.events}")

    async def rest(self) -> list[dict[str, Any]]:
        async for line in self._lines:
            self.events.append(json.loads(line))
        return self.events

    def text(self, task: int, stream: str = "out") -> str:
        chunks = [
            base64.b64decode(e[stream])
            for e in self.events
            if e.get("task") == task and stream in e
        ]
        return b"".join(chunks).decode(errors="replace")

    def exits(self) -> dict[int, int]:
        return {e["task"]: e["exit"] for e in self.events if "exit" in e}


def says(text: str, task: int = 0) -> Callable[[dict[str, Any]], bool]:
    """An event condition: task ``task`` wrote something containing ``text`` (one chunk)."""

    def check(event: dict[str, Any]) -> bool:
        data = event.get("out") or event.get("err")
        return event.get("task") == task and data is not None and text in _decoded(data)

    return check


def _decoded(data: str) -> str:
    return base64.b64decode(data).decode(errors="replace")


async def post_input(client: httpx.AsyncClient, body: dict[str, Any], **fields: Any) -> int:
    """``/v1/steps/input`` for the step ``body`` started; the answer's status code."""
    payload = {"credential": body["credential"], "job_id": body["job_id"]}
    payload["step_id"] = body["step_id"]
    if "data" in fields:
        fields["data"] = base64.b64encode(fields["data"]).decode()
    r = await client.post("/v1/steps/input", json={**payload, **fields})
    return r.status_code
