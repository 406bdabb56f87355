"""Serving the end of a batch job's output to the controller (``POST /v1/tail``).

On a lab without a shared file system a job's stdout lives on its batch
host; the dashboard's job page (``controller.api.ui.output_tail``) asks
that host's agent for its last bytes.  The controller decides who may see
it (the job's owner) and derives the paths from the launch
(``controller.sched.launch.output_paths``); the agent checks only that the
request and its ``TailSpec`` credential are the controller's (op ``tail``,
``agent.orders``: the credential binds job, run, uid, gid and the paths)
and then reads each path with ``slurmlite.filetail``: no symlink followed,
a regular file of the job's user only, nothing created.

Where the agent is root and the job's user is not, root never opens the
user's path: a fixed ``/bin/sh`` script (the path an argument, never part
of it) runs as the job's uid, gid and supplementary groups, as notices are
appended (``agent.identity.append_line``): it reads only a regular file,
not a symlink, owned by that user (``test -f``, ``! -L``, ``-O``) with
``tail -c``.  Running as the user, a file swapped in between the test and
the read can only be one the user may read anyway.  It asks for one byte
more than the limit, to know whether the start was cut (then the tail
starts at its first whole line, as ``slurmlite.filetail`` keeps it).  A
user the node does not know gets "no output".

Example: TailSpec(job 7, uid 1001, paths ["/home/alice/slurm-7.out"],
limit 16384) -> ``[{"path": ..., "found": true, "data": "epoch 9 ..."}]``.
"""

from __future__ import annotations

import os
import subprocess

from agent.identity import UnknownUser, job_user
from slurmlite.filetail import from_whole_line, read_tail
from slurmlite.protocol import TailSpec

__all__ = ["MAX_TAIL", "output_tails"]

MAX_TAIL = 64 * 1024  # bytes per file at most, whatever the order asks
READ_TIMEOUT_S = 5.0  # the as-user reader's time (a file on a hung NFS mount)

# $1 the byte count, $2 the file: a regular file of the user's own, no symlink; runs as the user
_TAIL = '[ -f "$2" ] && [ ! -L "$2" ] && [ -O "$2" ] && exec tail -c "$1" -- "$2"'


def output_tails(spec: TailSpec, now: float) -> list[dict[str, object]]:
    """Per path of ``spec``: ``{"path", "found", "data"}`` (blocking: run it in a thread)."""
    limit = min(spec.limit, MAX_TAIL)
    out: list[dict[str, object]] = []
    for path in spec.paths:
        text = _read(path, spec.uid, spec.gid, limit, now)
        out.append({"path": path, "found": text is not None, "data": text or ""})
    return out


def _read(path: str, uid: int, gid: int, limit: int, now: float) -> str | None:
    if os.geteuid() != 0 or uid == 0:
        return read_tail(path, uid, limit)
    try:
        user = job_user(uid, gid, now)
    except UnknownUser:
        return None
    argv = ["/bin/sh", "-c", _TAIL, "slurmlite-tail", str(limit + 1), path]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=READ_TIMEOUT_S,
            user=uid,
            group=gid,
            extra_groups=list(user.groups),
            cwd="/",
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    data = done.stdout
    cut = len(data) > limit
    return from_whole_line(data[-limit:], cut).decode("utf-8", "replace")
