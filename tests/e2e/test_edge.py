"""Bad input stops at the edge, on a real cluster (issue 19).

* A script is bytes: a Latin-1 ``é`` (the byte 0xE9, not UTF-8) in an
  ``echo`` and in a comment is accepted and the job's output holds exactly
  that byte; a NUL byte gets sbatch's own refusal and makes no job.
* Slow or lying clients: with 200 idle connections and one that announced a
  body and stalls open on *each* listener (TCP and the Unix socket), an
  ``sbatch`` still succeeds; the stalled ones are closed by the controller
  (after ``REQUEST_TIMEOUT``, 5 s; the test allows 15 s).
"""

from __future__ import annotations

import socket
import time

from slurmlite.config import load_config


def test_a_script_runs_byte_for_byte_as_written(cluster, jobdir):
    script = b"#!/bin/sh\n# caf\xe9 in a comment\necho 'caf\xe9'\n"
    (jobdir / "latin1.sh").write_bytes(script)
    jid = cluster.submit("latin1.sh", cwd=jobdir)
    assert cluster.wait_done(jid) == "COMPLETED"
    assert (jobdir / f"slurm-{jid}.out").read_bytes() == b"caf\xe9\n"


def test_a_nul_byte_gets_sbatchs_words_and_no_job(cluster, jobdir):
    (jobdir / "nul.sh").write_bytes(b"#!/bin/sh\necho a\x00b\n")
    before = cluster.run("squeue -h -t all -o %i").stdout
    r = cluster.run("sbatch nul.sh", cwd=jobdir)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "sbatch: error: The Slurm controller does not allow scripts that",
        "sbatch: error: contain a NULL character '\\0'.",
    ]
    assert cluster.run("squeue -h -t all -o %i").stdout == before


def _connect(where: str | tuple[str, int]) -> socket.socket:
    family = socket.AF_UNIX if isinstance(where, str) else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect(where)
    return sock


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """True once the server ends the connection (EOF, after any answer it sends)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


def test_idle_and_stalled_connections_neither_block_a_submission_nor_stay(cluster, jobdir):
    cfg = load_config(str(cluster.conf))
    listeners: list[str | tuple[str, int]] = [cfg.socket_path, ("127.0.0.1", cfg.slurmctld_port)]
    idle: list[socket.socket] = []
    stalled: list[socket.socket] = []
    try:
        for where in listeners:
            idle += [_connect(where) for _ in range(100)]  # 200 in all
            sock = _connect(where)
            sock.sendall(
                b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                b"Content-Length: 1000\r\n\r\n{"
            )
            stalled.append(sock)
        r = cluster.run("sbatch --parsable --wrap true", cwd=jobdir)
        assert r.returncode == 0, r.stderr
        assert cluster.wait_done(int(r.stdout)) == "COMPLETED"
        for sock in stalled:
            assert _closed_by_server(sock, within=15.0)
    finally:
        for sock in idle + stalled:
            sock.close()


def test_oversized_headers_get_431_on_both_listeners(cluster):
    cfg = load_config(str(cluster.conf))
    for where in [cfg.socket_path, ("127.0.0.1", cfg.slurmctld_port)]:
        sock = _connect(where)
        try:
            sock.sendall(
                b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (70 << 10) + b"\r\n\r\n"
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
        finally:
            sock.close()
