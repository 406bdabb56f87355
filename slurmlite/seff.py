"""The efficiency report of one job: Slurm's ``seff``, plus its GPUs.

``seff_text(job, usage)`` takes the records the accounting commands already
read: ``job`` is a :class:`slurmlite.protocol.JobInfo` (what ``sacct`` gets
from ``/v1/accounting``; its ``usage`` field is the second argument) and
``usage`` a :class:`slurmlite.usage.JobUsage` (``None``: nothing measured).
It is pure (no I/O): the ``seff`` command, ``slurmlite explain`` and the
end-of-job mails print the same text.

The first lines and their arithmetic are those of Slurm's ``contribs/seff``:

* CPU Utilized = the job's CPU time (user + system, all nodes);
  CPU Efficiency = CPU time / (wall-clock time x cores);
* Memory Utilized = the memory peak (for a multi-node job: the busiest
  node's); Memory Efficiency = peak / memory held (per node when the job
  holds memory per node, then the peak is compared with one node's share);
* times as ``[D-]HH:MM:SS``, sizes as ``%.2f`` with K/M/G/T units of 1024.

Then slurmlite's GPU lines: one per GPU (mean and peak utilization, peak
memory over the card's), the job's mean, and at most one advice line.

Worked example: 4 cores for 100 s is 400 core-seconds; 100 s of CPU time is
25.00 %.  Four GPUs where only GPU 0 was ever busy give the advice
``this job used 1 of its 4 GPUs; ask for --gpus=1``.

NVML's utilization is the share of time a kernel was running, not the work
done: 100 % can still leave most of the GPU's cores idle.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # the commands import this module: keep typing out of their start-up

if TYPE_CHECKING:
    from slurmlite.protocol import JobInfo
    from slurmlite.usage import JobUsage

BUSY = 1.0  # percent: a GPU whose utilization never went above this was not used
LOW_GPU_UTIL = 50.0  # percent: a mean below this gets the "waiting on something" advice
LOW_CPU_EFF = 50.0  # percent, for jobs with more than one core
_UNITS = "KMGTPE"


def time_str(seconds: float) -> str:
    """``time2str``: 93784 -> ``1-02:03:04``; 59 -> ``00:00:59``."""
    t = int(seconds)
    days, t = divmod(t, 86400)
    hours, t = divmod(t, 3600)
    minutes, secs = divmod(t, 60)
    return f"{days}-" * (days >= 1) + f"{hours:02d}:{minutes:02d}:{secs:02d}"


def kbytes_str(kbytes: float) -> str:
    """``kbytes2str``: 0 -> ``0.00 MB``; 1536 -> ``1.50 MB``; 1048576 -> ``1.00 GB``."""
    if kbytes <= 0:
        return "0.00 MB"
    exp = max(0, min(len(_UNITS) - 1, int(math.log(kbytes) / math.log(1024))))
    return f"{kbytes / 1024**exp:.2f} {_UNITS[exp]}B"


def job_mem_mib(job: JobInfo) -> int:
    """The memory the job holds (or asks for), in MiB: its allocation's, else its request
    per node, CPU or GPU (seff's "Memory Efficiency" base; sacct's ReqMem and ``mem=``)."""
    if job.alloc:
        return sum(a.mem for a in job.alloc)
    if job.mem_per_node:
        return job.mem_per_node * job.num_nodes
    if job.mem_per_cpu:
        return job.mem_per_cpu * job.num_cpus
    if job.mem_per_gpu:
        return job.mem_per_gpu * job.gpus
    return 0


def _head(job: JobInfo, cluster: str) -> list[str]:
    lines = [f"Job ID: {job.job_id}"]
    if job.array_job_id and job.array_task_id is not None:
        lines.append(f"Array Job ID: {job.array_job_id}_{job.array_task_id}")
    if cluster:
        lines.append(f"Cluster: {cluster}")
    lines.append(f"User/Group: {job.user}/{job.group}")
    if job.state in ("PENDING", "RUNNING"):
        lines.append(f"State: {job.state}")
    else:
        lines.append(f"State: {job.state} (exit code {(job.exit_code or 0) >> 8})")
    return lines


def _cores(job: JobInfo) -> list[str]:
    ncpus, nnodes = job.num_cpus or 1, len(job.nodes) or 1
    return (
        [f"Cores: {ncpus}"]
        if ncpus == 1
        else [f"Nodes: {nnodes}", f"Cores per node: {ncpus // nnodes}"]
    )


def _cpu_mem(job: JobInfo, usage: JobUsage | None, now: float) -> list[str]:
    ncpus = job.num_cpus or 1
    nnodes = len(job.nodes) or 1
    walltime = max(0, int((job.end_time or now) - (job.start_time or now)))
    cput = int((usage.cpu_seconds if usage else 0.0) + 0.5)
    core_wall = walltime * ncpus
    cpu_eff = 100.0 * cput / core_wall if core_wall else 0.0
    peak_kb = (usage.max_rss_bytes if usage else 0) / 1024
    alloc_kb = job_mem_mib(job) * 1024
    per_cpu = bool(job.mem_per_cpu) and not job.mem_per_node
    share = alloc_kb / (ncpus if per_cpu else nnodes)
    # one node's peak against one node's share when the job spans nodes
    mem_eff = 100.0 * peak_kb / (alloc_kb if nnodes == 1 else share) if alloc_kb else 0.0
    lines = [
        f"CPU Utilized: {time_str(cput)}",
        f"CPU Efficiency: {cpu_eff:.2f}% of {time_str(core_wall)} core-walltime",
        f"Job Wall-clock time: {time_str(walltime)}",
        f"Memory Utilized: {kbytes_str(peak_kb)}",
        f"Memory Efficiency: {mem_eff:.2f}% of {kbytes_str(alloc_kb)} "
        f"({kbytes_str(share)}/{'core' if per_cpu else 'node'})",
    ]
    if (
        usage
        and usage.nodes > 1
        and usage.ave_rss_bytes
        and usage.max_rss_bytes > usage.ave_rss_bytes
    ):
        ratio = 100.0 * usage.max_rss_bytes / usage.ave_rss_bytes
        lines.append(
            "The node which had the largest memory consumption differs by "
            f"{ratio:.2f}% from the average node max memory consumption"
        )
    return lines


def gpu_lines(usage: JobUsage | None) -> list[str]:
    """One line per GPU and the job's mean (nothing when no GPU was measured)."""
    if usage is None or not usage.gpus:
        return []
    lines = []
    for node, g in usage.gpus:
        mem = f"memory {kbytes_str(g.mem_max_mib * 1024)}"
        if g.mem_total_mib:
            mem += f" of {kbytes_str(g.mem_total_mib * 1024)} ({100.0 * g.mem_max_mib / g.mem_total_mib:.2f}%)"
        power = "" if g.power_avg_w is None else f", power {g.power_avg_w:.0f} W"
        lines.append(
            f"GPU {g.index} on {node}: utilization {g.util_avg:.2f}% (max {g.util_max:.0f}%), {mem}{power}"
        )
    mean = usage.gpu_util_avg()
    if mean is not None:
        lines.append(
            f"GPU Utilization: {mean:.2f}% average over {len(usage.gpus)} GPUs (time a kernel ran)"
        )
    mem_eff = usage.gpu_mem_efficiency()
    if mem_eff is not None:
        lines.append(f"GPU Memory Efficiency: {mem_eff:.2f}% (peak used over memory held)")
    return lines


