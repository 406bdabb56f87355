"""Local receivers for notification tests: a tiny SMTP server and an HTTP sink.

Both run in a thread of the test process on 127.0.0.1, record what they
receive, and stop cleanly (``stop``); no dependency beyond the standard
library.  :class:`SmtpSink` speaks just enough SMTP (RFC 5321) for
``smtplib``: HELO/EHLO, MAIL, RCPT, DATA (with dot-unstuffing), RSET, NOOP,
QUIT.  It can be stopped and started again on the same port, to play a mail
server that is down for a while.  :class:`HttpSink` keeps each POST's path
and JSON body, and its headers.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Smtp(socketserver.StreamRequestHandler):
    def reply(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        sink: SmtpSink = self.server.sink  # type: ignore[attr-defined]
        self.reply("220 sink ESMTP")
        rcpt: list[str] = []
        while line := self.rfile.readline():
            verb = line[:4].upper()
            if verb in (b"HELO", b"EHLO"):
                self.reply("250 sink")
            elif verb == b"MAIL":
                rcpt = []
                self.reply("250 OK")
            elif verb == b"RCPT":
                rcpt.append(line.decode().split(":", 1)[1].strip().strip("<>"))
                self.reply("250 OK")
            elif verb == b"DATA":
                self.reply("354 end with .")
                data = bytearray()
                while (chunk := self.rfile.readline()) not in (b".\r\n", b".\n", b""):
                    chunk = chunk[1:] if chunk.startswith(b"..") else chunk
                    data += chunk.replace(b"\r\n", b"\n")  # stored with local line ends
                mail = message_from_bytes(bytes(data), policy=policy.default)
                sink.received.append((rcpt, mail))  # type: ignore[arg-type]
                self.reply("250 queued")
            elif verb == b"QUIT":
                self.reply("221 bye")
                return
            else:  # RSET, NOOP, anything else
                self.reply("250 OK")


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


class SmtpSink:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.received: list[tuple[list[str], EmailMessage]] = []
        self._server: _Server | None = None

    def start(self) -> SmtpSink:
        server = _Server(("127.0.0.1", self.port), _Smtp)
        server.sink = self  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def subjects(self) -> list[str]:
        return [str(m["Subject"]) for _, m in self.received]


class HttpSink:
    def __init__(self) -> None:
        self.received: list[tuple[str, dict]] = []  # type: ignore[type-arg]
        self.headers: list[dict[str, str]] = []  # each POST's headers, in the same order
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                sink.headers.append(dict(self.headers.items()))
                sink.received.append((self.path, json.loads(body)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
