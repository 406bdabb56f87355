"""How strongly this node confines jobs: the configuration, and what the machine allows.

Two switches, read as Slurm's keys (slurm.conf and ``cgroup.conf`` next to it):

* **tracking** (``ProctrackType``): unset or ``proctrack/cgroup`` -> each job
  gets its own cgroup, and cancel/time limit kill every process in it, even
  those that left the job's session (``setsid``, double fork).  Any other
  plugin (``proctrack/pgid``, ``proctrack/linuxproc``) -> no cgroups: the
  job's process group is signalled, as before.
* **memory limit** (``TaskPlugin`` + ``cgroup.conf``): with tracking on, the
  job's cgroup is capped at the memory it was given on this node when
  ``TaskPlugin`` is unset or lists ``task/cgroup``, unless ``cgroup.conf``
  says ``ConstrainRAMSpace=no``.  ``ConstrainSwapSpace`` (default yes here)
  also forbids swapping beyond the limit.  ``CgroupPlugin=cgroup/v1`` or
  ``cgroup/v2`` picks a hierarchy; ``autodetect`` (default) prefers v2.

Defaults differ from Slurm's on purpose: Slurm's defaults constrain nothing
(``TaskPlugin=task/none``, ``ConstrainRAMSpace=no``); slurmlite enforces
``--mem`` wherever the machine lets it, because the scheduler's memory
accounting means nothing otherwise.  Set ``TaskPlugin=task/none`` (or
``ConstrainRAMSpace=no``) for Slurm's behaviour.

What the machine allows: cgroups need a root agent and a writable cgroup
hierarchy (``agent.cgroups.find_mount``).  Without them everything still
runs, tracked by process group, and the agent says once, in its log, that
memory limits (and ``CUDA_VISIBLE_DEVICES``) are advisory on this node.

Example: ``TaskPlugin=task/affinity,task/cgroup`` with no cgroup.conf on a
root agent with cgroup v2 -> tracking and memory limits, no extra swap.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from agent.cgroups import CgroupTree, find_mount, scope_name
from slurmlite.clock import Clock, monotonic_clock

__all__ = ["Isolation", "discard", "open_tree"]

log = logging.getLogger(__name__)
_warned = False


@dataclass(frozen=True)
class Isolation:
    track: bool = True  # one cgroup per job
    limit_memory: bool = True  # memory.max / memory.limit_in_bytes
    no_swap: bool = True  # no swap beyond the limit
    version: int | None = None  # 1 or 2 forced; None: autodetect

    @classmethod
    def from_config(cls, cfg: object) -> Isolation:
        """From a ``slurmlite.config.Config`` and the ``cgroup.conf`` beside it."""
        proctrack = str(getattr(cfg, "proctrack_type", "proctrack/cgroup")).strip().lower()
        plugins = [p.strip().lower() for p in getattr(cfg, "task_plugin", []) if p.strip()]
        conf = _cgroup_conf(getattr(cfg, "path", ""))
        track = proctrack == "proctrack/cgroup"
        ram = (not plugins or "task/cgroup" in plugins) and _yes(conf, "constrainramspace", True)
        plugin = conf.get("cgroupplugin", "autodetect").lower()
        version = {"cgroup/v1": 1, "cgroup/v2": 2}.get(plugin)
        return cls(track, track and ram, _yes(conf, "constrainswapspace", True), version)


def open_tree(
    isolation: Isolation,
    spool: Path,
    mounts: str | None = None,
    timer: Clock = monotonic_clock,
) -> CgroupTree | None:
    """This agent's cgroups, or None (then limits are advisory, said once in the log)."""
    if not isolation.track:
        _advise("ProctrackType is not proctrack/cgroup", tracked=False)
        return None
    mount = find_mount(mounts, isolation.version)
    if mount is None:
        why = "the agent is not root" if os.geteuid() != 0 else "no writable cgroup hierarchy"
        _advise(why, tracked=False)
        return None
    tree = CgroupTree(mount, scope_name(spool), isolation.limit_memory, isolation.no_swap, timer)
    if isolation.limit_memory and not tree.memory:
        why = f"the cgroup v{mount.version} hierarchy at {mount.path} has no memory controller"
        _advise(why, tracked=True)
    log.info("event=cgroups tree=%r", tree)
    return tree


def discard(spool: Path, mounts: str | None = None) -> None:
    """Kill whatever is left in the cgroups of the agent using ``spool``, remove them.

    For the teardown of a throw-away cluster (tests), after its agents stopped:
    a job's wrapper waits for an agent that will never come back."""
    mount = find_mount(mounts)
    if mount is not None:
        CgroupTree(mount, scope_name(spool)).destroy()


def _advise(why: str, tracked: bool) -> None:
    """Say once per process that limits are advisory here, and why."""
    global _warned
    if not _warned:
        _warned = True
        how = "by cgroup" if tracked else "by process group (setsid escapes a cancel)"
        log.warning(
            "event=isolation_advisory reason=%r: job memory limits and CUDA_VISIBLE_DEVICES "
            "are advisory on this node; job processes are tracked %s",
            why,
            how,
        )


def _cgroup_conf(slurm_conf: str) -> dict[str, str]:
    """``Key=Value`` pairs of ``cgroup.conf`` beside ``slurm_conf`` (lower-case keys)."""
    if not slurm_conf or slurm_conf.startswith("<"):
        return {}
    try:
        text = (Path(slurm_conf).parent / "cgroup.conf").read_text()
    except OSError:
        return {}
    pairs: dict[str, str] = {}
    for line in text.splitlines():
        for word in line.split("#", 1)[0].split():
            key, sep, value = word.partition("=")
            if sep:
                pairs[key.strip().lower()] = value.strip().strip('"')
    return pairs


def _yes(conf: dict[str, str], key: str, default: bool) -> bool:
    value = conf.get(key)
    return default if value is None else value.lower() in ("yes", "true", "1")
