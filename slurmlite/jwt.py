"""JSON Web Tokens for ``auth/jwt``: HS256 tokens as Slurm mints and checks them.

A token is three base64url parts joined by dots (RFC 7519): a header
``{"alg": "HS256", "typ": "JWT"}``, the claims, and HMAC-SHA256 over
``header.claims`` with the cluster's JWT key (the file named by
``AuthAltParameters=jwt_key=PATH``).  Slurm's claims are ``iat`` (issued
at), ``exp`` (expires at, both in seconds since the epoch) and ``sun``
("slurm user name"), and so are ours::

    >>> key = b"k" * 32
    >>> token = make_token(key, "alice", lifespan=60, now=1000)
    >>> verify_token(key, token, now=1030)
    'alice'
    >>> verify_token(key, token, now=1061)
    Traceback (most recent call last):
    ...
    slurmlite.jwt.TokenError: token expired

Anyone holding the key can mint a token for any user, so the key is as
secret as root's password: mode 0600 (or 0400), owned by root or the
SlurmUser, read by the controller alone.  Users get tokens from the
controller (``scontrol token``), never the key.

Facts from Slurm's ``auth_jwt.c`` and ``scontrol token`` (default lifespan
1800 s; only root and the SlurmUser may mint for someone else), in our
own words.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json

DEFAULT_LIFESPAN = 1800  # seconds, Slurm's DEFAULT_AUTH_TOKEN_LIFESPAN
_HEADER = {"alg": "HS256", "typ": "JWT"}


class TokenError(ValueError):
    """A token that proves nothing: malformed, forged, of another algorithm, or expired."""

    def __init__(self, message: str, expired: bool = False) -> None:
        super().__init__(message)
        self.expired = expired


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise TokenError("malformed token") from None


def _json(part: str) -> dict[str, object]:
    try:
        value = json.loads(_unb64(part))
    except (UnicodeDecodeError, ValueError):
        raise TokenError("malformed token") from None
    if not isinstance(value, dict):
        raise TokenError("malformed token")
    return value


def _sign(key: bytes, signing_input: str) -> str:
    return _b64(hmac.new(key, signing_input.encode("ascii"), hashlib.sha256).digest())


def make_token(key: bytes, username: str, lifespan: int, now: float) -> str:
    """A token naming ``username``, valid for ``lifespan`` seconds from ``now``."""
    if lifespan <= 0:
        raise ValueError(f"lifespan must be positive, not {lifespan}")
    claims = {"iat": int(now), "exp": int(now) + lifespan, "sun": username}
    head = _b64(json.dumps(_HEADER, separators=(",", ":")).encode())
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    return f"{head}.{body}.{_sign(key, f'{head}.{body}')}"


def verify_token(key: bytes, token: str, now: float) -> str:
    """The user name a valid token speaks for; TokenError otherwise.

    Order of checks: shape, algorithm (only HS256: a token that says
    ``"alg": "none"`` is refused, not trusted), signature (compared in
    constant time), then expiry -- so an expired token is reported as
    expired only when it is genuine.
    """
    parts = token.strip().split(".")
    if len(parts) != 3 or not all(parts):
        raise TokenError("malformed token")
    head, body, signature = parts
    if _json(head).get("alg") != "HS256":
        raise TokenError("unsupported token algorithm (only HS256)")
    # compare_digest takes only ASCII text: a forged signature may be anything
    if not signature.isascii() or not hmac.compare_digest(signature, _sign(key, f"{head}.{body}")):
        raise TokenError("token signature invalid")
    claims = _json(body)
    exp, user = claims.get("exp"), claims.get("sun")
    if not isinstance(exp, int) or not isinstance(user, str) or not user:
        raise TokenError("token lacks exp or sun")
    if exp < now:
        raise TokenError("token expired", expired=True)
    return user
