"""``scontrol show job|node|partition|config`` records, as pure text builders.

Each record is a list of ``Key=Value`` lines; :func:`join_record` glues them
the way Slurm 22.05 does (``src/api/job_info.c``, ``node_info.c``,
``partition_info.c``; spec §8.4): the first line flush left, every other one
after a newline and a 3-space indent, then a blank line -- or, with ``-o``,
everything on one line separated by single spaces and ended by one newline.
Some records end with an indented empty line (jobs) or carry trailing spaces
inside lines (``CoresPerSocket=1 ``, ``OS=... ``, ``Partitions=a,b ``); those
are part of the format and are kept, because scripts split on them.

Worked example (``-o``)::

    join_record(["PartitionName=debug", "Default=YES"], one_liner=True)
    == "PartitionName=debug Default=YES\\n"

Value rules (spec §10.2): durations in the fixed ``HH:MM:SS`` style, limits
``UNLIMITED``; timestamps local ISO, ``Unknown`` when unset; missing strings
``(null)``.  Nothing here reads the clock or the network: ``now`` and the
records come from the caller (``cli/scontrol.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

from cli.sinfo_format import gres_used
from cli.squeue_format import NO_VAL, attr, convert_mb, expected_end, node_list, start_time
from slurmlite import states, timefmt

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)

if TYPE_CHECKING:  # records are client Records (tests: these dataclasses)
    from slurmlite.protocol import JobInfo, NodeInfo, PartitionInfo

INDENT = "   "


def join_record(lines: Sequence[str], one_liner: bool) -> str:
    if one_liner:
        return " ".join(lines) + "\n"
    return ("\n" + INDENT).join(lines) + "\n\n"


def _ts(value: float | None) -> str:
    return timefmt.fmt_timestamp(value, "Unknown")


def _null(value: object) -> str:
    return "(null)" if value in (None, "", []) else str(value)


# --------------------------------------------------------------------- jobs


def run_time(job: JobInfo, now: float) -> int:
    """RunTime seconds: 0 while pending or never started, up to now while running."""
    if job.state == "PENDING" or not job.start_time:
        return 0
    if job.state == "SUSPENDED" and attr(job, "pre_sus_time") is not None:
        return int(attr(job, "pre_sus_time"))
    end = now if job.state == "RUNNING" or not job.end_time else job.end_time
    return max(0, int(end) - int(job.start_time))


def job_tres(job: JobInfo) -> str:
    """``cpu=4,mem=4000M,node=2,billing=4,gres/gpu=4``: allocated, else requested."""
    explicit = attr(job, "tres_alloc") or attr(job, "tres_req")
    if explicit:
        return str(explicit)
    if job.alloc:
        cpus = sum(a.cpus for a in job.alloc)
        mem = sum(a.mem for a in job.alloc)
        nodes = len(job.alloc)
        gpus = sum(len(a.gpus) for a in job.alloc)
    else:
        cpus, nodes, gpus = job.num_cpus, job.num_nodes, job.gpus
        if job.mem_per_cpu:
            mem = job.mem_per_cpu * job.num_cpus
        elif job.mem_per_gpu and gpus:
            mem = job.mem_per_gpu * gpus
        else:
            mem = (job.mem_per_node or 0) * job.num_nodes
    parts = [f"cpu={cpus}"]
    if mem:
        parts.append(f"mem={convert_mb(mem)}")
    parts += [f"node={nodes}", f"billing={cpus}"]
    if gpus:
        parts.append(f"gres/gpu={gpus}")
    return ",".join(parts)


def expand_path(job: JobInfo, pattern: str) -> str:
    """Output-file patterns as scontrol shows them: ``%A %a %j %u %x``, relative to WorkDir."""
    task = NO_VAL if job.array_task_id is None else job.array_task_id
    array_id = job.array_job_id if job.array_task_id is not None else job.job_id
    text = pattern.replace("%A", str(array_id)).replace("%a", str(task))
    text = text.replace("%j", str(job.job_id)).replace("%u", job.user).replace("%x", job.name)
    return text if text.startswith("/") else f"{job.work_dir}/{text}"


def std_paths(job: JobInfo) -> tuple[str, str, str]:
    """(StdErr, StdIn, StdOut) with Slurm's defaults (``slurm-%j.out``, ``/dev/null``)."""
    if job.std_out:
        out = expand_path(job, job.std_out)
    elif job.array_job_id:
        task = NO_VAL if job.array_task_id is None else job.array_task_id
        out = f"{job.work_dir}/slurm-{job.array_job_id}_{task}.out"
    else:
        out = f"{job.work_dir}/slurm-{job.job_id}.out"
    err = expand_path(job, job.std_err) if job.std_err else out
    stdin = expand_path(job, job.std_in) if job.std_in else "/dev/null"
    return err, stdin, out


