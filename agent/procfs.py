"""What ``/proc`` says about a process, and waiting for one that is not our child.

A pid alone is not an identity: after a process ends, the kernel may give
its pid to another one.  A process is named here by ``(pid, start)``, where
``start`` is field 22 of ``/proc/<pid>/stat`` (clock ticks since boot), the
same pair an agent records in ``launch.json`` and checks after a restart.

Zombies count as ended: they run nothing, and orphans are not always reaped
promptly in containers.  ``pidfd(pid)`` gives a descriptor that becomes
readable when the process ends (Linux >= 5.3), also for processes that are
not our children; ``None`` means "poll instead".

Example: ``stat_of(os.getpid())`` -> ``("R", <pgid>, <start>)``;
``is_live(pid, start)`` is False once that process is a zombie or gone, or
when ``pid`` now names another process.
"""

from __future__ import annotations

import os
from collections.abc import Collection

__all__ = [
    "group_has_live_members",
    "is_live",
    "parent_of",
    "pidfd",
    "session_members",
    "stat_of",
    "zombie_status",
]


def _fields(pid: int) -> list[str] | None:
    """Fields 3.. of ``/proc/<pid>/stat`` (``[i]`` is field ``i + 3``), ``None`` if gone.

    The process name (field 2) may hold spaces and parentheses, so the split
    starts after its last ``)``.
    """
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def stat_of(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start time in clock ticks), ``None`` if gone."""
    rest = _fields(pid)
    return None if rest is None else (rest[0], int(rest[2]), int(rest[19]))


def parent_of(pid: int) -> int | None:
    """The parent's pid (field 4), ``None`` if gone."""
    rest = _fields(pid)
    return None if rest is None else int(rest[1])


def zombie_status(pid: int, start: int | None = None) -> int | None:
    """The raw wait status a zombie holds (field 52), else ``None`` (running, gone, reused pid)."""
    rest = _fields(pid)
    if rest is None or rest[0] != "Z" or len(rest) < 50:
        return None
    if start is not None and int(rest[19]) != start:
        return None
    return int(rest[49])


def is_live(pid: int, start: int | None = None) -> bool:
    """Runs (not a zombie) and, if ``start`` is given, is still the same process."""
    info = stat_of(pid)
    return info is not None and info[0] not in "ZX" and (start is None or info[2] == start)


def group_has_live_members(pgid: int) -> bool:
    """Does any process of group ``pgid`` run?  Zombies do not count."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):
        return True
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = stat_of(int(name))
            if info is not None and info[1] == pgid and info[0] not in "ZX":
                return True
    return False


def session_members(sids: Collection[int], among: Collection[int] | None = None) -> list[int]:
    """Live processes whose session (field 6 of their stat line) is one of ``sids``.

    Zombies do not count.  A job step's task leads a session (``agent.tasks``):
    its session is every process it started that did not ``setsid`` away,
    whatever process groups a shell's job control made inside it.  One walk
    of ``/proc`` serves every task of a step; ``among`` (the pids of the
    job's cgroup, say) limits the walk to those."""
    wanted = {s for s in sids if s > 0}
    if not wanted or (among is None and not os.path.isdir("/proc")):
        return []
    pids = among if among is not None else [int(n) for n in os.listdir("/proc") if n.isdigit()]
    found = []
    for pid in pids:
        rest = _fields(pid)
        if rest is not None and rest[0] not in "ZX" and int(rest[3]) in wanted:
            found.append(pid)
    return found


def pidfd(pid: int, start: int | None = None) -> int | None:
    """A pidfd for ``(pid, start)``, or ``None`` (gone, another process, no support)."""
    if pid <= 0:
        return None
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
    info = stat_of(pid)  # checked after opening: the fd now pins this very process
    if info is None or (start is not None and info[2] != start):
        os.close(fd)
        return None
    return fd
