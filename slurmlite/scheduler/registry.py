"""Named seams: which scheduler and which priority plugin slurm.conf selects.

Slurm chooses its policies by name (``SchedulerType=sched/backfill``,
``PriorityType=priority/multifactor``).  slurmlite keeps the same names and
maps each to a function, so a new policy is one entry here and one function
elsewhere; nothing else changes.

The tables hold ``"module:function"`` paths resolved on first use, so this
module imports no policy code (the policy modules themselves look up the
registry, and eager imports would go round in a circle).

``sched/builtin`` is the main pass alone (spec §4.2); ``sched/backfill``
(Slurm's default) is the main pass followed by backfill (spec §4.3).  The
names are spelled only here: the rest of slurmlite asks this module what a
name means (:func:`backfills`, :func:`is_multifactor`, :func:`is_basic`).
Example::

    >>> scheduler_for("sched/builtin").__name__
    'main_pass'
    >>> scheduler_for("sched/backfill").__name__
    'backfill_pass'
    >>> backfills("sched/backfill"), is_multifactor("priority/basic")
    (True, False)
    >>> scheduler_for("sched/wiki")
    Traceback (most recent call last):
    ...
    slurmlite.scheduler.registry.UnknownPluginError: unknown SchedulerType 'sched/wiki' ...

Reference: ``S:src/interfaces/priority.c`` (plugin chosen by name).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache

TYPE_CHECKING = False  # importing typing costs a command (sprio asks is_basic) ~3 ms
if TYPE_CHECKING:
    from typing import Any

SCHEDULER_TYPES: Mapping[str, str] = {
    "sched/builtin": "slurmlite.scheduler.passes:main_pass",
    "sched/backfill": "slurmlite.scheduler.backfill:backfill_pass",
}

PRIORITY_TYPES: Mapping[str, str] = {
    "priority/basic": "slurmlite.scheduler.priority:basic_priority",
    "priority/multifactor": "slurmlite.scheduler.priority:multifactor_priority",
    # queue orders of a scheduling course (orders.py); slurmlite simulate --order
    "priority/sjf": "slurmlite.scheduler.orders:sjf_priority",
    "priority/ljf": "slurmlite.scheduler.orders:ljf_priority",
    "priority/smallest": "slurmlite.scheduler.orders:smallest_priority",
    "priority/largest": "slurmlite.scheduler.orders:largest_priority",
}

_BACKFILL = "sched/backfill"  # a main pass, then backfill: its plans carry estimates
_MULTIFACTOR = "priority/multifactor"  # factors, usage and fair-share are kept
_BASIC = "priority/basic"  # FIFO: no factors (sprio refuses it)


class UnknownPluginError(ValueError):
    """slurm.conf names a policy slurmlite does not have."""


@cache  # once per name: submissions ask for the priority plugin thousands of times a second
def _resolve(key: str, name: str) -> Callable[..., Any]:
    table = SCHEDULER_TYPES if key == "SchedulerType" else PRIORITY_TYPES
    path = table.get(name)
    if path is None:
        known = ", ".join(sorted(table))
        raise UnknownPluginError(f"unknown {key} {name!r} (known: {known})")
    import importlib  # only the daemons and the tests resolve a policy

    module_name, _, attr = path.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def scheduler_for(name: str) -> Callable[..., Any]:
    """The pass for ``SchedulerType=name``: ``(Snapshot, Policy) -> Plan``."""
    return _resolve("SchedulerType", name)


def priority_for(name: str) -> Callable[..., Any]:
    """The priority function for ``PriorityType=name`` (see ``priority.py``)."""
    return _resolve("PriorityType", name)


def backfills(scheduler_type: str) -> bool:
    """Whether ``SchedulerType=scheduler_type`` backfills (runs backfill after the main pass)."""
    return scheduler_type == _BACKFILL


def _plugin_name(priority_type: str) -> str:
    return priority_type.strip().lower()


def is_multifactor(priority_type: str) -> bool:
    """Whether ``PriorityType=priority_type`` is multifactor (spelling as slurm.conf may
    write it: case and surrounding blanks do not count)."""
    return _plugin_name(priority_type) == _MULTIFACTOR


def is_basic(priority_type: str) -> bool:
    """Whether ``PriorityType=priority_type`` is the FIFO plugin (case and blanks aside)."""
    return _plugin_name(priority_type) == _BASIC
