"""The tail of a job's output on its page: read on the controller host, for its owner.

The job's stdout is written by the agent on the batch host; the agents
offer the controller no route to read it (their ``/v1/logs`` serves only
workload runs' logs).  So the page shows the tail only where the file is
readable here -- one host, or a shared file system -- and otherwise says
so.  The path is the one the launch used (``controller.sched.launch.
output_paths``: ``--output`` with ``%j``, ``%x``... expanded on the batch
host's name).

The controller may run as root, and the path is the user's choice, so the
file is opened without following a symbolic link and read only if it is a
regular file owned by the job's user: ``--output=/etc/shadow`` or a link
to it shows nothing.  Only the job's owner asks (the page shows no output
to anyone else, operators included: they have the host).

Example: job 7 of alice, ``slurm-7.out`` of 100 KiB -> its last ``TAIL``
bytes, from the first whole line.
"""

from __future__ import annotations

import os
import stat

from controller.sched.launch import output_paths
from controller.store.models import JobRow

TAIL = 16 * 1024  # bytes shown at most


def output_tail(row: JobRow) -> tuple[str | None, str]:
    """(the tail or None, the path or why there is none)."""
    if not row.batch_host:
        return None, "the job has not started on a node yet"
    if row.allocation:
        return None, "an allocation (salloc, srun) has no batch output file"
    path = output_paths(row, row.batch_host)[0]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, f"{path} is not readable on the controller host (it is on {row.batch_host})"
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != row.uid:
            return None, f"{path} is not a regular file of the job's user"
        start = max(0, st.st_size - TAIL)
        f.seek(start)
        data = f.read(TAIL)
    if start and b"\n" in data:
        data = data[data.index(b"\n") + 1 :]
    return data.decode("utf-8", "replace"), path
