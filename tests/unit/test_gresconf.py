"""gres.conf and Gres= strings (slurmlite/gresconf.py): which GPU devices a
node has, and where the two files disagree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slurmlite.config import ConfigError, load_config, parse_config
from slurmlite.gresconf import (
    GRES_CONF_KEYS,
    auto_detect_for,
    autodetect_for_node,
    gpu_env_style_for,
    gres_for_node,
    parse_count,
    parse_gres_conf,
    parse_gres_spec,
)

ROOT = Path(__file__).resolve().parents[2]
SLURM_CONF = "GresTypes=gpu\nNodeName=g[1-2] Gres=gpu:a100:4\nNodeName=c1\n"


def with_gres(gres_text: str, slurm_text: str = SLURM_CONF):
    return parse_config(slurm_text, "/etc/slurm/slurm.conf", gres_text=gres_text)


# ------------------------------------------------------------ Gres= strings


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("gpu:2", (2, None, [])),
        ("gpu:a100:4", (4, "a100", [])),
        ("gpu", (1, None, [])),
        ("gpu:a100:2,gpu:a100:2", (4, "a100", [])),  # counts add up
        ("gpu:1,shard:8,mps:100", (1, None, ["shard", "mps"])),
        ("gpu:2K", (2048, None, [])),
        ("", (0, None, [])),
        ("(null)", (0, None, [])),
    ],
)
def test_gres_spec(spec, expected):
    assert parse_gres_spec(spec) == expected


@pytest.mark.parametrize("spec", ["gpu::2", "gpu:a:b:2", ":2", "gpu:2x"])
def test_malformed_gres_spec_is_rejected(spec):
    with pytest.raises(ValueError):
        parse_gres_spec(spec)


def test_count_suffixes_multiply_by_1024():
    assert [parse_count(t) for t in ("7", "2K", "1M", "1g")] == [7, 2048, 1024**2, 1024**3]
    with pytest.raises(ValueError):
        parse_count("lots")


# ---------------------------------------------------------------- gres.conf


def test_file_range_expands_and_count_defaults_to_number_of_files():
    cfg = with_gres("NodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n")
    (line,) = gres_for_node(cfg, "g1")
    assert line.files == [f"/dev/nvidia{i}" for i in range(4)]
    assert (line.name, line.type, line.count, line.nodes) == ("gpu", "a100", 4, ["g1", "g2"])
    assert line.where == "gres.conf:1"
    assert gres_for_node(cfg, "c1") == []  # not named on the line
    assert cfg.warnings == []


def test_a_line_without_nodename_applies_to_every_node():
    cfg = with_gres("Name=gpu File=/dev/nvidia[0-3]\n")
    assert [len(gres_for_node(cfg, n)) for n in ("g1", "g2", "c1")] == [1, 1, 1]


def test_count_without_files_and_explicit_count():
    cfg = with_gres("NodeName=g1 Name=gpu Count=4\nNodeName=g2 Name=gpu\n")
    assert gres_for_node(cfg, "g1")[0].count == 4
    assert gres_for_node(cfg, "g2")[0].count == 1  # no File, no Count: 1 ...
    # ... which is fewer than slurm.conf's Gres=gpu:a100:4 for g2:
    assert cfg.warnings == ["gres.conf: node 'g2' has 1 gpu devices but slurm.conf says Gres=gpu:4"]


def test_count_disagreeing_with_files_warns():
    cfg = with_gres("NodeName=g1 Name=gpu File=/dev/nvidia[0-1] Count=4\n")
    assert "gres.conf:1: Count=4 but File names 2 devices" in cfg.warnings


def test_optional_fields_are_kept():
    cfg = with_gres(
        "NodeName=g1 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-15 Links=-1,2 "
        'Flags="nvidia_gpu_env,env_uuid"\n'
    )
    line = cfg.gres[0]
    assert (line.cores, line.links, line.flags) == ("0-15", "-1,2", ["nvidia_gpu_env", "env_uuid"])


def test_keys_are_case_insensitive_and_comments_allowed():
    cfg = with_gres("# GPUs\nnodename=g1 NAME=gpu file=/dev/nvidia0  # one\n")
    assert cfg.gres[0].files == ["/dev/nvidia0"] and cfg.gres[0].where == "gres.conf:2"


# --------------------------------------------------------------- AutoDetect


def test_autodetect_global_per_node_and_default_off():
    assert autodetect_for_node(with_gres(""), "g1") == "off"  # nothing set
    cfg = with_gres(
        "AutoDetect=nvml\nNodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
        "NodeName=g2 AutoDetect=off\n"
    )
    assert autodetect_for_node(cfg, "g1") == "nvml"  # the global line
    assert autodetect_for_node(cfg, "g2") == "off"  # its own line wins
    assert cfg.gres_autodetect == "nvml"
    assert len(cfg.gres) == 1  # AutoDetect-only lines describe no devices


def test_autodetect_on_a_device_line_applies_to_its_nodes():
    cfg = with_gres("NodeName=g1 AutoDetect=NVIDIA Name=gpu File=/dev/nvidia[0-3]\n")
    assert autodetect_for_node(cfg, "g1") == "nvidia"
    assert autodetect_for_node(cfg, "g2") == "off"
    assert cfg.gres[0].autodetect == "nvidia"


def test_foreign_autodetect_warns_and_reads_as_off():
    cfg = with_gres("AutoDetect=rsmi\n")
    assert autodetect_for_node(cfg, "g1") == "off"
    assert cfg.warnings == ["gres.conf:1: AutoDetect=rsmi is not supported; treated as off"]


# ------------------------------------------------------- errors and warnings


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("AutoDetect=magic\n", "gres.conf:1: invalid value 'magic' for AutoDetect"),
        ("\nNodeName=g[1- Name=gpu\n", "gres.conf:2: invalid value 'g[1-' for NodeName"),
        (
            "Name=gpu File=/dev/nvidia[3-1]\n",
            "gres.conf:1: invalid value '/dev/nvidia[3-1]' for File",
        ),
        ("Name=gpu Count=four\n", "gres.conf:1: invalid value 'four' for Count"),
        ("NodeName=g1 Type=a100\n", "gres.conf:1: a gres.conf line needs Name= or AutoDetect="),
        ("Name gpu\n", "gres.conf:1: expected Key=Value, found 'Name'"),
    ],
)
def test_broken_gres_lines_name_file_and_line(text, message):
    with pytest.raises(ConfigError) as info:
        with_gres(text)
    assert str(info.value) == message


def test_unknown_keys_nodes_and_types_warn():
    cfg = with_gres(
        "NodeName=g9 Name=gpu File=/dev/nvidia0 Foo=1\nNodeName=g1 Name=mps Count=100\n"
    )
    assert cfg.warnings == [
        "gres.conf:1: unknown key 'Foo' ignored",
        "gres.conf:1: node 'g9' is not in slurm.conf",
        "gres.conf:2: GRES 'mps' is not in GresTypes",
    ]


def test_parse_gres_conf_alone():
    parsed = parse_gres_conf("AutoDetect=off\nName=gpu File=/dev/nvidia0\n", "/x/gres.conf")
    assert parsed.autodetect == "off" and parsed.node_autodetect == {}
    assert [(g.nodes, g.count) for g in parsed.lines] == [(None, 1)]


# ---------------------------------------------------------- the example files


def test_gres_example_names_every_key_and_matches_the_slurm_example(tmp_path):
    text = (ROOT / "deploy" / "gres.conf.example").read_text()
    missing = [k for k in GRES_CONF_KEYS if not re.search(rf"(?<![\w]){k}=", text)]
    assert missing == []
    (tmp_path / "slurm.conf").write_text((ROOT / "deploy" / "slurm.conf.example").read_text())
    (tmp_path / "gres.conf").write_text(text)
    cfg = load_config(str(tmp_path / "slurm.conf"))
    assert cfg.warnings == []
    for node in cfg.nodes:  # every GPU node's devices add up to its Gres= count
        assert sum(g.count for g in gres_for_node(cfg, node.name)) == node.gpus
    assert [autodetect_for_node(cfg, n.name) for n in cfg.nodes] == ["off", "nvml"]


@pytest.mark.parametrize(
    ("gres_text", "style"),
    [
        ("", "all"),  # no line for the node: Gres=gpu:N acts like device files
        ("NodeName=g1 Name=gpu File=/dev/nvidia[0-3]\n", "all"),
        ("AutoDetect=nvml\nNodeName=g1 Name=gpu File=/dev/nvidia[0-3]\n", "cuda"),
        ("NodeName=g1 AutoDetect=nvidia\n", "cuda"),
        ("NodeName=g1 Name=gpu Count=4\n", "none"),  # count-only GPUs
        ("NodeName=g1 Name=gpu File=/dev/nvidia[0-3] Flags=nvidia_gpu_env\n", "cuda"),
        ("NodeName=g1 Name=gpu File=/dev/nvidia[0-3] Flags=no_gpu_env\n", "none"),
    ],
)
def test_gpu_env_style_follows_autodetect_files_and_flags(gres_text, style):
    cfg = with_gres(gres_text)
    assert gpu_env_style_for(cfg, "g1") == style
    assert auto_detect_for(cfg, "g1") == autodetect_for_node(cfg, "g1")
