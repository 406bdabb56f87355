"""Control groups for jobs: a memory limit, OOM detection, and every process tracked.

What a cgroup gives a job
-------------------------
A process group (what the agent uses without cgroups) is left by any process
that calls ``setsid``: a daemonised helper survives ``scancel``.  A cgroup
cannot be left: children are born in their parent's cgroup, and only root
may move a process.  So one cgroup per job means "every process of the job"
is a directory listing (``cgroup.procs``), and the memory controller on the
same directory caps what they use together and counts OOM kills.

Layout (ours alone; nothing outside ``slurmlite/`` is ever touched)::

    <mount>/slurmlite/<scope>/job_<id>_<restarts>   the job's processes, the limit
    <mount>/slurmlite/<scope>/wrappers              the per-job shell wrappers

``<scope>`` names one agent (its spool: ``n1_1f2e3d4c``), so several agents
on one host never see each other's jobs.  The wrapper (``agent.wrapper``)
must outlive a kill of its job, so it starts *in* the job's cgroup (its
child, the job, is born there) and is moved to ``wrappers`` once the job
runs (``agent.launcher``).

Version 1 and version 2
-----------------------
* **v2** (one unified tree, ``cgroup2`` mount, Linux >= 4.5, systemd's
  default since 2021): a controller works in a directory only when every
  ancestor lists it in ``cgroup.subtree_control``, and only a cgroup
  without processes may enable controllers for its children ("no internal
  processes"); hence the process-free ``slurmlite/`` and ``<scope>/``.
  Files: ``memory.max`` (bytes), ``memory.swap.max`` (0: no swap beyond the
  limit), ``memory.events`` (line ``oom_kill N``), ``cgroup.events``
  (``populated 0|1``), ``cgroup.kill`` (Linux >= 5.14: SIGKILL to every
  member at once).
* **v1** (one tree per controller, ``cgroup`` mounts with the controller's
  name as an option, e.g. ``/sys/fs/cgroup/memory``): no placement rules.
  Files: ``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes`` (RAM +
  swap; exists only with swap accounting), ``memory.oom_control`` (line
  ``oom_kill N``, Linux >= 4.13).  No ``cgroup.kill``: members are killed
  one by one, re-read until none is left (a process forking meanwhile is
  caught by the next round).

Both: ``cgroup.procs`` lists the members (moving a process = writing its pid
there); a cgroup is removed with ``rmdir`` once no process is left in it
(zombies do not count).  The preferred tree is v2 with the memory
controller, then a v1 memory tree, then v2 without it (tracking only).

Worked example: job 7 with ``--mem=50M`` -> ``mkdir .../job_7_0``,
``memory.max = 52428800`` (v1: ``memory.limit_in_bytes``); its script
allocates 200 MiB -> the kernel kills it, ``oom_kill 1`` -> the agent reports
raw status ``SIG_OOM`` (253), the controller ends the job OUT_OF_MEMORY.
Reference: Documentation/admin-guide/cgroup-v2.rst, cgroup-v1/memory.rst.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from slurmlite.clock import Clock, monotonic_clock
from slurmlite.states import OOM_STATUS as SIG_OOM  # sacct shows it as 0:125

__all__ = ["SIG_OOM", "CgroupTree", "JobCgroup", "Mount", "find_mount", "scope_name"]

TOP = "slurmlite"
WRAPPERS = "wrappers"


@dataclass(frozen=True)
class Mount:
    """A writable cgroup hierarchy: version, mount point, memory controller there."""

    version: int
    path: Path
    memory: bool


def find_mount(mounts: str | None = None, version: int | None = None) -> Mount | None:
    """The hierarchy to use (see the docstring), or None (not root, nothing writable).

    ``mounts`` is ``/proc/self/mounts``' text; ``version`` (1, 2) allows only that one."""
    if os.geteuid() != 0:
        return None
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return None
    found: list[Mount] = []
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 4 or not os.access(parts[1], os.W_OK):
            continue
        if parts[2] == "cgroup2":
            ctl = _read(Path(parts[1]) / "cgroup.controllers").split()
            found.append(Mount(2, Path(parts[1]), "memory" in ctl))
        elif parts[2] == "cgroup" and "memory" in parts[3].split(","):
            found.append(Mount(1, Path(parts[1]), True))
    found = [m for m in found if version is None or m.version == version]
    found.sort(key=lambda m: (not m.memory, m.version != 2))
    return found[0] if found else None


