"""Value parsers: memory, node counts, counts, time, GPUs, --export."""

from __future__ import annotations

import pytest

from slurmlite.resources import (
    GRES_ERROR,
    GpuRequest,
    export_environment,
    gpu_fields,
    gpus_tres,
    gres_tres,
    parse_gpus,
    parse_gres,
    parse_mem,
    parse_nice,
    parse_node_count,
    parse_open_mode,
    parse_positive_int,
    parse_time_limit,
    split_export,
)


@pytest.mark.parametrize(
    "text, mib",
    [
        ("500", 500),  # no unit = MiB
        ("500M", 500),
        ("500MB", 500),
        ("2G", 2048),  # 2 * 1024
        ("2gb", 2048),
        ("1T", 1048576),  # 1024 * 1024
        ("1536K", 2),  # 1.5 MiB rounds up to 2
        ("1K", 1),
        ("0", 0),  # --mem=0: the whole node
        ("+5", 5),
    ],
)
def test_memory_sizes(text, mib):
    assert parse_mem(text) == mib


@pytest.mark.parametrize("text", ["12X", "-1", "G", "", "1.5G", "5 ", "2GBB", "2BG"])
def test_bad_memory_sizes(text):
    with pytest.raises(ValueError):
        parse_mem(text)


@pytest.mark.parametrize(
    "text, counts",
    [
        ("2", (2, 2)),
        ("2-4", (2, 4)),
        ("-4", (1, 4)),  # an empty minimum is 1
        ("1k", (1024, 1024)),
        ("1-2m", (1, 2 * 1024 * 1024)),
        ("3-3", (3, 3)),
    ],
)
def test_node_counts(text, counts):
    assert parse_node_count(text) == counts


@pytest.mark.parametrize(
    "text, message",
    [
        ("abc", '"abc" is not a valid node count'),
        ("2-x", '"x" is not a valid node count'),
        ("1-15:4", '"15:4" is not a valid node count'),  # 22.05 has no step form
        ("4-2", "Maximum node count 2 is less than minimum node count 4"),
        ("0", '"0" is not a valid node count'),  # slurmlite: a job needs a node
    ],
)
def test_bad_node_counts(text, message):
    with pytest.raises(ValueError) as info:
        parse_node_count(text)
    assert str(info.value) == message


def test_positive_integers():
    assert parse_positive_int("4", "--ntasks") == 4
    for bad in ["0", "-2", "x", "4x", ""]:
        with pytest.raises(ValueError) as info:
            parse_positive_int(bad, "--ntasks")
        assert str(info.value) == f'Invalid numeric value "{bad}" for --ntasks.'


def test_nice_values():
    assert parse_nice("100") == 100
    assert parse_nice("-5") == -5
    assert parse_nice("5x") == 5  # only the leading integer counts
    with pytest.raises(ValueError) as info:
        parse_nice("2147483646")  # 2**31 - 2 is beyond +/- 2147483645
    assert str(info.value) == "Invalid --nice value, out of range (+/- 2147483645)"


@pytest.mark.parametrize(
    "text, minutes",
    [
        ("10", 10),
        ("10:30", 11),  # 630 s rounds up to 11 min
        ("0:30", 1),
        ("1-2:30", 1590),  # 24*60 + 2*60 + 30
        ("0", None),  # --time=0 is UNLIMITED
        ("UNLIMITED", None),
        ("-1", None),
    ],
)
def test_time_limits(text, minutes):
    assert parse_time_limit(text) == minutes


@pytest.mark.parametrize("text", ["abc", "1:2:3:4", ""])
def test_bad_time_limits(text):
    with pytest.raises(ValueError):
        parse_time_limit(text)


def test_open_mode():
    assert parse_open_mode("append") == "append"
    assert parse_open_mode("A") == "append"
    assert parse_open_mode("truncate") == "truncate"
    with pytest.raises(ValueError):
        parse_open_mode("overwrite")


