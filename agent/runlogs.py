"""Each node's output of every attempt of a workload run, kept by the node's agent.

``slurmlite node-run`` (the command's process on each node) writes its
node's output to ``<SlurmdSpoolDir>/logs/job<ID>/attempt<N>.log``.  The
agent makes the job's folder when a step of a run starts here (``prepare``:
owned by the job's user, mode 0700, inside ``logs/`` which is the agent's
and 0711, so the user writes there and nobody else lists or reads it) and
tells the step where it is (``SLURMLITE_LOG_DIR``).  A step is a run's when
its environment has ``SLURMLITE_COMMAND`` (the run's batch script exports it).

``read`` serves the controller (``POST /v1/logs``, signed by it): a chunk of
an attempt's log from ``offset`` -- or, for a plain batch job, of the output
file the controller names (``read_file``: ``slurmlite logs`` of any batch job) -- only when the file is a regular file owned
by the run's user (opened without following a link: a user cannot make the
agent read anything they could not read themselves).  Chunks end on a whole
UTF-8 character, so text cut across two reads reads back whole.

``prune`` drops the folders of jobs not written to for ``SlurmliteRunLogKeep``
seconds (at start, then hourly): logs outlive their run for that long.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Any

__all__ = ["RunLogs"]

MARKER = "SLURMLITE_COMMAND"
log = logging.getLogger("slurmd")


class RunLogs:
    def __init__(self, spool: Path) -> None:
        self.root = spool / "logs"

    def job_dir(self, job_id: int) -> Path:
        return self.root / f"job{job_id}"

    def prepare(self, job_id: int, uid: int, gid: int) -> str:
        """The job's log folder, made if needed, owned by ``uid``."""
        self.root.mkdir(mode=0o711, exist_ok=True)
        path = self.job_dir(job_id)
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
            if os.geteuid() == 0 and uid != 0:
                os.chown(path, uid, gid)
        return str(path)

    def read(self, job_id: int, attempt: int, uid: int, offset: int, limit: int) -> dict[str, Any]:
        return self.read_file(
            str(self.job_dir(job_id) / f"attempt{attempt}.log"), uid, offset, limit
        )

    @staticmethod
    def read_file(path: str, uid: int, offset: int, limit: int) -> dict[str, Any]:
        """A chunk of ``path`` if it is a regular file owned by ``uid`` (module doc)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return {"found": False, "data": "", "next": offset, "size": 0}
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
                return {"found": False, "data": "", "next": offset, "size": 0}
            os.lseek(fd, offset, os.SEEK_SET)
            data = os.read(fd, limit)
        finally:
            os.close(fd)
        cut = _whole_utf8(data) or len(data)
        text = data[:cut].decode("utf-8", errors="replace")
        return {"found": True, "data": text, "next": offset + cut, "size": st.st_size}

    def prune(self, keep: float, now: float | None = None) -> int:
        if not self.root.is_dir():
            return 0
        before = (time.time() if now is None else now) - keep
        gone = 0
        for d in self.root.iterdir():
            try:
                newest = max([d.stat().st_mtime, *(f.stat().st_mtime for f in d.iterdir())])
            except OSError:
                continue
            if newest < before:
                shutil.rmtree(d, ignore_errors=True)
                gone += 1
        return gone

    async def prune_forever(self, keep: float) -> None:
        """``prune`` at start, then hourly, off the event loop."""
        while True:
            try:
                await asyncio.to_thread(self.prune, keep)
            except OSError as e:
                log.warning("event=log_prune_failed error=%r", str(e))
            await asyncio.sleep(3600)


def _whole_utf8(data: bytes) -> int:
    """The length of ``data`` without a UTF-8 character cut at its end."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead
        if b & 0x80 == 0:
            return len(data)
        need = 2 if b & 0xE0 == 0xC0 else 3 if b & 0xF0 == 0xE0 else 4
        return len(data) if back >= need else len(data) - back
    return len(data)
