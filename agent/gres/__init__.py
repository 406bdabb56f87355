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


GPU_INDEX_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
)


def translate_gpu_env(env: dict[str, str], devices: list[GpuDevice]) -> dict[str, str]:
    """Rewrite scheduler GPU indices (0..k-1 on this node) into the real device indices.

    Only needed when a node owns a subset of a machine's GPUs: the scheduler
    counts the node's GPUs from 0, CUDA must be told the machine's numbers.
    """
    real = [d.index for d in devices]
    if real == list(range(len(real))):
        return env
    out = dict(env)
    for key in GPU_INDEX_VARS:
        value = out.get(key)
        if value and all(x.isdigit() and int(x) < len(real) for x in value.split(",")):
            out[key] = ",".join(str(real[int(x)]) for x in value.split(","))
    return out