def _array_words(job: JobInfo) -> list[str]:
    if not job.array_job_id:
        return []
    task_str = attr(job, "array_task_str") if job.state == "PENDING" else None
    words = [f"ArrayJobId={job.array_job_id}", f"ArrayTaskId={task_str or job.array_task_id}"]
    throttle = attr(job, "array_max_tasks")
    if throttle is None and task_str and "%" in task_str:
        throttle = int(task_str.split("%", 1)[1])
    if throttle:
        words.append(f"ArrayTaskThrottle={throttle}")
    return words


def _node_range(job: JobInfo) -> str:
    low, high = job.num_nodes, 0
    if job.state == "PENDING" and job.nodes_max:
        high = job.nodes_max
        low = min(low, high)
    return f"{low}-{high}" if high else str(low)


def job_lines(job: JobInfo, now: float, details: bool = False) -> list[str]:
    """The lines of one ``scontrol show job`` record (before joining)."""
    end = expected_end(job)
    if job.time_limit is None and end is not None and end > now:
        end_text = "Unknown"
    else:
        end_text = "Unknown" if end in (None, math.inf) else _ts(end)
    reason = (job.state_desc or "").replace(" ", "_").replace("\t", "_") or job.reason
    if job.mem_per_cpu:
        min_mem = f"MinMemoryCPU={convert_mb(job.mem_per_cpu)}"
    else:
        min_mem = f"MinMemoryNode={convert_mb(job.mem_per_node or 0)}"
    batch = bool(attr(job, "batch_flag", True))
    alloc_node = attr(job, "alloc_node") or attr(job, "submit_host") or "(null)"
    lines = [
        " ".join([f"JobId={job.job_id}", *_array_words(job), f"JobName={job.name}"]),
        f"UserId={job.user}({job.uid}) GroupId={job.group}({job.gid}) MCS_label=N/A",
        f"Priority={job.priority} Nice={job.nice} Account={job.account} QOS={job.qos}",
        f"JobState={states.job_state_long(job.state, job.flags)} Reason={reason} "
        f"Dependency={_null(attr(job, 'dependency'))}",
        f"Requeue={int(job.requeue)} Restarts={job.restarts} BatchFlag={int(batch)} Reboot=0 "
        f"ExitCode={states.exit_code_str(job.exit_code)}",
    ]
    causes = attr(job, "restart_causes")
    if causes:  # slurmlite: why each restart happened (slurmlite.restarts)
        lines.append(f"RestartCauses={causes}")
    if details:
        lines.append(f"DerivedExitCode={states.exit_code_str(job.derived_exit_code)}")
    lines += [
        f"RunTime={timefmt.fmt_fixed(run_time(job, now))} "
        f"TimeLimit={timefmt.fmt_limit_fixed(job.time_limit)} TimeMin=N/A",
        f"SubmitTime={_ts(job.submit_time)} EligibleTime={_ts(job.eligible_time)}",
        f"AccrueTime={_ts(attr(job, 'accrue_time', job.eligible_time))}",
        # a pending job's StartTime is its expected start (backfill's estimate), if any
        f"StartTime={_ts(start_time(job))} EndTime={end_text} Deadline=N/A",
        f"SuspendTime=None SecsPreSuspend=0 LastSchedEval={_ts(job.last_sched_eval)} "
        f"Scheduler={attr(job, 'scheduler') or 'Main'}",
        f"Partition={job.partition} AllocNode:Sid={alloc_node}:{attr(job, 'alloc_sid', 0)}",
        f"ReqNodeList={_null(node_list(job.req_nodes))} ExcNodeList={_null(node_list(job.exc_nodes))}",
    ]
    sched = node_list(attr(job, "sched_nodes") or ()) if job.state == "PENDING" else ""
    lines.append(f"NodeList={node_list(job.nodes)}" + (f" SchedNodeList={sched}" if sched else ""))
    if job.batch_host:
        lines.append(f"BatchHost={job.batch_host}")
    min_cpus = max(1, job.cpus_per_task) * (job.ntasks_per_node or 1)
    lines += [
        f"NumNodes={_node_range(job)} NumCPUs={job.num_cpus} NumTasks={job.num_tasks} "
        f"CPUs/Task={job.cpus_per_task} ReqB:S:C:T=0:0:*:*",
        f"TRES={job_tres(job)}",
        f"Socks/Node=* NtasksPerN:B:S:C={job.ntasks_per_node or 0}:0:*:* CoreSpec=*",
        f"MinCPUsNode={min_cpus} {min_mem} MinTmpDiskNode=0",
        f"Features={_null(job.constraint)} DelayBoot=00:00:00",
        f"OverSubscribe={'NO' if job.exclusive else 'OK'} Contiguous=0 Licenses=(null) Network=(null)",
        f"Command={_null(job.command)}",
        f"WorkDir={job.work_dir}",
    ]
    if attr(job, "system_comment"):  # why the last run ended (slurmlite.failures)
        lines.append(f"SystemComment={job.system_comment} ")
    if job.comment:
        lines.append(f"Comment={job.comment} ")
    if batch:
        err, stdin, out = std_paths(job)
        lines += [f"StdErr={err}", f"StdIn={stdin}", f"StdOut={out}"]
    lines.append("Power=")
    if job.tres_per_job:
        lines.append(f"TresPerJob={job.tres_per_job}")
    if job.tres_per_node:
        lines.append(f"TresPerNode={job.tres_per_node}")
    if job.mail_type and job.mail_user:  # after the TresPer lines, as Slurm prints it
        lines.append(f"MailUser={job.mail_user} MailType={job.mail_type}")
    lines.append("")  # Slurm ends every job record with one more separator
    return lines


