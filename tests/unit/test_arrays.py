"""``--array`` parsing and the pending remainder an array row keeps (slurmlite.arrays)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmlite import arrays
from slurmlite.arrays import ArraySpecError, parse_spec


@pytest.mark.parametrize(
    ("text", "pending", "throttle", "facts"),
    [
        ("0-2", "0-2", None, (3, 0, 2, 1)),
        ("0-15:4", "0-12:4", None, (4, 0, 12, 4)),
        ("1,3,5-7%2", "1,3,5-7", 2, (5, 1, 7, 1)),
        ("0-99%10", "0-99", 10, (100, 0, 99, 1)),
        ("7,1,3", "1,3,7", None, (3, 1, 7, 1)),
        ("0-3,2-5", "0-5", None, (6, 0, 5, 1)),
        ("5", "5", None, (1, 5, 5, 1)),
        ("1-7:2", "1-7:2", None, (4, 1, 7, 2)),
    ],
)
def test_specs_slurm_accepts(text, pending, throttle, facts):
    spec = parse_spec(text, max_array_size=1001)
    assert (spec.pending, spec.throttle) == (pending, throttle)
    assert (spec.count, spec.min, spec.max, spec.step) == facts
    assert spec.info == ",".join(map(str, facts))


@pytest.mark.parametrize("text", ["abc", "", "3-1", "1-5:0", "0-5000", "1001", "1,,2", "0-9%x"])
def test_specs_slurm_refuses(text):
    # golden 40_sbatch_bad_array (abc) and 40_sbatch_array_too_big (0-5000, MaxArraySize 1001)
    with pytest.raises(ArraySpecError):
        parse_spec(text, max_array_size=1001)


def test_a_bigger_max_array_size_admits_a_10000_task_array():
    spec = parse_spec("0-9999%8", max_array_size=10001)
    assert (spec.count, spec.pending, arrays.with_throttle(spec.pending, spec.throttle)) == (
        10000,
        "0-9999",
        "0-9999%8",
    )


def test_splitting_tasks_off_the_remainder():
    rest = "0-9999"
    for expected in range(5):
        assert arrays.first(rest) == expected
        rest = arrays.remove(rest, expected)
    assert rest == "5-9999" and arrays.count(rest) == 9995
    rest = arrays.remove(rest, 9999)
    rest = arrays.remove(rest, 100)
    assert rest == "5-99,101-9998"
    assert not arrays.contains(rest, 100) and arrays.contains(rest, 101)
    assert arrays.remove("7", 7) == "" and arrays.first("") is None


def test_removing_from_a_stepped_range_keeps_the_step():
    assert arrays.remove("0-12:4", 4) == "0,8-12:4"
    assert list(arrays.indices("0,8-12:4")) == [0, 8, 12]
    assert arrays.remove_many("0-9", {3, 4, 42}) == ("0-2,5-9", [3, 4])


@given(st.sets(st.integers(0, 300), min_size=1, max_size=60), st.data())
def test_the_remainder_always_holds_exactly_the_indices_not_removed(start, data):
    spec = parse_spec(",".join(map(str, sorted(start))), max_array_size=1001)
    assert set(arrays.indices(spec.pending)) == start
    gone = data.draw(st.sets(st.sampled_from(sorted(start))))
    rest = spec.pending
    for i in gone:
        rest = arrays.remove(rest, i)
    assert set(arrays.indices(rest)) == start - gone
    assert arrays.count(rest) == len(start - gone)
