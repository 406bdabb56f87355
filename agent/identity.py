"""Who a job runs as: the node's password and group databases, and acting as that user.

A root agent starts each job with the job's uid, its primary gid (the
submitter's, from the signed launch order) and the supplementary groups
``initgroups(3)`` would give (``os.getgrouplist(name, gid)``: the groups
listing the user's name on *this* node, plus the primary one).  The uid
must have a password entry on the node: without one there is no name to
look groups up by, no home, no shell, and the job fails to launch with
Slurm's "User not found on host" (ESLURMD_UID_NOT_FOUND) -- it never runs,
and certainly never as root.

The login variables follow Slurm: the job's environment is the submitter's
(``--export=ALL``), so ``HOME``, ``USER``, ``LOGNAME`` and ``SHELL`` are
what sbatch saw, never overridden.  Those missing from it (``--export=NONE``,
an API client that sent none) are filled in from the password entry, as a
Slurm node does when it loads the user's login environment for such jobs.

Example: uid 1001 (``bob``, home ``/home/bob``, shell ``/bin/bash``, gid
1001, member of ``video``), environment ``{"PATH": "/bin", "USER": "bob"}``
-> groups ``[1001, 44]``, environment gains ``HOME=/home/bob``,
``LOGNAME=bob``, ``SHELL=/bin/bash``; ``USER`` stays as sent.

Look-ups are cached for ``CACHE_S`` seconds, as Slurm caches group lists,
and only while ``/etc/passwd`` and ``/etc/group`` are unchanged (a user
added or removed a moment ago is seen at once; misses are never cached).

``append_line`` writes a line (a kill or OOM notice) to a job's output
*as the job's user*: the path is the user's choice, and root must never
open it (a symlinked directory could lead root's ``open`` to a device whose
mere opening has effects, such as a hardware watchdog).
"""

from __future__ import annotations

import logging
import os
import pwd
import subprocess
from dataclasses import dataclass

__all__ = ["CACHE_S", "JobUser", "UnknownUser", "append_line", "fill_login_env", "job_user"]

log = logging.getLogger(__name__)

CACHE_S = 30.0
LOGIN_VARS = ("HOME", "USER", "LOGNAME", "SHELL")
_cache: dict[tuple[int, int], tuple[float, tuple[int, ...], JobUser]] = {}


class UnknownUser(LookupError):
    """The uid has no password entry on this node."""


@dataclass(frozen=True)
class JobUser:
    uid: int
    gid: int
    name: str
    home: str
    shell: str
    groups: tuple[int, ...]  # supplementary, as initgroups gives them (primary included)

    def login_env(self) -> dict[str, str]:
        shell = self.shell or "/bin/sh"
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name, "SHELL": shell}


def job_user(uid: int, gid: int, now: float) -> JobUser:
    """The job's user on this node; :class:`UnknownUser` when the uid has no entry.

    ``now``: the agent's monotonic clock, which ages the cache (``CACHE_S``)."""
    stamp = _stamp()
    hit = _cache.get((uid, gid))
    if hit is not None and now - hit[0] < CACHE_S and hit[1] == stamp:
        return hit[2]
    try:
        entry = pwd.getpwuid(uid)
    except (KeyError, OverflowError, ValueError):  # no entry; or no uid at all (negative)
        raise UnknownUser(f"uid {uid}") from None
    try:
        groups = tuple(os.getgrouplist(entry.pw_name, gid))
    except (OSError, OverflowError):
        groups = (gid,)
    user = JobUser(uid, gid, entry.pw_name, entry.pw_dir, entry.pw_shell, groups)
    if len(_cache) > 4096:
        _cache.clear()
    _cache[(uid, gid)] = (now, stamp, user)
    return user


def _stamp() -> tuple[int, ...]:
    """When the local password and group files last changed."""
    out = []
    for path in ("/etc/passwd", "/etc/group"):
        try:
            out.append(os.stat(path).st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


def fill_login_env(env: dict[str, str], user: JobUser) -> None:
    """Add the login variables ``env`` lacks, from the password entry (in place)."""
    for key, value in user.login_env().items():
        if key not in env:
            env[key] = value


# $1 the line, $2 the file: only an existing plain file is appended to; runs as the user
_APPEND = '[ -f "$2" ] && printf "%s\\n" "$1" >>"$2"'


def append_line(path: str, line: str, uid: int, gid: int, groups: list[int] | None) -> bool:
    """Append ``line`` to the file ``path`` as ``uid``/``gid``/``groups``; True if written.

    Paths and text are arguments of a fixed script, never part of it.
    """
    argv = ["/bin/sh", "-c", _APPEND, "slurmlite-append", line.rstrip("\n"), path]
    try:
        done = subprocess.run(
            argv,
            user=uid,
            group=gid,
            extra_groups=groups if groups is not None else [gid],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("event=append_failed path=%r uid=%s error=%r", path, uid, str(exc))
        return False
    return done.returncode == 0
