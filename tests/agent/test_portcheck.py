"""The rendezvous port warning: only for a port slurmlite chose, only when something listens."""

from __future__ import annotations

import socket

from agent.portcheck import port_in_use, port_warning


def _listener() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock, sock.getsockname()[1]


def test_a_listening_port_is_taken_and_a_closed_one_is_free():
    sock, port = _listener()
    try:
        assert port_in_use(port)
    finally:
        sock.close()
    assert not port_in_use(port)  # closed: free again (no lingering listener)


def test_warns_only_for_an_injected_port_that_is_taken():
    sock, port = _listener()
    try:
        injected = {"MASTER_PORT": str(port), "SLURMLITE_INJECTED": "MASTER_ADDR,MASTER_PORT"}
        line = port_warning(injected, "n1")
        assert line is not None and f"MASTER_PORT {port} is already in use on n1" in line
        mine = {"MASTER_PORT": str(port), "SLURMLITE_INJECTED": "MASTER_ADDR"}
        assert port_warning(mine, "n1") is None  # the user set it: theirs to manage
    finally:
        sock.close()
    free = {"MASTER_PORT": str(port), "SLURMLITE_INJECTED": "MASTER_PORT"}
    assert port_warning(free, "n1") is None
    assert port_warning({"SLURMLITE_INJECTED": "MASTER_PORT", "MASTER_PORT": "x"}, "n1") is None
