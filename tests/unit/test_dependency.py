"""The --dependency parser and its display forms (slurmlite.dependency)."""

from __future__ import annotations

import pytest

from slurmlite.dependency import Dep, DependencyError, format_deps, parse, show, stored
from slurmlite.timefmt import parse_datetime


def test_each_type_and_one_element_per_id():
    d = parse("after:1+5,afterany:2:3,afterok:4,afternotok:5,aftercorr:6,singleton")
    assert d.elements == (
        Dep("after", 1, 5),
        Dep("afterany", 2),
        Dep("afterany", 3),
        Dep("afterok", 4),
        Dep("afternotok", 5),
        Dep("aftercorr", 6),
        Dep("singleton"),
    )
    assert not d.any_of


def test_a_bare_id_is_afterany_and_question_mark_is_any_of():
    d = parse("7?afterok:8")
    assert d.any_of and d.elements == (Dep("afterany", 7), Dep("afterok", 8))
    assert format_deps(d) == "afterany:7?afterok:8"


@pytest.mark.parametrize(
    "text",
    ["", "afterwards:1", "afterok:", "afterok:x", "afterok:1,afterany:2?afterok:3", "afterok:1+5",
     "afterok:0", "singleton:1"],
)  # fmt: skip
def test_bad_lists_are_refused(text):
    with pytest.raises(DependencyError):
        parse(text)


def test_display_forms():
    d = parse("afterok:50")
    assert show(d, failed=False) == "afterok:50(unfulfilled)"
    assert show(d, failed=True) == "afterok:50(failed)"
    assert show(None, failed=False) == "(null)"
    assert stored(None) is None and stored("afterok:50") == d


NOW = 1_800_000_000.0  # a fixed instant; begin times count from it


@pytest.mark.parametrize(
    "text, delta",
    [("now+60", 60), ("now+1hour", 3600), ("now+2days", 172800), ("now+1minutes", 60)],
)
def test_relative_begin_times(text, delta):
    assert parse_datetime(text, NOW, past=False) == NOW + delta


def test_named_begin_times_are_the_next_occurrence():
    for word in ("midnight", "noon", "teatime", "fika", "elevenses", "today", "tomorrow"):
        t = parse_datetime(word, NOW, past=False)
        assert NOW - 86400 <= t <= NOW + 2 * 86400, word
    assert parse_datetime("tomorrow", NOW, past=False) > parse_datetime("today", NOW, past=False)


def test_bad_begin_time_says_where():
    with pytest.raises(ValueError, match=r"Invalid time specification \(pos=\d+\): soon"):
        parse_datetime("soon", NOW, past=False)
