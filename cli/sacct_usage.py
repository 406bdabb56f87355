"""sacct's usage columns: what the agents measured, as Slurm's jobacct_gather shows it.

The accounting endpoint gives each job the summaries of its current run,
one per node (``JobInfo.usage``, see ``slurmlite.usage``).  As in Slurm,
the measured figures belong to the step that ran (here the ``batch`` step:
each node's summary holds everything the job ran there, the steps of
``srun`` on every node included); the job row only sums CPU time
(``TotalCPU``), which is all an allocation (no ``batch`` step) shows.  Steps never measured print blank, as Slurm's do
without a gather plugin.

Columns (batch step row):

* ``MaxRSS``/``AveRSS``: the largest node's memory peak / the mean over
  nodes of each node's mean, in bytes with sacct's exact unit conversion
  (``1159168`` -> ``1132K``: divided by 1024 while the value stays whole);
* ``AveCPU``: CPU time per node, ``TotalCPU``: over all nodes;
  ``[D-]HH:MM:SS``, and ``TotalCPU`` as ``MM:SS.mmm`` below an hour;
* ``TRESUsageInAve/Max/Tot``: TRES strings in name order, as Slurm 23.02+
  prints them with GPU accounting:
  ``cpu=00:00:12,energy=0,gres/gpumem=2147483648,gres/gpuutil=85,mem=10485760``;
  ``cpu`` is a time, ``mem`` and ``gres/gpumem`` bytes, ``gres/gpuutil``
  a whole percent summed over the step's GPUs (two GPUs busy all the time
  read 200).  Ave: means over the samples; Max: peaks (the GPUs' peaks
  summed); Tot: summed over nodes.

Worked example: one node, 3 samples of a 2-GPU job, GPU 0 at 90 % and
GPU 1 idle, 2 GiB peak on GPU 0 -> ``TRESUsageInAve`` has ``gres/gpuutil=90``
and ``TRESUsageInMax`` ``gres/gpumem=2147483648``.
"""

from __future__ import annotations

from slurmlite.seff import time_str

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable

    from slurmlite.protocol import JobInfo, StepInfo
    from slurmlite.usage import JobUsage, NodeUsage

MIB = 1024 * 1024


def exact_units(num: float, unit: int = 0) -> str:
    """sacct's exact conversion: ``1159168`` -> ``1132K``; ``2147483648`` -> ``2G``; 0 -> ``0``."""
    num = float(int(num))
    if num == 0:
        return "0"
    while num >= 1024 and int(num) % 512 == 0 and unit < 5:
        num, unit = num / 1024, unit + 1
    suffix = " KMGTP"[unit].strip()
    return f"{int(num)}{suffix}" if num == int(num) else f"{num:.2f}{suffix}"


def total_cpu_str(seconds: float) -> str:
    """TotalCPU: ``3.277`` -> ``00:03.277``; 3723 -> ``01:02:03``; 0 -> ``00:00:00``."""
    whole = int(seconds)
    millis = int(round((seconds - whole) * 1000))
    if whole >= 3600 or not millis:
        return time_str(whole)
    minutes, secs = divmod(whole, 60)
    return f"{minutes:02d}:{secs:02d}.{millis:03d}"


def parts_of(job: JobInfo) -> list[NodeUsage]:
    """The job's per-node summaries (an answer's JSON objects, or already dataclasses).

    ``slurmlite.usage`` (dataclasses) is imported only for a job that has some: sacct
    starts without it (tests/cli/test_import_budget.py)."""
    items = getattr(job, "usage", None)
    if not items:
        return []
    from slurmlite.usage import GpuUsage, NodeUsage, UsageSummary

    out = []
    for item in items:
        if isinstance(item, dict):
            s = dict(item["summary"])
            s["gpus"] = [GpuUsage(**g) for g in s.get("gpus", [])]
            item = NodeUsage(item["node"], UsageSummary(**s))
        out.append(item)
    return out


def usage_of(job: JobInfo) -> JobUsage | None:
    """The run's combined figures (None: nothing measured)."""
    parts = parts_of(job)
    if not parts:
        return None
    from slurmlite.usage import combine

    return combine(job.job_id, job.restarts, parts)


def _tres(cpu: float, mem: float, gpumem_mib: float | None, gpuutil: float | None) -> str:
    items = [f"cpu={time_str(cpu)}", "energy=0"]
    if gpumem_mib is not None and gpuutil is not None:
        items += [f"gres/gpumem={int(gpumem_mib * MIB)}", f"gres/gpuutil={int(round(gpuutil))}"]
    items.append(f"mem={int(mem)}")
    return ",".join(items)


def tres_usage(job: JobInfo, which: str) -> str | None:
    """``TRESUsageIn{Ave,Max,Tot}`` of the job's batch step (module doc)."""
    u = usage_of(job)
    if u is None:
        return None
    gpus = [g for _, g in u.gpus]
    nodes = max(1, u.nodes)
    has = bool(gpus)
    if which == "Ave":
        return _tres(u.cpu_seconds / nodes, u.ave_rss_bytes,
                     sum(g.mem_avg_mib for g in gpus) if has else None,
                     sum(g.util_avg for g in gpus) if has else None)  # fmt: skip
    if which == "Max":
        per_node = max(p.summary.cpu_seconds for p in parts_of(job))
        return _tres(per_node, u.max_rss_bytes,
                     sum(g.mem_max_mib for g in gpus) if has else None,
                     sum(g.util_max for g in gpus) if has else None)  # fmt: skip
    peaks = sum(p.summary.max_rss_bytes for p in parts_of(job))
    return _tres(u.cpu_seconds, peaks,
                 sum(g.mem_max_mib for g in gpus) if has else None,
                 sum(g.util_avg for g in gpus) if has else None)  # fmt: skip


def _batch(getter: Callable[[JobInfo], object]) -> Callable[..., object]:
    """A step getter answering only for the batch step (others were not measured)."""
    return lambda j, s, c: getter(j) if s.step_id == "batch" else None


def _batch_tres(job: JobInfo, step: StepInfo, which: str) -> str | None:
    return tres_usage(job, which) if step.step_id == "batch" else None


def _measured(getter: Callable[[JobUsage], object]) -> Callable[[JobInfo], object]:
    def get(job: JobInfo) -> object:
        u = usage_of(job)
        return None if u is None else getter(u)

    return get


_AVE_CPU = _measured(lambda u: time_str(u.cpu_seconds / max(1, u.nodes)))
_TOTAL = _measured(lambda u: total_cpu_str(u.cpu_seconds))

# column name -> getter, merged over sacct_format's tables
JOB: dict[str, Callable[..., object]] = {
    "TotalCPU": lambda j, c: _TOTAL(j) or "00:00:00",
}
STEP: dict[str, Callable[..., object]] = {
    "MaxRSS": _batch(_measured(lambda u: exact_units(u.max_rss_bytes))),
    "AveRSS": _batch(_measured(lambda u: exact_units(u.ave_rss_bytes))),
    "AveCPU": _batch(_AVE_CPU),
    "TotalCPU": lambda j, s, c: (_TOTAL(j) if s.step_id == "batch" else None) or "00:00:00",
    # unmeasured steps keep what sacct prints without a gather plugin: energy=0
    "TRESUsageInAve": lambda j, s, c: (_batch_tres(j, s, "Ave")) or "energy=0",
    "TRESUsageInMax": lambda j, s, c: _batch_tres(j, s, "Max"),
    "TRESUsageInTot": lambda j, s, c: (_batch_tres(j, s, "Tot")) or "energy=0",
}
