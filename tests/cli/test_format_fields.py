"""The ``field%width`` grammar and printing sacct, sshare and sacctmgr share
(``cli.format_fields``): one reading of a name and a width, one way to cut and
pad, so the three accounting commands print alike."""

from __future__ import annotations

from cli import format_fields as ff

NAMES = ("Account", "AdminLevel", "Partition")


def test_a_name_is_the_first_field_it_is_a_prefix_of():
    assert ff.split_width("acc%-12") == ("acc", "-12")
    assert ff.split_width("acc") == ("acc", None)
    assert ff.find_field("a", NAMES) == 0  # Account comes first
    assert ff.find_field("ADM", NAMES) == 1
    assert ff.find_field("bogus", NAMES) is None


def test_a_minimum_length_keeps_short_prefixes_out():
    # sacctmgr: Partition needs 4 letters, so "Par" names nothing
    assert ff.find_field("Par", NAMES, (3, 2, 4)) is None
    assert ff.find_field("Part", NAMES, (3, 2, 4)) == 2


def test_atoi_reads_the_leading_integer():
    assert (ff.atoi("12x"), ff.atoi(" -5"), ff.atoi("+7"), ff.atoi("x"), ff.atoi("")) == (
        12,
        -5,
        7,
        0,
        0,
    )


def test_cut_with_plus_and_justify_by_the_sign_of_the_width():
    assert ff.cut_plus("CANCELLED by 1001", 10) == "CANCELLED+"
    assert ff.cut_plus("short", -10) == "short"
    assert ff.cut_plus("x", 0) == ""  # no room even for the plus
    assert ff.justify("65", 5) == "   65 "
    assert ff.justify("65", -5) == "65    "


def test_header_and_parsable_lines():
    cols = [ff.Column("JobID", -6, "s"), ff.Column("JobName", 3, "s")]
    assert ff.header_lines(cols) == ["JobID  Job ", "------ --- "]
    assert ff.header_lines(cols, "p") == ["JobID|JobName|"]
    assert ff.header_lines(cols, "P", sep=";") == ["JobID;JobName"]
    assert ff.join(["a", ""], "p") == "a||" and ff.join(["a", ""], "P") == "a|"
