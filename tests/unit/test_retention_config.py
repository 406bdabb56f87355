"""PurgeJobAfter / ArchiveJobs / ArchiveDir as slurm.conf keys, with slurmdbd's units and words."""

from __future__ import annotations

import time

import pytest

from slurmlite.config import ConfigError, parse_config
from slurmlite.retention import Purge, parse_purge, purge_cutoff


@pytest.mark.parametrize(
    ("text", "purge"),
    [
        ("12month", Purge(12, "months")),
        ("12", Purge(12, "months")),  # no unit: months, as slurmdbd
        ("30days", Purge(30, "days")),
        ("30D", Purge(30, "days")),
        ("720hours", Purge(720, "hours")),
        ("720h", Purge(720, "hours")),
        ("1m", Purge(1, "months")),  # "m" is tried against months first
    ],
)
def test_purge_values_take_any_leading_part_of_the_unit(text, purge):
    assert parse_purge(text) == purge


def test_the_keys_are_read_with_their_defaults():
    cfg = parse_config("PurgeJobAfter=6months\nArchiveJobs=YES\nArchiveDir=/srv/archive\n")
    assert (cfg.purge_job_after, cfg.archive_jobs, cfg.archive_dir) == (
        Purge(6, "months"), True, "/srv/archive"
    )  # fmt: skip
    default = parse_config("")
    assert (default.purge_job_after, default.archive_jobs, default.archive_dir) == (
        None, False, "/tmp"  # Slurm's ArchiveDir default
    )  # fmt: skip


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("PurgeJobAfter=3weeks",
         "Bad value \"3weeks\" for PurgeJobAfter: Invalid purge unit 'weeks', valid options are "
         "hours, days, or months"),
        ("PurgeJobAfter=month", "Bad value \"month\" for PurgeJobAfter: Invalid purge string 'month'"),
        ("PurgeJobAfter=-1days", "Invalid purge string '-1days'"),
        ("ArchiveJobs=maybe", "invalid value 'maybe' for ArchiveJobs"),
    ],
)  # fmt: skip
def test_bad_values_stop_the_config_with_the_line(line, message):
    with pytest.raises(ConfigError) as e:
        parse_config(f"ClusterName=c\n{line}\n")
    assert str(e.value).startswith("slurm.conf:2: ") and message in str(e.value)


def test_cutoff_truncates_to_the_unit_then_steps_back(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        now = time.mktime((2026, 3, 10, 15, 42, 7, 0, 0, -1))
        show = lambda p: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(purge_cutoff(p, now)))  # noqa: E731
        assert show(Purge(2, "days")) == "2026-03-07 23:59:59"  # midnight of the 8th, less 1 s
        assert show(Purge(5, "hours")) == "2026-03-10 09:59:59"  # 15:00 - 5 h - 1 s
        assert show(Purge(14, "months")) == "2024-12-31 23:59:59"  # 1 Jan 2025 less 1 s
    finally:
        monkeypatch.undo()
        time.tzset()
