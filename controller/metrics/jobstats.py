"""Jobs counted by state: the one count behind four of Slurm's metric groups.

Slurm 25.11 (``src/plugins/metrics/openmetrics/openmetrics.c``) exposes the
same set of job counts four times: for the cluster (``slurm_jobs_*``), per
partition (``slurm_partition_jobs_*{partition=...}``), per user
(``slurm_user_jobs_*{username=...}``) and per account
(``slurm_account_jobs_*{account=...}``).  :class:`JobStats` is that set,
made from the live jobs (``controller.store.live_cache``: what squeue lists,
MinJobAge included) in two steps:

1. :func:`count`: the jobs per key (partition, user, account, state, flags,
   reason) -> ``[jobs, started, cpus, gpus, memory MiB, nodes]``, the last
   five summed over the jobs past PENDING (:func:`holder_figures`); a few
   dozen keys for 10,000 jobs.  ``controller.metrics.jobcounts`` keeps such a
   count up to date as jobs change rather than counting again;
2. :func:`fold`: those keys summed into one :class:`JobStats` per group (the
   cluster, or each partition, user or account).

:func:`write` renders a set under a prefix.

What each count means here:

* a base state (``pending``, ``running``, ``completed``, ``timeout``...): jobs
  in it; ``hold``: pending jobs held by their owner or an operator (Slurm
  counts them as pending too); ``completing``/``configuring``: the flags;
* ``started``: jobs that ever started (a start time); ``finished``: jobs in
  a finished state; ``jobs``: all of them;
* ``cpus_alloc``, ``gpus_alloc``, ``nodes_alloc``, ``memory_alloc`` (bytes):
  what running and suspended jobs hold (their allocation).

Example: alice runs job 1 (2 CPUs, 1 GPU) and has job 2 held ->
``slurm_jobs 2``, ``slurm_jobs_running 1``, ``slurm_jobs_pending 1``,
``slurm_jobs_hold 1``, ``slurm_jobs_gpus_alloc 1``,
``slurm_user_jobs_pending{username="alice"} 1``; the count behind it is
``{("debug", "alice", "physics", "RUNNING", "", "None"): [1, 1, 2, 1, 1000, 1],
("debug", "alice", "physics", "PENDING", "", "JobHeldUser"): [1, 0, 0, 0, 0, 0]}``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

from controller.store.live_cache import Live
from controller.store.rows import LISTING_COLUMNS
from slurmlite import reasons
from slurmlite.openmetrics import Exposition

_AT = {name: i for i, name in enumerate(LISTING_COLUMNS)}
_HELD = (reasons.JOB_HELD_USER, reasons.JOB_HELD_ADMIN)
_HOLDING = ("RUNNING", "SUSPENDED")
_START, _ALLOC, _STATE = _AT["start_time"], _AT["alloc"], _AT["state"]
# what a job is counted under: the groups, then what JobStats.add reads
GROUPS = {"partition": 0, "user": 1, "account": 2}
Key = tuple[str, str, str, str, str, str | None]  # partition, user, account, state, flags, reason
key_of = itemgetter(*(_AT[c] for c in ("partition", "user", "account", "state", "flags", "reason")))
_values = attrgetter("values")

# metric suffix -> (JobStats field, help); Slurm's names, in Slurm's order
STATE_COUNTS = (
    ("bootfail", "BOOT_FAIL", "Jobs in state BOOT_FAIL"),
    ("cancelled", "CANCELLED", "Jobs in state CANCELLED"),
    ("completed", "COMPLETED", "Jobs in state COMPLETED"),
    ("deadline", "DEADLINE", "Jobs in state DEADLINE"),
    ("failed", "FAILED", "Jobs in state FAILED"),
    ("node_failed", "NODE_FAIL", "Jobs in state NODE_FAIL"),
    ("outofmemory", "OUT_OF_MEMORY", "Jobs in state OUT_OF_MEMORY"),
    ("pending", "PENDING", "Jobs in state PENDING, held ones included"),
    ("preempted", "PREEMPTED", "Jobs in state PREEMPTED"),
    ("running", "RUNNING", "Jobs in state RUNNING"),
    ("suspended", "SUSPENDED", "Jobs in state SUSPENDED"),
    ("timeout", "TIMEOUT", "Jobs in state TIMEOUT"),
)
OTHER_COUNTS = (
    ("completing", "Jobs with the COMPLETING flag"),
    ("configuring", "Jobs with the CONFIGURING flag"),
    ("finished", "Jobs in a finished state"),
    ("hold", "Pending jobs held by their owner or an operator"),
    ("started", "Jobs that have started"),
    ("cpus_alloc", "CPUs allocated to running and suspended jobs"),
    ("gpus_alloc", "GPUs allocated to running and suspended jobs"),
    ("memory_alloc", "Memory bytes allocated to running and suspended jobs"),
    ("nodes_alloc", "Nodes allocated to running and suspended jobs"),
)
_FINISHED = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL"}
_FINISHED |= {"OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"}


@dataclass
class JobStats:
    jobs: int = 0
    states: dict[str, int] = field(default_factory=dict)  # base state -> jobs
    other: dict[str, int] = field(default_factory=dict)  # OTHER_COUNTS name -> value

    def add(self, state: str, flags: str, reason: str | None, n: int) -> None:
        """``n`` jobs in ``state`` with ``flags`` and ``reason``."""
        self.jobs += n
        self.states[state] = self.states.get(state, 0) + n
        if "COMPLETING" in flags:
            self._more("completing", n)
        if "CONFIGURING" in flags:
            self._more("configuring", n)
        if state in _FINISHED:
            self._more("finished", n)
        elif state == "PENDING" and reason in _HELD:
            self._more("hold", n)

    def add_holders(self, figures: Sequence[int]) -> None:
        """What jobs past PENDING add: ``figures`` as :func:`holder_figures` (summed)."""
        started, cpus, gpus, mem, nodes = figures
        self._more("started", started)
        self._more("cpus_alloc", cpus)
        self._more("gpus_alloc", gpus)
        self._more("memory_alloc", mem * 1024 * 1024)  # MiB
        self._more("nodes_alloc", nodes)

    def _more(self, name: str, n: int) -> None:
        self.other[name] = self.other.get(name, 0) + n


def holder_figures(values: tuple[Any, ...]) -> tuple[int, int, int, int, int]:
    """What a job past PENDING counts (its listing ``values``): started (0 or 1), and
    while running or suspended its CPUs, GPUs, memory (MiB) and nodes."""
    started = 0 if values[_START] is None else 1
    if values[_STATE] not in _HOLDING:
        return started, 0, 0, 0, 0
    allocs = json.loads(values[_ALLOC] or "[]")
    cpus = sum(a["cpus"] for a in allocs)
    gpus = sum(len(a.get("gpus", [])) for a in allocs)
    return started, cpus, gpus, sum(a["mem"] for a in allocs), len(allocs)


def count(rows: Iterable[Live]) -> dict[Key, list[int]]:
    """``rows`` counted from scratch: per :data:`key_of` key ``[jobs, *holder figures]``.

    The bulk of a queue is pending jobs that differ in nothing counted here, so
    they are grouped with C-level getters (10,000 jobs: ~1 ms), and only the
    jobs past PENDING are looked at one by one (their start and allocation).
    """
    rows = list(rows)
    out = {k: [n, 0, 0, 0, 0, 0] for k, n in Counter(map(key_of, map(_values, rows))).items()}
    for r in rows:
        if r.state != "PENDING":
            into = out[key_of(r.values)]
            for i, x in enumerate(holder_figures(r.values), 1):
                into[i] += x
    return out


def fold(counts: Mapping[Key, Sequence[int]], group: str | None = None) -> dict[str, JobStats]:
    """``counts`` (as :func:`count`) summed per ``group`` (``partition``, ``user``,
    ``account``; None: the cluster, one group named ``""``)."""
    out: dict[str, JobStats] = {}
    at = None if group is None else GROUPS[group]
    for key, (n, *figures) in counts.items():
        name = "" if at is None else str(key[at])
        stats = out.get(name)
        if stats is None:
            stats = out[name] = JobStats()
        stats.add(key[3], key[4], key[5], n)
        if any(figures):
            stats.add_holders(figures)
    return out


def tally(rows: Iterable[Live], group: str | None = None) -> dict[str, JobStats]:
    """``rows`` counted per ``group``, from scratch."""
    return fold(count(rows), group)


def write(out: Exposition, prefix: str, stats: JobStats, labels: dict[str, str] | None) -> None:
    """``stats`` as ``{prefix}`` (``slurm_jobs``...) gauges with ``labels``."""
    out.gauge(prefix, "Jobs in total", stats.jobs, labels)
    for suffix, state, help_text in STATE_COUNTS:
        out.gauge(f"{prefix}_{suffix}", help_text, stats.states.get(state, 0), labels)
    for suffix, help_text in OTHER_COUNTS:
        out.gauge(f"{prefix}_{suffix}", help_text, stats.other.get(suffix, 0), labels)
