"""sinfo's pure table builder against real Slurm 22.05 output (golden/50_sinfo_*).

The golden cluster: nodes n1, n2 (2 CPUs, 4000 MB, 2 GPUs), partitions
``debug`` (default) and ``long``, both holding both nodes, no time limit.
"""

from __future__ import annotations

import dataclasses

import pytest

from cli import sinfo
from cli import sinfo_format as sf
from cli.format_codes import Column
from slurmlite.protocol import NodeInfo, PartitionInfo
from tests.golden_path import golden_path


def golden_stdout(name: str) -> list[str]:
    """The stdout lines of a golden file (between the command and ``[exit N]``)."""
    path = golden_path(name)
    lines = path.read_text().splitlines()[1:]
    end = next(i for i, line in enumerate(lines) if line.startswith(("[stderr]", "[exit")))
    return lines[:end]


def a_node(name: str, state: str = "IDLE", flags: tuple[str, ...] = (), **kw: object) -> NodeInfo:
    base = dict(name=name, addr="127.0.0.1", hostname=name, port=6818, cpus=2,
                real_memory=4000, gres="gpu:2", gpus=2, state=state, flags=list(flags))  # fmt: skip
    base.update(kw)
    return NodeInfo(**base)  # type: ignore[arg-type]


def golden_partitions() -> list[PartitionInfo]:
    return [
        PartitionInfo("debug", ["n1", "n2"], True, None, None, "UP"),
        PartitionInfo("long", ["n1", "n2"], False, None, None, "UP"),
    ]


def busy_nodes() -> list[NodeInfo]:
    # 50_* files: both nodes fully allocated (2 of 2 CPUs)
    return [a_node(n, "ALLOCATED", alloc_cpus=2, alloc_mem=4000) for n in ("n1", "n2")]


def table(
    fmt: str,
    nodes: list[NodeInfo],
    parts: list[PartitionInfo] | None = None,
    *,
    long_form: bool = True,
    query: sf.Query | None = None,
    node_filter: sinfo.NodeFilter | None = None,
    sort: str | None = None,
    sized: tuple[bool, bool] = (False, False),
    convert: bool = True,
    header: bool = True,
) -> list[str]:
    parts = golden_partitions() if parts is None else parts
    fields, errors = (sf.parse_long_format if long_form else sf.parse_format)(fmt)
    assert errors == []
    query = query or sf.Query()
    kept = [n for n in nodes if sinfo.node_selected(n, node_filter or sinfo.NodeFilter())]
    groups = sinfo.build_groups(parts, kept, fields, query)
    sinfo.sort_groups(groups, sort or ("N" if query.node_mode else "#P,-t"))
    ctx = sf.Context(
        convert=convert,
        part_width=sf.part_field_size(groups) if sized[1] else 0,
        node_width=sf.node_field_size(groups) if sized[0] else 0,
    )
    return sf.render(groups, fields, ctx, header=header)


# ------------------------------------------------------------- golden texts


def test_default_listing_matches_golden() -> None:
    # one line per partition: both nodes allocated, so one state each
    out = table(sf.DEFAULT_FORMAT, busy_nodes(), sized=(False, True))
    assert out == golden_stdout("50_sinfo_default.txt")


def test_summarize_counts_allocated_idle_other_total() -> None:
    # 2 allocated, 0 idle, 0 other, 2 total per partition
    out = table(sf.SUMMARIZE_FORMAT, busy_nodes(), sized=(False, True))
    assert out == golden_stdout("50_sinfo_s.txt")


def test_o_P_marks_default_partition_with_star() -> None:
    assert table("%P", busy_nodes(), long_form=False) == golden_stdout("50_sinfo_o_P.txt")


def test_P_m_noconvert_keeps_literal_comma() -> None:
    out = table("%P,%m", busy_nodes(), long_form=False, convert=False)
    assert out == golden_stdout("50_sinfo_P_m_noconvert.txt")


def test_node_mode_lists_each_node_once_per_partition() -> None:
    out = table("%N %c %m %G %T %C", busy_nodes(), long_form=False, query=sf.Query(node_mode=True))
    assert out == golden_stdout("50_sinfo_Node_gres.txt")


