"""The ``SystemComment`` of the ends the scheduling loop decides (``slurmlite.failures``).

* a time limit: "time limit 00:01:00 reached after 00:01:00 of run time";
* a node failure: "node n2 stopped answering at <when> (no heartbeat for
  00:05:00); job requeued" -- or, for a node that answers but no longer has
  the job (its agent lost the run), "node n2 no longer had the job running
  ...".  ``loop.fail_job`` adds whether the job was requeued or failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from controller.store.models import JobRow
from slurmlite.failures import node_lost_run, node_stopped, time_limit


def timeout_cause(row: JobRow, now: float) -> str | None:
    """The sentence of ``row`` ending TIMEOUT at ``now`` (None: it has no limit)."""
    if row.time_limit is None:
        return None
    return time_limit(row.time_limit, now - (row.start_time or now))


def lost_cause(
    lost: Iterable[str], down: Iterable[str], now: float, silent_for: Callable[[str, float], float]
) -> str:
    """Why a job lost ``lost`` (its DOWN ones first, by name), without the outcome."""
    down = set(down)
    parts = []
    for node in sorted(lost, key=lambda n: (n not in down, n)):
        if node in down:
            silent = silent_for(node, now)
            parts.append(node_stopped(node, now - silent, silent))
        else:
            parts.append(node_lost_run(node))
    return "; ".join(parts)
