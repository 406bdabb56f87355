"""Rows of the store <-> wire dataclasses of ``slurmlite.protocol``."""

from __future__ import annotations

import json
from typing import Any

from controller.store.models import JobRow, StepRow
from slurmlite.protocol import JobInfo, NodeAlloc, StepInfo, from_dict


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
    """A step as the wire's ``StepInfo`` fields."""
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


def step_info(step: StepRow) -> StepInfo:
    return StepInfo(**step_dict(step))


def job_dict(row: JobRow, steps: list[StepRow] | None = None) -> dict[str, Any]:
    """A job as the wire's ``JobInfo`` fields, straight from its row.

    The API lists jobs with this (no dataclass built and taken apart again:
    that was half the time of listing 10,000 pending jobs); ``job_info`` wraps
    the same mapping for the controller's own use.
    """
    allocs = json.loads(row.alloc or "[]")
    gpus = sum(len(a["gpus"]) for a in allocs) if allocs else _requested_gpus(row)
    return {
        "job_id": row.id,
        "name": row.name,
        "user": row.user,
        "uid": row.uid,
        "gid": row.gid,
        "group": row.group,
        "account": row.account,
        "qos": row.qos,
        "partition": row.partition,
        "state": row.state,
        "flags": split_list(row.flags),
        "reason": row.reason,
        "state_desc": row.state_desc,
        "priority": row.priority,
        "nice": row.nice,
        "submit_time": row.submit_time,
        "eligible_time": row.eligible_time,
        "start_time": row.start_time,
        "end_time": row.end_time,
        "work_dir": row.work_dir,
        "submit_dir": row.submit_dir,
        "num_nodes": len(allocs) if allocs else row.nodes_min,
        "nodes_max": row.nodes_max,
        "num_cpus": sum(a["cpus"] for a in allocs) if allocs else row.num_cpus,
        "num_tasks": row.ntasks or row.nodes_min * (row.ntasks_per_node or 1),
        "cpus_per_task": row.cpus_per_task,
        "ntasks_per_node": row.ntasks_per_node,
        "time_limit": row.time_limit,
        "mem_per_node": row.mem_per_node,
        "mem_per_cpu": row.mem_per_cpu,
        "mem_per_gpu": row.mem_per_gpu,
        "tres_per_node": row.tres_per_node,
        "tres_per_job": row.tres_per_job,
        "gpus": gpus,
        "nodes": split_list(row.nodes),
        "alloc": allocs,
        "tasks_per_node": [int(x) for x in split_list(row.layout)],
        "batch_host": row.batch_host,
        "exit_code": row.exit_code,
        "derived_exit_code": row.derived_exit_code,
        "restarts": row.restarts,
        "command": row.command,
        "std_out": row.std_out,
        "std_err": row.std_err,
        "std_in": row.std_in,
        "comment": row.comment,
        "req_nodes": split_list(row.req_nodes),
        "exc_nodes": split_list(row.exc_nodes),
        "exclusive": row.exclusive,
        "constraint": row.constraint,
        "cancelled_by": row.cancelled_by,
        "requeue": row.requeue,
        "last_sched_eval": row.last_sched_eval,
        "steps": [step_dict(s) for s in steps or []],
    }


def job_info(row: JobRow, steps: list[StepRow] | None = None) -> JobInfo:
    return from_dict(JobInfo, job_dict(row, steps))


def _requested_gpus(row: JobRow) -> int:
    if row.gpus_total:
        return row.gpus_total
    return row.gpus_per_node * row.nodes_min
