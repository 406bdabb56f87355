"""srun's HTTP/1.1 to the agents: one JSON POST, or a JSON-lines answer read as it comes.

srun talks to each node of a step directly (``StepGrant.nodes[i].addr:port``,
plain HTTP over TCP): ``POST /v1/steps`` answers with a stream of JSON lines
(NDJSON) that lasts as long as the node's tasks, and ``POST /v1/steps/input``
with a small JSON answer.  The standard library's ``http.client`` would do,
but it costs a command ~18 ms of start-up (``cli/client.py`` says why), so
this is the same hand-written HTTP/1.1: a request with ``Content-Length``,
an answer framed by ``Transfer-Encoding: chunked`` (what a streaming server
sends), ``Content-Length``, or the end of the connection.

:meth:`AgentConnection.stream` yields one decoded JSON object per line as
soon as its newline arrives, so a task's output reaches the terminal while
the task still runs::

    conn = AgentConnection("10.0.0.2", 6818)
    for message in conn.stream("/v1/steps", launch):   # {"task": 0, "out": "aGkK"} ...
        ...

An answer other than 2xx raises :class:`AgentError` with the status and the
server's ``detail`` text.  Connections are kept alive for ``post``; a kept
one that the server closed while idle is reopened once.
"""

from __future__ import annotations

import _socket
import json

from cli.connection import tcp_connect

TYPE_CHECKING = False  # importing typing costs a command ~3 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

_RECV = 65536


class AgentError(Exception):
    """An agent answered with an error status (``status`` 0: it could not be reached)."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status, self.text = status, text


class AgentConnection:
    """HTTP/1.1 to one agent (``addr``, ``port``); not thread-safe: one per thread."""

    def __init__(self, addr: str, port: int, timeout: float = 10.0) -> None:
        self.addr, self.port, self.timeout = addr, port, timeout
        self._sock: _socket.socket | None = None
        self._buf = b""
        self._served = 0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock, self._buf, self._served = None, b"", 0

    # ------------------------------------------------------------ transport

    def _connect(self) -> _socket.socket:
        return tcp_connect(self.addr, self.port, self.timeout)

    def _send(self, path: str, body: Any) -> None:
        if self._sock is None:
            self._sock = self._connect()
        data = json.dumps(body).encode()
        host = self.addr if ":" not in self.addr else f"[{self.addr}]"
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self._sock.sendall(head.encode() + data)

    def _fill(self) -> bool:
        """Read more into the buffer; False at the end of the connection."""
        assert self._sock is not None
        chunk = self._sock.recv(_RECV)
        self._buf += chunk
        return bool(chunk)

    def _line(self) -> bytes:
        while b"\r\n" not in self._buf:
            if not self._fill():
                raise ConnectionError("agent closed the connection")
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            if not self._fill():
                raise ConnectionError("agent closed the connection")
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def _head(self) -> tuple[int, dict[bytes, bytes]]:
        status = int(self._line().split(b" ", 2)[1])
        headers: dict[bytes, bytes] = {}
        while line := self._line():
            key, _, value = line.partition(b":")
            headers[key.strip().lower()] = value.strip()
        return status, headers

    def _pieces(self, headers: dict[bytes, bytes]) -> Iterator[bytes]:
        """The answer's body, piece by piece as it arrives."""
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            while size := int(self._line().split(b";")[0], 16):
                yield self._exact(size)
                self._line()
            while self._line():  # trailers
                pass
        elif b"content-length" in headers:
            left = int(headers[b"content-length"])
            while left > 0:
                if not self._buf and not self._fill():
                    raise ConnectionError("agent closed the connection")
                piece, self._buf = self._buf[:left], self._buf[left:]
                left -= len(piece)
                yield piece
        else:  # until the connection ends
            while self._buf or self._fill():
                piece, self._buf = self._buf, b""
                yield piece
            self.close()
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()

    def _refuse(self, status: int, headers: dict[bytes, bytes]) -> AgentError:
        raw = b"".join(self._pieces(headers))
        try:
            detail = json.loads(raw).get("detail", raw.decode(errors="replace"))
        except (ValueError, AttributeError):
            detail = raw.decode(errors="replace")
        return AgentError(status, detail if isinstance(detail, str) else json.dumps(detail))

    # ----------------------------------------------------------------- calls

    def post(self, path: str, body: Any) -> Any:
        """POST ``body`` as JSON; the JSON answer (None if empty)."""
        for attempt in (0, 1):
            reused = self._served > 0
            try:
                self._send(path, body)
                status, headers = self._head()
                break
            except (OSError, ValueError, IndexError) as e:
                self.close()
                if not reused or attempt:
                    raise AgentError(0, str(e) or type(e).__name__) from None
        if status >= 300:
            raise self._refuse(status, headers)
        raw = b"".join(self._pieces(headers))
        self._served += 1
        return json.loads(raw) if raw.strip() else None

    def stream(
        self, path: str, body: Any, started: Callable[[], object] | None = None
    ) -> Iterator[dict[str, Any]]:
        """POST ``body``; yield each JSON line of the answer as it arrives.

        Raises :class:`AgentError` if the agent cannot be reached or refuses;
        a line that is not a JSON object is skipped.  ``started`` is called
        once the agent has accepted (a 2xx head).  Waits without a time limit
        once the answer has started (tasks may be quiet for hours).
        """
        try:
            self._send(path, body)
            status, headers = self._head()
        except (OSError, ValueError, IndexError) as e:
            self.close()
            raise AgentError(0, str(e) or type(e).__name__) from None
        if status >= 300:
            raise self._refuse(status, headers)
        assert self._sock is not None
        self._sock.settimeout(None)
        if started is not None:
            started()
        pending = b""
        try:
            for piece in self._pieces(headers):
                pending += piece
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    message = _decode(line)
                    if message is not None:
                        yield message
        except OSError as e:
            raise AgentError(0, str(e) or type(e).__name__) from None
        finally:
            self.close()
        message = _decode(pending)
        if message is not None:
            yield message


def _decode(line: bytes) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None