def job_text(job: JobInfo, now: float, one_liner: bool = False, details: bool = False) -> str:
    return join_record(job_lines(job, now, details), one_liner)


def task_view(job: JobInfo, task: int | None) -> JobInfo | None:
    """The record to print for ``show job ID_TASK`` (None: task not in this job): for a
    pending array, a copy of its attributes with that ``array_task_id``, no task range.
    """
    if task is None:
        return job
    if job.array_task_id == task:
        return job
    task_str = getattr(job, "array_task_str", None)
    if job.state != "PENDING" or not task_str:
        return None
    from slurmlite.taskranges import parse_task_ranges

    if task not in parse_task_ranges(task_str):
        return None
    view = SimpleNamespace(**{**vars(job), "array_task_id": task, "array_task_str": None})
    if "%" in task_str and getattr(view, "array_max_tasks", None) is None:
        view.array_max_tasks = int(task_str.split("%", 1)[1])
    return view  # type: ignore[return-value]


# -------------------------------------------------------------------- nodes


def _tres(cpus: int, mem: int, gpus: int, billing: bool) -> str:
    parts = [f"cpu={cpus}"] if cpus else []
    if mem:
        parts.append(f"mem={convert_mb(mem)}")
    if billing and cpus:
        parts.append(f"billing={cpus}")
    if gpus:
        parts.append(f"gres/gpu={gpus}")
    return ",".join(parts)


