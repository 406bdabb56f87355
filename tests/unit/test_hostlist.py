"""Hostlist expansion and compression: every vector of spec §9.3 plus golden files."""

from __future__ import annotations

import pytest

from slurmlite.hostlist import HostlistError, compress, compress_sorted, expand, sort_hosts
from tests.golden_path import GOLDEN, needs_golden

# (input, expansion, as-is ranged, sorted set) -- spec §9.3 rows 1-26
VECTORS = [
    ("n[1-4]", ["n1", "n2", "n3", "n4"], "n[1-4]", "n[1-4]"),
    ("n[01-04]", ["n01", "n02", "n03", "n04"], "n[01-04]", "n[01-04]"),
    ("n[1-3,7]", ["n1", "n2", "n3", "n7"], "n[1-3,7]", "n[1-3,7]"),
    ("n[8-10]", ["n8", "n9", "n10"], "n[8-10]", "n[8-10]"),
    ("n[08-10]", ["n08", "n09", "n10"], "n[08-10]", "n[08-10]"),
    # width = length of the lower bound as written: "001" -> 3 digits
    ("n[001-5]", ["n001", "n002", "n003", "n004", "n005"], "n[001-005]", "n[001-005]"),
    ("n[1-05]", ["n1", "n2", "n3", "n4", "n5"], "n[1-5]", "n[1-5]"),
    (
        "rack[1-2]-n[1-3]",
        ["rack1-n1", "rack1-n2", "rack1-n3", "rack2-n1", "rack2-n2", "rack2-n3"],
        "rack1-n[1-3],rack2-n[1-3]",
        "rack1-n[1-3],rack2-n[1-3]",
    ),
    (
        "n[1-3][1-2]",
        ["n11", "n12", "n21", "n22", "n31", "n32"],
        "n1[1-2],n2[1-2],n3[1-2]",
        "n1[1-2],n2[1-2],n3[1-2]",
    ),
    ("n[1-3]-ib", ["n1-ib", "n2-ib", "n3-ib"], "n1-ib,n2-ib,n3-ib", "n1-ib,n2-ib,n3-ib"),
    ("n3,n1,n2", ["n3", "n1", "n2"], "n[3,1-2]", "n[1-3]"),
    ("n[1-3],n2", ["n1", "n2", "n3", "n2"], "n[1-3,2]", "n[1-3]"),
    ("n9,n10,n11", ["n9", "n10", "n11"], "n[9-11]", "n[9-11]"),
    ("n99,n100", ["n99", "n100"], "n[99-100]", "n[99-100]"),
    ("n1,n01", ["n1", "n01"], "n[1,01]", "n[1,01]"),
    ("login,n1,n2", ["login", "n1", "n2"], "login,n[1-2]", "login,n[1-2]"),
    ("a1,b1,a2", ["a1", "b1", "a2"], "a1,b1,a2", "a[1-2],b1"),
    ("nid001,nid002,nid003", ["nid001", "nid002", "nid003"], "nid[001-003]", "nid[001-003]"),
    ("nid00[1-3]", ["nid001", "nid002", "nid003"], "nid00[1-3]", "nid00[1-3]"),
    ("n1 n2,n3", ["n1", "n2", "n3"], "n[1-3]", "n[1-3]"),
    (
        "n[10-12],n[1-3]",
        ["n10", "n11", "n12", "n1", "n2", "n3"],
        "n[10-12,1-3]",
        "n[1-3,10-12]",
    ),
    ("node10,node9,node1", ["node10", "node9", "node1"], "node[10,9,1]", "node[1,9-10]"),
    ("gpu2,cpu1,gpu1", ["gpu2", "cpu1", "gpu1"], "gpu2,cpu1,gpu1", "cpu1,gpu[1-2]"),
    ("10.0.0.[1-3]", ["10.0.0.1", "10.0.0.2", "10.0.0.3"], "10.0.0.[1-3]", "10.0.0.[1-3]"),
    ("n[0]", ["n0"], "n0", "n0"),
    ("node", ["node"], "node", "node"),
    ("", [], "", ""),
]


@pytest.mark.parametrize(("expr", "hosts", "as_is", "sorted_set"), VECTORS)
def test_spec_vectors(expr: str, hosts: list[str], as_is: str, sorted_set: str) -> None:
    assert expand(expr) == hosts
    assert compress(expr) == as_is
    assert compress_sorted(expr) == sorted_set


@pytest.mark.parametrize(("expr", "hosts", "as_is", "sorted_set"), VECTORS)
def test_compressed_forms_expand_back(
    expr: str, hosts: list[str], as_is: str, sorted_set: str
) -> None:
    # as-is keeps order and duplicates; the sorted set is the sorted unique list
    assert expand(as_is) == hosts
    assert expand(sorted_set) == sort_hosts(dict.fromkeys(hosts))


