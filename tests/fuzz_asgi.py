"""Shared pieces of the schemathesis tests (``tests/api/test_fuzz_controller.py``,
``tests/agent/test_fuzz_agent.py``).

* ``FUZZ_CONFIG``: 100 generated cases per operation, valid and invalid
  ones, a fixed seed, deterministic generation and no example database (a
  run reproduces; nothing is written into the repository);
* ``stateful_settings``: the same for the state machine that follows links;
* ``Switch``/``load_schema``: the schema is loaded when pytest collects
  the module; its requests go to whichever app the module's fixture built;
* ``on_the_wire``: an ASGI wrapper that makes an in-process request look
  like one that came over the network: peer credentials in the request
  state (slurmctld's Unix socket) and/or signature headers (an agent's, or
  the controller's towards an agent) computed over the exact body sent.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis import Config

from slurmlite.credential import node_key, sign_request

SEED = 20_240_501
EXAMPLES = 100  # per operation, as the issue asks

FUZZ_CONFIG = Config.from_dict(
    {
        "seed": SEED,
        "generation": {
            "mode": "all",
            "max-examples": EXAMPLES,
            "deterministic": True,
            "database": "none",
        },
        # what the issue demands of both daemons: no 5xx, answers as documented
        "checks": {
            "enabled": False,
            "not_a_server_error": {"enabled": True},
            "response_schema_conformance": {"enabled": True},
        },
    }
)

ASGIApp = Callable[[dict, Callable, Callable], Awaitable[None]]  # type: ignore[type-arg]
_NODE_IN_PATH = re.compile(r"^/v1/nodes/([^/]+)/")


class Switch:
    """An ASGI app that forwards to the one a fixture plugged in (``app``).

    The schema must be loaded when pytest collects the module (one test per
    operation), before any fixture has built the daemon it describes.
    """

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:  # type: ignore[type-arg]
        if self.app is None:
            raise RuntimeError("no application plugged in: use the test module's fixture")
        await self.app(scope, receive, send)


def load_schema(spec: dict[str, Any], switch: Switch) -> Any:
    """The schemathesis schema of ``spec``, sending its requests to ``switch``."""
    schema = schemathesis.openapi.from_dict(spec, config=FUZZ_CONFIG)
    schema.app = switch
    schema.location = "/openapi.json"
    return schema


def stateful_settings(examples: int = 25, steps: int = 8) -> settings:
    """Scenarios of up to ``steps`` linked calls; ``examples`` scenarios in all."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        # no shrinking: the daemon under test keeps its state between scenarios, so a
        # scenario replayed while shrinking meets another state (Hypothesis: "flaky")
        phases=[Phase.explicit, Phase.generate],
    )


Signer = Callable[[str, str, bytes], "dict[str, str] | None"]  # (method, path, body) -> headers


def on_the_wire(
    app: ASGIApp, peer: tuple[int, int, int] | None = None, sign: Signer | None = None
) -> ASGIApp:
    """``app`` as a daemon serves it: to the Unix-socket peer ``(pid, uid, gid)``, and
    with the headers ``sign(method, path, body)`` gives added to each request.

    The peer credentials go into the request's state, where
    ``controller.auth.callers.PeerCredProtocol`` puts them; the signature must cover
    the exact bytes sent, which exist only once schemathesis has serialised
    the body, so the body is read here, signed, and handed on unchanged.
    """

    async def wire(scope: dict, receive: Callable, send: Callable) -> None:  # type: ignore[type-arg]
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if peer is not None:
            scope = {**scope, "state": {**(scope.get("state") or {}), "peercred": peer}}
        if sign is None:
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        signed = sign(scope["method"], scope["path"], body) or {}
        extra = [(k.lower().encode(), v.encode()) for k, v in signed.items()]
        scope = {**scope, "headers": [*scope["headers"], *extra]}
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replay, send)

    return wire


def node_signer(key: bytes, nodes: tuple[str, ...], clock: Callable[[], float]) -> Signer:
    """Sign as the agent of the node the path names (``/v1/nodes/<name>/...``) when it
    is one of ``nodes``, else as the first of them, at time ``clock()``."""

    def sign(method: str, path: str, body: bytes) -> dict[str, str]:
        named = _NODE_IN_PATH.match(path)
        node = named.group(1) if named and named.group(1) in nodes else nodes[0]
        return sign_request(node_key(key, node), node, method, path, body, clock())

    return sign
