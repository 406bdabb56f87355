"""``auth/munge``: credentials from the munge daemon, through its two commands.

munge proves a process's uid and gid to another host without any secret in
the process: ``munged`` runs as its own user on every host of the cluster,
all sharing one key (``/etc/munge/munge.key``).  A process asks its local
munged for a credential (``munge -n``: "no payload"); munged stamps the
caller's uid and gid, as the kernel tells it over a Unix socket, encrypts
and MACs them with the shared key and returns a base64 text starting
``MUNGE:``.  The receiver hands that text to *its* munged (``unmunge``),
which checks the MAC and the time-to-live (300 s by default) and answers
the uid and gid -- or refuses it.  Each credential decodes once: munged
remembers what it decoded until the TTL has passed and calls a second
decode a replay.  So a credential proves "uid U asked munged, moments ago"
and cannot be reused by whoever sees it on the wire.

Worked example (a root shell on a host with munged running)::

    >>> cred = encode(None)            # "MUNGE:AwQFAAB..."
    >>> decode(cred, None)
    (0, 0)
    >>> decode(cred, None)
    Traceback (most recent call last):
    ...
    slurmlite.munge.CredentialReplayed: Replayed credential

``unmunge`` exits with munge's error number (``munge.h``: 6 socket, 8 bad
credential, 15 expired, 16 rewound, 17 replayed, ...); :func:`decode` turns
those into the exceptions below.  ``socket`` is munged's socket path
(``AuthInfo=socket=PATH``), ``None`` for munge's default
(``/run/munge/munge.socket.2``).  We call the programs rather than link
libmunge: no compiled dependency, and a credential is a few milliseconds.

Reference: munge(1), unmunge(1), munged(8); Slurm's ``auth/munge`` plugin
uses the same calls through libmunge.
"""

from __future__ import annotations

import subprocess
from typing import Any

MUNGE = "munge"
UNMUNGE = "unmunge"
TIMEOUT = 10.0  # seconds to wait for munged before calling it unavailable
MAX_CREDENTIAL = 4096  # bytes: an empty-payload credential is ~120
_SOCKET_ERRORS = (6, 7)  # EMUNGE_SOCKET, EMUNGE_TIMEOUT
_EXPIRED, _REWOUND, _REPLAYED = 15, 16, 17


class AuthError(Exception):
    """A credential that proves nothing, or no way to make or check one."""


class MungeUnavailable(AuthError):
    """munged is not running (or not reachable on its socket), or munge is not installed."""


class CredentialExpired(AuthError):
    """munge's "Expired credential": older than its time-to-live."""


class CredentialReplayed(AuthError):
    """munge's "Replayed credential": this credential was already decoded once."""


class CredentialInvalid(AuthError):
    """Anything else munge refuses: not a credential, another key, a clock far ahead."""


def _socket_args(socket: str | None) -> list[str]:
    return ["-S", socket] if socket else []


def _run(argv: list[str], data: str | None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, input=data, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise MungeUnavailable(f"{argv[0]} is not installed (package munge)") from None
    except subprocess.TimeoutExpired:
        raise MungeUnavailable(f"munged did not answer within {TIMEOUT:.0f} s") from None


def _message(proc: subprocess.CompletedProcess[str]) -> str:
    """munge's own words: its ``Error:`` line, else the STATUS of the metadata."""
    for line in proc.stderr.splitlines():
        if "Error:" in line:
            return line.split("Error:", 1)[1].strip()
    for line in proc.stdout.splitlines():
        if line.startswith("STATUS:"):
            return line.split(":", 1)[1].strip().rsplit(" (", 1)[0]
    return f"munge error {proc.returncode}"


def _metadata(text: str) -> dict[str, Any]:
    """unmunge's metadata lines: ``UID: alice (1001)`` -> ``{"UID": 1001}``, first one wins."""
    meta: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the metadata ends at the first blank line
        key, _, value = line.partition(":")
        value = value.strip()
        if key in ("UID", "GID"):
            number = value.rsplit("(", 1)[-1].rstrip(")")
            value = int(number) if number.isdecimal() else None
        if value is not None:
            meta.setdefault(key, value)
    return meta


def encode(socket: str | None) -> str:
    """A fresh credential for the calling process (``munge -n``)."""
    proc = _run([MUNGE, "-n", *_socket_args(socket)], None)
    if proc.returncode != 0:
        message = _message(proc)
        if proc.returncode in _SOCKET_ERRORS:
            raise MungeUnavailable(message)
        raise AuthError(message)
    return proc.stdout.strip()


def decode(cred: str, socket: str | None) -> tuple[int, int]:
    """``(uid, gid)`` that ``cred`` proves (``unmunge``); an :class:`AuthError` otherwise.

    Blocks on a child process: async code calls it through ``asyncio.to_thread``.
    """
    cred = cred.strip()
    if not cred.startswith("MUNGE:") or len(cred) > MAX_CREDENTIAL or "\n" in cred:
        raise CredentialInvalid("not a munge credential")
    # the payload (a credential may carry one) goes to /dev/null, never into what we parse
    proc = _run([UNMUNGE, "-o", "/dev/null", *_socket_args(socket)], cred + "\n")
    code = proc.returncode
    if code == 0:
        meta = _metadata(proc.stdout)
        if meta.get("LENGTH") != "0":
            raise CredentialInvalid("a munge credential with a payload (expected 'munge -n')")
        if "UID" in meta and "GID" in meta:
            return meta["UID"], meta["GID"]
        raise CredentialInvalid("unmunge gave no UID/GID")
    message = _message(proc)
    if code in _SOCKET_ERRORS:
        raise MungeUnavailable(message)
    if code == _EXPIRED:
        raise CredentialExpired(message)
    if code == _REPLAYED:
        raise CredentialReplayed(message)
    if code == _REWOUND:
        message += " (check for out of sync clocks)"
    raise CredentialInvalid(message)
