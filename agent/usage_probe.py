"""What a running job uses right now: CPU time and memory, from its cgroup or ``/proc``.

The probe only reads; adding samples up is ``agent.sampling``'s job.  Each
reading is *cumulative CPU seconds* (since the run started) and *memory in
bytes* (now, and the peak where the kernel keeps one), taken from the best
source the node has:

* cgroup v2 (``agent.cgroups``: ``<mount>/slurmlite/<scope>/job_<id>_<run>``):
  ``cpu.stat`` line ``usage_usec`` counts every process the job ever had,
  exited ones included; ``memory.current`` and ``memory.peak`` (Linux 5.19+;
  before that the sampler keeps the largest ``memory.current`` it saw);
* cgroup v1 memory tree: ``memory.usage_in_bytes`` and
  ``memory.max_usage_in_bytes``; no CPU there (``cpuacct`` is another tree);
* ``/proc`` for whatever the cgroup does not give (and without cgroups):
  CPU = utime + stime of the job's live processes, plus cutime + cstime of
  the job's shell (the children it has reaped, so finished commands of a
  script still count); memory = the sum of their resident set sizes.  The
  job's processes are its cgroup's members, or else its session (the batch
  shell leads one).

The ``/proc`` figure can go down when a process that its own parent (not the
shell) reaped disappears, so the sampler keeps the largest CPU figure seen.

Worked example: ``cpu.stat`` says ``usage_usec 2500000`` -> 2.5 s; a v1
memory cgroup with ``memory.max_usage_in_bytes`` 104857600 -> peak 100 MiB.
Reference: Documentation/admin-guide/cgroup-v2.rst (cpu.stat, memory.peak),
proc(5) (``/proc/<pid>/stat`` fields 14-17 and 24).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agent.procfs import _fields

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class JobReading:
    """One look at one run; ``None``: this source cannot say."""

    cpu_seconds: float | None
    mem_bytes: int | None
    mem_peak_bytes: int | None = None


def _text(path: Path) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _int(path: Path) -> int | None:
    text = _text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def read_cgroup(path: Path, version: int) -> JobReading:
    """What the cgroup directory ``path`` says (nothing, once it is gone)."""
    if version == 2:
        cpu = None
        for line in (_text(path / "cpu.stat") or "").splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec" and value.strip().isdigit():
                cpu = int(value) / 1e6
        return JobReading(cpu, _int(path / "memory.current"), _int(path / "memory.peak"))
    return JobReading(
        None, _int(path / "memory.usage_in_bytes"), _int(path / "memory.max_usage_in_bytes")
    )


def cgroup_members(path: Path) -> list[int] | None:
    text = _text(path / "cgroup.procs")
    return None if text is None else [int(p) for p in text.split() if p.isdigit()]


class ProcTable:
    """One walk of ``/proc`` per sampling round, shared by every job (sessions by id)."""

    def __init__(self, root: str = "/proc") -> None:
        self.root = root
        self._sessions: dict[int, list[int]] | None = None

    def session(self, sid: int) -> list[int]:
        if self._sessions is None:
            self._sessions = {}
            try:
                names = os.listdir(self.root)
            except OSError:
                names = []
            for name in names:
                if name.isdigit():
                    rest = _fields(int(name))
                    if rest is not None and rest[0] not in "ZX":
                        self._sessions.setdefault(int(rest[3]), []).append(int(name))
        return self._sessions.get(sid, [])


def read_procs(leader: int, members: list[int]) -> JobReading:
    """CPU and resident memory of ``members``, with the reaped children of ``leader``.

    The leader may be a zombie (the job just ended): its own times and its
    children's are still in its stat line, which is how the last sample of
    a run sees all of it."""
    cpu_ticks = 0
    rss_pages = 0
    seen = False
    for pid in {leader, *members}:
        rest = _fields(pid)
        if rest is None or len(rest) < 22:
            continue
        seen = True
        cpu_ticks += int(rest[11]) + int(rest[12])  # utime, stime
        if pid == leader:
            cpu_ticks += int(rest[13]) + int(rest[14])  # cutime, cstime: reaped children
        if rest[0] not in "ZX":
            rss_pages += int(rest[21])
    if not seen:
        return JobReading(None, None)
    return JobReading(cpu_ticks / TICK, rss_pages * PAGE)


def read_job(
    pid: int, cgroup: Path | None, version: int, procs: ProcTable | None = None
) -> JobReading:
    """The run's reading: its cgroup's figures, completed from ``/proc`` (module doc)."""
    cg = read_cgroup(cgroup, version) if cgroup is not None else JobReading(None, None)
    if cg.cpu_seconds is not None and cg.mem_bytes is not None:
        return cg
    members = cgroup_members(cgroup) if cgroup is not None else None
    if members is None:
        members = (procs or ProcTable()).session(pid) if pid > 0 else []
    pr = read_procs(pid, members)
    return JobReading(
        cg.cpu_seconds if cg.cpu_seconds is not None else pr.cpu_seconds,
        cg.mem_bytes if cg.mem_bytes is not None else pr.mem_bytes,
        cg.mem_peak_bytes,
    )