def node_lines(
    node: NodeInfo,
    slurmd_port: int | None = None,
    layout: tuple[int, int, int, int] | None = None,
) -> list[str]:
    """One ``scontrol show node`` record.

    ``layout`` is (boards, sockets, cores per socket, threads per core) from
    slurm.conf; without it a node of N CPUs shows N one-core sockets, as Slurm
    does when only ``CPUs=`` is configured (golden: CPUs=2 -> Sockets=2).
    """
    boards, sockets, cores, threads = layout or (1, node.cpus, 1, 1)
    first = f"NodeName={node.name} " + (f"Arch={node.arch} " if node.arch else "")
    load = "N/A" if node.cpu_load is None else f"{node.cpu_load:.2f}"
    features = ",".join(node.features) or "(null)"
    addr = [f"NodeAddr={node.addr} ", f"NodeHostName={node.hostname} "]
    if slurmd_port is not None and node.port != slurmd_port:
        addr.append(f"Port={node.port} ")
    if node.version:
        addr.append(f"Version={node.version}")
    free = "N/A" if node.free_mem is None else str(node.free_mem)
    lines = [
        first + f"CoresPerSocket={cores} ",
        f"CPUAlloc={node.alloc_cpus} CPUEfctv={node.cpus} CPUTot={node.cpus} CPULoad={load}",
        f"AvailableFeatures={features}",
        f"ActiveFeatures={features}",
        f"Gres={node.gres or '(null)'}",
        "".join(addr),
    ]
    if node.outside_gpus:  # not Slurm's (it has no outside use): where the GPUs went
        lines.insert(-1, f"GresUsed={gres_used(node)}")
    if node.os:
        lines.append(f"OS={node.os} ")
    lines += [
        f"RealMemory={node.real_memory} AllocMem={node.alloc_mem} FreeMem={free} "
        f"Sockets={sockets} Boards={boards}",
        f"State={states.node_state_long(node.state, node.flags)} ThreadsPerCore={threads} "
        f"TmpDisk=0 Weight={node.weight} Owner=N/A MCS_label=N/A",
    ]
    if node.partitions:
        lines.append(f"Partitions={','.join(node.partitions)} ")
    boot = _ts(node.boot_time) if node.boot_time else "None"
    started = _ts(node.slurmd_start_time) if node.slurmd_start_time else "None"
    lines += [
        f"BootTime={boot} SlurmdStartTime={started}",
        f"LastBusyTime={_ts(node.last_busy_time)}",
        f"CfgTRES={_tres(node.cpus, node.real_memory, node.gpus, True)}",
        f"AllocTRES={_tres(node.alloc_cpus, node.alloc_mem, len(node.alloc_gpus), False)}",
        "CapWatts=n/a",
        "CurrentWatts=0 AveWatts=0",
        "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",
    ]
    if node.reason:
        stamp = ""
        if node.reason_time:
            stamp = f" [{node.reason_user or 'root'}@{_ts(node.reason_time)}]"
        reason_lines = node.reason.split("\n")
        lines.append(f"Reason={reason_lines[0]}{stamp}")
        lines += [f"       {extra}" for extra in reason_lines[1:] if extra]
    return lines


def node_text(
    node: NodeInfo,
    one_liner: bool = False,
    slurmd_port: int | None = None,
    layout: tuple[int, int, int, int] | None = None,
) -> str:
    return join_record(node_lines(node, slurmd_port, layout), one_liner)


# --------------------------------------------------------------- partitions


def partition_tres(part: PartitionInfo) -> str:
    """``cpu=4,mem=8000M,node=2,billing=4,gres/gpu=4``: everything the partition holds."""
    tres = f"cpu={part.total_cpus}"
    if part.total_mem:
        tres += f",mem={convert_mb(part.total_mem)}"
    tres += f",node={part.total_nodes},billing={part.total_cpus}"
    if part.total_gpus:
        tres += f",gres/gpu={part.total_gpus}"
    return tres


def partition_lines(part: PartitionInfo) -> list[str]:
    default_time = (
        "NONE" if part.default_time is None else timefmt.fmt_fixed(part.default_time * 60)
    )
    return [
        f"PartitionName={part.name}",
        "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL",
        f"AllocNodes=ALL Default={'YES' if part.default else 'NO'} QoS={attr(part, 'qos') or 'N/A'}",
        f"DefaultTime={default_time} DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO",
        f"MaxNodes=UNLIMITED MaxTime={timefmt.fmt_limit_fixed(part.max_time)} MinNodes=0 "
        "LLN=NO MaxCPUsPerNode=UNLIMITED",
        f"Nodes={node_list(part.nodes) or '(null)'}",
        f"PriorityJobFactor={part.priority_job_factor} PriorityTier={part.priority_tier} "
        "RootOnly=NO ReqResv=NO OverSubscribe=NO",
        "OverTimeLimit=NONE PreemptMode=OFF",
        f"State={part.state} TotalCPUs={part.total_cpus} TotalNodes={part.total_nodes} "
        "SelectTypeParameters=NONE",
        "JobDefaults=(null)",
        "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED",
        f"TRES={partition_tres(part)}",
    ]


def partition_text(part: PartitionInfo, one_liner: bool = False) -> str:
    return join_record(partition_lines(part), one_liner)


# ------------------------------------------------------------------- config


def config_text(items: Sequence[tuple[str, str]], as_of: float) -> str:
    """``Configuration data as of <time>`` then ``Key<pad to 23> = value`` lines."""
    out = [f"Configuration data as of {timefmt.fmt_timestamp(as_of, 'Unknown')}"]
    out += [f"{key:<23} = {value}" for key, value in items]
    return "\n".join(out) + "\n"
