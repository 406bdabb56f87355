"""Which of this node's GPUs someone uses outside the scheduler.

Every ``interval`` seconds (``SlurmliteGpuOutsideUse``, ``slurmlite.gpu_outside``)
the agent lists the compute processes on each of its GPUs -- real devices
through NVML (``agent.gres.nvml.compute_processes``), fake ones from the
fake-GPU state file (``slurmlite.fakegpu``, its ``processes``) -- and asks of
each process: is it a job's?  A process is a job's when

1. it runs in a job cgroup this agent made (``/proc/<pid>/cgroup`` names
   ``/slurmlite/<scope>/job_<id>_<restarts>``, ``agent.cgroups``), or
2. it descends from a process the agent started (walking ``/proc/<pid>/stat``'s
   parent field up to a job's batch shell or wrapper, a step's task, or the
   agent itself), or
3. its session is one of those (a job's child that double-forked away from
   its parent but not out of its session).

Anything else is *outside use*.  The first such process on a GPU gives that
GPU's reason, naming the GPU (the node's index), the pid, its user and its
command; the result rides on the next heartbeat (``NodeHeartbeat.outside_gpus``).
The controller decides what follows (``controller.nodes.outside_gpus``);
nothing here ever signals a process.

Example: GPU 1 lists pid 4242, a ``python`` that alice started over ssh: it
is in no job cgroup, its parents are ``bash``, ``sshd``, ``init`` -> ``{1:
"gpu 1 in use outside slurmlite: pid 4242 (alice: python)"}``.  Job 7's
``python`` on GPU 0 descends from job 7's batch shell -> not listed.

Limits: NVML reports pids of the host's pid namespace; an agent in a
container with its own sees other numbers (a pid it cannot find counts as
ended) and should run with the host's.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from agent.gres import GpuDevice
from agent.procfs import parent_of, session_members, stat_of
from slurmlite import fakegpu
from slurmlite.gpu_outside import GpuOutsideUse, outside_reason

log = logging.getLogger("slurmd.gpu_outside")
__all__ = ["OutsideWatch", "gpu_processes", "is_jobs", "job_marker", "outside_use", "started_pids"]

MAX_DEPTH = 64  # parents walked at most (a deeper chain is not a job's)


def gpu_processes(devices: Sequence[GpuDevice], source: str) -> dict[int, list[int]]:
    """The pids on each of the node's GPUs, by the node's GPU index (0, 1, ...).

    ``source`` is where the devices came from (``agent.gres.discover``):
    ``nvml`` asks the driver; ``static`` reads the fake-GPU state file."""
    if source == "nvml":
        from agent.gres import nvml

        found = nvml.compute_processes() or {}
        return {pos: found.get(d.index, []) for pos, d in enumerate(devices)}
    states = fakegpu.read_all()
    return {
        pos: [pid for pid, _ in states[d.index].processes]
        for pos, d in enumerate(devices)
        if d.index in states
    }


def in_job_cgroup(pid: int, marker: str | None, proc: str = "/proc") -> bool:
    """Does ``pid`` run in a cgroup whose path holds ``marker`` (``/slurmlite/<scope>/job_``)?"""
    if not marker:
        return False
    try:
        with open(f"{proc}/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    # v2: "0::/slurmlite/n1_1f2e3d4c/job_7_0"; v1: "9:memory:/slurmlite/..."
    return any(marker in line.split(":", 2)[-1] for line in lines)


def is_jobs(pid: int, roots: Collection[int], marker: str | None = None) -> bool:
    """Is ``pid`` a job's process (the module docstring's three rules)?"""
    if in_job_cgroup(pid, marker):
        return True
    current: int | None = pid
    for _ in range(MAX_DEPTH):
        if current is None or current <= 0:
            break
        if current in roots:
            return True
        current = parent_of(current)
    return bool(session_members(roots, among=[pid]))


def started_pids(runs: Iterable[Any], steps: Iterable[Any]) -> set[int]:
    """What the agent started and still watches: each batch run's shell and wrapper
    (``agent.running.BatchRun``), each step's tasks (``agent.steps.StepRun``)."""
    pids = {pid for run in runs for pid in (run.pid, run.wrapper_pid)}
    pids.update(task.pid for step in steps for task in step.tasks)
    return {pid for pid in pids if pid > 0}


