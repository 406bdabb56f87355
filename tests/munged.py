"""A private munged for the auth/munge tests: own key, socket and files in a temp dir.

No system munged is needed (or touched): :meth:`Munged.start` writes a fresh
1024-byte key (mode 0400), starts ``munged -F`` (foreground, our child) on a
socket in ``directory`` and waits -- with a deadline -- until ``munge -n``
gets an answer; :meth:`Munged.stop` ends that child by its PID.  Without the
munge programs :func:`find_munged` returns None and the tests skip, unless
``SLURMLITE_REQUIRE_MUNGE=1`` (set by ``.ci/run``) makes that an error.

Several "hosts" share one munge key as a real cluster does: start one munged
per host with the same ``key`` (bytes) and, where clients use munge's
default socket, ``socket_name="munge.socket.2"`` (tests/e2e/test_hosts.py).

``directory`` must be reachable by every user who runs ``munge`` (mode 0755
on the path), the socket itself is 0777 (munged makes it so).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

MUNGED_PATHS = ("/usr/sbin/munged", "/usr/local/sbin/munged")


def find_munged() -> str | None:
    if not (shutil.which("munge") and shutil.which("unmunge")):
        return None
    return shutil.which("munged") or next((p for p in MUNGED_PATHS if os.access(p, os.X_OK)), None)


def munged_or_skip() -> str:
    found = find_munged()
    if found is None:
        why = "munge programs (munged, munge, unmunge) not found; install the munge package"
        if os.environ.get("SLURMLITE_REQUIRE_MUNGE") == "1":
            pytest.fail(why + " (SLURMLITE_REQUIRE_MUNGE=1)")
        pytest.skip(why)
    return found


class Munged:
    def __init__(
        self, directory: Path, proc: subprocess.Popen[bytes], socket_name: str = "munge.sock"
    ) -> None:
        self.directory = directory
        self.socket = str(directory / socket_name)
        self.proc = proc

    @classmethod
    def start(
        cls,
        directory: Path,
        binary: str,
        timeout: float = 15.0,
        key: bytes | None = None,
        socket_name: str = "munge.sock",
    ) -> Munged:
        """``key``: the cluster's munge key (default: a fresh one, this munged alone)."""
        directory.mkdir(parents=True, exist_ok=True)
        key_path = directory / "munge.key"
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(key or os.urandom(1024))  # as `dd if=/dev/urandom bs=1 count=1024`
        argv = [
            binary, "-F", "-f",  # foreground (our child, stopped by PID); -f: temp-dir paths
            f"--socket={directory}/{socket_name}", f"--key-file={key_path}",
            f"--pid-file={directory}/munged.pid", f"--log-file={directory}/munged.log",
            f"--seed-file={directory}/munged.seed",
        ]  # fmt: skip
        log = open(directory / "munged.out", "wb")  # noqa: SIM115 - lives as long as munged
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        log.close()
        daemon = cls(directory, proc, socket_name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            probe = subprocess.run(
                ["munge", "-n", "-S", daemon.socket], capture_output=True, timeout=timeout
            )
            if probe.returncode == 0:
                return daemon
            time.sleep(0.05)
        out = (directory / "munged.out").read_text(errors="replace")
        daemon.stop()
        raise RuntimeError(f"munged did not answer on {daemon.socket}: {out}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