@pytest.mark.parametrize(
    "text, request_, tres",
    [
        ("gpu", GpuRequest(1), "gres:gpu"),  # N defaults to 1; text kept as given
        ("gpu:2", GpuRequest(2), "gres:gpu:2"),
        ("gpu:a100:2", GpuRequest(2, "a100"), "gres:gpu:a100:2"),
        ("gpu:a100", GpuRequest(1, "a100"), "gres:gpu:a100"),
        ("gres:gpu:1", GpuRequest(1), "gres:gpu:1"),
    ],
)
def test_gres(text, request_, tres):
    assert parse_gres(text) == request_
    assert gres_tres(text) == tres


def test_gres_none_means_no_gres():
    assert parse_gres("none") is None
    assert parse_gres("NONE") is None


@pytest.mark.parametrize(
    "text", ["fpga:1", "gpu:0", "gpu:2:3", "gpu:a100:x", "gpu:1,shard:1", "gpu:", "mps:100"]
)
def test_bad_gres(text):
    with pytest.raises(ValueError) as info:
        parse_gres(text)
    assert str(info.value) == GRES_ERROR == "Invalid generic resource (gres) specification"


def test_gpus_counts():
    assert parse_gpus("2") == GpuRequest(2)
    assert parse_gpus("a100:2") == GpuRequest(2, "a100")
    assert gpus_tres("a100:2") == "gres:gpu:a100:2"
    for bad in ["0", "x", "a100", ":2", "a:b:2"]:
        with pytest.raises(ValueError):
            parse_gpus(bad)


def test_gpu_fields_combine_per_node_and_per_job():
    assert gpu_fields("gpu:2", None, "a100:4") == {
        "gpus_per_node": 2,
        "gpu_type": "a100",  # the per-job request names the model
        "tres_per_node": "gres:gpu:2",
        "gpus_total": 4,
        "tres_per_job": "gres:gpu:a100:4",
    }
    assert gpu_fields(None, "2", None)["tres_per_node"] == "gres:gpu:2"
    assert gpu_fields("none", "1", None)["gpus_per_node"] == 1  # --gres=none adds nothing
    assert gpu_fields(None, None, None) == {}
    with pytest.raises(ValueError):
        gpu_fields("gpu:1", "1", None)  # two per-node GPU requests


# -------------------------------------------------------------------- export

ENV = {"A": "1", "B": "2", "SLURM_CONF": "/etc/slurm.conf", "PATH": "/bin"}


def test_export_all_is_everything():
    assert export_environment("ALL", ENV) == (ENV, [])
    assert export_environment("all", ENV) == (ENV, [])


def test_export_none_keeps_only_slurm_variables():
    assert export_environment("NONE", ENV) == ({"SLURM_CONF": "/etc/slurm.conf"}, [])
    assert export_environment("NIL", ENV) == ({"SLURM_CONF": "/etc/slurm.conf"}, [])


def test_export_list():
    # B copied, C set, A and PATH not exported, SLURM_* always
    env, _ = export_environment("B,C=3", ENV)
    assert env == {"B": "2", "C": "3", "SLURM_CONF": "/etc/slurm.conf"}
    # a name the caller does not have is simply absent
    assert export_environment("MISSING", ENV)[0] == {"SLURM_CONF": "/etc/slurm.conf"}


def test_export_all_plus_values_later_items_win():
    env, _ = export_environment("ALL,A=9", ENV)
    assert env == {**ENV, "A": "9"}
    env, _ = export_environment("A=9,ALL", ENV)  # ALL after: the caller's value wins
    assert env["A"] == "1"


def test_export_quotes():
    assert split_export('A="x,y",B') == (['A="x,y"', "B"], [])
    assert split_export("'C=1,2',D") == (["C=1,2", "D"], [])  # fully quoted: quotes go
    items, warnings = split_export('A,"B')
    assert items == ["A", '"B'] and warnings == ['Improperly formed environment variable ("B)']
