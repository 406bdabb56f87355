"""Real GPUs through NVML (pynvml).  The only module that imports pynvml.

``probe()`` returns ``None`` when there is no usable driver (no library, no
device, init failure) so the caller falls back to configured devices.  Names
follow Slurm's AutoDetect convention: lower case, spaces replaced by ``_``
(``NVIDIA H200`` -> ``nvidia_h200``).
"""

from __future__ import annotations

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


def probe(lib: Any | None = None) -> list[GpuDevice] | None:
    nv = lib if lib is not None else _load()
    if nv is None:
        return None
    try:
        nv.nvmlInit()
    except Exception:  # NVMLError has many subclasses; any of them means "no driver here"
        return None
    try:
        count = nv.nvmlDeviceGetCount()
        out = []
        for i in range(count):
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
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:
            pass
