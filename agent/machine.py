"""What the agent tells the controller about its machine, read from ``/proc``.

Slurm's slurmd reports these facts in its registration (and, for the
load and free memory, in every answer to the controller's ping); ``scontrol
show node`` shows them.  How Slurm 22.05 obtains each one, and so how the
agent does:

* ``CPULoad``: the *five-minute* load average (``sysinfo``'s ``loads[1]``,
  the second field of ``/proc/loadavg``), shown with two decimals;
* ``FreeMem``: memory not used at all, ``MemFree`` in ``/proc/meminfo``
  (``sysinfo``'s ``freeram``), not the larger ``MemAvailable`` that counts
  reclaimable page cache; whole MiB, rounded down;
* ``RealMemory`` (what the node has): ``MemTotal``, in whole MiB;
* ``BootTime``: ``btime`` in ``/proc/stat``;
* ``OS``: ``uname``'s system name, release and version, one space apart.

Example: ``/proc/loadavg`` holding ``"0.42 1.68 1.20 2/311 4242"`` gives a
load of 1.68; a ``MemFree:  24058000 kB`` line gives 24058000 // 1024 =
23494 MiB free (23494 x 1024 = 24057856, the 144 kB left over are dropped).

A file that cannot be read or parsed gives ``None`` ("not known": the
controller then keeps showing ``N/A``), never an exception: these facts
are informative and must not stop a registration or a heartbeat.
"""

from __future__ import annotations

import platform

__all__ = [
    "boot_time",
    "cpu_load",
    "free_mem_mib",
    "mem_total_mib",
    "meminfo_mib",
    "os_name",
    "parse_loadavg",
]


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def parse_loadavg(text: str) -> float | None:
    """The five-minute load average from ``/proc/loadavg`` text (its second field)."""
    fields = text.split()
    try:
        return float(fields[1])
    except (IndexError, ValueError):
        return None


def meminfo_mib(text: str, key: str) -> int | None:
    """The ``key`` line of ``/proc/meminfo`` text (kB there) in whole MiB, rounded down."""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name == key:
            try:
                return int(rest.split()[0]) // 1024
            except (IndexError, ValueError):
                return None
    return None


def cpu_load(path: str = "/proc/loadavg") -> float | None:
    text = _read(path)
    return None if text is None else parse_loadavg(text)


def free_mem_mib(path: str = "/proc/meminfo") -> int | None:
    text = _read(path)
    return None if text is None else meminfo_mib(text, "MemFree")


def mem_total_mib(path: str = "/proc/meminfo") -> int:
    """Installed memory in MiB (1 if unknown, so a registration still goes out)."""
    text = _read(path)
    total = None if text is None else meminfo_mib(text, "MemTotal")
    return total or 1


def boot_time(path: str = "/proc/stat") -> float | None:
    text = _read(path) or ""
    for line in text.splitlines():
        if line.startswith("btime"):
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def os_name() -> str:
    """``uname -s -r -v``: e.g. ``Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1``."""
    u = platform.uname()
    return " ".join(part for part in (u.system, u.release, u.version) if part)
