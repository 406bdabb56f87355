"""The ``SystemComment`` a run's end leaves on its job (``slurmlite.failures`` words it).

* a launch or Prolog failure: the agent's sentence (``JobCompletion.cause``),
  e.g. "launch failed on n1: cannot open --output file /x/slurm-7.out: No
  such file or directory";
* an OOM kill: the node, the cgroup's peak and the request, "out of memory
  on n1: used 2048M of --mem=2G";
* any other end: nothing (a previous run's cause is dropped).

The time-limit and node-failure sentences are written where those ends are
decided (``controller.sched.loop``).
"""

from __future__ import annotations

from controller.store.models import JobRow
from controller.store.rows import allocs_of
from slurmlite.failures import memory_asked, out_of_memory
from slurmlite.protocol import JobCompletion


def run_cause(msg: JobCompletion) -> str | None:
    """What the agent said about this run's end (None for most ends)."""
    return msg.cause or None


def oom_cause(row: JobRow, node: str, msg: JobCompletion) -> str:
    """``out of memory on n1: used 50M of --mem=50M`` for the run of ``row`` on ``node``."""
    share = next((a for a in allocs_of(row.alloc) if a.node == node), None)
    cpus = share.cpus if share else row.num_cpus
    if row.mem_per_gpu and share and share.gpus:
        asked = f"--mem-per-gpu={row.mem_per_gpu}M x {len(share.gpus)} GPUs"
    else:
        asked = memory_asked(row.mem_per_node, row.mem_per_cpu, cpus)
    used = max(msg.mem_peak, msg.usage.max_rss_bytes if msg.usage is not None else 0)
    return out_of_memory(node, used, asked)
