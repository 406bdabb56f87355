"""The commands' HTTP/1.1 connections: to the controller's Unix socket, or over TCP.

Written by hand on ``_socket`` because ``http.client`` (email parser, ssl) and
even the ``socket`` wrapper module cost a command start-up time it does not
have (``cli/client.py`` says how much).  Keep-alive, answers framed by
``Content-Length`` or ``Transfer-Encoding: chunked``.  :func:`tcp_connect` is
shared with srun's connections to the agents (``cli/agent_http.py``).

A connection may carry a ``deadline`` (a ``time.monotonic()`` moment): then
connecting, sending and every read wait only for what is left of it, so a
request as a whole never outlives it (``TimeoutError``), however the
controller trickles its answer.  ``ControllerClient.request`` sets it from
``MessageTimeout``.
"""

from __future__ import annotations

import _socket
import time


def tcp_connect(host: str, port: int, timeout: float) -> _socket.socket:
    """A TCP connection to ``host:port`` (each address it resolves to, in turn), no Nagle."""
    failure: OSError = OSError(f"cannot resolve {host}")
    for family, kind, proto, _, addr in _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(addr)
        except OSError as e:
            sock.close()
            failure = e
            continue
        sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        return sock
    raise failure


class UnixConnection:
    """Just enough HTTP/1.1 over a Unix socket: keep-alive, Content-Length or chunked bodies.

    ``http.client`` would do, but importing it (email parser, ssl) costs a
    command about 18 ms of its start-up, a third of its time budget.
    """

    host = "localhost"  # the Host header

    def __init__(self, path: str, timeout: float) -> None:
        self._path = path
        self._timeout = timeout
        self._sock: _socket.socket | None = None
        self._buf = b""
        self._served = 0  # answers read on this socket
        self.deadline: float | None = None  # monotonic; None: each operation waits _timeout

    def _wait(self) -> float:
        """Seconds the next socket operation may wait (``TimeoutError`` if none is left)."""
        if self.deadline is None:
            return self._timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        return left

    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def reused(self) -> bool:
        """Connected, and already answered a request (kept alive): a failure now most
        likely means the controller closed it while idle, before reading anything."""
        return self._sock is not None and self._served > 0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock, self._buf, self._served = None, b"", 0

    def _connect(self) -> _socket.socket:
        # _socket, not socket: the wrapper module's enums cost ~3 ms of start-up
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(self._wait())
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        return sock

    def open(self) -> None:
        """Connect now (``OSError`` if nobody listens); ``request`` does it when needed."""
        if self._sock is None:
            self._sock = self._connect()

    def request(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        self.open()
        assert self._sock is not None
        data = body or b""
        head = f"{method} {target} HTTP/1.1\r\nHost: {self.host}\r\nContent-Length: {len(data)}\r\n"
        if body is not None:
            head += "Content-Type: application/json\r\n"
        for key, value in (headers or {}).items():
            head += f"{key}: {value}\r\n"
        self._sock.settimeout(self._wait())
        self._sock.sendall(head.encode() + b"\r\n" + data)
        status_line, answer_headers = self._read_head()
        status = int(status_line.split(b" ", 2)[1])
        if answer_headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            payload = self._read_chunked()
        else:
            payload = self._read_exact(int(answer_headers.get(b"content-length", b"0")))
        self._served += 1
        if answer_headers.get(b"connection", b"").lower() == b"close":
            self.close()
        return status, payload

    def _fill(self) -> None:
        assert self._sock is not None
        if self.deadline is not None:
            self._sock.settimeout(self._wait())
        chunk = self._sock.recv(262144)
        if not chunk:
            raise ConnectionError("controller closed the connection")
        self._buf += chunk

    def _read_line(self) -> bytes:
        while b"\r\n" not in self._buf:
            self._fill()
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._fill()
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def _read_head(self) -> tuple[bytes, dict[bytes, bytes]]:
        status_line = self._read_line()
        headers: dict[bytes, bytes] = {}
        while line := self._read_line():
            key, _, value = line.partition(b":")
            headers[key.strip().lower()] = value.strip()
        return status_line, headers

    def _read_chunked(self) -> bytes:
        parts = []
        while size := int(self._read_line().split(b";")[0], 16):
            parts.append(self._read_exact(size))
            self._read_line()
        while self._read_line():  # trailers
            pass
        return b"".join(parts)


class TcpConnection(UnixConnection):
    """The same HTTP/1.1 over TCP to ``SlurmctldHost:SlurmctldPort``: commands on a host
    without the controller's socket.  No peer credentials here: every request carries
    a munge credential or a token (``ControllerClient._auth_headers``)."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        super().__init__(f"{host}:{port}", timeout)
        self._addr = (host, port)
        self.host = host if ":" not in host else f"[{host}]"  # the Host header (IPv6 in [])

    def _connect(self) -> _socket.socket:
        return tcp_connect(*self._addr, self._wait())
