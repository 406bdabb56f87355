"""Signatures between controller and agents, from one shared cluster key.

The cluster key is a random secret in a file only its owner may read (mode
0600; ``load_key`` refuses anything looser).  Nobody signs with it directly:
each purpose gets its own key derived with HMAC-SHA256, so a value signed for
one purpose can never be replayed as another:

    node key        = HMAC(cluster key, "node:" + node name)
    controller key  = HMAC(cluster key, "controller")

Two kinds of signed things exist.

*Signed requests* (agent -> controller: registration, heartbeats, job
completions).  The agent signs ``METHOD \\n PATH \\n TIME \\n NONCE \\n
SHA256(body)`` with its node key and sends the node name, time, nonce and
signature as headers.  The controller recomputes the node key from the name,
checks the signature, refuses a clock skew over ``MAX_SKEW`` seconds and
refuses a nonce it has already seen (replay).

*Launch credentials* (controller -> agent: launch, signal, terminate).  A
credential is ``base64url(json(claims)) + "." + hex(HMAC(controller key,
that base64 text))``.  Its claims name the job, step, restart count, uid,
gid, the nodes, the SHA-256 of the request body it travels with (so nothing
else in the request can be altered), an expiry time and a nonce.  An agent
acts on nothing without a valid one.

Worked example::

    key = b"k" * 32
    cred = sign_credential(key, {"job": 7, "op": "launch"}, now=100.0, ttl=60)
    claims = verify_credential(key, cred, now=130.0)   # -> {..., "job": 7}
    verify_credential(key, cred, now=200.0)            # CredentialError: expired

Reference: the idea mirrors Slurm's job credentials (slurmctld signs, slurmd
checks) and munge's time-limited, replay-protected tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_SKEW = 300.0  # seconds of clock difference accepted on signed requests
HEADER_NODE = "x-slurmlite-node"
HEADER_TIME = "x-slurmlite-time"
HEADER_NONCE = "x-slurmlite-nonce"
HEADER_SIG = "x-slurmlite-signature"


class CredentialError(Exception):
    """A signature, credential or key file failed its checks."""


# ------------------------------------------------------------------- keys


def generate_key_file(path: str | Path) -> None:
    """Write a new random cluster key, readable by its owner only."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")


def load_key(path: str | Path) -> bytes:
    """Read the cluster key; refuse a missing file or one others can read."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise CredentialError(
            f"cluster key file {p} not found; create it with 'slurmlite keygen {p}' (mode 0600)"
        ) from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CredentialError(
            f"cluster key file {p} is accessible by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); run 'chmod 600 {p}'"
        )
    key = p.read_text().strip().encode()
    if len(key) < 32:
        raise CredentialError(f"cluster key file {p} is too short (need 32+ characters)")
    return key


def derive_key(cluster_key: bytes, purpose: str) -> bytes:
    return hmac.new(cluster_key, purpose.encode(), hashlib.sha256).digest()


def node_key(cluster_key: bytes, node_name: str) -> bytes:
    return derive_key(cluster_key, "node:" + node_name)


def controller_key(cluster_key: bytes) -> bytes:
    return derive_key(cluster_key, "controller")


def body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


# -------------------------------------------------------- signed requests


def _request_text(method: str, path: str, ts: str, nonce: str, body: bytes) -> bytes:
    return "\n".join([method.upper(), path, ts, nonce, body_digest(body)]).encode()


def sign_request(
    key: bytes, node: str, method: str, path: str, body: bytes, now: float
) -> dict[str, str]:
    """Headers that authenticate one agent request."""
    ts = f"{now:.3f}"
    nonce = secrets.token_hex(12)
    sig = hmac.new(key, _request_text(method, path, ts, nonce, body), hashlib.sha256).hexdigest()
    return {HEADER_NODE: node, HEADER_TIME: ts, HEADER_NONCE: nonce, HEADER_SIG: sig}


def verify_request(
    cluster_key: bytes,
    headers: Mapping[str, str],
    method: str,
    path: str,
    body: bytes,
    now: float,
    seen: NonceCache,
) -> str:
    """Check a signed agent request; return the node name it proves."""
    try:
        node = headers[HEADER_NODE]
        ts = headers[HEADER_TIME]
        nonce = headers[HEADER_NONCE]
        sig = headers[HEADER_SIG]
    except KeyError:
        raise CredentialError("request is not signed") from None
    expected = hmac.new(
        node_key(cluster_key, node), _request_text(method, path, ts, nonce, body), hashlib.sha256
    ).hexdigest()
    if not hmac.compare_digest(expected, sig):
        raise CredentialError(f"bad signature for node {node}")
    try:
        skew = abs(now - float(ts))
    except ValueError:
        raise CredentialError("bad timestamp") from None
    if skew > MAX_SKEW:
        raise CredentialError(f"clock skew of {skew:.0f} s with node {node}")
    if not seen.add(nonce, now):
        raise CredentialError("replayed request")
    return node


class NonceCache:
    """Nonces seen within the skew window (older ones cannot pass the clock check)."""

    def __init__(self, window: float = 2 * MAX_SKEW) -> None:
        self.window = window
        self._seen: dict[str, float] = {}
        self._last_prune = 0.0

    def add(self, nonce: str, now: float) -> bool:
        if now - self._last_prune > self.window / 4:
            self._seen = {n: t for n, t in self._seen.items() if now - t < self.window}
            self._last_prune = now
        if nonce in self._seen:
            return False
        self._seen[nonce] = now
        return True


# ---------------------------------------------------- launch credentials


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_credential(key: bytes, claims: Mapping[str, Any], now: float, ttl: float) -> str:
    payload = dict(claims)
    payload["exp"] = now + ttl
    payload.setdefault("nonce", secrets.token_hex(12))
    text = _b64(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode())
    sig = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
    return f"{text}.{sig}"


def verify_credential(key: bytes, credential: str, now: float) -> dict[str, Any]:
    try:
        text, sig = credential.rsplit(".", 1)
    except ValueError:
        raise CredentialError("malformed credential") from None
    expected = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, sig):
        raise CredentialError("credential signature invalid")
    try:
        claims: dict[str, Any] = json.loads(_unb64(text))
    except ValueError:
        raise CredentialError("malformed credential") from None
    if float(claims.get("exp", 0)) < now:
        raise CredentialError("credential expired")
    return claims


def canonical_body(data: Mapping[str, Any], drop: str = "credential") -> bytes:
    """The bytes a credential's ``body`` claim hashes: the request minus the credential."""
    rest = {k: v for k, v in data.items() if k != drop}
    return json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()
