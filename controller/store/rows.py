"""Rows of the store <-> wire dataclasses of ``slurmlite.protocol``.

A job's wire form (``JobInfo``) is made from its ``jobs`` row by one table,
``JOB_FIELDS``: for every field, the columns it reads and how (nothing: the
column as stored; else a function of those columns).  Two users share it:

* ``job_dict`` / ``job_info``: the whole job, from an ORM row;
* ``row_maker(fields)``: only some fields, as a list, from a plain tuple of
  the ``LISTING_COLUMNS`` (what the listings select, no ORM object made).
  ``squeue`` asks for a dozen fields of 10,000 jobs; building the fifty
  others, and sending them, was most of the time it waited.

Because both go through the table, a projected row is by construction what
``job_dict`` gives for those keys::

    make = row_maker(["job_id", "state", "flags", "num_nodes"])
    make(values)  -> [7, "CANCELLED", ["COMPLETING"], 2]   # alloc '[{..n1..},{..n2..}]'
    job_dict(row) -> {"job_id": 7, ..., "state": "CANCELLED", "flags": ["COMPLETING"], ...}

A few fields are derived: while a job holds an allocation its node, CPU and
GPU counts are those of the allocation (a pending job shows what it asked
for), ``num_tasks`` falls back to nodes x tasks-per-node, and comma-list
columns become lists.  ``steps`` is not a column: listings append the job's
step dicts to the tuple (``[]`` when not asked for).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from controller.store.models import JobRow, StepRow
from slurmlite import dependency
from slurmlite.arrays import with_throttle
from slurmlite.protocol import JobInfo, NodeAlloc, from_dict


def split_list(text: str | None) -> list[str]:
    return [x for x in (text or "").split(",") if x]


def add_flag(flags: str, flag: str) -> str:
    """Comma-list of state flags with ``flag`` added once."""
    items = split_list(flags)
    if flag not in items:
        items.append(flag)
    return ",".join(items)


def drop_flag(flags: str, flag: str) -> str:
    return ",".join(f for f in split_list(flags) if f != flag)


def allocs_of(alloc: str | None) -> list[NodeAlloc]:
    """A job row's ``alloc`` column (JSON) as ``NodeAlloc`` values."""
    return [NodeAlloc(**a) for a in json.loads(alloc or "[]")]


def step_dict(step: StepRow) -> dict[str, Any]:
    """A step as the wire's ``StepInfo`` fields (from an ORM row or a selected row)."""
    return {
        "job_id": step.job_id,
        "step_id": step.step_id,
        "name": step.name,
        "state": step.state,
        "exit_code": step.exit_code,
        "start_time": step.start_time,
        "end_time": step.end_time,
        "nodes": split_list(step.nodes),
        "cpus": step.cpus,
        "mem": step.mem,
        "ntasks": step.ntasks,
    }


# ------------------------------------------------------------ the field table


def _allocs(alloc: str | None) -> list[dict[str, Any]]:
    return json.loads(alloc) if alloc and alloc != "[]" else []


def _num_nodes(alloc: str | None, nodes_min: int) -> int:
    allocs = _allocs(alloc)
    return len(allocs) if allocs else nodes_min


def _num_cpus(alloc: str | None, num_cpus: int) -> int:
    allocs = _allocs(alloc)
    return sum(a["cpus"] for a in allocs) if allocs else num_cpus


def _num_tasks(ntasks: int | None, nodes_min: int, per_node: int | None) -> int:
    return ntasks or nodes_min * (per_node or 1)


def _gpus(alloc: str | None, gpus_total: int | None, per_node: int, nodes_min: int) -> int:
    allocs = _allocs(alloc)
    if allocs:
        return sum(len(a["gpus"]) for a in allocs)
    return gpus_total if gpus_total else per_node * nodes_min


def _ints(text: str | None) -> list[int]:
    return [int(x) for x in split_list(text)]


def _array_task_str(pending: str | None, throttle: int | None) -> str | None:
    """A pending array's remainder as squeue/scontrol print it: ``0-9%2`` (None: no remainder)."""
    return with_throttle(pending, throttle) if pending else None


Maker = Callable[..., Any]
_AS_IS = None  # the column's value unchanged


# JobInfo field -> (the columns it is made from, how); in job_dict's key order
def _dependency(text: str | None, failed: bool) -> str | None:
    """What is still waited for, as scontrol shows it: ``afterok:50(unfulfilled)``."""
    return dependency.show(dependency.stored(text), bool(failed)) if text else None


