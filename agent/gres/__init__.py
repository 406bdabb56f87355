"""GPU discovery for the node agent (GRES).

Two sources behind one function, chosen as Slurm's ``AutoDetect`` does:

* ``nvml`` (``agent/gres/nvml.py``, the only module that imports pynvml):
  real devices, in NVML order, when a driver answers;
* ``static`` (``agent/gres/static.py``): the count from the configuration
  (``Gres=gpu:N`` on the node line, gres.conf ``Count=``/``File=``, or the
  agent's ``--gpus``).  On a machine without GPUs these are fake devices
  that behave like configured device files, so everything can be run and
  tested on CPUs.

Probing (asking the hardware) is kept apart from parsing (reading config).
Which of the machine's devices an order's GPUs are is ``device_indices``:
the order says them typed (``LaunchSpec.gpus``), never in an environment
string for the agent to parse back.

Example: ``discover(auto_detect="nvml", configured=4, gpu_type="a100")`` on a
laptop without a driver returns 4 fake devices named ``a100``; on a machine
with 8 H200s and ``auto_detect="nvml"`` it returns the 8 real ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuDevice:
    index: int
    name: str  # model, e.g. "nvidia_h200" or the configured type
    uuid: str | None = None
    memory_mib: int | None = None
    fake: bool = False


def discover(
    auto_detect: str,
    configured: int,
    gpu_type: str | None,
    real_gpus: bool = True,
    subset: list[int] | None = None,
) -> tuple[list[GpuDevice], str]:
    """Return the node's GPUs and where they came from ("nvml" or "static").

    ``subset`` keeps only those real device indices (``slurmd --gpu-devices``,
    used when one machine's GPUs are split among several local nodes).
    """
    if real_gpus and auto_detect.lower() in ("nvml", "nvidia"):
        from agent.gres import nvml

        found = nvml.probe()
        if found is not None:
            if subset is not None:
                found = [d for d in found if d.index in set(subset)]
            return found, "nvml"
    from agent.gres import static

    return static.devices(configured, gpu_type), "static"


def parse_device_list(text: str) -> list[int]:
    """``"0,2-3"`` -> ``[0, 2, 3]`` (ValueError on anything else)."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        first, last = int(lo), int(hi) if hi else int(lo)
        if first < 0 or last < first:
            raise ValueError(f"bad device range {part!r}")
        out.extend(range(first, last + 1))
    return out


def device_indices(gpus: Sequence[int], devices: Sequence[GpuDevice]) -> list[int]:
    """The machine's indices of the node's GPUs ``gpus`` (as the scheduler numbers them).

    The scheduler counts a node's GPUs from 0; a node that owns a subset of
    a machine's GPUs (``--gpu-devices 2-3``) must tell CUDA the machine's
    numbers.  ``gpus`` come typed in the order (``LaunchSpec.gpus``,
    ``StepLaunch.gpus``); they are returned unchanged when the node's
    devices are numbered 0..k-1 or one of them is not a device of this node.

    >>> device_indices([1], [GpuDevice(2, "g"), GpuDevice(3, "g")])
    [3]
    """
    real = [d.index for d in devices]
    if real == list(range(len(real))) or not all(0 <= g < len(real) for g in gpus):
        return list(gpus)
    return [real[g] for g in gpus]