def job_marker(cgroups: Any) -> str | None:
    """``/slurmlite/<scope>/job_``: the start of this agent's job cgroups' paths as
    ``/proc/<pid>/cgroup`` shows them (``cgroups``: an ``agent.cgroups.CgroupTree``)."""
    if cgroups is None:
        return None
    return f"/{cgroups.base.name}/{cgroups.scope.name}/job_"


def describe(pid: int) -> tuple[str, str]:
    """(user, command) of ``pid``, as ``ps -o user,comm`` would say them."""
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    except OSError:
        user = "?"
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            command = f.read().strip() or "?"
    except OSError:
        command = "?"
    return user, command


def outside_use(
    processes: Mapping[int, Sequence[int]], roots: Collection[int], marker: str | None = None
) -> dict[int, str]:
    """GPU index -> reason for every GPU with a live process that is no job's."""
    out: dict[int, str] = {}
    for gpu in sorted(processes):
        for pid in sorted(set(processes[gpu])):
            info = stat_of(pid)
            if info is None or info[0] in "ZX":  # ended since the driver listed it
                continue
            if not is_jobs(pid, roots, marker):
                out[gpu] = outside_reason(gpu, pid, *describe(pid))
                break
    return out


class OutsideWatch:
    """An agent's periodic look at its GPUs; ``current`` is what the next heartbeat says.

    ``roots`` gives the pids of what the agent started (called on the event
    loop, so it may read the agent's tables); ``marker`` the agent's job
    cgroup path prefix, ``None`` without cgroups."""

    def __init__(
        self,
        policy: GpuOutsideUse,
        node: str,
        devices: Sequence[GpuDevice],
        source: str,
        roots: Callable[[], set[int]],
        marker: str | None = None,
    ) -> None:
        self.policy, self.node = policy, node
        self.devices, self.source = list(devices), source
        self.roots, self.marker = roots, marker
        self.current: dict[int, str] | None = None  # None: detection off, or no look yet

    @classmethod
    def of(cls, agent: Any) -> OutsideWatch:
        """The watch of an ``agent.daemon.AgentState`` (its config, GPUs, runs, steps)."""
        return cls(
            agent.cfg.gpu_outside_use,
            agent.name,
            agent.gpus,
            agent.gpu_source,
            lambda: started_pids((j.proc for j in agent.jobs.values()), agent.steps.runs.values()),
            job_marker(agent.launcher.cgroups),
        )

    def look(self, roots: Collection[int]) -> dict[int, str]:
        """One look (blocking: NVML, ``/proc``); logs what changed since the last one."""
        found = outside_use(gpu_processes(self.devices, self.source), roots, self.marker)
        before = self.current or {}
        for gpu, why in found.items():
            if before.get(gpu) != why:
                log.warning(
                    "event=gpu_outside_use node=%s gpu=%s reason=%r: no job gets this GPU "
                    "until it has been free %gs (SlurmliteGpuOutsideUse)",
                    self.node,
                    gpu,
                    why,
                    self.policy.settle,
                )
        for gpu in sorted(set(before) - set(found)):
            log.info("event=gpu_outside_use_ended node=%s gpu=%s", self.node, gpu)
        self.current = found
        return found

    async def watch_forever(self) -> None:
        """Look every ``interval`` seconds (nothing at all with ``ignore`` or no GPUs)."""
        if not self.policy.enabled or not self.devices:
            return
        while True:
            roots = self.roots() | {os.getpid()}
            try:
                await asyncio.to_thread(self.look, roots)
            except Exception as e:  # a look must never stop the agent; the next one retries
                log.warning("event=gpu_outside_look_failed node=%s error=%r", self.node, str(e))
            await asyncio.sleep(self.policy.interval)
