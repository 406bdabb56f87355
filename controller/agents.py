"""Talking to node agents: signed launch/signal/terminate orders.

Every order carries a credential signed with the controller key (see
``slurmlite.credential``) whose claims bind the operation, job, step, restart
count, uid, gid, target nodes, the script's SHA-256 and the hash of the whole
request body.  An agent refuses anything else.

``AgentClient`` is the seam (DESIGN.md §4 rule 9): ``HttpAgentClient`` talks
HTTP; tests use ``RecordingAgentClient`` and assert exactly what was sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from slurmlite.credential import canonical_body, controller_key, sign_credential
from slurmlite.protocol import LaunchSpec, SignalSpec, to_dict

log = logging.getLogger("slurmctld.agents")

CREDENTIAL_TTL = 120.0  # seconds, like Slurm's default credential lifetime


@dataclass(frozen=True)
class AgentAddress:
    node: str
    addr: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.addr}:{self.port}"


class AgentError(Exception):
    """The agent could not be reached or refused the order."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class Signer:
    def __init__(self, cluster_key: bytes) -> None:
        self._key = controller_key(cluster_key)

    def sign(
        self, op: str, body: dict[str, Any], nodes: list[str], uid: int, gid: int, now: float
    ) -> str:
        claims = {
            "op": op,
            "job": body["job_id"],
            "step": body.get("step_id", "batch"),
            "restarts": body["restarts"],
            "uid": uid,
            "gid": gid,
            "nodes": nodes,
            "script_sha256": hashlib.sha256(body.get("script", "").encode()).hexdigest(),
            "body": hashlib.sha256(canonical_body(body)).hexdigest(),
        }
        return sign_credential(self._key, claims, now=now, ttl=CREDENTIAL_TTL)

    def launch(self, spec: LaunchSpec, nodes: list[str], now: float) -> LaunchSpec:
        body = to_dict(spec)
        spec.credential = self.sign("launch", body, nodes, spec.uid, spec.gid, now)
        return spec

    def signal(
        self, spec: SignalSpec, nodes: list[str], uid: int, gid: int, now: float
    ) -> SignalSpec:
        body = to_dict(spec)
        op = "terminate" if spec.signal is None else "signal"
        spec.credential = self.sign(op, body, nodes, uid, gid, now)
        return spec


class AgentClient(Protocol):
    async def launch(self, to: AgentAddress, spec: LaunchSpec) -> None: ...

    async def launch_many(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]: ...

    async def signal(self, to: AgentAddress, spec: SignalSpec) -> None: ...

    async def close(self) -> None: ...


class HttpAgentClient:
    def __init__(self, timeout: float = 10.0) -> None:
        self._http = httpx.AsyncClient(timeout=timeout)

    async def _post(self, to: AgentAddress, path: str, body: dict[str, Any]) -> None:
        try:
            r = await self._http.post(to.url + path, json=body)
        except httpx.HTTPError as e:
            raise AgentError(f"node {to.node} unreachable at {to.url}: {e}") from e
        if r.status_code >= 400:
            raise AgentError(
                f"node {to.node} refused {path}: {r.status_code} {r.text}", refused=True
            )

    async def launch(self, to: AgentAddress, spec: LaunchSpec) -> None:
        await self._post(to, "/v1/launch", to_dict(spec))

    async def launch_many(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]:
        """Several launch orders for one node in one request; per order None or its refusal.

        Raises :class:`AgentError` when the node cannot be reached (nothing ran).
        An agent without the batch route (404) gets one request per order.
        """
        body = {"launches": [to_dict(s) for s in specs]}
        try:
            r = await self._http.post(to.url + "/v1/launches", json=body)
        except httpx.HTTPError as e:
            raise AgentError(f"node {to.node} unreachable at {to.url}: {e}") from e
        if r.status_code == 404:
            return list(await asyncio.gather(*(self._one(to, s) for s in specs)))
        if r.status_code >= 400:
            raise AgentError(
                f"node {to.node} refused /v1/launches: {r.status_code} {r.text}", refused=True
            )
        answers = {(a["job_id"], a["restarts"]): a for a in r.json()["results"]}
        out: list[AgentError | None] = []
        for spec in specs:
            a = answers.get((spec.job_id, spec.restarts))
            if a is None or a["status"] == "refused":
                why = a.get("error") if a else "no answer for this order"
                out.append(AgentError(f"node {to.node} refused launch: {why}", refused=True))
            else:
                out.append(None)
        return out

    async def _one(self, to: AgentAddress, spec: LaunchSpec) -> AgentError | None:
        try:
            await self.launch(to, spec)
        except AgentError as e:
            return e
        return None

    async def signal(self, to: AgentAddress, spec: SignalSpec) -> None:
        await self._post(to, "/v1/signal", to_dict(spec))

    async def close(self) -> None:
        await self._http.aclose()


@dataclass
class RecordingAgentClient:
    """Test double: records every order; ``fail_nodes`` simulates unreachable agents."""

    sent: list[tuple[str, str, Any]] = field(default_factory=list)
    fail_nodes: set[str] = field(default_factory=set)

    async def launch(self, to: AgentAddress, spec: LaunchSpec) -> None:
        if to.node in self.fail_nodes:
            raise AgentError(f"node {to.node} unreachable")
        self.sent.append(("launch", to.node, spec))

    async def launch_many(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]:
        if to.node in self.fail_nodes:
            raise AgentError(f"node {to.node} unreachable")
        self.sent.extend(("launch", to.node, spec) for spec in specs)
        return [None] * len(specs)

    async def signal(self, to: AgentAddress, spec: SignalSpec) -> None:
        if to.node in self.fail_nodes:
            raise AgentError(f"node {to.node} unreachable")
        self.sent.append(("signal", to.node, spec))

    async def close(self) -> None:
        return None


def now() -> float:
    return time.time()
