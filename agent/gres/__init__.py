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

Example: ``discover(auto_detect="nvml", configured=4, gpu_type="a100")`` on a
laptop without a driver returns 4 fake devices named ``a100``; on a machine
with 8 H200s and ``auto_detect="nvml"`` it returns the 8 real ones.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuDevice:
    index: int
    name: str  # model, e.g. "nvidia_h200" or the configured type
    uuid: str | None = None
    memory_mib: int | None = None
    fake: bool = False


def discover(auto_detect: str, configured: int, gpu_type: str | None, real_gpus: bool = True) -> tuple[list[GpuDevice], str]:
    """Return the node's GPUs and where they came from ("nvml" or "static")."""
    if real_gpus and auto_detect.lower() in ("nvml", "nvidia"):
        from agent.gres import nvml

        found = nvml.probe()
        if found is not None:
            return found, "nvml"
    from agent.gres import static

    return static.devices(configured, gpu_type), "static"
