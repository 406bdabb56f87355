"""``scontrol update`` of what only a pending job may change: its dependency,
begin time (``StartTime=``) and node count (``NumNodes=``).

They pass through ``JobOps.update`` (and its one authorization rule: the owner
or an operator); this module only checks and applies them.  A dependency
given anew is evaluated again from scratch by the next pass
(``controller.sched.deps``); ``Dependency=`` empty drops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurmlite import errors, reasons
from slurmlite.dependency import DependencyError, format_deps
from slurmlite.dependency import parse as parse_deps

if TYPE_CHECKING:
    from controller.jobs.operations import JobChanges
    from controller.store.models import JobRow


def check(row: JobRow, changes: JobChanges) -> int:
    """0, or the errno refusing the change."""
    if row.state != "PENDING":
        return errors.ESLURM_JOB_NOT_PENDING
    if changes.dependency:
        try:
            parse_deps(changes.dependency)
        except DependencyError:
            return errors.ESLURM_DEPENDENCY
    low = changes.nodes_min or row.nodes_min
    high = changes.nodes_max if changes.nodes_max is not None else row.nodes_max
    if changes.nodes_min is not None and high is not None and high < low:
        return errors.ESLURM_INVALID_NODE_COUNT
    return 0


def apply(row: JobRow, changes: JobChanges, now: float) -> None:
    if changes.dependency is not None:
        text = format_deps(parse_deps(changes.dependency)) if changes.dependency else None
        row.dependency, row.dep_failed = text, False
        if row.reason in (reasons.DEPENDENCY, reasons.DEPENDENCY_NEVER_SATISFIED):
            row.reason = reasons.DEPENDENCY if text else reasons.NONE
        elif text and not row.hold:
            row.reason = reasons.DEPENDENCY
    if changes.begin_time is not None and not row.hold:
        row.eligible_time = max(changes.begin_time, now)
        if changes.begin_time > now:
            row.reason = reasons.BEGIN_TIME
        elif row.reason == reasons.BEGIN_TIME:
            row.reason = reasons.NONE
    if changes.nodes_min is not None:
        row.nodes_min = changes.nodes_min
        row.nodes_max = changes.nodes_max
