"""GPUs used outside the scheduler: the ``SlurmliteGpuOutsideUse`` policy and its words.

In a lab, people ssh into a GPU node and start ``python train.py`` by hand.
The scheduler does not know: it would give that GPU to the next
``--gpus=1`` job, and two programs would then share one device's memory.
So each agent looks, every ``interval`` seconds, at the compute processes
on its GPUs (``agent.gpu_outside``); a process that is no job's is *outside
use*, reported with the next heartbeat as ``{gpu index: reason}``.  The
controller (``controller.nodes.outside_gpus``) counts such a GPU as used
(``GresUsed``, the node's ``Reason``) and gives it to no job until it has
been free for ``settle`` seconds: a user who stops and restarts a script
should not lose the GPU to a job in between.  A job already running there
is never touched.

Syntax (slurm.conf, one line, comma-separated, every part optional)::

    SlurmliteGpuOutsideUse=settle=60,interval=15   # the defaults
    SlurmliteGpuOutsideUse=settle=0                # free again at once
    SlurmliteGpuOutsideUse=ignore                  # no detection at all

``settle`` and ``interval`` are seconds (fractions allowed, ``interval``
above 0).  ``ignore`` turns detection off on the agents and makes the
controller disregard any report.

The reason text names the GPU (the node's index, as ``GresUsed`` and
``SLURM_JOB_GPUS`` number them), the process, its user and its command::

    >>> outside_reason(1, 4242, "alice", "python")
    'gpu 1 in use outside slurmlite: pid 4242 (alice: python)'
    >>> parse_policy("settle=5")
    GpuOutsideUse(enabled=True, settle=5.0, interval=15.0)
    >>> str(parse_policy("ignore"))
    'ignore'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["GpuOutsideUse", "outside_reason", "parse_policy"]

DEFAULT_SETTLE = 60.0  # seconds a GPU must stay free before jobs may get it again
DEFAULT_INTERVAL = 15.0  # seconds between two looks of an agent at its GPUs' processes
REASON_MAX = 200  # characters of one GPU's reason the controller keeps


@dataclass(frozen=True)
class GpuOutsideUse:
    """What to do about GPUs used outside the scheduler (see the module docstring)."""

    enabled: bool = True
    settle: float = DEFAULT_SETTLE
    interval: float = DEFAULT_INTERVAL

    def __str__(self) -> str:
        if not self.enabled:
            return "ignore"
        return f"settle={self.settle:g},interval={self.interval:g}"


def parse_policy(text: str) -> GpuOutsideUse:
    """``"settle=60,interval=15"`` or ``"ignore"`` -> the policy; ValueError otherwise."""
    enabled, settle, interval = True, DEFAULT_SETTLE, DEFAULT_INTERVAL
    for item in (part.strip() for part in text.split(",")):
        name, eq, value = item.partition("=")
        name = name.strip().lower()
        if not item:
            continue
        if name == "ignore" and not eq:
            enabled = False
        elif name == "settle" and eq:
            settle = _seconds(value, zero_ok=True)
        elif name == "interval" and eq:
            interval = _seconds(value, zero_ok=False)
        else:
            raise ValueError(f"unknown part {item!r} (settle=SECONDS, interval=SECONDS, ignore)")
    return GpuOutsideUse(enabled, settle, interval)


def _seconds(value: str, zero_ok: bool) -> float:
    seconds = float(value)  # ValueError for words
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero_ok):
        raise ValueError(f"bad number of seconds {value!r}")
    return seconds


def outside_reason(gpu: int, pid: int, user: str, command: str) -> str:
    """One GPU's reason, as the node's ``Reason=`` and ``sinfo -R`` show it."""
    return f"gpu {gpu} in use outside slurmlite: pid {pid} ({user}: {command})"
