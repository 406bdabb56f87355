"""schemathesis against slurmd's published schema: no input makes it answer 5xx.

The agent app runs in-process (schemathesis' ASGI transport) with its real
checks: every request is signed as the controller signs requests to node
``n1`` (``fuzz_asgi.on_the_wire``; one in eight goes unsigned and must get
401), and a hook (``map_body``) gives three orders in four a valid
credential for exactly the body generated -- so the fuzzer reaches what
comes after authentication -- while the fourth keeps the random text it was
generated with (403, or ``refused`` inside a batch).  Nothing is ever
spawned: ``_start`` is replaced by a stand-in run that ends when it is
terminated.

Every operation gets 100 generated cases (valid and invalid ones, after the
schema's examples and schemathesis' boundary values), then the state machine
follows the schema's links (launch -> signal, launch -> note).  Fixed seed, no example
database, as in ``tests/api/test_fuzz_controller.py``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from agent.app import LaunchBody, NoteBody, SignalBody, TailBody, create_app
from agent.daemon import AgentState
from agent.launcher import BatchRun
from slurmlite.config import parse_config
from slurmlite.protocol import LaunchSpec, NoteSpec, SignalSpec, TailSpec, from_dict
from tests.agent.signing import CLUSTER_KEY, NODE, request_headers, signed
from tests.fuzz_asgi import Switch, load_schema, on_the_wire, stateful_settings

CONF = "SlurmctldHost=localhost(127.0.0.1)\nSlurmliteHeartbeatInterval=1\n"


class StandIn:
    """A run that never was: signals are noted, a terminate order ends it, else it
    ends by itself after ``LIFE`` seconds (long enough for a linked signal)."""

    LIFE = 2.0

    pid = 0
    cgroup = None
    started = 0.0
    ended: float | None = None
    status: int | None = None

    def __init__(self, job_dir: Path) -> None:
        self.done = asyncio.Event()
        self.signals: list[int] = []
        self.notes: list[str] = []  # lines of note orders
        self.job_dir = job_dir  # where the usage sampler keeps the run's summary

    async def wait_async(self) -> None:
        try:
            await asyncio.wait_for(self.done.wait(), self.LIFE)
        except TimeoutError:
            self.status = 0

    def signal(self, sig: int, batch_only: bool = False) -> None:
        self.signals.append(sig)

    def write_stderr(self, line: str) -> bool:
        self.notes.append(line)
        return True

    async def terminate_async(self, kill_wait: int, message: str | None = None) -> None:
        self.status = 15  # killed by SIGTERM
        self.done.set()


class FuzzedAgent(AgentState):
    """The agent with its process starts replaced: the checks before them all run."""

    seen_launches = 0

    async def _start(self, spec: LaunchSpec) -> BatchRun:
        self.seen_launches += 1
        job_dir = self.spool / f"standin-{self.seen_launches}"
        job_dir.mkdir(parents=True, exist_ok=True)
        return StandIn(job_dir)  # type: ignore[return-value]


def _agent(spool: Path) -> FuzzedAgent:
    return FuzzedAgent(
        cfg=parse_config(CONF),
        name=NODE,
        cluster_key=CLUSTER_KEY,
        spool=spool,
        gpus=[],
        gpu_source="none",
        node_conf=None,
    )


def _published_schema() -> dict[str, Any]:
    """The OpenAPI document, from an agent on a throwaway spool."""
    with tempfile.TemporaryDirectory() as spool:
        return create_app(_agent(Path(spool))).openapi()


def _draw(body: bytes) -> int:
    """A number fixed by the bytes (hash() of str is salted per process: not repeatable)."""
    return zlib.crc32(body)


def _sign_request(method: str, path: str, body: bytes) -> dict[str, str] | None:
    """The controller's signature, except on one request in eight (the same ones on a
    rerun: the credentials, whose nonces are random, do not count in the choice)."""
    try:
        content = json.loads(body)
    except ValueError:
        content = body.decode("utf-8", "replace")
    return None if _draw(_stripped(content)) % 8 == 7 else request_headers(path, body)


def _stripped(content: Any) -> bytes:
    """``content`` without its credentials, as bytes."""
    if isinstance(content, dict):
        content = {k: v for k, v in content.items() if k != "credential"}
        if isinstance(content.get("launches"), list):
            content["launches"] = [
                {k: v for k, v in o.items() if k != "credential"} if isinstance(o, dict) else o
                for o in content["launches"]
            ]
    return json.dumps(content, sort_keys=True, default=str).encode()


def _with_credential(order: Any, model: type[BaseModel], spec: type) -> Any:
    """``order`` with a valid credential (3 times in 4), or as generated."""
    if not isinstance(order, dict):
        return order
    if _draw(json.dumps(order, sort_keys=True, default=str).encode()) % 4 == 3:
        return order  # its random credential: refused
    try:
        valid = model.model_validate(order)
    except ValidationError:
        return order  # a 422 whatever its credential
    return signed(from_dict(spec, valid.model_dump()))


LIVE = Switch()
schema = load_schema(_published_schema(), LIVE)


@schema.hook
def map_body(context: Any, body: Any) -> Any:
    path = context.operation.path
    if path == "/v1/launch":
        return _with_credential(body, LaunchBody, LaunchSpec)
    if path == "/v1/signal":
        return _with_credential(body, SignalBody, SignalSpec)
    if path == "/v1/note":
        return _with_credential(body, NoteBody, NoteSpec)
    if path == "/v1/tail":
        return _with_credential(body, TailBody, TailSpec)
    if path == "/v1/launches" and isinstance(body, dict) and isinstance(body.get("launches"), list):
        launches = [_with_credential(o, LaunchBody, LaunchSpec) for o in body["launches"]]
        return {**body, "launches": launches}
    return body


@pytest.fixture(scope="module", autouse=True)
def live_agent(tmp_path_factory):
    agent = _agent(tmp_path_factory.mktemp("fuzzagent"))
    LIVE.app = on_the_wire(create_app(agent), sign=_sign_request)
    yield agent
    LIVE.app = None


@schema.parametrize()
def test_no_input_makes_the_agent_fail(case):
    case.call_and_validate()


def test_stateful_sequences_never_make_the_agent_fail(live_agent):
    schema.as_state_machine().run(settings=stateful_settings())
    # orders were accepted, so what comes after the credential checks ran too
    assert live_agent.seen_launches, "no launch got through: the signing hook is broken"
