"""What a job used: the summaries agents measure and the controller keeps.

An agent samples each job running on its node every ``JobAcctGatherFrequency``
seconds: all of the job's processes there -- the batch script's cgroup, the
tasks of its ``srun`` steps (``agent.sampling``) -- for CPU time and memory,
and, through NVML, the GPUs it holds there (utilization, memory used, power
where the driver reports it).  It sends a :class:`UsageSummary` per job with
its heartbeats and once more when the batch script or a step ends on that
node; the controller keeps the latest one per (job, run, node) in the
``job_usage`` table (``controller.store.models_usage``).  A summary is
cumulative for the run on that node, so a lost or repeated report never
counts anything twice: the newest simply replaces the older.

:func:`combine` folds the summaries of all nodes of one run into the job's
figures that ``sacct``, ``seff``, ``slurmlite explain`` and the reports print.

NVML's utilization is the share of time *a kernel was running* on the GPU,
not how much of the GPU the kernels used: a job can show 100 % and still use
a fraction of the card's compute.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GpuUsage:
    """One GPU over the samples of one run on one node."""

    index: int  # the GPU's index on its node (NVML order)
    samples: int = 0
    util_sum: float = 0.0  # sum of utilization samples, percent: mean = util_sum / samples
    util_max: float = 0.0  # percent
    mem_sum_mib: float = 0.0  # sum of memory-used samples
    mem_max_mib: float = 0.0
    mem_total_mib: float = 0.0  # the card's memory
    power_sum_w: float | None = None  # None: the driver does not report power
    power_max_w: float | None = None

    @property
    def util_avg(self) -> float:
        return self.util_sum / self.samples if self.samples else 0.0

    @property
    def mem_avg_mib(self) -> float:
        return self.mem_sum_mib / self.samples if self.samples else 0.0

    @property
    def power_avg_w(self) -> float | None:
        if self.power_sum_w is None or not self.samples:
            return None
        return self.power_sum_w / self.samples


@dataclass
class UsageSummary:
    """Agent -> controller: a job's usage on one node so far (cumulative)."""

    job_id: int
    restarts: int  # the run: a requeued job starts a new summary
    samples: int = 0
    first_sample: float | None = None  # epoch seconds
    last_sample: float | None = None
    cpu_seconds: float = 0.0  # user + system CPU time of the job's processes on this node
    max_rss_bytes: int = 0  # the cgroup's memory peak
    rss_sum_bytes: float = 0.0  # sum of memory samples: mean = rss_sum_bytes / samples
    gpus: list[GpuUsage] = field(default_factory=list)


@dataclass
class NodeUsage:
    """One node's share of a job's usage (a summary with its node's name)."""

    node: str
    summary: UsageSummary


@dataclass
class JobUsage:
    """A run's usage over all its nodes: what the commands print."""

    job_id: int
    restarts: int
    nodes: int = 0
    samples: int = 0  # the most samples any node took
    cpu_seconds: float = 0.0  # summed over nodes (sacct TotalCPU)
    max_rss_bytes: int = 0  # the largest node's peak (sacct MaxRSS)
    ave_rss_bytes: float = 0.0  # mean over nodes of each node's mean
    gpus: list[tuple[str, GpuUsage]] = field(default_factory=list)  # (node, GPU)

    def gpus_used(self, threshold: float = 1.0) -> int:
        """How many of the job's GPUs were ever busy above ``threshold`` percent."""
        return sum(1 for _, g in self.gpus if g.util_max > threshold)

    def gpu_util_avg(self) -> float | None:
        """Mean utilization over the job's GPUs (None: no GPU, or never sampled)."""
        sampled = [g for _, g in self.gpus if g.samples]
        return sum(g.util_avg for g in sampled) / len(sampled) if sampled else None

    def gpu_mem_efficiency(self) -> float | None:
        """Peak memory used over memory held, percent, over all the job's GPUs."""
        total = sum(g.mem_total_mib for _, g in self.gpus)
        return 100.0 * sum(g.mem_max_mib for _, g in self.gpus) / total if total else None


def combine(job_id: int, restarts: int, parts: list[NodeUsage]) -> JobUsage:
    """The run's figures from its nodes' latest summaries."""
    out = JobUsage(job_id=job_id, restarts=restarts, nodes=len(parts))
    means = []
    for part in sorted(parts, key=lambda p: p.node):
        s = part.summary
        out.samples = max(out.samples, s.samples)
        out.cpu_seconds += s.cpu_seconds
        out.max_rss_bytes = max(out.max_rss_bytes, s.max_rss_bytes)
        if s.samples:
            means.append(s.rss_sum_bytes / s.samples)
        out.gpus.extend((part.node, g) for g in sorted(s.gpus, key=lambda g: g.index))
    out.ave_rss_bytes = sum(means) / len(means) if means else 0.0
    return out
