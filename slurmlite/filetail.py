"""The end of a job's output file, read safely by whoever holds the file.

Two readers show a batch job's output tail on its dashboard page: the
controller, when the file is on its own host (one host, or a shared file
system: ``controller.api.ui.output_tail``), and the batch host's agent,
when it is not (``agent.tail``, asked with a signed ``TailSpec``).  Both
read it with ``read_tail``, so both refuse the same files.

The path is the user's choice (``--output``) and the reader may be root,
so the rules are those of any privileged reader of a user's path:

* the file is opened read-only, never created, **without following a
  symbolic link** (``O_NOFOLLOW``: ``--output=link`` with ``link ->
  /etc/shadow`` shows nothing) and without blocking (``O_NONBLOCK``: a
  FIFO named as output never stalls the reader);
* only a **regular file owned by the job's user** is read; anything else
  (a directory, a device, a file of someone else) is "no output".

Of a longer file the last ``limit`` bytes are kept, from the first whole
line (a line cut in half reads as garbage).  Bytes become text as UTF-8,
an invalid sequence replaced, never an error.

Example: ``slurm-7.out`` of alice, 100 KiB, ``limit`` 16 KiB -> the text
after the first newline of its last 16,384 bytes; owned by bob -> None.

A root agent never opens the user's path itself: it reads as the job's
user in a short-lived process (``agent.tail``) and keeps the same part of
what comes back with ``from_whole_line``.
"""

from __future__ import annotations

import os
import stat

__all__ = ["from_whole_line", "read_tail", "tail_bytes"]


def tail_bytes(path: str, uid: int, limit: int) -> bytes | None:
    """The last ``limit`` bytes of ``path`` from a whole line, or None (module doc)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
            return None
        start = max(0, st.st_size - limit)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)
    return from_whole_line(data, cut=start > 0)


def from_whole_line(data: bytes, cut: bool) -> bytes:
    """``data`` from its first whole line when its start was ``cut`` off a longer file."""
    if cut and b"\n" in data:
        return data[data.index(b"\n") + 1 :]
    return data


def read_tail(path: str, uid: int, limit: int) -> str | None:
    """``tail_bytes`` as text (UTF-8, invalid bytes replaced)."""
    data = tail_bytes(path, uid, limit)
    return None if data is None else data.decode("utf-8", "replace")
