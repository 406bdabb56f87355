"""Checking the controller's orders: who sent them, for whom, and only once.

An agent holds one secret, its node key (``slurmlite.credential``), and
derives from it the two keys the controller uses towards this node: the
*to-node key* of signed requests and the *orders key* of launch and signal
credentials.  ``OrderGate`` applies two checks, in this order:

1. **the request** (``check_request``): every route but ``/health`` and
   ``/openapi.json`` must carry the controller's signature headers made with
   the to-node key, for this node's name, within ``MAX_SKEW`` of our clock,
   with a nonce not seen in that window (in memory: after a restart the
   clock check covers what was forgotten).  Failing: HTTP 401.
2. **each order** (``verify``): its credential must be signed with the
   orders key, unexpired, name this node, the operation, job, restart
   count, uid/gid, script and request body that came with it.  Failing:
   HTTP 403 (or ``refused`` for one order of a batch), nothing spawned or
   signalled.  A job step's order (op ``step``, ``agent.steproutes``) is
   checked the same way, its step number too; srun brings it, so its
   request bears no controller signature: the credential is all there is.

Then its controller epoch (``agent.fencing``): an order without one is
refused (403), one from an older epoch of the same store than this agent
has obeyed is refused with ``StaleOrder`` (HTTP 409, nothing spawned or
signalled); an accepted order's newer epoch is remembered in
``<spool>/epoch``.

Then its nonce.  Every accepted credential's nonce is remembered until the
credential expires, in ``<spool>/nonces`` (``SeenNonces``), so a restarted
agent still knows it.  A credential seen before is a *replay*:

* a launch whose run is here and still going (or being started) is let
  through: the launch path answers "already running" and spawns nothing,
  so the controller's retry of a launch stays harmless (idempotent);
* anything else is refused: a signal, terminate, note or tail order, a job step
  (a step is started once; srun does not retry one), or a launch whose run
  has ended (it would run the job a second time).

A relaunch after a requeue or a controller restart is a new credential
(restart count and nonce differ), so it is accepted.

Example: the controller sends launch L (nonce a1, job 7, restarts 0).
Accepted; ``nonces`` gains ``<exp> a1``.  L again while job 7 runs ->
"already running".  Job 7 ends; L again, even after ``slurmd`` restarted ->
403 "replayed credential".  The requeued job's launch (restarts 1, nonce
b2) -> started.

File format: one ``EXPIRY NONCE`` line per accepted credential, appended
(no fsync: a replay needs the agent, not the machine, to have restarted;
after a reboot no run of before is left to protect).  On open, and when
expired lines outnumber live ones, the file is rewritten whole (written
aside, renamed into place) without the expired ones.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent.fencing import EpochFence, FenceError
from slurmlite.credential import (
    CredentialError,
    NonceCache,
    canonical_body,
    check_request,
    orders_key,
    to_node_key,
    verify_credential,
)

NONCE = re.compile(r"[0-9A-Za-z_-]{8,128}")
COMPACT_SLACK = 256  # stale lines tolerated before the file is rewritten
PRUNE_EVERY_S = 30.0  # expired nonces are forgotten at most this often


class OrderRefused(Exception):
    """A controller order failed its credential checks (HTTP 403)."""

    status = 403


class StaleOrder(OrderRefused):
    """An order from an older controller epoch than one obeyed here (HTTP 409)."""

    status = 409


class SeenNonces:
    """Nonces of accepted credentials, kept until they expire, persisted in one file."""

    def __init__(self, path: Path, now: float) -> None:
        self.path = path
        self._live: dict[str, float] = {}  # nonce -> expiry
        self._lines = 0  # lines in the file
        self._fd: int | None = None  # the file, open for appending
        try:
            text = path.read_text()
        except FileNotFoundError:
            text = ""
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and NONCE.fullmatch(parts[1]):
                try:
                    self._live[parts[1]] = float(parts[0])
                except ValueError:
                    continue  # a torn line of a crash: ignored
        self._rewrite(now)

    def __contains__(self, nonce: str) -> bool:
        return nonce in self._live

    def __len__(self) -> int:
        return len(self._live)

    def add(self, nonce: str, expiry: float) -> None:
        """Remember ``nonce`` until ``expiry``: in memory, and appended to the file."""
        assert self._fd is not None, "closed"
        self._live[nonce] = expiry
        os.write(self._fd, f"{expiry:.3f} {nonce}\n".encode())
        self._lines += 1

    def prune(self, now: float) -> None:
        """Forget expired nonces (their credentials fail the expiry check anyway)."""
        self._live = {n: e for n, e in self._live.items() if e >= now}
        if self._lines - len(self._live) > COMPACT_SLACK:
            self._rewrite(now)

    def _rewrite(self, now: float) -> None:
        self._live = {n: e for n, e in self._live.items() if e >= now}
        tmp = self.path.with_name(self.path.name + ".new")
        with open(tmp, "w") as f:
            f.writelines(f"{e:.3f} {n}\n" for n, e in self._live.items())
        os.replace(tmp, self.path)
        self.close()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._lines = len(self._live)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class OrderGate:
    """What an agent knows to check the controller's requests and orders: its node key.

    It reads no clock: every check is given ``now`` (Unix seconds), the
    agent's clock (``AgentState.clock``), so a test moves time by hand.
    """

    def __init__(self, name: str, node_key: bytes, spool: Path, now: float) -> None:
        self.name = name
        self._request_key = to_node_key(node_key)
        self._orders_key = orders_key(node_key)
        self._requests = NonceCache()
        spool.mkdir(parents=True, exist_ok=True)
        self.seen = SeenNonces(spool / "nonces", now)
        self.fence = EpochFence(spool / "epoch")
        self._last_prune = now

    def check_request(
        self, headers: Mapping[str, str], method: str, path: str, body: bytes, now: float
    ) -> None:
        """Raise ``CredentialError`` unless the controller signed this request for this node."""

        def key_of(node: str) -> bytes:
            if node != self.name:
                raise CredentialError(f"request is for node {node}, this is node {self.name}")
            return self._request_key

        check_request(key_of, headers, method, path, body, now, self._requests)

    def verify(
        self, op: str, body: dict[str, Any], now: float, running: Callable[[int, int], bool]
    ) -> dict[str, Any]:
        """The claims of a valid, first-seen order; ``OrderRefused`` otherwise (see module doc).

        ``running(job, restarts)``: that run is here and going, or being started.
        """
        try:
            claims = verify_credential(self._orders_key, body.get("credential", ""), now)
        except CredentialError as e:
            raise OrderRefused(str(e)) from None
        for ok, why in _claim_checks(op, claims, body, self.name):
            if not ok:
                raise OrderRefused(why)
        try:
            store, epoch = self.fence.check(claims)
        except FenceError as e:
            raise (StaleOrder if e.stale else OrderRefused)(str(e)) from None
        nonce = claims.get("nonce")
        if not isinstance(nonce, str) or not NONCE.fullmatch(nonce):
            raise OrderRefused("credential has no nonce")
        if now - self._last_prune > PRUNE_EVERY_S:
            self.seen.prune(now)
            self._last_prune = now
        if nonce in self.seen:
            if op == "launch" and running(claims["job"], claims["restarts"]):
                return claims  # a repeated launch: answered "already running"
            raise OrderRefused("replayed credential")
        self.seen.add(nonce, float(claims["exp"]))
        self.fence.obeyed(store, epoch)
        return claims

    def signed_claims(self, credential: str) -> dict[str, Any]:
        """The claims of a credential signed for this node, expired or not.

        For requests that follow an accepted order and may come long after its
        credential expired (a step's stdin): they are authorised by being that
        very credential; this check only tells a forged one (401) from one
        whose step has ended (404).  Raises ``CredentialError``.
        """
        return verify_credential(self._orders_key, credential, float("-inf"))

    def close(self) -> None:
        self.seen.close()


# the credential operations each route accepts (a note's credential is no terminate's)
_OPS = {
    "launch": {"launch"},
    "signal": {"signal", "terminate"},
    "step": {"step"},
    "note": {"note"},
    "tail": {"tail"},
}


def _claim_checks(
    op: str, claims: dict[str, Any], body: dict[str, Any], name: str
) -> list[tuple[bool, str]]:
    ops = _OPS[op]
    checks = [
        (claims.get("op") in ops, "wrong operation"),
        (claims.get("node") == name, f"credential is not for node {name}"),
        (claims.get("job") == body.get("job_id"), "job id mismatch"),
        (claims.get("restarts") == body.get("restarts"), "restart count mismatch"),
        (claims.get("body") == _sha(canonical_body(body)), "request altered"),
    ]
    if op in ("launch", "step", "tail"):
        same_ids = claims.get("uid") == body.get("uid") and claims.get("gid") == body.get("gid")
        checks.append((same_ids, "uid/gid mismatch"))
    if op == "step":
        checks.append((claims.get("step") == body.get("step_id"), "step id mismatch"))
    if op == "launch":
        script = body.get("script", "")
        checks.append((claims.get("script_sha256") == _sha(script.encode()), "script altered"))
    return checks


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
