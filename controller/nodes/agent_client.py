"""Talking to node agents: signed requests carrying signed launch/signal/terminate/note/tail orders.

Every order carries a credential signed with the *target node's* orders key
(``slurmlite.credential``: derived from that node's key, so only that node
can check it and no node can forge one for another) whose claims bind the
operation, job, step, restart count, uid, gid, the target node, the job's
nodes, the script's SHA-256, the hash of the whole request body, an expiry
and a nonce.  An order for several nodes gets one credential per node.  A
job step's orders (``StepLaunch``, op ``step``) are signed the same way but
travel through srun, which forwards them to each node's agent; their
``step`` claim is the step's number and ``nodes`` the step's nodes.  The
HTTP request itself is signed too, with the node's to-node key (headers as
in ``sign_request``), so an agent answers nothing but ``/health`` and
``/openapi.json`` to anyone else.  ``Signer`` derives and caches each
node's two keys from the cluster key.

Every credential also carries the controller's *fencing epoch* (claims
``epoch`` and ``store``: the store's lease, ``controller.store.lease``).
An agent that has obeyed a newer epoch of the same store refuses the order
with HTTP 409 (``agent.fencing``), for a batch of launches an answer
``refused`` with ``code`` 409.  That means another controller took this
store over: the client logs it and calls ``on_fenced`` (the daemon's is
``lease.give_up``: stop now, before the refusal is written to a store that
is no longer ours); with no ``on_fenced`` it is an ordinary refusal.

``AgentClient`` is the seam (DESIGN.md §4 rule 9): ``HttpAgentClient`` talks
HTTP; tests use ``tests.recording_agents.RecordingAgentClient`` and assert
exactly what was sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from slurmlite.credential import (
    canonical_body,
    node_key,
    orders_key,
    sign_credential,
    sign_request,
    to_node_key,
)
from slurmlite.protocol import LaunchSpec, NoteSpec, SignalSpec, StepLaunch, TailSpec, to_dict

log = logging.getLogger("slurmctld.agents")

CREDENTIAL_TTL = 120.0  # seconds, like Slurm's default credential lifetime


@dataclass
class AgentOrder:
    """Something an agent must be told after a commit."""

    kind: str  # "terminate" | "signal" | "note" (``message``: the line for the job's stderr)
    job_id: int
    node: str
    restarts: int
    signal: int | None = None
    message: str | None = None
    batch_only: bool = False
    full: bool = False


@dataclass(frozen=True)
class AgentAddress:
    node: str
    addr: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.addr}:{self.port}"


class AgentError(Exception):
    """The agent could not be reached or refused the order.

    ``unanswered``: the request went out but no answer came (the agent died
    or stalled while handling it): the order may have been carried out, so
    a launch counts as started and the node's reports settle it
    (``controller.nodes.reconcile``), never as "nothing ran"."""

    def __init__(
        self, message: str, refused: bool = False, fenced: bool = False, unanswered: bool = False
    ) -> None:
        super().__init__(message)
        self.refused = refused
        self.fenced = fenced  # refused for an older epoch: another controller took over
        self.unanswered = unanswered


# failures before a byte of the request left: the agent cannot have acted on it
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)


def unreachable(to: AgentAddress, e: httpx.HTTPError) -> AgentError:
    """The error for a request to ``to`` that failed with ``e``."""
    if isinstance(e, NOT_SENT):
        return AgentError(f"node {to.node} unreachable at {to.url}: {e}")
    return AgentError(f"node {to.node} did not answer at {to.url}: {e!r}", unanswered=True)


FENCED = 409  # the agent has obeyed a newer controller epoch (agent.fencing)


class Signer:
    """Signs orders and requests for any node, from the cluster key.

    ``epoch`` and ``store`` go into every credential: the lease this
    controller holds (0 and "": none taken, as in tests that build a
    controller in-process).
    """

    def __init__(self, cluster_key: bytes, epoch: int = 0, store: str = "") -> None:
        self._cluster_key = cluster_key
        self.epoch = epoch
        self.store = store
        self._keys: dict[str, tuple[bytes, bytes]] = {}  # node -> (orders key, to-node key)

    def _keys_of(self, node: str) -> tuple[bytes, bytes]:
        keys = self._keys.get(node)
        if keys is None:
            nk = node_key(self._cluster_key, node)
            keys = self._keys[node] = (orders_key(nk), to_node_key(nk))
        return keys

    def sign(
        self,
        op: str,
        body: dict[str, Any],
        node: str,
        uid: int,
        gid: int,
        now: float,
        nodes: list[str] | None = None,
    ) -> str:
        """A credential for ``op`` on ``node`` only (``nodes``: the job's, default [node])."""
        claims = {
            "op": op,
            "job": body["job_id"],
            "step": body.get("step_id", "batch"),
            "restarts": body["restarts"],
            "uid": uid,
            "gid": gid,
            "node": node,
            "nodes": nodes if nodes is not None else [node],
            "script_sha256": hashlib.sha256(body.get("script", "").encode()).hexdigest(),
            "body": hashlib.sha256(canonical_body(body)).hexdigest(),
            "epoch": self.epoch,
            "store": self.store,
        }
        return sign_credential(self._keys_of(node)[0], claims, now=now, ttl=CREDENTIAL_TTL)

    def launch(
        self, spec: LaunchSpec, node: str, now: float, nodes: list[str] | None = None
    ) -> LaunchSpec:
        """Sign ``spec`` for ``node`` (in place; returned)."""
        body = to_dict(spec)
        spec.credential = self.sign("launch", body, node, spec.uid, spec.gid, now, nodes)
        return spec

    def step(self, launch: StepLaunch, now: float, nodes: list[str]) -> StepLaunch:
        """Sign ``launch`` for its node (in place; returned): op ``step``, ``nodes`` the step's.

        srun carries it to the agent, which checks it like a launch order; the
        same credential string then authorises that step's ``StepInput``.
        """
        body = to_dict(launch)
        launch.credential = self.sign("step", body, launch.node, launch.uid, launch.gid, now, nodes)
        return launch

    def signal(self, spec: SignalSpec, node: str, uid: int, gid: int, now: float) -> SignalSpec:
        """Sign ``spec`` for ``node`` (in place; returned): one credential per node."""
        body = to_dict(spec)
        op = "terminate" if spec.signal is None else "signal"
        spec.credential = self.sign(op, body, node, uid, gid, now)
        return spec

    def note(self, spec: NoteSpec, node: str, uid: int, gid: int, now: float) -> NoteSpec:
        """Sign ``spec`` for ``node`` (in place; returned): op ``note``, its own credential."""
        spec.credential = self.sign("note", to_dict(spec), node, uid, gid, now)
        return spec

    def tail(self, spec: TailSpec, node: str, now: float) -> TailSpec:
        """Sign ``spec`` for ``node`` (in place; returned): op ``tail``, the job's uid/gid."""
        spec.credential = self.sign("tail", to_dict(spec), node, spec.uid, spec.gid, now)
        return spec

    def headers(self, node: str, method: str, path: str, body: bytes, now: float) -> dict[str, str]:
        """Signature headers of a request to ``node``'s agent."""
        return sign_request(self._keys_of(node)[1], node, method, path, body, now)


class AgentClient(Protocol):
    async def launch(self, to: AgentAddress, spec: LaunchSpec) -> None: ...

    async def launch_many(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]: ...

    async def signal(self, to: AgentAddress, spec: SignalSpec) -> None: ...

    async def note(self, to: AgentAddress, spec: NoteSpec) -> None: ...

    async def tail(self, to: AgentAddress, spec: TailSpec) -> list[dict[str, Any]]: ...

    async def close(self) -> None: ...


class HttpAgentClient:
    def __init__(
        self,
        signer: Signer,
        timeout: float = 10.0,
        on_fenced: Callable[[str], None] | None = None,
    ) -> None:
        self._signer = signer
        self._http = httpx.AsyncClient(timeout=timeout)
        self._on_fenced = on_fenced

    def _refused(self, message: str, status: int) -> AgentError:
        """The error of a refusal; a fencing refusal is logged and handed to ``on_fenced``."""
        if status != FENCED:
            return AgentError(message, refused=True)
        log.error(
            "event=fenced epoch=%s error=%r: another slurmctld holds this store now",
            self._signer.epoch,
            message,
        )
        if self._on_fenced is not None:
            self._on_fenced(f"fenced off by a newer controller: {message}")
        return AgentError(message, refused=True, fenced=True)

    async def _send(self, to: AgentAddress, path: str, payload: dict[str, Any]) -> httpx.Response:
        """POST ``payload`` to ``to``'s agent, the request signed for that node."""
        body = json.dumps(payload).encode()
        headers = self._signer.headers(to.node, "POST", path, body, time.time())
        headers["content-type"] = "application/json"
        return await self._http.post(to.url + path, content=body, headers=headers)

    async def _post(self, to: AgentAddress, path: str, body: dict[str, Any]) -> None:
        try:
            r = await self._send(to, path, body)
        except httpx.HTTPError as e:
            raise unreachable(to, e) from e
        if r.status_code >= 400:
            raise self._refused(
                f"node {to.node} refused {path}: {r.status_code} {r.text}", r.status_code
            )

    async def launch(self, to: AgentAddress, spec: LaunchSpec) -> None:
        await self._post(to, "/v1/launch", to_dict(spec))

    async def launch_many(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]:
        """Several launch orders for one node in one request; per order None or its refusal.

        Orders go in requests of at most ``LAUNCH_BATCH_BYTES`` of scripts and
        environments (the agent refuses bodies over 64 MiB); a request that cannot
        reach the node answers its orders with an unreachable error (nothing ran).
        An agent without the batch route (404) gets one request per order.
        """
        out: list[AgentError | None] = []
        for chunk in _by_size(specs, LAUNCH_BATCH_BYTES):
            try:
                out += await self._launch_chunk(to, chunk)
            except AgentError as e:
                out += [e] * len(chunk)
        return out

    async def _launch_chunk(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]:
        body = {"launches": [to_dict(s) for s in specs]}
        try:
            r = await self._send(to, "/v1/launches", body)
        except httpx.HTTPError as e:
            raise unreachable(to, e) from e
        if r.status_code == 404:
            return list(await asyncio.gather(*(self._one(to, s) for s in specs)))
        if r.status_code >= 400:
            why = f"node {to.node} refused /v1/launches: {r.status_code} {r.text}"
            raise self._refused(why, r.status_code)
        answers = {(a["job_id"], a["restarts"]): a for a in r.json()["results"]}
        out: list[AgentError | None] = []
        for spec in specs:
            a = answers.get((spec.job_id, spec.restarts))
            if a is None or a["status"] == "refused":
                why = a.get("error") if a else "no answer for this order"
                code = (a.get("code") if a else None) or 403
                out.append(self._refused(f"node {to.node} refused launch: {why}", code))
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

    async def note(self, to: AgentAddress, spec: NoteSpec) -> None:
        await self._post(to, "/v1/note", to_dict(spec))

    async def tail(self, to: AgentAddress, spec: TailSpec) -> list[dict[str, Any]]:
        """Per path of ``spec``: ``{"path", "found", "data"}`` (``agent.tail``)."""
        try:
            r = await self._send(to, "/v1/tail", to_dict(spec))
        except httpx.HTTPError as e:
            raise unreachable(to, e) from e
        if r.status_code >= 400:
            raise self._refused(f"node {to.node} refused /v1/tail: {r.status_code}", r.status_code)
        return list(r.json()["files"])

    async def close(self) -> None:
        await self._http.aclose()


LAUNCH_BATCH_BYTES = 32 << 20  # half the agent's cap on /v1/launches: JSON escapes grow text


def _by_size(specs: list[LaunchSpec], limit: int) -> list[list[LaunchSpec]]:
    """``specs`` in order, cut into runs whose scripts and environments stay under ``limit``
    (a single larger order still goes alone).  Sizes count characters, a lower bound."""
    chunks: list[list[LaunchSpec]] = [[]]
    used = 0
    for spec in specs:
        size = 1024 + len(spec.script) + sum(len(k) + len(v) for k, v in spec.environment.items())
        if chunks[-1] and used + size > limit:
            chunks.append([])
            used = 0
        chunks[-1].append(spec)
        used += size
    return [c for c in chunks if c]