def scope_name(spool: Path) -> str:
    """One agent's directory name: its spool's base name and a hash of its full path."""
    real = os.path.realpath(spool)
    tag = hashlib.sha1(real.encode()).hexdigest()[:8]
    base = "".join(c if c.isalnum() or c in "-." else "_" for c in os.path.basename(real))
    return f"{base[:40]}_{tag}"


class JobCgroup:
    """One job's cgroup (the directory ``path``)."""

    def __init__(self, path: Path, version: int, tree: CgroupTree) -> None:
        self.path, self.version, self.tree = path, version, tree

    def add(self, pid: int) -> None:
        _write(self.path / "cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        return [int(p) for p in _read(self.path / "cgroup.procs").split()]

    def populated(self) -> bool:
        if self.version == 2:
            events = _read(self.path / "cgroup.events")
            if events:
                return "populated 1" in events
        return bool(self.pids())

    def signal(self, sig: int, spare: frozenset[int] = frozenset()) -> int:
        """``sig`` to every member but ``spare``; how many got it."""
        sent = 0
        for pid in self.pids():
            if pid not in spare:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
                    sent += 1
        return sent

    def kill(self, spare: frozenset[int] = frozenset()) -> None:
        """SIGKILL to every member but ``spare`` (v2 without spares: ``cgroup.kill``)."""
        if self.version == 2 and not spare.intersection(self.pids()):
            with contextlib.suppress(OSError):
                _write(self.path / "cgroup.kill", "1")
                return
        self.signal(signal.SIGKILL, spare)

    def oom_kills(self) -> int:
        """Processes of the job the kernel's OOM killer has killed so far."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        for line in _read(self.path / name).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def memory_peak(self) -> int:
        """The most memory the job's processes held together, in bytes (0: not known)."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        text = _read(self.path / name).strip()
        return int(text) if text.isdigit() else 0

    def limit_memory(self, limit: int, no_swap: bool) -> None:
        """Cap the job's memory at ``limit`` bytes (and swap at nothing more, if asked)."""
        if self.version == 2:
            _write(self.path / "memory.max", str(limit))
            if no_swap:
                _write_if_there(self.path / "memory.swap.max", "0")
        else:
            _write(self.path / "memory.limit_in_bytes", str(limit))
            if no_swap:
                _write_if_there(self.path / "memory.memsw.limit_in_bytes", str(limit))

    def retire(self) -> bool:
        """Kill what is left and remove the directory (retried later if busy)."""
        return self.tree.retire(self)


class CgroupTree:
    """One agent's cgroups: creates, finds again, moves wrappers out, removes."""

    def __init__(
        self,
        mount: Mount,
        scope: str,
        memory: bool = True,
        no_swap: bool = True,
        timer: Clock = monotonic_clock,
    ) -> None:
        self.timer = timer  # monotonic seconds: how long ``retire`` waits for the killed
        self.version = mount.version
        self.base = mount.path / TOP
        self.scope = self.base / scope
        self.memory = memory and mount.memory
        self.no_swap = no_swap
        self._doomed: set[Path] = set()  # removal failed (members still exiting): retried
        self._prepared = False  # slurmlite/<scope>/ made (once: a burst of starts skips it)

    def __repr__(self) -> str:
        return f"CgroupTree(v{self.version}, {self.scope}, memory={self.memory})"

    def job_path(self, job_id: int, restarts: int) -> Path:
        return self.scope / f"job_{job_id}_{restarts}"

    def create(self, job_id: int, restarts: int, mem_mib: int | None) -> JobCgroup:
        """The job's cgroup, empty, with its memory limit (``mem_mib`` MiB; 0/None: none)."""
        self.retry()
        if not self._prepared:
            self._prepare()
            self._prepared = True
        cg = JobCgroup(self.job_path(job_id, restarts), self.version, self)
        try:
            os.mkdir(cg.path)
        except FileExistsError:  # left by a launch cut short: nothing of it may live on
            cg.kill()
        except FileNotFoundError:  # the scope was removed under us (a sweep, an admin)
            self._prepare()
            os.mkdir(cg.path)
        if self.memory and mem_mib:
            cg.limit_memory(int(mem_mib) << 20, self.no_swap)
        return cg

    def adopt(self, recorded: object) -> JobCgroup | None:
        """The cgroup a run's record names, if it is one of ours and still there."""
        if not isinstance(recorded, str) or not recorded:
            return None
        path = Path(os.path.normpath(recorded))
        if path.parent.parent != self.base or not path.name.startswith("job_"):
            return None
        return JobCgroup(path, self.version, self) if path.is_dir() else None

    def park_wrapper(self, pid: int) -> None:
        """Move a wrapper out of its job's cgroup, so that killing the job spares it."""
        home = self.scope / WRAPPERS
        with contextlib.suppress(FileExistsError):
            os.mkdir(home)
        _write(home / "cgroup.procs", str(pid))

    def retire(self, cg: JobCgroup, wait: float = 0.05) -> bool:
        """Kill what is left in ``cg`` and remove it; False: busy, retried later.

        Killed processes take a moment to exit; up to ``wait`` s is spent
        waiting for them (nothing is waited for when none was left).  The
        agent's own scope stays while it runs (a start after the last end would
        only make it again); ``sweep`` at start and ``destroy`` remove it."""
        cg.kill()
        deadline = self.timer() + wait
        while cg.pids() and self.timer() < deadline:
            time.sleep(0.002)
        if _rmdir(cg.path):
            self._doomed.discard(cg.path)
            return True
        self._doomed.add(cg.path)
        return False

    def sweep(self, live: set[tuple[int, int]]) -> int:
        """Retire our job cgroups whose run is not in ``live`` (at agent start); how many."""
        count = 0
        for entry in _listdir(self.scope):
            job, restarts = _parse(entry)
            if job is not None and (job, restarts) not in live:
                self.retire(JobCgroup(self.scope / entry, self.version, self))
                count += 1
        self._tidy()
        self._prepared = False  # _tidy may have removed the scope
        return count

    def destroy(self) -> None:
        """Kill everything of this scope and remove it (tests, never the agent)."""
        for entry in _listdir(self.scope):
            self.retire(JobCgroup(self.scope / entry, self.version, self))
        self._tidy()
        self._prepared = False

    def _prepare(self) -> None:
        """``slurmlite/<scope>/`` exists (and passes the memory controller on, v2).

        Another agent may remove an empty ``slurmlite/`` between our two
        ``mkdir``: then we start again."""
        for _attempt in range(3):
            try:
                for level in (self.base, self.scope):
                    try:
                        os.mkdir(level)
                    except FileExistsError:
                        continue
                    if self.version == 2 and self.memory:
                        self._enable_memory(level)
                return
            except FileNotFoundError:
                continue

    def _enable_memory(self, level: Path) -> None:
        """v2: the memory controller for ``level`` (from its parent) and for its children."""
        for parent in (level.parent, level):
            control = parent / "cgroup.subtree_control"
            if "memory" not in _read(control).split():
                try:
                    _write(control, "+memory")
                except FileNotFoundError:
                    raise
                except OSError:
                    self.memory = False  # e.g. the mount's root has processes: tracking only
                    return

    def retry(self) -> None:
        """Try again to remove the cgroups that were busy when their run ended."""
        for path in list(self._doomed):
            self.retire(JobCgroup(path, self.version, self), wait=0)

    def _tidy(self) -> None:
        """Remove the scope (and ``slurmlite/``) once no job is left in it."""
        if any(_parse(e)[0] is not None for e in _listdir(self.scope)):
            return
        _rmdir(self.scope / WRAPPERS)
        if _rmdir(self.scope):
            _rmdir(self.base)


def _parse(name: str) -> tuple[int | None, int]:
    parts = name.split("_")
    if len(parts) == 3 and parts[0] == "job" and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1]), int(parts[2])
    return None, 0


def _read(path: Path) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _write_if_there(path: Path, text: str) -> None:
    """Write a control file the kernel may not offer (cgroupfs refuses to create one)."""
    if path.exists():
        _write(path, text)


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _rmdir(path: Path) -> bool:
    """True once ``path`` is gone."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError:  # EBUSY: members left (still exiting); ENOTEMPTY: child cgroups
        return False
    return True
