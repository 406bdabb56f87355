"""One job as ``squeue --json`` and ``scontrol --json show job`` print it (openapi v0.0.38).

Slurm 22.05 builds this record in ``src/plugins/openapi/v0.0.38/jobs.c``
from the controller's ``job_info_t``; :func:`job_record` builds the same keys,
in the same order, from our ``JobInfo``.  The rules, as the golden capture
``50_squeue_json_one`` shows them:

* times are Unix seconds, ``0`` when unset (a pending job's ``start_time``);
* a count Slurm does not know is ``null``, never a string (``array_task_id``
  of a plain job, ``time_limit`` without a limit, ``billable_tres`` before
  the job has resources);
* a missing text is ``""``; ``exit_code`` is the raw wait status (exit 1 is
  ``256``, a job killed by SIGTERM ``15``);
* ``job_resources`` appears only for a job that holds (or held) nodes: per
  node, its cores and the memory allocated there.

Worked example: a pending ``sbatch --gres=gpu:2 --wrap true`` has
``"job_state": "PENDING"``, ``"nodes": ""``, ``"tres_per_node": "gres:gpu:2"``,
``"start_time": 0`` and no ``job_resources`` key.

Fields slurmlite has no counterpart for (federation, burst buffers, MCS,
core specialisation, frequencies) keep the values a plain Slurm cluster
shows for them.
"""

from __future__ import annotations

from cli.json_out import epoch
from cli.scontrol_show import job_tres
from cli.squeue_format import attr, node_list

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from typing import Any

    from slurmlite.protocol import JobInfo

SHOW_FLAGS = ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"]


def _path(job: JobInfo, pattern: str | None) -> str:
    """An output file as the controller stores it: the pattern, made absolute."""
    if not pattern:
        return ""
    return pattern if pattern.startswith("/") else f"{job.work_dir}/{pattern}"


def _flags(job: JobInfo) -> list[str]:
    out = []
    if job.start_time and job.state != "PENDING":
        out.append("JOB_ACCRUE_OVER")
    if job.restarts:
        out.append("JOB_WAS_RUNNING")
    return out


def job_resources(job: JobInfo) -> dict[str, Any] | None:
    """Where the job runs: each node's allocated cores (socket 0, cores 0..n-1) and memory."""
    if not job.alloc:
        return None
    nodes = []
    for a in job.alloc:
        cores = {str(i): "allocated" for i in range(max(1, a.cpus))}
        nodes.append(
            {
                "sockets": {"0": {"cores": cores}},
                "nodename": a.node,
                "cpus_used": 0,
                "memory_used": 0,
                "memory_allocated": a.mem,
            }
        )
    return {
        "nodes": node_list([a.node for a in job.alloc]),
        "allocated_cores": sum(a.cpus for a in job.alloc),
        "allocated_hosts": len(job.alloc),
        "allocated_nodes": nodes,
    }


def _gres_detail(job: JobInfo) -> list[str]:
    """``gpu:2(IDX:0-1)`` per node holding GPUs (what scontrol -d shows as GRES)."""
    out = []
    for a in job.alloc:
        if a.gpus:
            idx = ",".join(str(g) for g in sorted(a.gpus))
            if len(a.gpus) > 1 and sorted(a.gpus) == list(range(min(a.gpus), max(a.gpus) + 1)):
                idx = f"{min(a.gpus)}-{max(a.gpus)}"
            out.append(f"gpu:{len(a.gpus)}(IDX:{idx})")
    return out


