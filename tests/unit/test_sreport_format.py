"""sreport's units, column widths, cells and report periods (``cli.sreport_format``,
``cli.report_period``): Slurm 22.05's rules, one case each."""

from __future__ import annotations

import time

import pytest

from cli import sreport_format as sf
from cli.report_period import report_period


@pytest.mark.parametrize(
    ("word", "key"),
    [
        ("hours", "hours"), ("H", "hours"), ("Hou", "hours"), ("minutes", "minutes"),
        ("m", "minutes"), ("SECONDS", "seconds"), ("percent", "percent"), ("p", "percent"),
        ("secper", "secper"), ("MinPer", "minper"), ("hourper", "hourper"), ("HourP", None),
        ("hoursx", None), ("days", None),
    ],
)  # fmt: skip
def test_time_format_words_are_matched_by_prefix(word, key):
    found = sf.time_format(word)
    assert (found[0] if found else None) == key


@pytest.mark.parametrize(
    ("unit", "text"),
    [
        # 5430 s of 21600 s: 90.5 min, 1.508 h, 25.139 %
        ("seconds", "5430"),
        ("minutes", "90"),  # %.0f: 90.5 rounds half to even
        ("hours", "2"),
        ("percent", "25.14%"),
        ("secper", "5430(25.14%)"),
        ("minper", "90(25.14%)"),
        ("hourper", "2(25.14%)"),
    ],
)
def test_usage_text_in_each_unit(unit, text):
    assert sf.usage_text(5430, 21600, unit) == text


def test_a_usage_of_nothing_over_nothing_is_zero_percent():
    assert sf.usage_text(0, 0, "percent") == "0.00%"


@pytest.mark.parametrize(
    ("largest", "per", "width"),
    [(0, False, 8), (99_999_999, False, 8), (100_000_000, False, 9), (10**9, False, 10),
     (0, True, 17), (10**9, True, 19)],
)  # fmt: skip
def test_usage_column_width_grows_with_the_largest_seconds(largest, per, width):
    assert sf.usage_width(largest, per) == width


def test_cells_are_right_aligned_and_cut_with_a_plus():
    assert sf.cell("alice", 9) == "    alice "
    assert sf.cell("alice", -9) == "alice     "
    assert sf.cell("verylongname", 9) == "verylong+ "
    assert sf.cell(None, 4) == "     "


def test_headers_are_cut_without_a_plus_and_parsable_has_no_dashes():
    fields, unknown = sf.parse_fields(
        ["Cl", "al", "planned", "res", "bogus"], sf.CLUSTER_FIELDS, False
    )
    assert [f.kind for f in fields] == ["cluster", "alloc", "pdown", "planned"]
    assert unknown == ["bogus"]
    for f in fields[1:]:
        f.width = 8
    assert sf.lines(fields, [], "", True) == [
        "  Cluster Allocate PLND Dow  Planned ",
        "--------- -------- -------- -------- ",
    ]
    assert sf.lines(fields, [["c", "1", "2", None]], "P", True) == [
        "Cluster|Allocated|PLND Down|Planned",
        "c|1|2|",
    ]


def _local(*parts: int) -> float:
    return time.mktime((*parts, 0, 0, -1)[:9])


NOW = _local(2026, 12, 6, 9, 12, 40)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        # defaults: yesterday 00:00 to today 00:00
        (None, None, ((2026, 12, 5, 0, 0, 0), (2026, 12, 6, 0, 0, 0))),
        # 10:29:30 rounds up to 11:00; 10:29:29 down to 10:00
        ("2026-12-01T10:29:30", "2026-12-02T10:29:29",
         ((2026, 12, 1, 11, 0, 0), (2026, 12, 2, 10, 0, 0))),
        # an end after now is now (09:12:40), rounded to 09:00; less than an hour: + 1 h
        ("2026-12-06T08:40", "2026-12-07", ((2026, 12, 6, 9, 0, 0), (2026, 12, 6, 10, 0, 0))),
        ("now-2hours", None, ((2026, 12, 6, 7, 0, 0), (2026, 12, 6, 8, 0, 0))),
    ],
)  # fmt: skip
def test_report_period_follows_sreports_rounding(start, end, expected):
    assert report_period(start, end, NOW) == (_local(*expected[0]), _local(*expected[1]))


def test_report_period_refuses_words_that_are_no_time():
    with pytest.raises(ValueError, match="Invalid time specification"):
        report_period("someday", None, NOW)
