"""Retention of finished jobs: Slurm's ``PurgeJobAfter`` value and the cutoff it gives.

Slurm keeps this in slurmdbd.conf; slurmlite, being its own accounting
store, reads it from slurm.conf with ``ArchiveJobs`` and ``ArchiveDir``
(``controller.jobs.retention`` does the purging).  A value is a whole
number and a unit, any leading part of ``hours``, ``days`` or ``months``
(case-insensitive); no unit means months, as in Slurm::

    parse_purge("12month") -> Purge(12, "months")
    parse_purge("30days")  -> Purge(30, "days")
    parse_purge("720h")    -> Purge(720, "hours")
    parse_purge("12")      -> Purge(12, "months")

The cutoff is Slurm's: now truncated to the hour (hours), to midnight (days)
or to the first of the month (months), minus that many units, minus one
second; a finished job whose end time is at or before it is purged.  E.g.
``PurgeJobAfter=2days`` at 2026-03-10 15:42 local time: cutoff 2026-03-07
23:59:59, so a job that ended on the 8th at 00:00:00 stays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

UNITS = ("months", "hours", "days")  # Slurm tries them in this order: "m" is months


@dataclass(frozen=True)
class Purge:
    count: int
    unit: str  # "hours", "days" or "months"

    def __str__(self) -> str:
        return f"{self.count}{self.unit}"


def parse_purge(value: str) -> Purge:
    """``12month`` -> Purge(12, "months"); ValueError with Slurm's words when invalid."""
    digits = len(value) - len(value.lstrip("0123456789"))
    if not digits:
        raise ValueError(f"Invalid purge string '{value}'")
    rest = value[digits:].lower()
    for unit in UNITS:
        if not rest and unit == "months" or rest and unit.startswith(rest):
            return Purge(int(value[:digits]), unit)
    raise ValueError(
        f"Invalid purge unit '{value[digits:]}', valid options are hours, days, or months"
    )


def purge_cutoff(purge: Purge, now: float) -> float:
    """The newest end time purged at ``now`` (local time, as slurmdbd computes it)."""
    tm = time.localtime(now)
    year, mon, mday, hour = tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour
    if purge.unit == "hours":
        hour -= purge.count
    elif purge.unit == "days":
        hour, mday = 0, mday - purge.count
    else:
        hour, mday, mon = 0, 1, mon - purge.count
    # mktime normalises out-of-range fields (hour -5, mday -3, month -14) as C's does
    return time.mktime((year, mon, mday, hour, 0, 0, 0, 0, -1)) - 1
