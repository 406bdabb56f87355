"""slurmctld's HTTP protocol: every request on the Unix socket carries its peer's credentials.

A real listener (the protocol class slurmctld uses, on a Unix socket and on
TCP) in front of a tiny ASGI app that answers with ``scope["state"]
["peercred"]``: over the Unix socket it is this process's (pid, uid, gid),
for every request of a kept-alive connection; over TCP there is none.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest
import uvicorn
from uvicorn.server import ServerState

from controller.auth.peercred_http import http_protocol


async def _echo_peercred(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
    await receive()
    body = json.dumps(scope["state"].get("peercred")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):  # type: ignore[no-untyped-def]
    async def once() -> object:
        writer.write(b"GET /who HTTP/1.1\r\nHost: x\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        return json.loads(await reader.readexactly(length))

    return once


def test_the_protocol_is_httptools_when_installed():
    pytest.importorskip("httptools")
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert issubclass(http_protocol(), HttpToolsProtocol)


def test_unix_socket_requests_carry_the_peer_credentials_and_tcp_ones_none(tmp_path: Path):
    cls = http_protocol()
    config = uvicorn.Config(_echo_peercred, http=cls, lifespan="off", log_level="warning")
    config.load()
    state = ServerState()

    async def scenario() -> tuple[list[object], object]:
        loop = asyncio.get_running_loop()

        def make():  # type: ignore[no-untyped-def]
            return cls(config=config, server_state=state, app_state={})

        path = str(tmp_path / "ctld.sock")
        unix = await loop.create_unix_server(make, path)
        tcp = await loop.create_server(make, "127.0.0.1", 0, family=socket.AF_INET)
        port = tcp.sockets[0].getsockname()[1]
        try:
            reader, writer = await asyncio.open_unix_connection(path)
            ask = _ask(reader, writer)
            seen = [await ask(), await ask()]  # two requests, one kept-alive connection
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            over_tcp = await _ask(reader, writer)()
            writer.close()
        finally:
            for conn in list(state.connections):
                conn.shutdown()
            unix.close()
            tcp.close()
            await unix.wait_closed()
            await tcp.wait_closed()
        return seen, over_tcp

    seen, over_tcp = asyncio.run(scenario())
    me = [os.getpid(), os.getuid(), os.getgid()]
    assert seen == [me, me]
    assert over_tcp is None
