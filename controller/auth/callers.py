"""Who is asking: ``AuthType=auth/local`` and node-signed requests.

Two kinds of callers reach the controller:

* **users' commands**, over the controller's Unix socket.  The kernel tells
  us the peer's uid and gid (``SO_PEERCRED``); nobody can claim to be someone
  else.  uvicorn does not put peer credentials in the ASGI scope, so
  ``PeerCredProtocol`` (an ``H11Protocol`` subclass used for every
  connection) reads them when the connection is made and puts them in the
  request's ``state`` (``request.state.peercred``).
* **node agents**, over TCP, with requests signed by their node key (see
  ``slurmlite.credential``).

Anything else — a TCP request without a valid node signature — is refused
with HTTP 401.  Munge and JWT (issue "authentication") slot in here as more
``Caller`` sources; the authorization rules in ``may_act_on`` stay the one
place that decides who may touch a job.

Worked example: root cancelling alice's job -> ``may_act_on(root, 1001)`` is
True; bob (uid 1002) cancelling it -> False -> ``ESLURM_ACCESS_DENIED``.
"""

from __future__ import annotations

import pwd
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


@dataclass(frozen=True)
class Caller:
    uid: int
    gid: int
    user: str
    admin: bool = False
    node: str | None = None  # set for node agents


NAME_TTL = 60.0  # seconds a uid -> name lookup is reused
_names: dict[int, tuple[str, float]] = {}


def user_name(uid: int) -> str:
    """The login name of ``uid`` (its digits if it has none), looked up at most once a minute.

    Every request of a command names its caller; reading the password
    database each time was a sixth of the controller's work per submission.
    A renamed or new account shows within ``NAME_TTL`` seconds.
    """
    now = time.monotonic()
    hit = _names.get(uid)
    if hit is not None and hit[1] > now:
        return hit[0]
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    _names[uid] = (name, now + NAME_TTL)
    return name


def uid_of(name: str) -> int | None:
    if name.isdigit():
        return int(name)
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


def peer_credentials(sock: socket.socket) -> tuple[int, int, int] | None:
    """(pid, uid, gid) of the process at the other end of a Unix socket."""
    if sock.family != socket.AF_UNIX:
        return None
    # struct ucred: pid_t (signed), uid_t and gid_t (unsigned: uids of 2**31 and up exist)
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
    pid, uid, gid = struct.unpack("iII", raw)
    return pid, uid, gid


class PeerCredProtocol(H11Protocol):
    """HTTP/1.1 protocol that records the Unix-socket peer's credentials."""

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # app_state is copied into every request's scope["state"]; give this
        # connection its own copy carrying the peer credentials.
        self.app_state = {**self.app_state, "peercred": transport_credentials(transport)}


def transport_credentials(transport: Any) -> tuple[int, int, int] | None:
    """``(pid, uid, gid)`` of the Unix-socket peer behind an asyncio transport; None on TCP."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return None
    try:
        return peer_credentials(sock)
    except OSError:
        return None


class AdminPolicy:
    """Who is an operator: root, SlurmUser and SlurmliteAdminUsers."""

    def __init__(self, slurm_user: str, admin_users: list[str]) -> None:
        self.admin_uids: set[int] = {0}
        for name in [slurm_user, *admin_users]:
            uid = uid_of(name) if name else None
            if uid is not None:
                self.admin_uids.add(uid)

    def caller(self, uid: int, gid: int) -> Caller:
        return Caller(uid=uid, gid=gid, user=user_name(uid), admin=uid in self.admin_uids)


def may_act_on(caller: Caller, owner_uid: int) -> bool:
    """The one authorization rule for job-mutating operations."""
    return caller.admin or caller.uid == owner_uid
