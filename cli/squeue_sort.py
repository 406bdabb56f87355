"""squeue's order: the sort letters of ``-S`` / ``SQUEUE_SORT`` and Slurm's quirks.

Letters are applied last first, each as a stable sort, so ``P,t,-p``
(the default) orders by partition, then state, then priority descending.
Before them, rows are put in start-time order as Slurm's comparator and
glibc's merge sort leave them (:func:`start_order`).  Unknown letters are
an error (``Invalid sort specification: X``); a few are accepted and sort
nothing, as in Slurm.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from cli.squeue_format import (
    NO_VAL,
    Row,
    attr,
    expected_end,
    min_memory,
    start_time,
    time_used,
)
from slurmlite import hostlist, states

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from typing import Any

    from slurmlite.protocol import JobInfo


def _id_key(row: Row) -> tuple[int, int]:
    if row.array_task_id is None:
        return row.job.job_id, NO_VAL
    return row.job.array_job_id or row.job.job_id, row.array_task_id


def _first_node(row: Row) -> list[Any]:
    """Natural-order key of a job's first node (``n2`` < ``n10``)."""
    names = hostlist.sort_hosts(row.job.nodes)
    parts = re.split(r"(\d+)", names[0]) if names else []
    return [(int(p), len(p)) if i % 2 else (p, 0) for i, p in enumerate(parts)]


def _limit(job: JobInfo) -> float:
    return math.inf if job.time_limit is None else job.time_limit


def sort_keys(now: float) -> dict[str, Callable[[Row], Any]]:
    """Sort letter -> key; ``S`` is handled apart (:func:`start_cmp`)."""
    return {
        "B": lambda r: r.job.batch_host or "", "C": lambda r: r.job.num_cpus,
        "D": lambda r: r.job.num_nodes, "e": lambda r: expected_end(r.job) or 0,
        "g": lambda r: r.job.group or "", "G": lambda r: r.job.gid, "i": _id_key,
        "j": lambda r: r.job.name or "", "l": lambda r: _limit(r.job),
        "L": lambda r: _limit(r.job) * 60 - time_used(r.job, now),
        "m": lambda r: min_memory(r.job), "M": lambda r: time_used(r.job, now),
        "N": _first_node, "p": lambda r: r.job.priority, "Q": lambda r: r.job.priority,
        "P": lambda r: r.job.partition or "",
        "t": lambda r: states.job_state_compact(r.job.state, r.job.flags),
        "T": lambda r: states.job_state_long(r.job.state, r.job.flags),
        "u": lambda r: r.job.user or "", "U": lambda r: r.job.uid,
        "v": lambda r: attr(r.job, "reservation") or "", "V": lambda r: r.job.submit_time,
        "d": lambda r: 0, "H": lambda r: 0, "I": lambda r: 0, "J": lambda r: 0, "z": lambda r: 0,
    }  # fmt: skip


IGNORED_SORT_LETTERS = frozenset("bcfhnO")  # accepted, sort nothing (as in Slurm)


def parse_sort(spec: str) -> list[tuple[str, bool]]:
    """``"P,t,-p"`` -> keys in application order: ``[("p", True), ("t", False), ("P", False)]``.

    Raises ``ValueError("Invalid sort specification: X")``.
    """
    keys: list[tuple[str, bool]] = []
    known = sort_keys(0.0)
    i = len(spec) - 1
    while i >= 0:
        letter = spec[i]
        if spec[max(0, i - 6) : i + 1].lower() == "cluster":
            i -= 7  # one cluster only: nothing to sort
            continue
        reverse = i > 0 and spec[i - 1] == "-"
        i -= 1
        if letter in ",+-" or letter in IGNORED_SORT_LETTERS:
            continue
        if letter != "S" and letter not in known:
            raise ValueError(f"Invalid sort specification: {letter}")
        keys.append((letter, reverse))
    return keys


def start_order(rows: Sequence[Row], now: float | None, reverse: bool) -> list[Row]:
    """What glibc's merge sort makes of squeue's start-time comparator.

    Jobs with a start time come first, ordered by it (stable; latest first
    when ``reverse``); a pending job due in the past counts as starting
    ``now``.  The comparator calls every pair of jobs without a start time
    "greater", and a top-down merge then always takes the right half first:
    those jobs end up in reverse order.
    """

    def effective(row: Row) -> float:
        start = start_time(row.job) or 0.0
        return now if now is not None and row.job.state == "PENDING" and start < now else start

    started = sorted((r for r in rows if start_time(r.job)), key=effective, reverse=reverse)
    return started + [r for r in rows if not start_time(r.job)][::-1]


def sort_rows(rows: Sequence[Row], spec: str | None, now: float) -> list[Row]:
    """Order rows as squeue does: start time (latest first), then ``spec`` keys.

    Each key is a stable sort, so equal keys keep the previous order.
    """
    out = start_order(rows, None, reverse=True)
    keys = sort_keys(now)
    for letter, reverse in parse_sort(spec or "P,t,-p"):
        if letter == "S":
            out = start_order(out, now, reverse)
        else:
            out.sort(key=keys[letter], reverse=reverse)
    return out


def sort_letters(spec: str | None) -> list[str]:
    """The letters of ``spec`` (default ``P,t,-p``) in application order; [] if invalid
    (the error is reported when sorting)."""
    try:
        return [letter for letter, _ in parse_sort(spec or "P,t,-p")]
    except ValueError:
        return []