@pytest.mark.parametrize(
    ("golden", "state", "alloc"),
    [("50_sinfo_N_l.txt", "ALLOCATED", 2), ("60_sinfo_N_l_idle.txt", "IDLE", 0)],
)
def test_node_long_listing_matches_golden(golden: str, state: str, alloc: int) -> None:
    nodes = [a_node(n, state, alloc_cpus=alloc) for n in ("n1", "n2")]
    out = table(sf.NODE_LONG_FORMAT, nodes, query=sf.Query(node_mode=True), sized=(True, True))
    assert out == golden_stdout(golden)[1:]  # line 0 is the date


# ---------------------------------------------------------- grouping rules


def test_states_split_lines_and_sort_descending_by_state_number() -> None:
    # n1 idle (2), n2 mixed (5), n3 down+not responding (1|0x800 = 2049): the
    # default sort "#P,-t" puts higher numbers first within the partition
    nodes = [
        a_node("n1"),
        a_node("n2", "MIXED", alloc_cpus=1),
        a_node("n3", "DOWN", ("NOT_RESPONDING",)),
    ]
    part = [PartitionInfo("gpu", ["n1", "n2", "n3"], True, 2880, None, "UP")]
    out = table(sf.DEFAULT_FORMAT, nodes, part, sized=(False, True))
    assert out == [
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
        "gpu*         up 2-00:00:00      1  down* n3",
        "gpu*         up 2-00:00:00      1    mix n2",
        "gpu*         up 2-00:00:00      1   idle n1",
    ]


def test_drained_and_draining_are_distinct_lines() -> None:
    nodes = [
        a_node("n1", "IDLE", ("DRAIN",)),
        a_node("n2", "ALLOCATED", ("DRAIN",), alloc_cpus=2),
        a_node("n3", "IDLE", ("DRAIN",)),
    ]
    out = table("%t %N", nodes, [PartitionInfo("p", ["n1", "n2", "n3"], False, None, None, "UP")],
                long_form=False, header=False)  # fmt: skip
    # state numbers: draining alloc 0x203 beats drained idle 0x202
    assert out == ["drng n2", "drain n[1,3]"]


def test_partly_used_node_counts_as_mixed_and_cpus_add_up() -> None:
    # n1: 1 of 2 CPUs used -> MIXED even if the controller says ALLOCATED;
    # n2 drained idle: its 2 CPUs are "other". A/I/O/T = 1/1/2/4
    nodes = [a_node("n1", "ALLOCATED", alloc_cpus=1), a_node("n2", "IDLE", ("DRAIN",))]
    out = table("%C %F", nodes, long_form=False, header=False, query=sf.Query(partitions=["debug"]))
    assert out == ["1/1/2/4 1/0/1/2"]


def test_without_partition_column_partitions_merge_and_nodes_count_once() -> None:
    # "%C" alone: debug and long both hold n1,n2 but each node is counted once
    assert table("%C", busy_nodes(), long_form=False) == ["CPUS(A/I/O/T)", "4/0/0/4"]


def test_sizes_show_ranges_unless_exact() -> None:
    nodes = [a_node("n1"), a_node("n2", cpus=8, real_memory=8000)]
    part = [PartitionInfo("p", ["n1", "n2"], False, None, None, "UP")]
    assert table("%c %m %N", nodes, part, long_form=False, header=False) == ["2+ 4000+ n[1-2]"]
    exact = table(
        "%c %m %N", nodes, part, long_form=False, header=False, query=sf.Query(exact=True)
    )
    assert exact == ["2 4000 n1", "8 8000 n2"]


def test_empty_partition_still_has_a_line() -> None:
    parts = golden_partitions() + [PartitionInfo("empty", [], False, 30, None, "DOWN")]
    out = table(sf.DEFAULT_FORMAT, busy_nodes(), parts, sized=(False, True))
    assert out[-1] == "empty      down      30:00      0    n/a "


