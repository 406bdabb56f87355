"""The client's retry loop against a stand-in controller that loses replies.

A thread serves the controller's Unix socket by hand and does, connection
after connection, what its script says: ``drop`` (read the request, close
without answering: the reply is lost), ``hang`` (read it, never answer:
a frozen controller) or ``answer`` (200 with a job id).  It records every
request's headers, so a test can check that all attempts carried one key
and one deadline.  ``MessageTimeout`` is small (1-2 s); no test asserts a
duration.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import sbatch
from cli.client import ControllerClient
from slurmlite import errors
from slurmlite.conftext import client_settings
from slurmlite.errors import SlurmError


class FlakyController:
    def __init__(self, path: Path, script: list[str]) -> None:
        self.path, self.script = path, list(script)
        self.seen: list[dict[str, str]] = []
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.stop = threading.Event()
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            conn.settimeout(5)
            self._read(conn)
            what = self.script.pop(0) if self.script else "answer"
            if what == "drop":
                conn.close()
            elif what == "hang":
                self.held.append(conn)
            else:
                data = json.dumps({"job_id": 7, "test_only_message": None}).encode()
                head = f"HTTP/1.1 200 OK\r\ncontent-length: {len(data)}\r\n\r\n"
                conn.sendall(head.encode() + data)
                conn.close()

    def _read(self, conn: socket.socket) -> None:
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += conn.recv(65536)
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")[1:]
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines)}
        while len(rest) < int(headers.get("content-length", 0)):
            rest += conn.recv(65536)
        self.seen.append(headers)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def sock_path(tmp_path: Path) -> Path:
    return tmp_path / "ctl.sock"


@pytest.fixture
def flaky(sock_path: Path) -> Iterator:  # type: ignore[type-arg]
    made: list[FlakyController] = []

    def make(script: list[str]) -> FlakyController:
        made.append(FlakyController(sock_path, script))
        return made[-1]

    yield make
    for server in made:
        server.close()


def client(path: Path, timeout: int = 2) -> ControllerClient:
    """A client of the socket at ``path`` (auth/local: its slurm.conf beside it)."""
    conf = path.parent / "slurm.conf"
    conf.write_text(f"ClusterName=c\nSlurmliteSocket={path}\nMessageTimeout={timeout}\n")
    return ControllerClient(client_settings(str(conf)), "sbatch")


def test_a_lost_reply_is_retried_with_the_same_key_and_deadline(flaky, sock_path):
    server = flaky(["drop", "answer"])
    assert client(sock_path).submit({"name": "x"}).job_id == 7
    first, second = server.seen
    assert first["idempotency-key"] == second["idempotency-key"]
    assert len(first["idempotency-key"]) == 32
    assert first["x-slurmlite-deadline"] == second["x-slurmlite-deadline"]
    assert float(first["x-slurmlite-deadline"]) > time.time() - 60  # a Unix time


def test_each_submission_has_a_key_of_its_own(flaky, sock_path):
    server = flaky(["answer", "answer"])
    c = client(sock_path)
    c.submit({"name": "a"})
    c.submit({"name": "b"})
    assert server.seen[0]["idempotency-key"] != server.seen[1]["idempotency-key"]


def test_a_frozen_controller_gets_a_last_try_then_slurms_timeout(flaky, sock_path):
    server = flaky(["hang", "hang"])
    with pytest.raises(SlurmError) as caught:
        client(sock_path).submit({"name": "x"})
    assert str(caught.value) == "Socket timed out on send/recv operation"
    keys = {seen["idempotency-key"] for seen in server.seen}
    assert len(server.seen) == 2 and len(keys) == 1  # the first attempt, then the last try


def test_nobody_listening_is_a_connect_failure_after_retrying(sock_path):
    with pytest.raises(SlurmError) as caught:
        client(sock_path, timeout=1).request("GET", "/v1/jobs")
    assert caught.value.code == errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR


def test_a_controller_that_starts_listening_meanwhile_is_reached(flaky, sock_path):
    started = threading.Timer(0.3, lambda: flaky(["answer"]))
    started.start()
    try:
        answer = client(sock_path, timeout=10).request("GET", "/v1/jobs")
    finally:
        started.join()
    assert answer == {"job_id": 7, "test_only_message": None}


def test_a_request_that_is_not_safe_to_repeat_is_sent_once(flaky, sock_path):
    server = flaky(["drop", "answer"])
    with pytest.raises(SlurmError) as caught:
        client(sock_path).request("POST", "/v1/jobs/cancel", {"job_ids": [1]})
    assert caught.value.code == errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
    assert len(server.seen) == 1


def test_sbatch_prints_slurms_line_and_exits_1(flaky, sock_path, tmp_path, monkeypatch, capsys):
    flaky(["hang", "hang"])
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"ClusterName=c\nSlurmliteSocket={sock_path}\nMessageTimeout=2\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    monkeypatch.chdir(tmp_path)
    for name in [
        k for k in os.environ if k.startswith(("SBATCH_", "SLURM_")) and k != "SLURM_CONF"
    ]:
        monkeypatch.delenv(name)
    with pytest.raises(SystemExit) as caught:
        sbatch.main(["--wrap", "true"])
    assert caught.value.code == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert (
        out.err
        == "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"
    )
