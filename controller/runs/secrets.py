"""Each user's secrets, stored encrypted, handed only to that user's running runs.

``slurmlite secret set NAME`` sends a value once; the controller keeps it
encrypted with AES-GCM (the ``cryptography`` package) under a key derived
from the cluster key (``derive_key(cluster_key, "secrets")``): the store,
its backups and ``slurmlite archive`` never hold a value in clear.  Each
ciphertext is bound to its owner and name (both are the cipher's associated
data), so a row copied to another user or name no longer decrypts.

Nobody reads a value back: ``secret list`` shows names and dates,
``get run`` shows which variable takes which secret.  The only way out is
``slurmlite node-run`` on a node of the owner's *running* run, which asks
for its run's secrets (``GET /v1/runs/{id}/node-env``) and exports them to
the command; the command's log is the user's own.

Example: ``box.seal(1000, "hf/token", b"abc")`` -> 12-byte nonce + ciphertext;
``box.open(1000, "hf/token", sealed) == b"abc"``, ``box.open(1001, ...)``
raises ``InvalidTag``.
"""

from __future__ import annotations

import os
import re

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from slurmlite.credential import derive_key

__all__ = ["MAX_SECRET_BYTES", "NAME", "SecretBox"]

NAME = re.compile(r"[A-Za-z0-9_.\-/]{1,128}")
MAX_SECRET_BYTES = 64 * 1024


class SecretBox:
    def __init__(self, cluster_key: bytes) -> None:
        self._aead = AESGCM(derive_key(cluster_key, "secrets"))

    @staticmethod
    def _bound(uid: int, name: str) -> bytes:
        return f"{uid}\0{name}".encode()

    def seal(self, uid: int, name: str, value: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, value, self._bound(uid, name))

    def open(self, uid: int, name: str, sealed: bytes) -> bytes:
        return self._aead.decrypt(sealed[:12], sealed[12:], self._bound(uid, name))
