"""One job as ``sacct --json`` prints it: the accounting record of openapi dbv0.0.38.

Where ``squeue --json`` (``cli/json_jobs.py``) shows the controller's live
view in flat keys, the accounting record (Slurm's ``slurmdb_job_rec_t``,
dumped by ``src/plugins/openapi/dbv0.0.38/jobs.c``) groups them: ``time``
(``submission``, ``eligible``, ``start``, ``end``, ``elapsed``, ``limit``,
and CPU times as ``{seconds, microseconds}``), ``state`` (``current``,
``reason``), ``exit_code`` (``status``, ``return_code``), ``tres``
(``allocated`` and ``requested`` lists of ``{type, name, id, count}``), and
one entry per step under ``steps``.

Exit codes are decoded from the wait status: ``0`` is
``{"status": "SUCCESS", "return_code": 0}``, ``exit 3`` is ``FAILED`` with
``return_code`` 3, a kill by signal 9 ``SIGNALED`` with ``"signal":
{"signal_id": 9, "name": "KILL"}`` added.

TRES ids are Slurm's fixed ones (cpu 1, mem 2, energy 3, node 4, billing 5;
``gres/gpu`` 1001 on a cluster whose first GRES is gpu).  Worked example: a
one-CPU job with ``--mem-per-cpu=1000`` requests ``cpu=1, mem=1000, node=1,
billing=1``; once it ran, ``allocated`` adds ``energy`` with a ``null``
count, as Slurm's does (golden ``60_sacct_json_one``).
"""

from __future__ import annotations

import pwd
import signal

from cli.json_out import epoch
from cli.sacct_format import _reason
from cli.squeue_format import node_list
from slurmlite.seff import job_mem_mib

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from typing import Any

    from slurmlite.protocol import JobInfo, StepInfo

TRES_IDS = {"cpu": 1, "mem": 2, "energy": 3, "node": 4, "billing": 5, "gres/gpu": 1001}
ZERO_TIME = {"seconds": 0, "microseconds": 0}


def tres(name: str, count: int | None) -> dict[str, Any]:
    kind, _, sub = name.partition("/")
    return {"type": kind, "name": sub or None, "id": TRES_IDS[name], "count": count}


def exit_code(status: int | None) -> dict[str, Any]:
    """A wait status as ``{status, return_code[, signal]}``."""
    status = status or 0
    sig, code = status & 0x7F, (status >> 8) & 0xFF
    if sig:
        try:
            name = signal.Signals(sig).name.removeprefix("SIG")
        except ValueError:
            name = str(sig)
        return {"status": "SIGNALED", "return_code": 0, "signal": {"signal_id": sig, "name": name}}
    return {"status": "FAILED" if code else "SUCCESS", "return_code": code}


def _user_name(uid: int | None) -> str | None:
    if uid is None:
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _job_tres(job: JobInfo, allocated: bool) -> list[dict[str, Any]]:
    nodes = len(job.nodes) if allocated else job.num_nodes
    out = [tres("cpu", job.num_cpus), tres("mem", job_mem_mib(job))]
    if allocated:
        out.append(tres("energy", None))
    out += [tres("node", nodes), tres("billing", job.num_cpus)]
    if job.gpus:
        out.append(tres("gres/gpu", job.gpus))
    return out


def step_record(job: JobInfo, step: StepInfo) -> dict[str, Any]:
    """One entry of ``steps``: where it ran, what it held, how it ended."""
    on = [a for a in job.alloc if a.node in step.nodes]
    mem = step.mem or sum(a.mem for a in on)
    energy = [tres("energy", 0)]
    usage = {"max": [], "min": [], "average": energy, "total": energy}
    end = step.end_time or job.end_time
    return {
        "nodes": {"list": list(step.nodes), "count": len(step.nodes),
                  "range": node_list(step.nodes)},
        "tres": {
            "requested": usage,
            "consumed": usage,
            "allocated": [tres("cpu", step.cpus or job.num_cpus), tres("mem", mem),
                          tres("node", len(step.nodes) or 1)],
        },
        "time": {
            "elapsed": max(0, int(end or 0) - int(step.start_time or 0)) if end else 0,
            "end": epoch(end),
            "start": epoch(step.start_time),
            "suspended": 0,
            "system": dict(ZERO_TIME),
            "total": dict(ZERO_TIME),
            "user": dict(ZERO_TIME),
        },
        "exit_code": exit_code(step.exit_code),
        "tasks": {"count": step.ntasks},
        "pid": None,
        "CPU": {"requested_frequency": {"min": 0, "max": 0}, "governor": []},
        "kill_request_user": None,
        "state": step.state,
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": 0}},
        "step": {"job_id": job.job_id, "het": {"component": None}, "id": step.step_id,
                 "name": step.name},
        "task": {"distribution": "Block" if step.step_id.isdigit() else "Unknown"},
    }  # fmt: skip


def job_record(job: JobInfo, cluster: str) -> dict[str, Any]:
    """The dbv0.0.38 record of one job with its steps."""
    started = bool(job.start_time) and bool(job.nodes)
    end = job.end_time
    elapsed = max(0, int(end) - int(job.start_time)) if started and end else 0
    task_str = getattr(job, "array_task_str", None)
    return {
        "account": job.account,
        "comment": {"administrator": None, "job": job.comment or None, "system": job.system_comment},
        "allocation_nodes": len(job.nodes) if started else 0,
        "array": {
            "job_id": job.array_job_id or 0,
            "limits": {"max": {"running": {"tasks": getattr(job, "array_max_tasks", 0) or 0}}},
            "task": task_str if job.array_task_id is None and task_str else None,
            "task_id": job.array_task_id,
        },
        "association": {"account": job.account, "cluster": cluster, "partition": None,
                        "user": job.user},
        "cluster": cluster,
        "constraints": job.constraint or "",
        "container": None,
        "derived_exit_code": exit_code(job.derived_exit_code),
        "time": {
            "elapsed": elapsed,
            "eligible": epoch(job.eligible_time),
            "end": epoch(end),
            "start": epoch(job.start_time),
            "submission": epoch(job.submit_time),
            "suspended": 0,
            "system": dict(ZERO_TIME),
            "limit": job.time_limit,
            "total": dict(ZERO_TIME),
            "user": dict(ZERO_TIME),
        },
        "exit_code": exit_code(0 if job.state in ("CANCELLED", "TIMEOUT", "NODE_FAIL")
                               else job.exit_code),
        "flags": ["CLEAR_SCHEDULING", "STARTED_ON_SCHEDULE"] if started else ["CLEAR_SCHEDULING"],
        "group": job.group,
        "het": {"job_id": 0, "job_offset": None},
        "job_id": job.job_id,
        "name": job.name,
        "mcs": {"label": ""},
        "nodes": node_list(job.nodes) if job.nodes else "None assigned",
        "partition": job.partition,
        "priority": job.priority,
        "qos": job.qos,
        "required": {"CPUs": job.num_cpus, "memory": job.mem_per_cpu or job.mem_per_node or 0},
        "kill_request_user": _user_name(job.cancelled_by),
        "reservation": {"id": 0, "name": 0},
        "state": {"current": job.state, "reason": _reason(job)},
        "steps": [step_record(job, s) for s in job.steps],
        "tres": {"allocated": _job_tres(job, True) if started else [],
                 "requested": _job_tres(job, False)},
        "user": job.user,
        "wckey": {"wckey": "", "flags": []},
        "working_directory": job.work_dir,
    }  # fmt: skip
