"""The state of fake GPUs, for machines without a driver (tests, demos, teaching).

Fake GPUs (the static devices an agent makes up when NVML has none, and the
test stand-in for pynvml in ``tests/agent/fake_nvml``) read what they show
from one JSON file named by the environment variable
``SLURMLITE_FAKE_GPU_STATE``, re-read at every sample so a test can change it
while a job runs::

    {
      "0": {"util": 85, "mem_used_mib": 2048, "power_mw": 250000,
            "processes": [{"pid": 4242, "mem_used_mib": 512}]},
      "1": {"util": 0}
    }

Keys are the machine's GPU indices (NVML order).  A GPU or a field that is
absent reads as idle: 0 % utilization, no memory used, no processes, power
not reported.  A missing or unreadable file means every GPU is idle.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

ENV = "SLURMLITE_FAKE_GPU_STATE"


@dataclass(frozen=True)
class FakeGpuState:
    util: float = 0.0  # percent
    mem_used_mib: float = 0.0
    power_mw: int | None = None  # None: power not reported
    processes: tuple[tuple[int, float], ...] = field(default_factory=tuple)  # (pid, MiB)


def read_all(path: str | None = None) -> dict[int, FakeGpuState]:
    """Every GPU the file describes (``path``: the file, default ``$SLURMLITE_FAKE_GPU_STATE``)."""
    path = path if path is not None else os.environ.get(ENV)
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    out: dict[int, FakeGpuState] = {}
    for key, value in raw.items():
        try:
            out[int(key)] = _parse(value)
        except (TypeError, ValueError):
            continue
    return out


def _parse(value: Any) -> FakeGpuState:
    if not isinstance(value, dict):
        raise TypeError("not an object")
    procs = tuple(
        (int(p["pid"]), float(p.get("mem_used_mib", 0)))
        for p in value.get("processes", [])
        if isinstance(p, dict) and "pid" in p
    )
    power = value.get("power_mw")
    return FakeGpuState(
        util=float(value.get("util", 0)),
        mem_used_mib=float(value.get("mem_used_mib", 0)),
        power_mw=int(power) if power is not None else None,
        processes=procs,
    )


def state_of(index: int, path: str | None = None) -> FakeGpuState:
    """One GPU's state (idle when the file does not describe it)."""
    return read_all(path).get(index, FakeGpuState())
