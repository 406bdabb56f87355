"""GRES: the ``Gres=`` strings of slurm.conf and the lines of gres.conf.

slurm.conf says *how many* GPUs a node has (``Gres=gpu:a100:4``: name,
optional type, count); gres.conf, read from the same directory, says *which
devices* they are, so jobs can be pointed at them (spec §5.5).  The agent
compares both with what it finds (NVML or fake GPUs); this module only
parses, it never probes hardware.

gres.conf lines (``Key=Value`` pairs, same lexing as slurm.conf):

* ``AutoDetect=nvml|nvidia|off`` alone sets detection for every node; with
  ``NodeName=`` only for those nodes.  AMD/Intel/Trainium modes (``rsmi``,
  ``oneapi``, ``nrt``) are Slurm's but not ours: they warn and read as off.
  Nothing set means ``off``.
* ``[NodeName=<hostlist>] Name=gpu [Type=a100] [File=/dev/nvidia[0-3]]
  [Count=N] [Cores=..] [Links=..] [Flags=..]`` describes devices.  A line
  without ``NodeName`` applies to every node (a file shared by identical
  nodes).  ``File`` takes a hostlist-style range; ``Count`` defaults to the
  number of files, else 1, and may carry K/M/G (x1024).

Worked example::

    AutoDetect=off
    NodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-1]
    NodeName=g2 AutoDetect=nvml

``gres_for_node(cfg, "g2")`` is one line with files ``/dev/nvidia0``,
``/dev/nvidia1`` and count 2 (two files); ``autodetect_for_node(cfg, "g1")``
is ``off`` and ``"g2"`` gives ``nvml`` (its own line beats the global one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from slurmlite.config import Config

AUTODETECT_MODES = ("nvml", "nvidia", "off")
FOREIGN_AUTODETECT = ("rsmi", "oneapi", "nrt")  # Slurm's, not supported here
GRES_CONF_KEYS = (
    "AutoDetect", "NodeName", "Name", "Type", "File", "Count", "Cores", "Links", "Flags",
)  # fmt: skip
_KEYS = {key.lower(): key for key in GRES_CONF_KEYS}
T = TypeVar("T")
_COUNT = re.compile(r"(\d+)([KMG]?)", re.I)


@dataclass
class GresConf:
    """One device line of gres.conf."""

    name: str  # "gpu"
    type: str | None = None  # "a100"
    files: list[str] = field(default_factory=list)  # ["/dev/nvidia0", ...]
    count: int = 1
    nodes: list[str] | None = None  # None: every node
    autodetect: str | None = None  # this line's own AutoDetect, if it has one
    cores: str | None = None
    links: str | None = None
    flags: list[str] = field(default_factory=list)
    where: str = ""  # "gres.conf:3", for messages


def parse_count(text: str) -> int:
    """``"4"`` -> 4, ``"2K"`` -> 2048; ValueError otherwise."""
    m = _COUNT.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"invalid count '{text}'")
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2).upper()]


def parse_gres_spec(value: str) -> tuple[int, str | None, list[str]]:
    """slurm.conf ``Gres=``: ``"gpu:a100:4,shard:8"`` -> ``(4, "a100", ["shard"])``.

    Items are ``name[:type][:no_consume][:count]`` (count defaults to 1);
    GPU counts add up, the first GPU type wins, other names are returned so
    the caller can warn about them.  ``""``/``(null)`` -> ``(0, None, [])``.
    ValueError for a malformed item.
    """
    gpus, gpu_type, others = 0, None, []
    for item in (part.strip() for part in value.split(",")):
        if not item or item.lower() in ("(null)", "none"):
            continue
        parts = [p for p in item.split(":") if p.lower() != "no_consume"]
        count = parse_count(parts.pop()) if len(parts) > 1 and parts[-1][:1].isdigit() else 1
        if len(parts) > 2 or not parts[0] or not all(parts):
            raise ValueError(f"invalid GRES '{item}'")
        if parts[0] != "gpu":
            others.append(parts[0])
            continue
        gpus += count
        gpu_type = gpu_type or (parts[1] if len(parts) == 2 else None)
    return gpus, gpu_type, others


@dataclass
class GresFile:
    """A parsed gres.conf."""

    lines: list[GresConf] = field(default_factory=list)
    autodetect: str | None = None  # for every node
    node_autodetect: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _autodetect(text: str) -> str:
    if text.lower() not in AUTODETECT_MODES + FOREIGN_AUTODETECT:
        raise ValueError(text)
    return text.lower()


def _typed(got: dict[str, str], key: str, parse: Callable[[str], T], default: T, where: str) -> T:
    """``parse(got[key])``, ``default`` when the line has no ``key``; ConfigError if invalid."""
    if key not in got:
        return default
    try:
        return parse(got[key])
    except ValueError:
        from slurmlite.conftext import ConfigError

        raise ConfigError(f"{where}: invalid value '{got[key]}' for {key}") from None


def parse_gres_conf(text: str, path: str = "gres.conf") -> GresFile:
    """Parse gres.conf text; ConfigError (``gres.conf:N: ...``) for a broken line."""
    from slurmlite.conftext import ConfigError, iter_lines, split_pairs
    from slurmlite.hostlist import expand

    out = GresFile()
    label = os.path.basename(path)
    for number, line in iter_lines(text):
        where = f"{label}:{number}"
        got: dict[str, str] = {}
        for key, value in split_pairs(line, where):
            if key.lower() in _KEYS:
                got[_KEYS[key.lower()]] = value
            else:
                out.warnings.append(f"{where}: unknown key '{key}' ignored")
        nodes = _typed(got, "NodeName", expand, None, where)
        files = _typed(got, "File", expand, [], where)
        count = _typed(got, "Count", parse_count, len(files) or 1, where)
        auto = _typed(got, "AutoDetect", _autodetect, None, where)
        if auto in FOREIGN_AUTODETECT:
            out.warnings.append(f"{where}: AutoDetect={auto} is not supported; treated as off")
            auto = "off"
        if auto is not None and nodes is None:
            out.autodetect = auto
        elif auto is not None:
            out.node_autodetect.update(dict.fromkeys(nodes or [], auto))
        if "Name" not in got:
            if auto is None:
                raise ConfigError(f"{where}: a gres.conf line needs Name= or AutoDetect=")
            continue
        if files and count != len(files):
            out.warnings.append(f"{where}: Count={count} but File names {len(files)} devices")
        flags = [f.strip() for f in got.get("Flags", "").split(",") if f.strip()]
        out.lines.append(
            GresConf(
                name=got["Name"],
                type=got.get("Type") or None,
                files=files,
                count=count,
                nodes=nodes,
                autodetect=auto,
                cores=got.get("Cores"),
                links=got.get("Links"),
                flags=flags,
                where=where,
            )
        )
    return out


def attach(cfg: Config, text: str, path: str) -> None:
    """Parse gres.conf into ``cfg`` and warn where it disagrees with slurm.conf."""
    parsed = parse_gres_conf(text, path)
    cfg.gres, cfg.gres_autodetect = parsed.lines, parsed.autodetect
    cfg.gres_node_autodetect = parsed.node_autodetect
    cfg.warnings.extend(parsed.warnings)
    known = {node.name for node in cfg.nodes}
    for line in parsed.lines:
        if line.name not in cfg.gres_types:
            cfg.warnings.append(f"{line.where}: GRES '{line.name}' is not in GresTypes")
        for name in line.nodes or []:
            if name not in known:
                cfg.warnings.append(f"{line.where}: node '{name}' is not in slurm.conf")
    for node in cfg.nodes:
        gpu_lines = [g for g in gres_for_node(cfg, node.name) if g.name == "gpu"]
        devices = sum(g.count for g in gpu_lines)
        if node.gpus and gpu_lines and devices != node.gpus:
            cfg.warnings.append(
                f"{os.path.basename(path)}: node '{node.name}' has {devices} gpu devices "
                f"but slurm.conf says Gres=gpu:{node.gpus}"
            )


def gres_for_node(cfg: Config, node_name: str) -> list[GresConf]:
    """The gres.conf lines that describe ``node_name`` (its own and the shared ones)."""
    return [g for g in cfg.gres if g.nodes is None or node_name in g.nodes]


def autodetect_for_node(cfg: Config, node_name: str) -> str:
    """``nvml``, ``nvidia`` or ``off``: the node's own AutoDetect, else the global one."""
    return cfg.gres_node_autodetect.get(node_name) or cfg.gres_autodetect or "off"


