"""Code snapshots on the controller: uploaded in parts, stored once by their SHA-256.

``StateSaveLocation/snapshots/<sha256>.tar`` holds each distinct snapshot
once, whoever uploaded it; ``snapshot_owners`` says who did (a user may
fetch, and skip the upload of, only a snapshot they uploaded themselves:
knowing a hash is not enough to read another user's code).

The upload comes in parts of at most :data:`PART` bytes (``PUT
/v1/snapshots/parts?sha=...&offset=...``), each appended to
``snapshots/incoming/<uid>-<sha>.part``, then ``POST /v1/snapshots/commit``
hashes the file from disk and, when it matches, renames it into place.  So
no request is large (each arrives well within the request deadline), only
one part is in memory at a time, and an upload cut off midway resumes from
the size the controller reports.  Agents' nodes read a snapshot back the
same way, a part at a time (``GET /v1/snapshots/data``).

Unreferenced snapshots are collected (``collect``): a file no run still
refers to (a run whose job ended more than ``keep`` seconds ago no longer
does) and that nobody uploaded within ``keep`` seconds is deleted, with its
owners' rows; so are incoming parts older than ``keep``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from slurmlite.workload.snapshot import PART

__all__ = ["PART", "SHA", "SnapshotFiles"]

SHA = re.compile(r"[0-9a-f]{64}")


class SnapshotFiles:
    """The files of ``<state>/snapshots`` (no database: ``controller.runs.service`` has it)."""

    def __init__(self, state_dir: str) -> None:
        self.root = Path(state_dir) / "snapshots"
        self.incoming = self.root / "incoming"

    def path(self, sha: str) -> Path:
        return self.root / f"{sha}.tar"

    def part_path(self, uid: int, sha: str) -> Path:
        return self.incoming / f"{uid}-{sha}.part"

    def has(self, sha: str) -> bool:
        return self.path(sha).is_file()

    def received(self, uid: int, sha: str) -> int:
        try:
            return self.part_path(uid, sha).stat().st_size
        except FileNotFoundError:
            return 0

    def append(self, uid: int, sha: str, offset: int, data: bytes, limit: int) -> int:
        """Add a part at ``offset``; the size received.  ValueError if ``offset`` is not
        the size received so far or the whole would pass ``limit``."""
        self.incoming.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.part_path(uid, sha)
        have = self.received(uid, sha)
        if offset != have:
            raise ValueError(f"expected the part at offset {have}, not {offset}")
        if have + len(data) > limit:
            raise ValueError(f"the snapshot is over the limit of {limit} bytes")
        with open(path, "ab") as f:
            f.write(data)
        return have + len(data)

    def commit(self, uid: int, sha: str) -> int:
        """Check the received file's hash and store it; its size.  ValueError if it differs."""
        path = self.part_path(uid, sha)
        if not path.is_file():
            raise ValueError("nothing received for this snapshot")
        h = hashlib.sha256()
        size = 0
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
        if h.hexdigest() != sha:
            path.unlink()
            raise ValueError(f"the data received has SHA-256 {h.hexdigest()}, not {sha}")
        os.chmod(path, 0o600)
        if self.has(sha):
            path.unlink()  # another user stored the same bytes: once is enough
        else:
            os.replace(path, self.path(sha))
        return size

    def read(self, sha: str, offset: int, length: int) -> bytes:
        with open(self.path(sha), "rb") as f:
            f.seek(offset)
            return f.read(min(length, PART))

    def size(self, sha: str) -> int:
        return self.path(sha).stat().st_size

    def remove(self, sha: str) -> None:
        self.path(sha).unlink(missing_ok=True)

    def stale_parts(self, before: float) -> list[Path]:
        if not self.incoming.is_dir():
            return []
        return [p for p in self.incoming.iterdir() if p.stat().st_mtime < before]
