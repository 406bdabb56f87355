"""Time values the way Slurm reads and prints them (spec §10, §8.3, §1.8).

Durations
---------
:func:`parse_duration` reads ``--time``-style values: ``M``, ``M:S``,
``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S`` (fields are *not* range-checked,
``1:61`` is 121 s) and ``UNLIMITED`` / ``INFINITE`` / ``-1`` -> ``None``.
Limits are stored in whole minutes, rounded **up**:
``duration_to_minutes(630) == 11``.

Three display styles, each owned by specific commands (spec §10.2):

====================  ===========================  ==========================
style                 used by                      3723 s / 90061 s
====================  ===========================  ==========================
A :func:`fmt_compact`  squeue %M %l %L, sinfo %l   ``1:02:03`` / ``1-01:01:01``
B :func:`fmt_fixed`    scontrol, sacct, sshare      ``01:02:03`` / ``1-01:01:01``
C :func:`fmt_timestamp` squeue %S, scontrol *Time=  ``2026-11-30T02:29:09``
====================  ===========================  ==========================

Timestamps honour ``SLURM_TIME_FORMAT``: unset/``standard`` -> ISO local
time, ``relative`` -> ``12:26:38`` (today), ``Ystday 20:13``, ``Tomorr
03:22``, ``Sat 02:17`` (within a week ahead), ``18 Jun 13:14``, ``19 Jan
2003`` (over a year away); any other value containing ``%`` is a strftime
format.

Date/time input
---------------
:func:`parse_datetime` reads ``sacct -S/-E`` and ``--begin`` values:
``now[{+|-}N[seconds|minutes|hours|days|weeks]]``, ``today``, ``tomorrow``,
``midnight``, ``noon``, ``elevenses`` (11:00), ``fika`` (15:00), ``teatime``
(16:00), ``HH:MM[:SS][AM|PM]``, ``MMDD[YY]``, ``MM/DD[/YY]``, ``MM.DD[.YY]``,
``YYYY-MM-DD[THH:MM[:SS]]``, ``MM/DD[/YY]-HH:MM[:SS]``, ``uts<epoch>``.
Missing parts are filled relative to ``now``: a date alone means 00:00:00;
with ``past=True`` (sacct) a bare time means today and a year-less date the
latest such date not after this month; with ``past=False`` (``--begin``)
both mean the next occurrence.  Example, now = 2026-11-30 14:00 local:
``parse_datetime("10:00", now)`` is 2026-11-30 10:00, but with
``past=False`` it is 2026-12-01 10:00.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping

__all__ = [
    "parse_duration",
    "duration_to_minutes",
    "fmt_compact",
    "fmt_fixed",
    "fmt_limit_compact",
    "fmt_limit_sinfo",
    "fmt_limit_fixed",
    "fmt_timestamp",
    "parse_datetime",
]

_UNLIMITED_WORDS = {"unlimited", "infinite", "-1"}
_MAX_COMPACT = 365 * 86400  # squeue prints INVALID beyond one year


# ------------------------------------------------------------------ durations


def parse_duration(text: str) -> int | None:
    """``"1-2:30"`` -> 95400 seconds; ``"UNLIMITED"`` -> ``None``.

    Raises ``ValueError`` for anything else (``abc``, ``1:2:3:4``, ``""``,
    ``1:``, ``-5``).
    """
    if text.lower() in _UNLIMITED_WORDS:
        return None
    if not text or set(text) - set("0123456789-:") or text.startswith("-"):
        raise ValueError(f"invalid duration: {text!r}")
    days_text, _, rest = text.rpartition("-") if "-" in text else ("", "", text)
    if "-" in days_text or (days_text and not days_text.isdigit()):
        raise ValueError(f"invalid duration: {text!r}")
    fields = rest.split(":") if rest else []
    if len(fields) > 3 or any(not f.isdigit() for f in fields):
        raise ValueError(f"invalid duration: {text!r}")
    numbers = [int(f) for f in fields]
    if days_text:
        # D-H[:M[:S]] (``1-`` alone is accepted: one day)
        h, m, s = (numbers + [0, 0, 0])[:3]
        return int(days_text) * 86400 + h * 3600 + m * 60 + s
    if len(numbers) == 3:
        h, m, s = numbers
        return h * 3600 + m * 60 + s
    if len(numbers) == 2:
        return numbers[0] * 60 + numbers[1]
    return numbers[0] * 60


def duration_to_minutes(seconds: int) -> int:
    """Round seconds **up** to whole minutes: 30 -> 1, 630 -> 11, 0 -> 0."""
    return -(-int(seconds) // 60)


def _split(seconds: int) -> tuple[int, int, int, int]:
    days, rem = divmod(seconds, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    return days, hours, minutes, secs


def fmt_compact(seconds: int) -> str:
    """Style A: ``0:00``, ``59:59``, ``1:02:03``, ``1-00:00:00``.

    Negative or more than 365 days -> ``INVALID`` (squeue's rule).
    """
    seconds = int(seconds)
    if seconds < 3600:  # the common case (every pending job shows 0:00): no divmod chain
        return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 0 else "INVALID"
    if seconds > _MAX_COMPACT:
        return "INVALID"
    d, h, m, s = _split(seconds)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def fmt_fixed(seconds: int) -> str:
    """Style B: ``00:00:00``, ``23:59:59``, ``14-00:00:00``; negative -> ``INVALID``."""
    seconds = int(seconds)
    if seconds < 0:
        return "INVALID"
    d, h, m, s = _split(seconds)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    return f"{h:02d}:{m:02d}:{s:02d}"


def fmt_limit_compact(minutes: int | None) -> str:
    """squeue ``%l``: ``None`` -> ``UNLIMITED``, 30 -> ``30:00``."""
    return "UNLIMITED" if minutes is None else fmt_compact(minutes * 60)


def fmt_limit_sinfo(minutes: int | None) -> str:
    """sinfo TIMELIMIT: ``None`` -> ``infinite``, 2880 -> ``2-00:00:00``."""
    return "infinite" if minutes is None else fmt_compact(minutes * 60)


def fmt_limit_fixed(minutes: int | None) -> str:
    """scontrol/sacct limits: ``None`` -> ``UNLIMITED``, 61 -> ``01:01:00``."""
    return "UNLIMITED" if minutes is None else fmt_fixed(minutes * 60)


# ----------------------------------------------------------------- timestamps


def _relative_format(ts: float, now: float) -> str:
    import datetime as _dt  # here only: every command imports this module, few need dates

    distance = (_dt.date.fromtimestamp(ts) - _dt.date.fromtimestamp(now)).days
    if distance == -1:
        return "Ystday %H:%M"
    if distance == 0:
        return "%H:%M:%S"
    if distance == 1:
        return "Tomorr %H:%M"
    if abs(distance) > 365:
        return "%-d %b %Y"
    if distance < -1 or distance > 6:
        return "%-d %b %H:%M"
    return "%a %H:%M"


def fmt_timestamp(
    ts: float | None,
    none: str = "N/A",
    *,
    env: Mapping[str, str] | None = None,
    now: float | None = None,
) -> str:
    """Local time ``YYYY-MM-DDTHH:MM:SS``; ``None``/0 -> ``none``.

    ``env`` (default ``os.environ``) supplies ``SLURM_TIME_FORMAT``; ``now``
    (default: the clock) anchors the ``relative`` style.  A format without
    ``%`` or of 32+ characters is ignored, as Slurm does.
    """
    if not ts:
        return none
    fmt = (os.environ if env is None else env).get("SLURM_TIME_FORMAT", "")
    tm = time.localtime(ts)
    if fmt == "relative":
        display = _relative_format(ts, time.time() if now is None else now)
    elif "%" in fmt and len(fmt) < 32:
        display = fmt
    else:
        display = "%Y-%m-%dT%H:%M:%S"
    return time.strftime(display.replace("%-d", str(tm.tm_mday)), tm)


# ---------------------------------------------------------------- date input

_CLOCK_WORDS = {"midnight": 0, "noon": 12, "elevenses": 11, "fika": 15, "teatime": 16}
_UNITS = (
    ("seconds", 1), ("second", 1), ("minutes", 60), ("minute", 60), ("hours", 3600),
    ("hour", 3600), ("days", 86400), ("day", 86400), ("weeks", 604800), ("week", 604800),
)  # fmt: skip
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(am|pm)?", re.IGNORECASE)
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{1,2})")
_US_DATE = re.compile(r"(\d{1,2})[./]?(\d{1,2})[./]?(\d{2})?")


def _bad(text: str, pos: int) -> ValueError:
    return ValueError(f"Invalid time specification (pos={pos}): {text}")


def _delta(text: str, pos: int) -> tuple[int, int]:
    """Parse ``N[unit]`` after a sign at ``pos``; return (seconds, end)."""
    count, digits, i = 0, 0, pos
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        unit = next((u for u in _UNITS if text.lower().startswith(u[0], i)), None)
        if unit is not None:
            count *= unit[1]
            i += len(unit[0])
            break
        if not text[i].isdigit():
            raise _bad(text, i)
        count, digits, i = count * 10 + int(text[i]), digits + 1, i + 1
    if not digits:
        raise _bad(text, i)
    return count, i


def parse_datetime(text: str, now: float, *, past: bool = True) -> float:
    """Read a Slurm date/time (see module doc) relative to ``now``.

    ``past=True`` suits ``sacct -S/-E``; pass ``past=False`` for ``--begin``.
    Raises ``ValueError("Invalid time specification (pos=N): TEXT")``.
    """
    low = text.lower()
    if low.startswith("uts"):
        if not text[3:].isdigit() or int(text[3:]) < 1000000:
            raise _bad(text, 3)
        return float(int(text[3:]))
    ref = time.localtime(now)
    date: list[int | None] | None = None  # [year or None, month, day]
    hms: tuple[int, int, int] | None = None
    pos = 0
    while pos < len(text):
        if low.startswith("today", pos):
            date, pos = [ref.tm_year, ref.tm_mon, ref.tm_mday], pos + 5
        elif low.startswith("tomorrow", pos):
            t = time.localtime(now + 86400)
            date, pos = [t.tm_year, t.tm_mon, t.tm_mday], pos + 8
        elif (word := next((w for w in _CLOCK_WORDS if low.startswith(w, pos)), None)) is not None:
            hms, pos = (_CLOCK_WORDS[word], 0, 0), pos + len(word)
        elif low.startswith("now", pos):
            delta, pos = 0, pos + 3
            while pos < len(text) and text[pos] in " \t":
                pos += 1
            if pos < len(text) and text[pos] in "+-":
                sign = -1 if text[pos] == "-" else 1
                delta, pos = _delta(text, pos + 1)
                delta *= sign
            elif pos < len(text):
                raise _bad(text, pos)
            t = time.localtime(now + delta)
            date, hms = [t.tm_year, t.tm_mon, t.tm_mday], (t.tm_hour, t.tm_min, t.tm_sec)
        elif text[pos] in " \t-T":
            pos += 1
        elif not text[pos].isdigit():
            raise _bad(text, pos)
        elif text[pos + 1 : pos + 2] == ":" or text[pos + 2 : pos + 3] == ":":
            m = _TIME.match(text, pos)
            if m is None:
                raise _bad(text, pos)
            hour, minute, sec = int(m[1]), int(m[2]), int(m[3] or 0)
            if hour > 23 or minute > 59 or sec > 59:
                raise _bad(text, pos)
            if m[4] and m[4].lower() == "pm":
                hour = 12 if hour == 12 else hour + 12
            elif m[4] and m[4].lower() == "am":
                hour = 0 if hour == 12 else hour
            if hour > 23 or (m[4] and int(m[1]) > 12):
                raise _bad(text, pos)
            hms, pos = (hour, minute, sec), m.end()
        else:
            m = _ISO_DATE.match(text, pos)
            if m:
                date = [int(m[1]), int(m[2]), int(m[3])]
            else:
                m = _US_DATE.match(text, pos)
                if m is None:
                    raise _bad(text, pos)
                date = [2000 + int(m[3]) if m[3] else None, int(m[1]), int(m[2])]
            if not (1 <= date[1] <= 12 and 1 <= date[2] <= 31):  # type: ignore[operator]
                raise _bad(text, pos)
            pos = m.end()
    if date is None and hms is None:
        raise _bad(text, pos)
    if hms is None:
        hms = (0, 0, 0)
    if date is None:
        later = (hms[0], hms[1]) > (ref.tm_hour, ref.tm_min)
        t = ref if past or later else time.localtime(now + 86400)
        date = [t.tm_year, t.tm_mon, t.tm_mday]
    if date[0] is None:
        month, day = date[1], date[2]
        if past:
            date[0] = ref.tm_year - 1 if month > ref.tm_mon else ref.tm_year  # type: ignore[operator]
        else:
            when = (month, day, hms[0], hms[1])
            ahead = when > (ref.tm_mon, ref.tm_mday, ref.tm_hour, ref.tm_min)
            date[0] = ref.tm_year if ahead else ref.tm_year + 1
    year, month, day = (int(v) for v in date)  # type: ignore[arg-type]
    return time.mktime((year, month, day, hms[0], hms[1], hms[2], 0, 0, -1))