def advice(job: JobInfo, usage: JobUsage | None, now: float) -> str | None:
    """At most one suggestion for the next submission, GPUs first."""
    if usage is None or not usage.samples:
        return None
    held = len(usage.gpus)
    if held:
        used = usage.gpus_used(BUSY)
        if used == 0:
            return f"none of this job's {held} GPUs was busy; ask for no GPUs"
        if used < held:
            return f"this job used {used} of its {held} GPUs; ask for --gpus={used}"
        mean = usage.gpu_util_avg()
        if mean is not None and mean < LOW_GPU_UTIL:
            return (
                f"the GPUs ran kernels only {mean:.0f}% of the time; "
                "find what they wait for (data loading, CPU, I/O)"
            )
        return None
    ncpus = job.num_cpus or 1
    walltime = (job.end_time or now) - (job.start_time or now)
    if ncpus > 1 and walltime > 0:
        cores = usage.cpu_seconds / walltime
        if 100.0 * cores / ncpus < LOW_CPU_EFF:
            need = max(1, math.ceil(cores))
            return f"this job kept {cores:.1f} of its {ncpus} cores busy on average; ask for {need}"
    return None


def efficiency_lines(job: JobInfo, usage: JobUsage | None, now: float) -> list[str]:
    """The figures without the job's name lines: cores, CPU, memory, GPUs, advice
    (``slurmlite explain`` of a finished job shows these under its own first line)."""
    lines = _cores(job) + _cpu_mem(job, usage, now) + gpu_lines(usage)
    tip = advice(job, usage, now)
    if tip:
        lines.append(f"Advice: {tip}")
    return lines


def seff_text(
    job: JobInfo, usage: JobUsage | None, cluster: str = "", now: float | None = None
) -> str:
    """The report, newline-terminated lines (module doc); ``now`` ends a running job's clock."""
    import time

    now = time.time() if now is None else now
    lines = _head(job, cluster)
    if job.state == "PENDING":
        lines += _cores(job)
        lines.append("Efficiency not available for jobs in the PENDING state.")
        return "\n".join(lines) + "\n"
    lines += efficiency_lines(job, usage, now)
    if job.state == "RUNNING":
        lines.append(
            "WARNING: Efficiency statistics can only be obtained after the job has ended "
            "as seff tool is based on the accounting database data."
        )
    return "\n".join(lines) + "\n"
