"""A stand-in for pynvml on machines without a GPU driver (tests only).

``FAKE_NVML_GPUS`` sets the number of devices (default 4); a negative value
makes ``nvmlInit`` fail as it does when no driver is loaded.  Put this
directory first on ``PYTHONPATH`` to make agents see it instead of pynvml.
"""

from __future__ import annotations

import os


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


class _Memory:
    total = 143771 * 1024 * 1024


def nvmlDeviceGetMemoryInfo(handle: int) -> _Memory:
    return _Memory()
