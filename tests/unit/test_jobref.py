"""Job references as scancel, scontrol, squeue -j and sacct -j read them."""

from __future__ import annotations

import doctest

import pytest

from slurmlite import jobref
from slurmlite.jobref import JobRef, JobRefError, parse_ref, parse_refs, split_words


def test_doctests() -> None:
    assert doctest.testmod(jobref).failed == 0


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("123", JobRef(123)),
        ("123_4", JobRef(123, (4,))),
        ("123_[1-3,7]", JobRef(123, (1, 2, 3, 7))),
        ("123_[0-6:3]", JobRef(123, (0, 3, 6))),
        ("123.batch", JobRef(123, None, "batch")),
        ("123_4.0", JobRef(123, (4,), "0")),
    ],
)
def test_forms(text: str, ref: JobRef) -> None:
    assert parse_ref(text) == ref


@pytest.mark.parametrize(
    "text",
    ["abc", "12x", "", "_4", "12_", "12_x", "12_[]", "12_[3-1]", "0", "99999999999", "12_[1"],
)
def test_bad_text_is_refused(text: str) -> None:
    with pytest.raises(JobRefError):
        parse_ref(text)


def test_text_names_it_back() -> None:
    assert parse_ref("57_[1,3-5]").text == "57_[1,3-5]"
    assert parse_ref("57_[5]").text == "57_5"
    assert parse_ref("57_[2]").label(2) == "57_2"


def test_comma_lists_keep_brackets() -> None:
    assert split_words("7,8_[1,2],,9") == ["7", "8_[1,2]", "9"]
    assert [r.text for r in parse_refs("7,8_[1,2]")] == ["7", "8_[1-2]"]
