"""Run directories in the spool: made new, or reused from a finished run of the same user.

Every run gets ``<spool>/job<ID>/`` with four entries: ``script``,
``status`` and the FIFO ``gate`` (owned by the job's user) and
``launch.json`` (the agent's), see ``agent.launcher``.  Once the run's
completion is acknowledged the directory is no longer needed.

Why reuse
---------
Creating a file is the dearest step of a start on some file systems.  ext4
without a journal will not hand out an inode freed less than a minute or so
ago, and finds a free one by walking the block group's bitmap past every
such inode, reading each one's deletion time: with a few thousand files
deleted lately (a busy node: 1,000 short jobs delete 6,000), every create
costs 0.2-1 ms of kernel time instead of 10 us.  A run made from scratch
creates five inodes and deletes them again.  So a finished run's directory
is *parked* (``park``: renamed to ``<spool>/free/<n>``, its records emptied)
and the next run of the same user takes it over (``make``: renamed to
``job<ID>``); ``fresh_file`` and ``gate_fifo`` then find the old entries in
place and only empty them.  A steady stream of jobs creates no inode in the
spool at all.

Safety
------
* Only the same user's directories are reused: the old files belong to that
  user, who could have kept one open (or linked it elsewhere) and so write
  into a later run's script; they can only do that to their own runs, which
  they write anyway.  A file that is not a plain single-link file (or FIFO)
  of that user is replaced, not reused.
* A parked directory records no run: ``status`` and ``launch.json`` are
  emptied before it leaves ``job<ID>``, so an agent that crashes at any step
  finds either an empty directory (dropped at adoption, as a launch cut
  short) or nothing.  ``free/`` (0700) is emptied when an agent starts;
  at most ``keep`` directories are parked, the rest are removed.

Example: job 7 of uid 1000 ends, is acknowledged -> ``job7`` becomes
``free/1``; job 9 of uid 1000 starts -> ``free/1`` becomes ``job9``, its
``script`` is truncated and rewritten; job 10 of uid 1001 gets a new one.
Reference: Linux ``fs/ext4/ialloc.c`` (``find_inode_bit``, ``recently_deleted``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
from pathlib import Path

__all__ = ["RUN_ENTRIES", "RunDirs", "fresh_file", "gate_fifo"]

RUN_ENTRIES = ("gate", "launch.json", "script", "status")  # what a finished run leaves, sorted


class RunDirs:
    """Makes run directories, reusing parked ones of the same user."""

    def __init__(self, spool_dir: Path, keep: int = 256) -> None:
        self.spool_dir = spool_dir
        self.free_dir = spool_dir / "free"
        self.keep = keep
        self._free: dict[int, list[Path]] = {}  # uid -> parked directories
        self._parked = 0
        self._seq = 0
        self._lock = threading.Lock()  # starts may run in several threads
        # what an earlier agent parked is not trusted: start empty
        shutil.rmtree(self.free_dir, ignore_errors=True)
        self.free_dir.mkdir(mode=0o700, exist_ok=True)

    def make(self, job_dir: Path, uid: int) -> None:
        """``job_dir`` ready for a run whose files ``uid`` will own (mode 0711).

        A directory already there (an earlier run of this job) is kept, less
        its records; otherwise a parked directory of ``uid`` is taken, else a
        new one made.
        """
        if os.path.lexists(job_dir):
            for name in ("status.tmp", "launch.json"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(job_dir / name)
        elif not self._take(job_dir, uid):
            os.mkdir(job_dir, 0o711)
        os.chmod(job_dir, 0o711)  # whatever the umask

    def _take(self, job_dir: Path, uid: int) -> bool:
        with self._lock:
            free = self._free.get(uid)
            if not free:
                return False
            path = free.pop()
            self._parked -= 1
        try:
            os.rename(path, job_dir)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
            return False
        return True

    def park(self, job_dir: Path) -> bool:
        """Keep a finished run's directory for reuse; False: not fit (the caller removes it)."""
        try:
            if sorted(os.listdir(job_dir)) != list(RUN_ENTRIES):
                return False  # e.g. a launch that failed half-way
            uid = os.lstat(job_dir / "script").st_uid
            with self._lock:
                if self._parked >= self.keep:
                    return False
                self._seq += 1
                dest = self.free_dir / str(self._seq)
            for name in ("status", "launch.json"):
                _empty(job_dir / name)  # a parked directory records no run
            os.rename(job_dir, dest)
        except OSError:
            return False
        with self._lock:
            self._free.setdefault(uid, []).append(dest)
            self._parked += 1
        return True


def fresh_file(path: Path, mode: int, owner: tuple[int, int] | None, uid: int) -> int:
    """A descriptor, open for writing, on an empty plain file at ``path`` owned by ``uid``.

    The file there is reused (emptied) when it is a plain single-link file of
    ``uid``; anything else is replaced by a new file.  ``owner`` (uid, gid)
    is applied when given (the agent is root and the job another user).
    """
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        fd = -1
    except OSError:  # a symlink, a FIFO without reader, a directory: not ours to reuse
        _remove(path)
        fd = -1
    if fd >= 0:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid == uid:
            os.ftruncate(fd, 0)
            os.fchmod(fd, mode)
            if owner and info.st_gid != owner[1]:
                os.fchown(fd, *owner)
            return fd
        os.close(fd)
        _remove(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)  # whatever the umask
        if owner:
            os.fchown(fd, *owner)
    except OSError:
        os.close(fd)
        raise
    return fd


def gate_fifo(path: Path, owner: tuple[int, int] | None, uid: int) -> None:
    """The FIFO ``path`` (mode 0600) owned by ``uid``: the one there if it is one of ``uid``'s."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None:
        if stat.S_ISFIFO(info.st_mode) and info.st_nlink == 1 and info.st_uid == uid:
            if owner and info.st_gid != owner[1]:
                os.lchown(path, *owner)
            os.chmod(path, 0o600)
            return
        _remove(path)
    os.mkfifo(path, 0o600)
    os.chmod(path, 0o600)  # whatever the umask
    if owner:
        os.lchown(path, *owner)


def _empty(path: Path) -> None:
    """Truncate the plain file ``path`` (never following a link, never blocking)."""
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a plain file")
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