auto_detect_for = autodetect_for_node  # the name agent/main.py uses

_GPU_ENV_FLAGS = {"nvidia_gpu_env": "cuda", "no_gpu_env": "none"}


def gpu_env_style_for(cfg: Config, node_name: str) -> str:
    """Which device variables jobs on ``node_name`` get (``slurmlite.jobenv`` styles).

    ``"cuda"``: only CUDA_VISIBLE_DEVICES (AutoDetect=nvml/nvidia, or
    Flags=nvidia_gpu_env); ``"none"``: none (count-only lines without File=,
    or Flags=no_gpu_env); ``"all"``: CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL,
    ROCR_VISIBLE_DEVICES and ZE_AFFINITY_MASK, as Slurm sets them for device
    files without AutoDetect.  A node with no gres.conf line gets ``"all"``:
    its GPUs come from ``Gres=gpu:N`` and act like configured device files.
    """
    lines = [g for g in gres_for_node(cfg, node_name) if g.name == "gpu"]
    for line in lines:
        for flag in line.flags:
            if flag.lower() in _GPU_ENV_FLAGS:
                return _GPU_ENV_FLAGS[flag.lower()]
    if autodetect_for_node(cfg, node_name) in ("nvml", "nvidia"):
        return "cuda"
    if lines and not any(line.files for line in lines):
        return "none"
    return "all"