@pytest.mark.parametrize(
    ("expr", "item"),
    [
        ("n[3-1]", "3-1"),  # reversed range
        ("n[1-3", "n[1-3"),  # missing ]
        ("n[]", ""),  # empty item
        ("n[a-c]", "a-c"),  # not digits
        ("n[1,,3]", ""),  # empty item between commas
        ("n[1-10:2]", "1-10:2"),  # step syntax is not hostlist syntax
        ("n[1-2-3]", "1-2-3"),  # a dash after a dash
    ],
)
def test_row27_errors(expr: str, item: str) -> None:
    with pytest.raises(HostlistError) as err:
        expand(expr)
    assert str(err.value) == f"Invalid hostlist: {expr}"  # what scontrol prints
    assert err.value.detail == f"Invalid range: '{item}'"
    with pytest.raises(HostlistError):
        compress_sorted(expr)


def test_hostlist_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        expand("n[1-")


def test_more_bracket_errors() -> None:
    for bad in ("n[1[2]]", "n1]", "n[1-65537]"):  # nested, stray ], over 65536 hosts
        with pytest.raises(HostlistError):
            expand(bad)
    assert len(expand("n[1-65536]")) == 65536  # the limit itself is fine


# ---------------------------------------------------------------- golden files


def test_golden_show_hostlist_as_is() -> None:
    # 30_scontrol_show_hostlist.txt: scontrol show hostlist 'n1,n2,n3,x5,n10'
    assert compress("n1,n2,n3,x5,n10") == "n[1-3],x5,n10"
    assert compress(["n1", "n2", "n3", "x5", "n10"]) == "n[1-3],x5,n10"


def test_golden_show_hostlistsorted() -> None:
    # 30_scontrol_show_hostlistsorted.txt: 'n3,n1,n2,x5,n10' -> n[1-3,10],x5
    assert compress_sorted("n3,n1,n2,x5,n10") == "n[1-3,10],x5"


def test_golden_show_hostnames() -> None:
    # 30_scontrol_show_hostnames.txt
    assert expand("n[1-3],x5") == ["n1", "n2", "n3", "x5"]


def test_golden_show_hostnames_padded_and_cartesian() -> None:
    # 30_scontrol_show_hostnames_padded.txt: leftmost group varies slowest
    assert expand("gpu[001-003,010],a[1-2]b[3-4]") == [
        "gpu001", "gpu002", "gpu003", "gpu010", "a1b3", "a1b4", "a2b3", "a2b4",
    ]  # fmt: skip


@needs_golden
@pytest.mark.parametrize(
    ("name", "func"),
    [
        ("30_scontrol_show_hostlist.txt", compress),
        ("30_scontrol_show_hostlistsorted.txt", compress_sorted),
        ("30_scontrol_show_hostnames.txt", lambda e: "\n".join(expand(e))),
        ("30_scontrol_show_hostnames_padded.txt", lambda e: "\n".join(expand(e))),
    ],
)
def test_golden_files_verbatim(name: str, func) -> None:
    lines = (GOLDEN / name).read_text().splitlines()
    expr = lines[0].split("'")[1]  # "$ scontrol show hostlist 'EXPR'"
    stdout = "\n".join(lines[1 : lines.index("[exit 0]")])
    assert func(expr) == stdout


# ---------------------------------------------------------------- behaviours


def test_expand_keeps_order_and_duplicates() -> None:
    assert expand("n2,n1,n2") == ["n2", "n1", "n2"]


def test_separators_space_tab_newline_comma() -> None:
    assert expand("n1\tn2\nn3 , n4") == ["n1", "n2", "n3", "n4"]
    assert expand("  ,, ") == []


def test_suffix_after_brackets_and_inner_comma() -> None:
    assert expand("gpu[1,3]-ib,cpu1") == ["gpu1-ib", "gpu3-ib", "cpu1"]


def test_compress_accepts_names_or_expressions() -> None:
    assert compress(["n1", "n2"]) == "n[1-2]"
    assert compress(["n[1-2]", "n3"]) == "n[1-3]"
    assert compress(iter(["n5"])) == "n5"


def test_compress_sorted_removes_duplicates_across_items() -> None:
    # n[1-3] + n2 + n3 = 5 names, 3 distinct
    assert compress_sorted(["n[1-3]", "n2", "n3"]) == "n[1-3]"


def test_zero_padding_compatibility() -> None:
    # 9 and 10 need no padding: one range; 08 is padded to 2, 9 is not: two items
    assert compress("n9,n10") == "n[9-10]"
    assert compress("n08,n9") == "n[08,9]"
    assert compress("n099,n100") == "n[099-100]"


def test_sort_hosts_is_natural_and_keeps_duplicates() -> None:
    names = ["gpu10", "cpu1", "gpu9", "gpu9", "rack10-n1", "rack2-n1", "login"]
    assert sort_hosts(names) == [
        "cpu1", "gpu9", "gpu9", "gpu10", "login", "rack2-n1", "rack10-n1",
    ]  # fmt: skip


def test_sorted_set_natural_prefix_order() -> None:
    # rack2 sorts before rack10 (numeric), not after it (string order)
    assert compress_sorted("rack10-n1,rack2-n1") == "rack2-n1,rack10-n1"
