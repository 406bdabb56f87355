"""How busy a node's GPUs are right now: one interface, a real and a fake source.

``agent.sampling`` asks :meth:`GpuSampler.sample` once per sampling round
for every GPU some running job holds (machine indices, NVML order), and
gets a :class:`GpuReading` per device it could read:

* ``NvmlGpus``: real devices through ``agent.gres.nvml.Sampler`` (the only
  code that touches pynvml): NVML utilization (the share of the last
  sample period during which *a kernel was running*, not how much of the GPU
  it used), memory used and total, board power (``None`` where the board
  has no sensor);
* ``FakeGpus``: the static devices of a machine without a driver (``agent.gres.static``),
  whose figures come from the JSON file ``$SLURMLITE_FAKE_GPU_STATE``
  (``slurmlite.fakegpu``), read once per round; memory total is the
  device's configured memory, 0 when unknown.

Which one: the source ``agent.gres.discover`` reported ("nvml" or
"static").  Example: 4 static devices and a state file saying
``{"0": {"util": 90, "mem_used_mib": 1024}}`` -> ``sample([0, 1])`` gives
GPU 0 at 90 % with 1024 MiB and GPU 1 idle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agent.gres import GpuDevice
from slurmlite import fakegpu


@dataclass(frozen=True)
class GpuReading:
    util: float  # percent
    mem_used_mib: float
    mem_total_mib: float  # 0: not known
    power_w: float | None = None  # None: not reported


class GpuSampler(Protocol):
    def sample(self, indices: list[int]) -> dict[int, GpuReading]: ...


class NvmlGpus:
    """Real GPUs (module doc)."""

    def __init__(self, lib: object | None = None) -> None:
        from agent.gres import nvml

        self._nvml = nvml.Sampler(lib)

    def sample(self, indices: list[int]) -> dict[int, GpuReading]:
        if not indices:
            return {}
        return {i: GpuReading(*values) for i, values in self._nvml.sample(indices).items()}


class FakeGpus:
    """Static devices, driven by the fake GPU state file (module doc)."""

    def __init__(self, devices: Sequence[GpuDevice], path: str | None = None) -> None:
        self._total = {d.index: float(d.memory_mib or 0) for d in devices}
        self._path = path

    def sample(self, indices: list[int]) -> dict[int, GpuReading]:
        if not indices:
            return {}
        states = fakegpu.read_all(self._path)
        out = {}
        for i in indices:
            st = states.get(i, fakegpu.FakeGpuState())
            power = None if st.power_mw is None else st.power_mw / 1000.0
            out[i] = GpuReading(st.util, st.mem_used_mib, self._total.get(i, 0.0), power)
        return out


def gpu_sampler(source: str, devices: Sequence[GpuDevice]) -> GpuSampler:
    """The sampler for devices found by ``discover`` (``source``: "nvml" or "static")."""
    return NvmlGpus() if source == "nvml" else FakeGpus(devices)
