"""Signatures between controller and agents: one cluster key, one key per node.

The cluster key is a random secret in a file only its owner may read (mode
0600; ``load_key`` refuses anything looser).  Only the controller (and the
admin command that writes node key files) reads it.  Nobody signs with it
directly: each purpose gets its own key derived with HMAC-SHA256, so a value
signed for one purpose can never pass as another, and a node holds only the
keys of its own name::

    node key       = HMAC(cluster key, "node:" + node name)   file: <name>.key, 0600
    orders key     = HMAC(node key, "orders")       launch/signal credentials for that node
    to-node key    = HMAC(node key, "controller")   the controller's requests to that node

An agent is given its node key (``write_node_key_file`` / ``load_node_key``,
or derived from the cluster key on a single host) and derives the other two;
it can therefore sign requests as its own node only, and check orders meant
for itself only.  The controller derives every node's keys from the cluster
key.  A stolen node key lets an attacker act as that one node, no other.

*Signed requests* (agent -> controller: registration, heartbeats, job
completions; controller -> agent: every order).  The sender signs ``METHOD
\n PATH \n TIME \n NONCE \n SHA256(body)`` and sends the node name, time,
nonce and signature as headers.  The receiver derives the key from the node
name (``check_request``), checks the signature, refuses a clock skew over
``MAX_SKEW`` seconds with "clock skew of N s" and refuses a nonce it has seen
(``NonceCache``: each nonce is kept until its time stamp leaves the skew
window, after which the clock check refuses it anyway, so the cache holds
only the requests of the last ``2 * MAX_SKEW`` seconds and some).

*Launch credentials* (controller -> agent: launch, signal, terminate).  A
credential is ``base64url(json(claims)) + "." + hex(HMAC(orders key of the
target node, that base64 text))``.  Its claims name the operation, job, step,
restart count, uid, gid, the target node, the SHA-256 of the request body it
travels with (so nothing else in the request can be altered), an expiry
time and a nonce.  An order for several nodes gets one credential per node.
The agent remembers the nonces it accepted until they expire, across
restarts (``agent.orders``).

Worked example::

    key = b"k" * 32
    cred = sign_credential(key, {"job": 7, "op": "launch"}, now=100.0, ttl=60)
    claims = verify_credential(key, cred, now=130.0)   # -> {..., "job": 7}
    verify_credential(key, cred, now=200.0)            # CredentialError: expired

Reference: the idea mirrors Slurm's job credentials (slurmctld signs, slurmd
checks) and munge's time-limited, replay-protected tokens; the per-node
derivation is the usual key-diversification scheme (a master key, and one
derived key per device that cannot be turned back into the master).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Callable, Mapping
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


def _read_private(p: Path, what: str, hint: str) -> str:
    """The text of a key file; refuse a missing file or one others can read."""
    try:
        st = p.stat()
    except FileNotFoundError:
        raise CredentialError(f"{what} {p} not found; {hint}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CredentialError(
            f"{what} {p} is accessible by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); run 'chmod 600 {p}'"
        )
    return p.read_text()


def load_key(path: str | Path) -> bytes:
    """Read the cluster key; refuse a missing file or one others can read."""
    p = Path(path)
    hint = f"create it with 'slurmlite keygen {p}' (mode 0600)"
    key = _read_private(p, "cluster key file", hint).strip().encode()
    if len(key) < 32:
        raise CredentialError(f"cluster key file {p} is too short (need 32+ characters)")
    return key


def derive_key(parent: bytes, purpose: str) -> bytes:
    return hmac.new(parent, purpose.encode(), hashlib.sha256).digest()


def node_key(cluster_key: bytes, node_name: str) -> bytes:
    """The key node ``node_name`` signs its requests with (all it needs to hold)."""
    return derive_key(cluster_key, "node:" + node_name)


def orders_key(node_key: bytes) -> bytes:
    """The key of the launch/signal credentials meant for the node holding ``node_key``."""
    return derive_key(node_key, "orders")


def to_node_key(node_key: bytes) -> bytes:
    """The key of the controller's signed requests to the node holding ``node_key``."""
    return derive_key(node_key, "controller")


