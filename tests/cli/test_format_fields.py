"""The ``field%width`` grammar and printing sacct, sshare and sacctmgr share
(``cli.format_fields``): one reading of a name and a width, one way to cut and
pad, so the three accounting commands print alike."""

from __future__ import annotations

from cli.format_fields import (
    Column,
    atoi,
    cut_plus,
    find_field,
    header_lines,
    join,
    justify,
    split_width,
)

NAMES = ("Account", "AdminLevel", "Partition")


def test_a_name_is_the_first_field_it_is_a_prefix_of():
    assert split_width("acc%-12") == ("acc", "-12")
    assert split_width("acc") == ("acc", None)
    assert find_field("a", NAMES) == 0  # Account comes first
    assert find_field("ADM", NAMES) == 1
    assert find_field("bogus", NAMES) is None


def test_a_minimum_length_keeps_short_prefixes_out():
    # sacctmgr: Partition needs 4 letters, so "Par" names nothing
    assert find_field("Par", NAMES, (3, 2, 4)) is None
    assert find_field("Part", NAMES, (3, 2, 4)) == 2


def test_atoi_reads_the_leading_integer():
    assert (atoi("12x"), atoi(" -5"), atoi("+7"), atoi("x"), atoi("")) == (12, -5, 7, 0, 0)


def test_cut_with_plus_and_justify_by_the_sign_of_the_width():
    assert cut_plus("CANCELLED by 1001", 10) == "CANCELLED+"
    assert cut_plus("short", -10) == "short"
    assert cut_plus("x", 0) == ""  # no room even for the plus
    assert justify("65", 5) == "   65 "
    assert justify("65", -5) == "65    "


def test_header_and_parsable_lines():
    cols = [Column("JobID", -6, "s"), Column("JobName", 3, "s")]
    assert header_lines(cols) == ["JobID  Job ", "------ --- "]
    assert header_lines(cols, "p") == ["JobID|JobName|"]
    assert header_lines(cols, "P", sep=";") == ["JobID;JobName"]
    assert join(["a", ""], "p") == "a||" and join(["a", ""], "P") == "a|"
