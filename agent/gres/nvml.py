"""Real GPUs through NVML (pynvml).  The only module that imports pynvml.

``probe()`` returns ``None`` when there is no usable driver (no library, no
device, init failure) so the caller falls back to configured devices.  Names
follow Slurm's AutoDetect convention: lower case, spaces replaced by ``_``
(``NVIDIA H200`` -> ``nvidia_h200``).  ``compute_processes()`` lists the pids
on each device, for telling jobs' GPU processes from others (``agent.gpu_outside``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent.gres import GpuDevice


def _load() -> Any | None:
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def normalise_name(raw: str | bytes) -> str:
    if isinstance(raw, bytes):
        raw = raw.decode(errors="replace")
    return raw.strip().lower().replace(" ", "_")


@contextmanager
def _session(lib: Any | None) -> Iterator[Any | None]:
    """NVML initialised for one question and shut down after it; ``None`` when there is
    no library or the init fails (NVMLError has many subclasses: any means "no driver")."""
    nv = lib if lib is not None else _load()
    if nv is not None:
        try:
            nv.nvmlInit()
        except Exception:
            nv = None
    try:
        yield nv
    finally:
        if nv is not None:
            try:
                nv.nvmlShutdown()
            except Exception:
                pass


def probe(lib: Any | None = None) -> list[GpuDevice] | None:
    with _session(lib) as nv:
        if nv is None:
            return None
        try:
            out = []
            for i in range(nv.nvmlDeviceGetCount()):
                h = nv.nvmlDeviceGetHandleByIndex(i)
                uuid = nv.nvmlDeviceGetUUID(h)
                mem = nv.nvmlDeviceGetMemoryInfo(h)
                out.append(
                    GpuDevice(
                        index=i,
                        name=normalise_name(nv.nvmlDeviceGetName(h)),
                        uuid=uuid.decode() if isinstance(uuid, bytes) else uuid,
                        memory_mib=int(mem.total) // (1024 * 1024),
                    )
                )
            return out or None
        except Exception:
            return None


def compute_processes(lib: Any | None = None) -> dict[int, list[int]] | None:
    """The pids of the compute processes on each device, by NVML index (``None``: no driver).

    A device NVML cannot ask (``NotSupported``, a lost GPU) lists no process:
    this feeds a warning, never a decision to kill anything."""
    with _session(lib) as nv:
        if nv is None:
            return None
        try:
            out: dict[int, list[int]] = {}
            for i in range(nv.nvmlDeviceGetCount()):
                try:
                    h = nv.nvmlDeviceGetHandleByIndex(i)
                    out[i] = [int(p.pid) for p in nv.nvmlDeviceGetComputeRunningProcesses(h)]
                except Exception:
                    out[i] = []
            return out
        except Exception:
            return None


class Sampler:
    """Utilization, memory used and power of real GPUs (``agent.gres.sampling``'s NVML source).

    NVML is initialised once, at the first sample, and stays so (an init per
    sample costs milliseconds on real drivers).  Power that the board does
    not report (``NVMLError_NotSupported``, or any error) reads ``None``; a
    device that fails altogether is left out of the answer.
    """

    def __init__(self, lib: Any | None = None) -> None:
        self._lib = lib
        self._ready = False

    def sample(self, indices: list[int]) -> dict[int, tuple[float, float, float, float | None]]:
        """index -> (utilization %, memory used MiB, memory total MiB, power W or None)."""
        nv = self._lib if self._lib is not None else _load()
        if nv is None:
            return {}
        if not self._ready:
            try:
                nv.nvmlInit()
            except Exception:  # no driver now: nothing to say
                return {}
            self._ready = True
        out = {}
        for i in indices:
            try:
                h = nv.nvmlDeviceGetHandleByIndex(i)
                util = float(nv.nvmlDeviceGetUtilizationRates(h).gpu)
                mem = nv.nvmlDeviceGetMemoryInfo(h)
            except Exception:
                continue
            try:
                power: float | None = nv.nvmlDeviceGetPowerUsage(h) / 1000.0  # mW -> W
            except Exception:  # NVMLError_NotSupported on boards without a power sensor
                power = None
            mib = 1024 * 1024
            out[i] = (util, mem.used / mib, mem.total / mib, power)
        return out