def job_record(job: JobInfo, cluster: str) -> dict[str, Any]:
    """The v0.0.38 record of one job (see the module docstring for the value rules)."""
    started = bool(job.alloc)
    batch = bool(attr(job, "batch_flag", True))
    pending_array = job.state == "PENDING" and attr(job, "array_task_str")
    d: dict[str, Any] = {
        "account": job.account,
        "accrue_time": epoch(attr(job, "accrue_time", job.eligible_time)),
        "admin_comment": "",
        "array_job_id": job.array_job_id or 0,
        "array_task_id": None if pending_array else job.array_task_id,
        "array_max_tasks": attr(job, "array_max_tasks") or 0,
        "array_task_string": (attr(job, "array_task_str") or "") if pending_array else "",
        "association_id": 0,
        "batch_features": "",
        "batch_flag": batch,
        "batch_host": job.batch_host or "",
        "flags": _flags(job),
        "burst_buffer": "",
        "burst_buffer_state": "",
        "cluster": cluster,
        "cluster_features": "",
        "command": job.command or "",
        "comment": job.comment or "",
        "container": "",
        "contiguous": False,
        "core_spec": None,
        "thread_spec": None,
        "cores_per_socket": None,
        "billable_tres": float(job.num_cpus) if started else None,
        "cpus_per_task": job.cpus_per_task if job.cpus_per_task > 1 else None,
        "cpu_frequency_minimum": None,
        "cpu_frequency_maximum": None,
        "cpu_frequency_governor": None,
        "cpus_per_tres": "",
        "deadline": 0,
        "delay_boot": 0,
        "dependency": attr(job, "dependency") or "",
        "derived_exit_code": job.derived_exit_code or 0,
        "eligible_time": epoch(job.eligible_time),
        "end_time": epoch(job.end_time),
        "excluded_nodes": node_list(job.exc_nodes),
        "exit_code": job.exit_code or 0,
        "features": job.constraint or "",
        "federation_origin": "",
        "federation_siblings_active": "",
        "federation_siblings_viable": "",
        "gres_detail": _gres_detail(job),
        "group_id": job.gid,
        "group_name": job.group,
        "job_id": job.job_id,
    }
    resources = job_resources(job)
    if resources is not None:
        d["job_resources"] = resources
    d.update(_rest(job, started, batch))
    return d


def _rest(job: JobInfo, started: bool, batch: bool) -> dict[str, Any]:
    """The keys after ``job_resources``, in Slurm's order."""
    return {
        "job_state": job.state,
        "last_sched_evaluation": epoch(job.last_sched_eval),
        "licenses": "",
        "max_cpus": 0,
        "max_nodes": job.nodes_max or 0,
        "mcs_label": "",
        "memory_per_tres": f"gres:gpu:{job.mem_per_gpu}" if job.mem_per_gpu else "",
        "name": job.name,
        "nodes": node_list(job.nodes),
        "nice": job.nice or None,
        "tasks_per_core": None,
        "tasks_per_node": job.ntasks_per_node or 0,
        "tasks_per_socket": None,
        "tasks_per_board": 0,
        "cpus": job.num_cpus,
        "node_count": len(job.nodes) if started else job.num_nodes,
        "tasks": job.num_tasks,
        "het_job_id": 0,
        "het_job_id_set": "",
        "het_job_offset": 0,
        "partition": job.partition,
        "prefer": "",
        "memory_per_node": job.mem_per_node if not job.mem_per_cpu else None,
        "memory_per_cpu": job.mem_per_cpu or None,
        "minimum_cpus_per_node": max(1, job.cpus_per_task) * (job.ntasks_per_node or 1),
        "minimum_tmp_disk_per_node": 0,
        "preempt_time": 0,
        "pre_sus_time": 0,
        "priority": job.priority,
        "profile": None,
        "qos": job.qos,
        "reboot": False,
        "required_nodes": node_list(job.req_nodes),
        "requeue": bool(job.requeue),
        "resize_time": 0,
        "restart_cnt": job.restarts,
        "resv_name": "",
        "shared": "none" if job.exclusive else None,
        "show_flags": list(SHOW_FLAGS),
        "sockets_per_board": 0,
        "sockets_per_node": None,
        "start_time": epoch(job.start_time),
        "state_description": job.state_desc or "",
        "state_reason": job.reason,
        "standard_error": _path(job, job.std_err),
        "standard_input": _path(job, job.std_in) or ("/dev/null" if batch else ""),
        "standard_output": _path(job, job.std_out),
        "submit_time": epoch(job.submit_time),
        "suspend_time": 0,
        "system_comment": getattr(job, "system_comment", None) or "",
        "time_limit": job.time_limit,
        "time_minimum": 0,
        "threads_per_core": None,
        "tres_bind": "",
        "tres_freq": "",
        "tres_per_job": job.tres_per_job or "",
        "tres_per_node": job.tres_per_node or "",
        "tres_per_socket": "",
        "tres_per_task": "",
        "tres_req_str": job_tres(job),
        "tres_alloc_str": job_tres(job) if started else "",
        "user_id": job.uid,
        "user_name": job.user,
        "wckey": "",
        "current_working_directory": job.work_dir,
    }
