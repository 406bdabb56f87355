"""The commands' client off the controller's host: TCP, with a munge credential or a token.

A stand-in controller (``http.server`` on a free loopback port) records every
request's headers and answers canned JSON; the slurm.conf points
``SlurmliteSocket`` at a path where nothing listens, as on another host.
Credentials are real: munge ones come from a private munged and are checked
with ``unmunge``.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cli.client import ControllerClient
from slurmlite import errors, munge
from slurmlite.errors import SlurmError
from tests.munged import Munged, munged_or_skip


class Controller(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn
    seen: list[dict[str, str]]
    answer: tuple[int, dict]

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        status, body = self.answer
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    handler = type("Handler", (Controller,), {"seen": [], "answer": (200, {"uid": 0})})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, handler
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def munged(tmp_path_factory):
    daemon = Munged.start(tmp_path_factory.mktemp("munged"), munged_or_skip())
    yield daemon
    daemon.stop()


@pytest.fixture
def remote(tmp_path, server, monkeypatch):
    """A slurm.conf as another host has it; returns a function writing the auth lines."""
    monkeypatch.delenv("SLURM_JWT", raising=False)
    port = server[0].server_address[1]

    def write(auth: str) -> str:
        conf = tmp_path / "slurm.conf"
        conf.write_text(
            f"ClusterName=c\nSlurmctldHost=head(127.0.0.1)\nSlurmctldPort={port}\n"
            f"StateSaveLocation={tmp_path}/state\nSlurmliteSocket={tmp_path}/absent.sock\n{auth}"
        )
        return str(conf)

    return write


def test_munge_requests_go_over_tcp_each_with_a_fresh_credential(remote, server, munged):
    conf = remote(f"AuthType=auth/munge\nAuthInfo=socket={munged.socket}\n")
    client = ControllerClient.from_env("squeue", conf)
    assert client.request("GET", "/v1/whoami") == {"uid": 0}
    assert client.request("GET", "/v1/whoami") == {"uid": 0}  # same kept-alive connection
    client.close()
    creds = [h["x-slurmlite-munge"] for h in server[1].seen]
    assert len(creds) == 2 and creds[0] != creds[1]
    assert [munge.decode(c, munged.socket) for c in creds] == [(os.getuid(), os.getgid())] * 2


def test_slurm_jwt_goes_over_tcp_even_beside_the_socket(tmp_path, remote, server, monkeypatch):
    conf = remote("AuthAltTypes=auth/jwt\n")
    listener = socket.socket(socket.AF_UNIX)  # a controller socket that would answer
    listener.bind(str(tmp_path / "absent.sock"))
    listener.listen()
    listener.setblocking(False)
    monkeypatch.setenv("SLURM_JWT", "the.token.text")
    client = ControllerClient.from_env("squeue", conf)
    client.request("GET", "/v1/whoami")
    assert server[1].seen[0]["x-slurm-user-token"] == "the.token.text"
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected to the socket
    listener.close()


def test_a_refusal_prints_the_reason_then_fails_as_slurm_does(remote, server, monkeypatch, capsys):
    conf = remote("AuthAltTypes=auth/jwt\n")
    monkeypatch.setenv("SLURM_JWT", "old.token.text")
    server[1].answer = (401, {"detail": {"errno": errors.ESLURM_AUTH_EXPIRED,
                                          "detail": "token expired"}})  # fmt: skip
    with pytest.raises(SlurmError) as caught:
        ControllerClient.from_env("squeue", conf).request("GET", "/v1/jobs")
    assert str(caught.value) == "Protocol authentication error"
    assert capsys.readouterr().err == (
        "squeue: error: Authentication credential expired: token expired\n"
    )


def test_auth_local_never_tries_tcp(remote, server):
    conf = remote("AuthType=auth/local\nMessageTimeout=1\n")  # refused: retried 1 s
    with pytest.raises(SlurmError) as caught:
        ControllerClient.from_env("squeue", conf).request("GET", "/v1/jobs")
    assert caught.value.code == errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
    assert server[1].seen == []


def test_auth_jwt_without_slurm_jwt_says_what_is_missing(remote, server, capsys):
    conf = remote("AuthType=auth/jwt\n")
    with pytest.raises(SlurmError) as caught:
        ControllerClient.from_env("sinfo", conf).request("GET", "/v1/nodes")
    assert caught.value.code == errors.SLURM_PROTOCOL_AUTHENTICATION_ERROR
    assert capsys.readouterr().err == (
        "sinfo: error: Could not load SLURM_JWT environment variable.\n"
    )
    assert server[1].seen == []


def test_without_munged_nothing_is_sent(tmp_path, remote, server, capsys):
    conf = remote(f"AuthType=auth/munge\nAuthInfo=socket={tmp_path}/no-munged.sock\n")
    with pytest.raises(SlurmError) as caught:
        ControllerClient.from_env("sbatch", conf).request("GET", "/v1/jobs")
    assert str(caught.value) == "Protocol authentication error"
    err = capsys.readouterr().err
    assert err.startswith("sbatch: error: Munge encode failed: Failed to access")
    assert server[1].seen == []
