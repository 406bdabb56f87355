"""The HTTP/1.1 protocol slurmctld serves with: httptools' parser, plus peer credentials.

uvicorn ships two HTTP/1.1 implementations: ``h11`` (pure Python) and
``httptools`` (the C parser of Node.js, wrapped).  Per request, on this
project's API burst (16 keep-alive connections over the Unix socket), the
server spends about 145 us in h11 against 85 us with httptools, and with
uvloop's event loop about 65 us: at 2,000 submissions/s the parser alone
would otherwise eat a third of a core.  So slurmctld uses httptools, and
uvloop when it is installed (both come with ``uvicorn[standard]``).

Authentication does not change: ``PeerCredHttpToolsProtocol`` does for the
httptools protocol exactly what ``controller.auth.callers.PeerCredProtocol`` does
for h11 — read ``SO_PEERCRED`` when the connection is made and put the
peer's (pid, uid, gid) in this connection's copy of the app state, which
every request's ``request.state`` starts from.  A TCP peer has no such
credentials (None), so only node-signed requests get past it.

``http_protocol()`` picks the class: the httptools one when httptools can
be imported, else the h11 one (same behaviour, slower).
"""

from __future__ import annotations

from typing import Any

from controller.auth.callers import PeerCredProtocol, transport_credentials


def http_protocol() -> type:
    """The uvicorn protocol class for slurmctld's listeners."""
    try:
        return _httptools_class()
    except ImportError:
        return PeerCredProtocol


def _httptools_class() -> type:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class PeerCredHttpToolsProtocol(HttpToolsProtocol):
        """httptools-based HTTP/1.1 that records the Unix-socket peer's credentials."""

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.app_state = {**self.app_state, "peercred": transport_credentials(transport)}

    return PeerCredHttpToolsProtocol