def test_state_filter_and_node_filter() -> None:
    nodes = [a_node("n1"), a_node("n2", "MIXED", alloc_cpus=1), a_node("n3", "DOWN")]
    part = [PartitionInfo("p", ["n1", "n2", "n3"], False, None, None, "UP")]
    wanted, both = sinfo.parse_states("alloc,down")
    # "alloc" matches any node with allocated CPUs, so the mixed node too
    f = sinfo.NodeFilter(states=wanted, states_and=both)
    assert table("%N", nodes, part, long_form=False, header=False, node_filter=f) == ["n[2-3]"]
    f = sinfo.NodeFilter(nodes={"n1", "n3"})
    assert sorted(table("%t %N", nodes, part, long_form=False, header=False, node_filter=f)) == [
        "down n3",
        "idle n1",
    ]


def test_parse_states_prefixes_and_errors() -> None:
    assert sinfo.parse_states("i") == ([2], False)  # prefix of IDLE
    assert sinfo.parse_states("drain&down")[1] is True
    with pytest.raises(ValueError, match='Bad state string: "bogus"'):
        sinfo.parse_states("bogus")


# ------------------------------------------------------------- cell rules


def test_format_parsing_keeps_prefix_suffix_and_reports_bad_letters() -> None:
    fields, errors = sf.parse_format("x%5P|%.3D%Q")
    assert fields[0] == Column("", suffix="x")
    assert fields[1] == Column("partition", 5, False, "|")
    assert fields[2] == Column("nodes", 3, True, "")
    assert fields[3] == Column("invalid", 0, False, "%Q")
    assert errors == ["Invalid node format specification: Q"]


def test_narrow_partition_column_puts_star_in_last_place() -> None:
    # "debug*" does not fit in 4: the 4th char becomes the star
    assert table("%4P", busy_nodes(), long_form=False)[1:] == ["deb*", "long"]


def test_long_format_default_width_20_without_separator() -> None:
    nodes = busy_nodes()
    nodes[0].alloc_gpus = [0]
    out = table(
        "NodeList,Gres,GresUsed", nodes, query=sf.Query(node_mode=True, partitions=["debug"])
    )
    assert out == [
        "NODELIST            GRES                GRES_USED           ",
        "n1                  gpu:2               gpu:(null):1(IDX:0) ",
        "n2                  gpu:2               gpu:(null):0(IDX:N/A",  # cut at 20
    ]


def test_unknown_long_name_is_reported() -> None:
    fields, errors = sf.parse_long_format("partition,bogus:5")
    assert [f.key for f in fields] == ["partition", "invalid"]
    assert errors == ["Invalid job format specification: bogus"]


def test_reason_fields_for_drained_node() -> None:
    node = a_node("n2", "IDLE", ("DRAIN",), reason="disk full", reason_user="root",
                  reason_time=1796005759.0)  # fmt: skip
    part = [PartitionInfo("p", ["n2"], False, None, None, "UP")]
    wanted, _ = sinfo.parse_states("down,fail,drain")
    fields, _ = sf.parse_long_format(sf.REASONS_FORMAT)
    kept = [
        n for n in (node, a_node("n1")) if sinfo.node_selected(n, sinfo.NodeFilter(states=wanted))
    ]
    groups = sinfo.build_groups(part, kept, fields, sf.Query(list_reasons=True))
    out = sf.render(groups, fields, sf.Context())
    assert out[0] == "REASON               USER      TIMESTAMP           NODELIST"
    assert out[1].startswith("disk full            root      ")
    assert out[1].endswith(" n2") and len(out) == 2


def test_convert_num_follows_slurm_exact_rule() -> None:
    assert sf.convert_num(2) == "2"
    assert sf.convert_num(2048) == "2K"
    assert sf.convert_num(2560) == "2.50K"  # multiple of 512 is still "exact"
    assert sf.convert_num(2048, convert=False) == "2048"


def test_node_state_number_folds_completing_base() -> None:
    node = dataclasses.replace(a_node("n1"), state="COMPLETING")
    assert sf.node_state(node) == 2 | 0x400
    assert sf.state_text(sf.node_state(node), "compact") == "comp"
