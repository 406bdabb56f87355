"""Crash points: named places where a daemon can be made to die, for fault-injection tests.

``SLURMLITE_CRASH_AT=NAME`` in a daemon's environment makes it exit at once
(``os._exit(86)``: no cleanup, no flush, no ``finally``, as ``kill -9``
would) the first time it reaches the point ``NAME``; ``NAME:N`` at the
N-th time.  Unset (always, outside tests) a point costs one dictionary
lookup.  Each point sits between two things that must both happen (a commit
and its reply, a spawn and its answer), so the tests
(``tests/e2e/test_crash_points.py``) can prove that a restart repairs every
one of those gaps: each job submitted runs exactly once and ends with its
own exit status.

Example: ``SLURMLITE_CRASH_AT=ctld.complete.after_commit:2 slurmctld -f
slurm.conf`` records the second batch of completions it gets, then dies
before acknowledging it; the agents re-send, and the restarted controller
acknowledges the duplicates without recording them twice.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["CRASH_STATUS", "POINTS", "crash_point"]

CRASH_STATUS = 86
ENV = "SLURMLITE_CRASH_AT"

POINTS: dict[str, str] = {
    # slurmctld
    "ctld.submit.before_commit": "jobs numbered and inserted, the transaction not committed",
    "ctld.submit.after_commit": "jobs committed, the reply to sbatch not sent",
    "ctld.plan.after_commit": "a pass's starts committed (RUNNING), no launch order sent",
    "ctld.launch.after_send": "launch orders answered by the agent, the outcome not handled",
    "ctld.complete.before_commit": "completions applied, the transaction not committed",
    "ctld.complete.after_commit": "completions committed, the agent not acknowledged",
    # slurmd
    "slurmd.launch.after_spawn": "the job's wrapper started, the controller not answered",
    "slurmd.completion.before_post": "a completion spooled, not sent",
    "slurmd.completion.after_ack": "a completion acknowledged, its spool file not removed",
}

_hits: dict[str, int] = {}


def _target() -> tuple[str, int] | None:
    value = os.environ.get(ENV)
    if not value:
        return None
    name, _, count = value.partition(":")
    return name, int(count) if count.isdigit() else 1


def crash_point(name: str) -> None:
    """Die here if ``SLURMLITE_CRASH_AT`` names this point (and this is its N-th hit)."""
    target = _target()
    if target is None or target[0] != name:
        return
    if name not in POINTS:
        raise KeyError(f"unknown crash point {name}")
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] < target[1]:
        return
    logging.getLogger("crashpoint").critical("event=crash_point name=%s pid=%s", name, os.getpid())
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    os._exit(CRASH_STATUS)
