"""The period of a usage report, as sreport works it out from ``start=`` and ``end=``.

Slurm keeps usage in hourly roll-ups, so sreport moves both ends to an hour
(local time) before asking; slurmlite computes from the jobs themselves but
keeps the same periods, so both give the same figures for the same words:

* no ``end``: today 00:00; no ``start``: yesterday 00:00 (the whole of
  yesterday by default);
* an ``end`` later than now becomes now (sreport never reports the future);
* a given time is rounded to the nearest hour: 30 seconds or more round the
  minute up, then 30 minutes or more round the hour up (10:29:30 -> 11:00,
  10:29:29 -> 10:00);
* a period shorter than an hour is stretched to ``start + 1 h``.

Times are read with Slurm's formats (``slurmlite.timefmt.parse_datetime``):
``2026-12-01``, ``12/01/26``, ``2026-12-01T08:00``, ``now-7days`` ...
Facts from Slurm 22.05's ``slurmdb_report_set_start_end_time`` and sreport's
``sanity_check_endtime``.

Example (local time): now 2026-12-06 09:12, no words -> 2026-12-05 00:00 to
2026-12-06 00:00; ``start=now-2hours`` -> 07:00 (07:12 rounds down) to 08:00
(stretched to an hour).
"""

from __future__ import annotations

import time

from slurmlite.timefmt import parse_datetime

HOUR = 3600


def _rounded(ts: float) -> float:
    """``ts`` moved to the nearest hour of local time (Slurm's rounding, see above)."""
    tm = time.localtime(ts)
    minute = tm.tm_min + (1 if tm.tm_sec >= 30 else 0)
    hour = tm.tm_hour + (1 if minute >= 30 else 0)
    parts = (tm.tm_year, tm.tm_mon, tm.tm_mday, hour, 0, 0, 0, 0, -1)
    return time.mktime(parts)


def _midnight(now: float, days_back: int) -> float:
    tm = time.localtime(now)
    return time.mktime((tm.tm_year, tm.tm_mon, tm.tm_mday - days_back, 0, 0, 0, 0, 0, -1))


def report_period(start: str | None, end: str | None, now: float) -> tuple[float, float]:
    """``(start, end)`` in Unix seconds for the words given; ``ValueError`` for bad words."""
    if end:
        end_ts = _rounded(min(parse_datetime(end, now), now))
    else:
        end_ts = _midnight(now, 0)
    start_ts = _rounded(parse_datetime(start, now)) if start else _midnight(now, 1)
    if end_ts - start_ts < HOUR:
        end_ts = start_ts + HOUR
    return start_ts, end_ts