def write_node_key_file(cluster_key: bytes, name: str, path: str | Path) -> Path:
    """Write node ``name``'s key to ``path`` (mode 0600, replaced whole): ``NAME HEX``."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(f"{name} {node_key(cluster_key, name).hex()}\n")
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


def load_node_key(path: str | Path, name: str) -> bytes:
    """Read node ``name``'s key file; refuse loose modes, garbage and another node's file."""
    p = Path(path)
    hint = f"write it with 'slurmlite keys node {name} --dir {p.parent}' (mode 0600)"
    fields = _read_private(p, "node key file", hint).split()
    try:
        owner, key = fields[0], bytes.fromhex(fields[1])
    except (IndexError, ValueError):
        raise CredentialError(f"node key file {p} is not a node key (NAME HEX)") from None
    if len(fields) != 2 or len(key) != 32:
        raise CredentialError(f"node key file {p} is not a node key (NAME HEX)")
    if owner != name:
        raise CredentialError(f"node key file {p} is for node {owner}, not {name}")
    return key


def _same(expected: str, given: str) -> bool:
    """Constant-time comparison that also takes non-ASCII garbage (compare_digest on str does not)."""
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))


def body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


# -------------------------------------------------------- signed requests


def _request_text(method: str, path: str, ts: str, nonce: str, body: bytes) -> bytes:
    return "\n".join([method.upper(), path, ts, nonce, body_digest(body)]).encode()


def sign_request(
    key: bytes, node: str, method: str, path: str, body: bytes, now: float
) -> dict[str, str]:
    """Headers that authenticate one request as coming from (or going to) ``node``."""
    ts = f"{now:.3f}"
    nonce = secrets.token_hex(12)
    sig = hmac.new(key, _request_text(method, path, ts, nonce, body), hashlib.sha256).hexdigest()
    return {HEADER_NODE: node, HEADER_TIME: ts, HEADER_NONCE: nonce, HEADER_SIG: sig}


def check_request(
    key_of: Callable[[str], bytes],
    headers: Mapping[str, str],
    method: str,
    path: str,
    body: bytes,
    now: float,
    seen: NonceCache,
) -> str:
    """Check a signed request with the key ``key_of(node)``; return the node it names.

    ``key_of`` raises ``CredentialError`` for a node the receiver has no key for.
    Order of checks: signature (nothing unsigned reaches the nonce cache),
    clock skew, replay.
    """
    try:
        node = headers[HEADER_NODE]
        ts = headers[HEADER_TIME]
        nonce = headers[HEADER_NONCE]
        sig = headers[HEADER_SIG]
    except KeyError:
        raise CredentialError("request is not signed") from None
    text = _request_text(method, path, ts, nonce, body)
    expected = hmac.new(key_of(node), text, hashlib.sha256).hexdigest()
    if not _same(expected, sig):
        raise CredentialError(f"bad signature for node {node}")
    try:
        stamp = float(ts)
    except ValueError:
        raise CredentialError("bad timestamp") from None
    skew = abs(now - stamp)
    if not skew <= MAX_SKEW:  # also refuses nan
        raise CredentialError(f"clock skew of {skew:.0f} s with node {node}")
    if not seen.add(nonce, now, until=stamp + MAX_SKEW):
        raise CredentialError("replayed request")
    return node


def verify_request(
    cluster_key: bytes,
    headers: Mapping[str, str],
    method: str,
    path: str,
    body: bytes,
    now: float,
    seen: NonceCache,
) -> str:
    """The controller's check of an agent request: the key is derived from the node's name."""
    return check_request(
        lambda node: node_key(cluster_key, node), headers, method, path, body, now, seen
    )


class NonceCache:
    """Nonces of accepted requests, each kept until its request would fail the clock check.

    ``add(nonce, now, until)`` remembers ``nonce`` until ``until`` (the
    request's time stamp + ``MAX_SKEW``: later the skew check refuses it
    anyway).  Expired entries are dropped at most every ``window / 4``
    seconds, so the cache never holds more than the requests accepted in the
    last ``window * 1.25`` seconds: e.g. 100 nodes beating every 30 s keep
    under 100 * 750 / 30 = 2500 entries, whatever the uptime.
    """

    def __init__(self, window: float = 2 * MAX_SKEW) -> None:
        self.window = window
        self._seen: dict[str, float] = {}  # nonce -> forget after
        self._last_prune = float("-inf")

    def __len__(self) -> int:
        return len(self._seen)

    def add(self, nonce: str, now: float, until: float | None = None) -> bool:
        """Remember ``nonce``; False if it is already remembered (a replay)."""
        if now - self._last_prune > self.window / 4:
            self._seen = {n: t for n, t in self._seen.items() if t >= now}
            self._last_prune = now
        expiry = self._seen.get(nonce)
        if expiry is not None and expiry >= now:
            return False
        self._seen[nonce] = now + self.window if until is None else min(until, now + self.window)
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
    if not _same(expected, sig):
        raise CredentialError("credential signature invalid")
    try:
        claims: dict[str, Any] = json.loads(_unb64(text))
        exp = float(claims.get("exp", 0))
    except (ValueError, TypeError, AttributeError):
        raise CredentialError("malformed credential") from None
    if not exp >= now:
        raise CredentialError("credential expired")
    return claims


def canonical_body(data: Mapping[str, Any], drop: str = "credential") -> bytes:
    """The bytes a credential's ``body`` claim hashes: the request minus the credential."""
    rest = {k: v for k, v in data.items() if k != drop}
    return json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()
