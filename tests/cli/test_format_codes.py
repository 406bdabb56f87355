"""The ``%``-code grammar squeue, sinfo and sprio share (``cli.format_codes``).

One parser reads ``-o`` and one reads an ``-O`` item, so the three commands
cannot drift apart on how a width, a ``.`` or the text after a letter is read.
"""

from __future__ import annotations

from cli.format_codes import (
    INVALID,
    LITERAL,
    Column,
    known_only,
    pad,
    parse_codes,
    parse_letters,
    parse_names,
    split_name,
)

LETTERS = {"i": "jobid", "t": "state"}


def test_leading_text_then_one_column_per_code_with_its_text():
    columns, bad = parse_codes("id=%.4i|%t!", LETTERS)
    assert columns == [
        Column(LITERAL, suffix="id="),
        Column("jobid", 4, True, "|"),
        Column("state", 0, False, "!"),
    ]
    assert bad == []
    assert [c.shown for c in columns] == [False, True, True]


def test_empty_pieces_vanish_and_unknown_letters_stay_literal():
    # "%%" is no escape: the empty piece between the two signs is skipped
    columns, bad = parse_codes("%i%%7=x", LETTERS)
    assert columns == [Column("jobid", 0, False, ""), Column(INVALID, 7, False, "%7=x")]
    assert bad == ["="]
    assert known_only(columns) == [Column("jobid")]
    assert parse_codes("no codes", LETTERS) == ([Column(LITERAL, suffix="no codes")], [])
    assert parse_codes("", LETTERS) == ([], [])


def test_a_name_item_without_width_is_20_wide_left_justified():
    assert split_name("state") == ("state", 20, False, "")
    assert split_name("name:.10 |") == ("name", 10, True, " |")
    assert split_name("jobid:") == ("jobid", 0, False, "")
    assert split_name("x:-3y") == ("x", -3, False, "y")


def test_blanks_before_a_width_start_the_text_unless_skipped():
    assert split_name("name: 5x") == ("name", 0, False, " 5x")  # squeue's reading
    assert split_name("name: 5x", skip_space=True) == ("name", 5, False, "x")  # sinfo's


def test_pad_cuts_left_values_and_right_ones_unless_told_not_to():
    assert pad("big-running", 8, right=False) == "big-runn"
    assert pad("0:09", 10, right=True) == "      0:09"
    assert pad("n[1-20]", 4, right=True) == "n[1-"
    assert pad("n[1-20]", 4, right=True, cut=False) == "n[1-20]"
    assert pad("anything", 0, right=False) == "anything"


def test_a_commands_o_and_O_readings():
    columns, errors = parse_letters("%i%Z", LETTERS, "node")
    assert errors == ["Invalid node format specification: Z"]
    # %all: every letter the command knows, the unknown ones without a word
    assert parse_letters("%ALL", LETTERS, "job", every="%i|%Z|%t") == (
        [Column("jobid", 0, False, "|"), Column("state")],
        [],
    )
    columns, errors = parse_names("name:.6|,,bogus:3x", {"name": "jobname"}.get)
    assert columns == [Column("jobname", 6, True, "|"), Column(INVALID, 3, False, "x")]
    assert errors == ["Invalid job format specification: bogus"]
