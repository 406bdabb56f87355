"""Durations, display styles A/B/C and date input (spec §10, §8.3, §1.8)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from slurmlite.timefmt import (
    duration_to_minutes,
    fmt_compact,
    fmt_fixed,
    fmt_limit_compact,
    fmt_limit_fixed,
    fmt_limit_sinfo,
    fmt_timestamp,
    parse_datetime,
    parse_duration,
)


@pytest.fixture
def tz() -> Iterator[Callable[[str], None]]:
    """Switch the process time zone for one test, restoring it afterwards."""
    saved = os.environ.get("TZ")

    def use(name: str) -> None:
        os.environ["TZ"] = name
        time.tzset()

    use("UTC")
    yield use
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


def local(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> float:
    return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))


# ------------------------------------------------------------ §10.1 parsing


@pytest.mark.parametrize(
    ("text", "seconds", "minutes"),
    [
        ("10", 600, 10),
        ("90", 5400, 90),
        ("0", 0, 0),
        ("10:30", 630, 11),  # 10 min 30 s rounds up to 11 min
        ("0:30", 30, 1),
        ("0:59", 59, 1),
        ("1:61", 121, 3),  # fields not range-checked: 60 + 61 = 121 s
        ("1:00:00", 3600, 60),
        ("10:00:01", 36001, 601),
        ("00:00:01", 1, 1),
        ("1-0", 86400, 1440),
        ("1-2", 93600, 1560),  # D-H: 86400 + 2*3600
        ("1-2:30", 95400, 1590),  # D-H:M
        ("1-2:30:15", 95415, 1591),
        ("2-00:00:00", 172800, 2880),
        ("1-", 86400, 1440),  # accepted: one day
    ],
)
def test_parse_duration_vectors(text: str, seconds: int, minutes: int) -> None:
    assert parse_duration(text) == seconds
    assert duration_to_minutes(seconds) == minutes


@pytest.mark.parametrize("text", ["UNLIMITED", "unlimited", "infinite", "INFINITE", "-1"])
def test_parse_duration_unlimited(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize("text", ["abc", "1:2:3:4", "", "1:", ":30", "1:2-3", "1--2", "-5", "1h"])
def test_parse_duration_invalid(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


# ------------------------------------------------------------ §10.2 display


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0:00"),
        (59, "0:59"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (3723, "1:02:03"),
        (86400, "1-00:00:00"),
        (90061, "1-01:01:01"),
        (365 * 86400, "365-00:00:00"),
        (365 * 86400 + 1, "INVALID"),  # more than a year
        (-1, "INVALID"),
    ],
)
def test_style_a_compact(seconds: int, text: str) -> None:
    assert fmt_compact(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "00:00:00"),
        (59, "00:00:59"),
        (3661, "01:01:01"),
        (86399, "23:59:59"),
        (86400, "1-00:00:00"),
        (1209600, "14-00:00:00"),
        (-5, "INVALID"),
    ],
)
def test_style_b_fixed(seconds: int, text: str) -> None:
    assert fmt_fixed(seconds) == text


def test_limits_per_command() -> None:
    # squeue %l: golden 50_squeue_long / 51_scontrol_update_timelimit*
    assert fmt_limit_compact(None) == "UNLIMITED"
    assert fmt_limit_compact(30) == "30:00"
    assert fmt_limit_compact(60) == "1:00:00"
    # sinfo TIMELIMIT: golden 50_sinfo_default shows "infinite"
    assert fmt_limit_sinfo(None) == "infinite"
    assert fmt_limit_sinfo(2880) == "2-00:00:00"
    assert fmt_limit_sinfo(30) == "30:00"
    # scontrol/sacct: minute limits end in :00 (61 min = 01:01:00, 1501 = 1 d 1 h 1 min)
    assert fmt_limit_fixed(None) == "UNLIMITED"
    assert fmt_limit_fixed(61) == "01:01:00"
    assert fmt_limit_fixed(1501) == "1-01:01:00"


# ------------------------------------------------------------ timestamps


def test_timestamp_standard_is_local_iso(tz) -> None:
    tz("EST5")  # fixed UTC-5, no tzdata needed
    ts = 1_700_000_000  # 2023-11-14T22:13:20Z
    assert fmt_timestamp(ts, env={}) == "2023-11-14T17:13:20"
    assert fmt_timestamp(ts, env={"SLURM_TIME_FORMAT": "standard"}) == "2023-11-14T17:13:20"


def test_timestamp_unset_values() -> None:
    assert fmt_timestamp(None) == "N/A"  # squeue
    assert fmt_timestamp(0, "Unknown") == "Unknown"  # scontrol/sacct
    assert fmt_timestamp(None, none="None") == "None"


def test_timestamp_strftime_and_bad_formats(tz) -> None:
    ts = local(2026, 11, 30, 2, 29, 9)
    assert fmt_timestamp(ts, env={"SLURM_TIME_FORMAT": "%d/%m %H:%M"}) == "30/11 02:29"
    # no % (or 32+ characters): ignored, standard format used, as Slurm does
    assert fmt_timestamp(ts, env={"SLURM_TIME_FORMAT": "bogus"}) == "2026-11-30T02:29:09"
    assert fmt_timestamp(ts, env={"SLURM_TIME_FORMAT": "%H" * 16}) == "2026-11-30T02:29:09"


def test_timestamp_reads_process_environment(tz, monkeypatch) -> None:
    monkeypatch.setenv("SLURM_TIME_FORMAT", "%Y")
    assert fmt_timestamp(local(2026, 11, 30)) == "2026"


@pytest.mark.parametrize(
    ("when", "text"),
    [
        (local(2026, 11, 30, 12, 26, 38), "12:26:38"),  # today
        (local(2026, 11, 29, 20, 13), "Ystday 20:13"),
        (local(2026, 12, 1, 3, 22), "Tomorr 03:22"),
        (local(2026, 12, 5, 2, 17), "Sat 02:17"),  # 5 days ahead
        (local(2026, 11, 20, 13, 14), "20 Nov 13:14"),  # 10 days back
        (local(2026, 12, 8, 13, 14), "8 Dec 13:14"),  # 8 days ahead: no leading zero
        (local(2025, 6, 1, 9, 0), "1 Jun 2025"),  # more than 365 days back
    ],
)
def test_timestamp_relative(tz, when: float, text: str) -> None:
    now = local(2026, 11, 30, 14, 0)  # a Monday
    assert fmt_timestamp(when, env={"SLURM_TIME_FORMAT": "relative"}, now=now) == text


# ------------------------------------------------------------ date input


NOW_PARTS = (2026, 11, 30, 14, 0, 0)  # Monday 2026-11-30 14:00:00 local


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", (2026, 11, 30, 14, 0, 0)),
        ("now-1hours", (2026, 11, 30, 13, 0, 0)),
        ("now+2days", (2026, 12, 2, 14, 0, 0)),
        ("now+90", (2026, 11, 30, 14, 1, 30)),  # default unit: seconds
        ("now-1week", (2026, 11, 23, 14, 0, 0)),
        ("today", (2026, 11, 30, 0, 0, 0)),
        ("tomorrow", (2026, 12, 1, 0, 0, 0)),
        ("midnight", (2026, 11, 30, 0, 0, 0)),  # past=True: today's midnight
        ("noon", (2026, 11, 30, 12, 0, 0)),
        ("elevenses", (2026, 11, 30, 11, 0, 0)),
        ("fika", (2026, 11, 30, 15, 0, 0)),
        ("teatime", (2026, 11, 30, 16, 0, 0)),
        ("10:00", (2026, 11, 30, 10, 0, 0)),
        ("16:30:15", (2026, 11, 30, 16, 30, 15)),
        ("2:30pm", (2026, 11, 30, 14, 30, 0)),
        ("12:00am", (2026, 11, 30, 0, 0, 0)),
        ("12:00 PM", (2026, 11, 30, 12, 0, 0)),
        ("2024-01-05", (2024, 1, 5, 0, 0, 0)),  # date alone = 00:00:00
        ("2024-01-05T10:20", (2024, 1, 5, 10, 20, 0)),
        ("2024-01-05T10:20:30", (2024, 1, 5, 10, 20, 30)),
        ("0105", (2026, 1, 5, 0, 0, 0)),  # MMDD: January is not after November
        ("010524", (2024, 1, 5, 0, 0, 0)),  # MMDDYY
        ("1/5", (2026, 1, 5, 0, 0, 0)),
        ("12/31", (2025, 12, 31, 0, 0, 0)),  # December is after November: last year
        ("12/31/23", (2023, 12, 31, 0, 0, 0)),
        ("01.05.24", (2024, 1, 5, 0, 0, 0)),
        ("01/05-10:00", (2026, 1, 5, 10, 0, 0)),
        ("uts1700000000", None),  # raw epoch, checked below
    ],
)
def test_parse_datetime_past_forms(tz, text: str, expected) -> None:
    now = local(*NOW_PARTS)
    got = parse_datetime(text, now)
    if expected is None:
        assert got == 1_700_000_000
    else:
        assert got == local(*expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10:00", (2026, 12, 1, 10, 0, 0)),  # already past today -> tomorrow
        ("16:00", (2026, 11, 30, 16, 0, 0)),  # still ahead today
        ("midnight", (2026, 12, 1, 0, 0, 0)),
        ("1/5", (2027, 1, 5, 0, 0, 0)),  # next January 5th
        ("12/31", (2026, 12, 31, 0, 0, 0)),
        ("now+1hour", (2026, 11, 30, 15, 0, 0)),
    ],
)
def test_parse_datetime_future_forms(tz, text: str, expected) -> None:
    assert parse_datetime(text, local(*NOW_PARTS), past=False) == local(*expected)


def test_parse_datetime_is_local_time(tz) -> None:
    tz("EST5")
    # 2024-01-05 00:00 in UTC-5 is 05:00 UTC
    assert parse_datetime("2024-01-05", 1_700_000_000) == 1_704_430_800


@pytest.mark.parametrize(
    "text", ["abc", "25:00", "10:5", "13/01", "0/5", "now 10", "now+", "13:00pm", "", "uts12"]
)
def test_parse_datetime_invalid(tz, text: str) -> None:
    with pytest.raises(ValueError, match=r"Invalid time specification \(pos=\d+\)"):
        parse_datetime(text, local(*NOW_PARTS))
