"""Fake GPUs from configuration, for machines without a driver.

They behave as if gres.conf listed device files ``/dev/nvidia0..N-1``: the
scheduler counts them, jobs get ``CUDA_VISIBLE_DEVICES`` and friends with
their indices, but nothing on the machine backs them.
"""

from __future__ import annotations

from agent.gres import GpuDevice


def devices(count: int, gpu_type: str | None) -> list[GpuDevice]:
    name = gpu_type or "gpu"
    return [GpuDevice(index=i, name=name, fake=True) for i in range(max(0, count))]
