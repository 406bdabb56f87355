"""Per-GPU series of running jobs, from the agents' usage samples (``job_usage``).

Each agent sends a cumulative summary of every job it runs
(``slurmlite.usage``: per GPU the number of samples, the sum and maximum of
utilization and memory); the controller keeps the latest per (job, run,
node).  For every GPU of every RUNNING job's current run this module writes,
labelled ``node``, ``gpu`` (the node's index), ``job`` and ``user``:

* ``slurmlite_gpu_utilization_percent``  mean utilization over the run so far;
* ``slurmlite_gpu_samples_total`` and ``slurmlite_gpu_utilization_added_total``
  (counters: samples taken, and the sum of their utilization), so that
  ``rate(added[10m]) / rate(samples[10m])`` is the utilization of the last
  ten minutes, however long the job has run;
* ``slurmlite_gpu_memory_used_bytes`` (mean), ``..._max_bytes``, and the
  card's ``slurmlite_gpu_memory_total_bytes``.

"GPU held but idle" is then one query::

    slurmlite_gpu_utilization_percent < 5

(only GPUs held by running jobs have the series).  Example: job 7 of alice
holds GPU 1 of n2 and sampled 20 % then 40 % -> ``slurmlite_gpu_utilization_percent
{node="n2",gpu="1",job="7",user="alice"} 30``.
"""

from __future__ import annotations

import json

from sqlalchemy import and_, select

from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.models_usage import JobUsageRow
from slurmlite.openmetrics import Exposition

MIB = 1024 * 1024
_FAMILIES = (
    ("slurmlite_gpu_utilization_percent", "gauge", "Mean GPU utilization over the job's run"),
    ("slurmlite_gpu_samples", "counter", "Utilization samples taken of the GPU in this run"),
    ("slurmlite_gpu_utilization_added", "counter", "Sum of the GPU's utilization samples"),
    ("slurmlite_gpu_memory_used_bytes", "gauge", "Mean GPU memory used over the job's run"),
    ("slurmlite_gpu_memory_max_bytes", "gauge", "Most GPU memory used in the job's run"),
    ("slurmlite_gpu_memory_total_bytes", "gauge", "Memory of the GPU"),
)


def write(out: Exposition, db: Database) -> None:
    """The per-GPU series of the running jobs (one indexed query)."""
    for name, kind, help_text in _FAMILIES:
        out.declare(name, kind, help_text)
    q = select(JobUsageRow.node, JobUsageRow.job_id, JobRow.user, JobUsageRow.gpus).join(
        JobRow,
        and_(JobRow.id == JobUsageRow.job_id, JobRow.restarts == JobUsageRow.restart),
    )
    with db.read() as s:
        rows = s.execute(q.where(JobRow.state == "RUNNING")).all()
    for node, job_id, user, gpus in sorted(rows, key=lambda r: (r[0], r[1])):
        for g in json.loads(gpus or "[]"):
            at = {"node": node, "gpu": str(g["index"]), "job": str(job_id), "user": user}
            samples = g.get("samples", 0)
            util_sum = g.get("util_sum", 0.0)
            mean = util_sum / samples if samples else 0.0
            mem_mean = g.get("mem_sum_mib", 0.0) / samples if samples else 0.0
            out.gauge("slurmlite_gpu_utilization_percent", "", mean, at)
            out.counter("slurmlite_gpu_samples", "", samples, at)
            out.counter("slurmlite_gpu_utilization_added", "", util_sum, at)
            out.gauge("slurmlite_gpu_memory_used_bytes", "", mem_mean * MIB, at)
            out.gauge("slurmlite_gpu_memory_max_bytes", "", g.get("mem_max_mib", 0.0) * MIB, at)
            out.gauge("slurmlite_gpu_memory_total_bytes", "", g.get("mem_total_mib", 0.0) * MIB, at)
