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
be imported, else the h11 one (slower, and without the timers below).

Slow and lying clients (issue 19).  uvicorn arms no timer on a new
connection and none while a request is being read, so a client that
connected and said nothing, sent its headers a byte a minute, or announced
``Content-Length: 1000`` and sent nothing held a connection (and, for the
last, a waiting request task) for as long as it liked.  This protocol adds,
per connection, on both listeners:

* **a request deadline**: from a request's first byte to its last (headers
  and body), at most ``REQUEST_TIMEOUT`` (5 s).  Past it the client gets
  ``408 Request Timeout`` (or, if an answer had begun, nothing) and the
  connection is closed; the request's task sees the client leave.  A
  request that has arrived whole may take as long as its work takes;
* **an idle limit**: a connection with no request under way (new, or
  between keep-alive requests) is closed after uvicorn's keep-alive timeout
  (``timeout_keep_alive``, 30 s in ``controller.main``);
* **a header size limit**: request line and headers at most
  ``MAX_HEADER_BYTES`` (64 KiB, four times what a munge credential or a
  token needs) -> ``431 Request Header Fields Too Large``, connection
  closed.  Bodies are capped per route by ``slurmlite.bodylimit`` (413).

Idle connections cost a file descriptor and a few kB each and delay nobody:
no ``limit_concurrency`` is set (it counts connections, so 200 idle ones
would turn submissions into 503s), and the listen backlog is 1024.
Example: ``printf 'POST /v1/jobs HTTP/1.1\\r\\nContent-Length: 1000\\r\\n\\r\\n' | nc -U
slurmctld.socket`` prints ``HTTP/1.1 408 Request Timeout`` after 5 s.
"""

from __future__ import annotations

from typing import Any

from controller.auth.callers import PeerCredProtocol, transport_credentials

REQUEST_TIMEOUT = 5.0  # s, first byte to last byte of one request
MAX_HEADER_BYTES = 64 * 1024  # request line + headers


def http_protocol() -> type:
    """The uvicorn protocol class for slurmctld's listeners."""
    try:
        return _httptools_class()
    except ImportError:
        return PeerCredProtocol


def _httptools_class() -> type:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class PeerCredHttpToolsProtocol(HttpToolsProtocol):
        """httptools-based HTTP/1.1 that records the Unix-socket peer's credentials
        and drops slow clients (see the module docstring)."""

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.app_state = {**self.app_state, "peercred": transport_credentials(transport)}
            self._deadline: Any = None  # the request timer (asyncio.TimerHandle)
            self._header_bytes = 0
            self._refusal: bytes | None = None  # a 431 to send instead of uvicorn's 400
            # a connection that has not begun a request is idle, as between keep-alive ones
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_deadline()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._header_bytes = 0
            self._stop_deadline()
            self._deadline = self.loop.call_later(REQUEST_TIMEOUT, self._too_slow)

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value) + 4)
            super().on_header(name, value)

        def on_message_complete(self) -> None:
            self._stop_deadline()
            super().on_message_complete()

        def _count(self, n: int) -> None:
            self._header_bytes += n
            if self._header_bytes > MAX_HEADER_BYTES:
                self._refusal = _plain(431, f"request headers over {MAX_HEADER_BYTES} bytes")
                raise _HeadersTooLarge  # stops the parser; uvicorn then calls send_400_response

        def send_400_response(self, msg: str) -> None:
            if self._refusal is None:
                super().send_400_response(msg)
                return
            self._stop_deadline()
            self.transport.write(self._refusal)
            self.transport.close()

        def _stop_deadline(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            """The request did not arrive whole in time: answer 408 (unless an answer has
            begun) and close; its task, if any, sees the client leave."""
            self._deadline = None
            if self.transport.is_closing():
                return
            cycle = (
                self.cycle if self.cycle is not None and self.cycle.scope is self.scope else None
            )
            if cycle is None or not cycle.response_started:
                self.transport.write(
                    _plain(408, f"request not received within {REQUEST_TIMEOUT:g} s")
                )
                if cycle is not None:
                    cycle.response_complete = True  # the app's own answer, if any, is dropped
            self.transport.close()

    return PeerCredHttpToolsProtocol


class _HeadersTooLarge(Exception):
    """Raised inside a parser callback to stop reading a request whose headers are too big."""


def _plain(status: int, text: str) -> bytes:
    """A complete HTTP/1.1 answer with a JSON ``detail``, closing the connection."""
    import json
    from http import HTTPStatus

    body = json.dumps({"detail": text}).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body
