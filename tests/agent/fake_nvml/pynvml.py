"""A stand-in for pynvml on machines without a GPU driver (tests only).

``FAKE_NVML_GPUS`` sets the number of devices (default 4); a negative value
makes ``nvmlInit`` fail as it does when no driver is loaded.  What the devices
show (utilization, memory used, power, compute processes) comes from the file
``SLURMLITE_FAKE_GPU_STATE`` names (``slurmlite.fakegpu``), as for the agent's
own fake GPUs.  Put this
directory first on ``PYTHONPATH`` to make agents see it instead of pynvml.
"""

from __future__ import annotations

import os

from slurmlite import fakegpu


class NVMLError(Exception):
    pass


def _count() -> int:
    return int(os.environ.get("FAKE_NVML_GPUS", "4"))


def nvmlInit() -> None:
    if _count() < 0:
        raise NVMLError("Driver Not Loaded")


def nvmlShutdown() -> None:
    return None


def nvmlDeviceGetCount() -> int:
    return _count()


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    if not 0 <= index < _count():
        raise NVMLError("Invalid Argument")
    return index


def nvmlDeviceGetName(handle: int) -> str:
    return "NVIDIA H200"


def nvmlDeviceGetUUID(handle: int) -> str:
    return f"GPU-00000000-0000-0000-0000-00000000000{handle}"


_MIB = 1024 * 1024
NVML_ERROR_NOT_SUPPORTED = 3


class NVMLError_NotSupported(NVMLError):  # noqa: N801 (pynvml's name)
    value = NVML_ERROR_NOT_SUPPORTED


class _Memory:
    def __init__(self, used_mib: float) -> None:
        self.total = 143771 * _MIB
        self.used = int(used_mib * _MIB)
        self.free = self.total - self.used


class _Utilization:
    def __init__(self, gpu: float) -> None:
        self.gpu, self.memory = int(gpu), 0


class _Process:
    def __init__(self, pid: int, used_mib: float) -> None:
        self.pid, self.usedGpuMemory = pid, int(used_mib * _MIB)


def nvmlDeviceGetMemoryInfo(handle: int) -> _Memory:
    return _Memory(fakegpu.state_of(handle).mem_used_mib)


def nvmlDeviceGetUtilizationRates(handle: int) -> _Utilization:
    return _Utilization(fakegpu.state_of(handle).util)


def nvmlDeviceGetPowerUsage(handle: int) -> int:
    power = fakegpu.state_of(handle).power_mw
    if power is None:
        raise NVMLError_NotSupported("Not Supported")
    return power


def nvmlDeviceGetComputeRunningProcesses(handle: int) -> list[_Process]:
    return [_Process(pid, mib) for pid, mib in fakegpu.state_of(handle).processes]