JOB_FIELDS: dict[str, tuple[tuple[str, ...], Maker | None]] = {
    "job_id": (("id",), _AS_IS),
    **{k: ((k,), _AS_IS) for k in ("name", "user", "uid", "gid", "group", "account")},
    **{k: ((k,), _AS_IS) for k in ("qos", "partition", "state")},
    "flags": (("flags",), split_list),
    **{k: ((k,), _AS_IS) for k in ("reason", "state_desc", "priority", "nice", "submit_time")},
    **{k: ((k,), _AS_IS) for k in ("eligible_time", "start_time", "end_time", "work_dir")},
    "submit_dir": (("submit_dir",), _AS_IS),
    "num_nodes": (("alloc", "nodes_min"), _num_nodes),
    "nodes_max": (("nodes_max",), _AS_IS),
    "num_cpus": (("alloc", "num_cpus"), _num_cpus),
    "num_tasks": (("ntasks", "nodes_min", "ntasks_per_node"), _num_tasks),
    **{k: ((k,), _AS_IS) for k in ("cpus_per_task", "ntasks_per_node", "time_limit")},
    **{k: ((k,), _AS_IS) for k in ("mem_per_node", "mem_per_cpu", "mem_per_gpu")},
    **{k: ((k,), _AS_IS) for k in ("tres_per_node", "tres_per_job")},
    "gpus": (("alloc", "gpus_total", "gpus_per_node", "nodes_min"), _gpus),
    "nodes": (("nodes",), split_list),
    "alloc": (("alloc",), _allocs),
    "tasks_per_node": (("layout",), _ints),
    **{k: ((k,), _AS_IS) for k in ("batch_host", "exit_code", "derived_exit_code", "restarts")},
    "restart_causes": (("restart_causes",), _AS_IS),
    "system_comment": (("system_comment",), _AS_IS),
    **{k: ((k,), _AS_IS) for k in ("command", "std_out", "std_err", "std_in", "comment")},
    "req_nodes": (("req_nodes",), split_list),
    "exc_nodes": (("exc_nodes",), split_list),
    **{k: ((k,), _AS_IS) for k in ("exclusive", "constraint", "cancelled_by", "requeue")},
    "last_sched_eval": (("last_sched_eval",), _AS_IS),
    "array_job_id": (("array_job_id",), _AS_IS),
    "array_task_id": (("array_task_id",), _AS_IS),
    "array_task_str": (("array_pending", "array_max_tasks"), _array_task_str),
    "array_max_tasks": (("array_max_tasks",), _AS_IS),
    "alloc_node": (("submit_host",), _AS_IS),
    "alloc_sid": (("alloc_sid",), _AS_IS),
    "sched_start": (("sched_start",), _AS_IS),
    "sched_nodes": (("sched_nodes",), split_list),
    "dependency": (("dependency", "dep_failed"), _dependency),
    **{k: ((k,), _AS_IS) for k in ("mail_type", "mail_user")},
    "steps": (("steps",), list),
    # measured usage: not a column; the accounting answer fills it (controller.accounting.usage)
    "usage": ((), list),
}

# What a listing selects, in this order; "steps" (not a column) is appended by the lister.
LISTING_COLUMNS: tuple[str, ...] = tuple(
    c.key for c in JobRow.__table__.columns if any(c.key in cols for cols, _ in JOB_FIELDS.values())
)
_POSITION = {name: i for i, name in enumerate((*LISTING_COLUMNS, "steps"))}
_listing_values = attrgetter(*LISTING_COLUMNS)


class UnknownField(ValueError):
    """A requested field that ``JobInfo`` does not have."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Invalid field: {name}")
        self.name = name


def _getter(name: str) -> Callable[[Sequence[Any]], Any]:
    if name not in JOB_FIELDS:
        raise UnknownField(name)
    cols, make = JOB_FIELDS[name]
    at = [_POSITION[c] for c in cols]
    if make is None:
        i = at[0]
        return lambda v: v[i]
    if len(at) == 1:
        i, one = at[0], make
        return lambda v: one(v[i])
    return lambda v: make(*[v[i] for i in at])


def row_maker(names: Sequence[str]) -> Callable[[Sequence[Any]], list[Any]]:
    """A function: listing tuple (+ steps) -> the values of ``names``, in that order.

    Raises ``UnknownField`` for a name that is not a ``JobInfo`` field.
    """
    getters = [_getter(n) for n in names]
    return lambda values: [g(values) for g in getters]


JOB_DICT_KEYS: tuple[str, ...] = tuple(JOB_FIELDS)
_whole = row_maker(JOB_DICT_KEYS)


def dict_of(values: Sequence[Any]) -> dict[str, Any]:
    """The ``job_dict`` of a listing tuple (+ steps)."""
    return dict(zip(JOB_DICT_KEYS, _whole(values), strict=True))


def job_dict(row: JobRow, steps: list[StepRow] | None = None) -> dict[str, Any]:
    """A job as the wire's ``JobInfo`` fields, straight from its row."""
    return dict_of((*_listing_values(row), [step_dict(s) for s in steps or []]))


def job_info(row: JobRow, steps: list[StepRow] | None = None) -> JobInfo:
    return from_dict(JobInfo, job_dict(row, steps))
