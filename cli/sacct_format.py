"""sacct's columns and rows, as pure functions of accounting records (spec §8.3).

Columns
-------
``-o JobID%-20,state`` is read the way sacct 22.05 reads it: items split on
``,``; ``%N`` sets the width (positive = right-justified, negative = left);
a name matches the first field (in :data:`FIELDS` order) it is a
case-insensitive *prefix* of (``jobid`` -> JobID, ``st`` -> Start); a prefix of
``ALL`` (even an empty name) selects every field.  The table holds one width
per field, so when a field is named twice the last ``%N`` wins for both.
An empty item ends the list (real sacct stops there too).  The grammar and
the printing rules are the ones ``cli.format_fields`` keeps for sacct, sshare
and sacctmgr.

Rows
----
Each job gives a job row (``57_[0-9%2]``, ``30_1``, ``65``) unless only some
of its steps were asked for (``-j 69.0``), then its step rows
(``65.batch``, ``65.extern``, ``69.0``) unless ``-X``.

Printing
--------
Fixed width: every value is followed by one space; text longer than its
width is cut and its last visible character becomes ``+``
(``CANCELLED by 1001`` in 10 -> ``CANCELLED+``); numbers and durations are
never cut; dates are cut silently.  ``-p`` ends every field with ``|``
(or ``--delimiter``), ``-P`` separates fields only.

Worked example (golden ``60_sacct_parsable2``)::

    JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode
    65|ok|debug|acct_a|1|COMPLETED|0:0
    65.batch|batch||acct_a|1|COMPLETED|0:0

Reference: facts read from Slurm 22.05 ``src/sacct/{sacct,options,print}.c``
and ``src/common/print_fields.c``.
"""

from __future__ import annotations

from collections import namedtuple

from cli import sacct_usage
from cli.format_fields import Column, atoi, cut_plus, find_field, join, justify, split_width
from cli.format_fields import header_lines as fields_header
from slurmlite import hostlist, states, timefmt
from slurmlite.errors import CommandLineError
from slurmlite.seff import job_mem_mib

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)

if TYPE_CHECKING:  # records are client Records or these dataclasses; never imported at run time
    from collections.abc import Callable, Sequence

    from slurmlite.protocol import JobInfo, StepInfo

DEFAULT_FIELDS = "jobid,jobname,partition,account,alloccpus,state,exitcode"
BRIEF_FIELDS = "jobid,state,exitcode"
LONG_FIELDS = (
    "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,"
    "maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,"
    "mincputask,avecpu,ntasks,alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,"
    "reqcpufreqmax,reqcpufreqgov,reqmem,consumedenergy,maxdiskread,maxdiskreadnode,"
    "maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,"
    "reqtres,alloctres,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,"
    "tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,tresusageoutmax,"
    "tresusageoutmaxn,tresusageoutmaxt,tresusageoutave,tresusageouttot"
)

# (name, default width, kind): s text (cut with +), u number, d date, t duration
_TABLE = """
Account 10 s|AdminComment 15 s|AllocCPUS 10 u|AllocNodes 10 s|AllocTRES 10 s|AssocID 7 u
AveCPU 10 s|AveCPUFreq 10 s|AveDiskRead 14 s|AveDiskWrite 14 s|AvePages 10 s|AveRSS 10 s
AveVMSize 10 s|BlockID 16 s|Cluster 10 s|Comment 14 s|Constraints 19 s|ConsumedEnergy 14 s
ConsumedEnergyRaw 17 u|Container 19 s|CPUTime 10 t|CPUTimeRAW 10 u|DBIndex -10 u
DerivedExitCode 15 s|Elapsed 10 t|ElapsedRaw 10 u|Eligible 19 d|End 19 d|ExitCode 8 s
Flags 19 s|GID 6 u|Group 9 s|JobID -12 s|JobIDRaw -12 s|JobName 10 s|Layout 9 s
MaxDiskRead 12 s|MaxDiskReadNode 15 s|MaxDiskReadTask 15 u|MaxDiskWrite 12 s
MaxDiskWriteNode 16 s|MaxDiskWriteTask 16 u|MaxPages 8 s|MaxPagesNode 12 s|MaxPagesTask 14 u
MaxRSS 10 s|MaxRSSNode 10 s|MaxRSSTask 10 u|MaxVMSize 10 s|MaxVMSizeNode 14 s
MaxVMSizeTask 14 u|McsLabel 12 s|MinCPU 10 s|MinCPUNode 10 s|MinCPUTask 10 u|NCPUS 10 u
NNodes 8 u|NodeList 15 s|NTasks 8 u|Partition 10 s|Priority 10 u|QOS 10 s|QOSRAW 6 u
Reason 22 s|ReqCPUFreq 10 s|ReqCPUFreqGov 13 s|ReqCPUFreqMax 13 s|ReqCPUFreqMin 13 s
ReqCPUS 8 u|ReqMem 10 s|ReqNodes 8 s|ReqTRES 10 s|Reservation 20 s|ReservationId 8 u
Reserved 10 t|ResvCPU 10 t|ResvCPURAW 10 u|Start 19 d|State 10 s|Submit 19 d
SubmitLine 20 s|Suspended 10 t|SystemComment 15 s|SystemCPU 10 s|Timelimit 10 s
TimelimitRaw 10 s|TotalCPU 10 s|TRESUsageInAve 14 s|TRESUsageInMax 14 s
TRESUsageInMaxNode 18 s|TRESUsageInMaxTask 18 s|TRESUsageInMin 14 s|TRESUsageInMinNode 18 s
TRESUsageInMinTask 18 s|TRESUsageInTot 14 s|TRESUsageOutAve 15 s|TRESUsageOutMax 15 s
TRESUsageOutMaxNode 19 s|TRESUsageOutMaxTask 19 s|TRESUsageOutMin 15 s
TRESUsageOutMinNode 19 s|TRESUsageOutMinTask 19 s|TRESUsageOutTot 15 s|UID 6 u|User 9 s
UserCPU 10 s|WCKey 10 s|WCKeyID 10 u|WorkDir 20 s
"""
FIELDS: tuple[tuple[str, int, str], ...] = tuple(
    (name, int(width), kind)
    for item in _TABLE.replace("\n", "|").split("|")
    if item
    for name, width, kind in [item.split()]
)
# slurmlite's fields: named by -o, never in --helpformat or ALL (as in 22.05's list)
EXTRA_FIELDS: tuple[tuple[str, int, str], ...] = (("Restarts", 8, "u"), ("RestartCauses", 40, "s"))
_NAMES = tuple(name for name, _w, _k in FIELDS + EXTRA_FIELDS)
NO_VAL = 4294967294  # Slurm's "unset" 32-bit value (array task of a plain job)
# sacct's Reason is the last pending reason other than None/Priority/Resources
# (slurmctld's "state_reason_prev_db"); reasons set when a job ends never count
_NOT_PREV_REASONS = {"None", "Priority", "Resources", "NonZeroExitCode", "RaisedSignal",
                     "TimeLimit", "JobLaunchFailure", "NodeDown", "OutOfMemory"}  # fmt: skip


def helpformat_text() -> str:
    """``sacct --helpformat``: the field names, four per line, 19 wide."""
    out = []
    for i, (name, _w, _k) in enumerate(FIELDS):
        out.append(" " if i & 3 else "\n" if i else "")
        out.append(f"{name:<19}")
    return "".join(out) + "\n"


def parse_fields(text: str) -> list[Column]:
    """Accumulated ``-o`` text (items end with ``,``) -> columns (module doc).

    A bad item is a ``CommandLineError``: ``sacct: error: Invalid field
    requested: "x"``, or ``sacct: fatal:`` for a field Slurm removed (exit 1).
    """
    chosen: list[int] = []
    widths: dict[int, int] = {}
    rest = text
    while "," in rest:
        item, rest = rest.split(",", 1)
        item = item.lstrip()
        if not item:
            break
        name, width_text = split_width(item)
        width = None if width_text is None else atoi(width_text)
        if "all".startswith(name.lower()):
            for i in range(len(FIELDS)):
                chosen.append(i)
                if width is not None:
                    widths[i] = width
            continue
        index = find_field(name, _NAMES)
        if index is None:
            if name.lower() in ("allocgres", "reqgres"):
                new = "AllocTRES" if name.lower() == "allocgres" else "ReqTRES"
                old = "AllocGRES" if new == "AllocTRES" else "ReqGRES"
                raise CommandLineError([f"sacct: fatal: {old} has been removed, please use {new}"])
            raise CommandLineError([f'sacct: error: Invalid field requested: "{name}"'])
        chosen.append(index)
        if width is not None:
            widths[index] = width
    table = FIELDS + EXTRA_FIELDS
    return [Column(table[i][0], widths.get(i, table[i][1]), table[i][2]) for i in chosen]


# ------------------------------------------------------------------ values


class Ctx:
    """What a value may need besides its record: the time, the cluster, unit conversion."""

    __slots__ = ("now", "cluster", "convert")

    def __init__(self, now: float, cluster: str = "", convert: bool = True) -> None:
        self.now, self.cluster, self.convert = now, cluster, convert


def convert_mb(mb: int, convert: bool = True) -> str:
    """Memory in MB the way TRES strings show it: 1000 -> 1000M, 2048 -> 2G, 2560 -> 2.50G."""
    num, unit = float(mb), 2
    if int(num) == 0:
        return "0"
    while convert and num >= 1024 and int(num) % 512 == 0 and unit < 5:
        num, unit = num / 1024, unit + 1
    suffix = " KMGTP"[unit]
    return f"{int(num)}{suffix}" if num == int(num) else f"{num:.2f}{suffix}"


def job_id_text(job: JobInfo) -> str:
    """``65``, ``30_1``, pending array ``57_[0-9%2]``."""
    task_str = getattr(job, "array_task_str", None)
    if job.array_job_id and task_str and job.array_task_id is None:
        return f"{job.array_job_id}_[{task_str}]"
    if job.array_job_id and job.array_task_id is not None:
        return f"{job.array_job_id}_{job.array_task_id}"
    return str(job.job_id)


def _exit_code(status: int | None) -> str:
    """sacct's ExitCode: a code of 128+ (a shell's signal report) drops the 128."""
    if status is not None and status & 0x7F == 0 and (status >> 8) & 0xFF >= 128:
        status -= 128 << 8
    return states.exit_code_str(status)


def _job_exit_code(job: JobInfo) -> str:
    """The job row's ExitCode as accounting recorded it.

    When the controller ends a job itself (time limit, cancel, node failure)
    the accounting record is closed before the batch shell's status arrives,
    so the job row keeps 0:0 while its ``.batch`` step shows the signal
    (golden 60_sacct_j_states: TIMEOUT 0:0 / .batch CANCELLED 0:15).
    """
    if job.state in ("CANCELLED", "TIMEOUT", "NODE_FAIL"):
        return "0:0"
    return _exit_code(job.exit_code)


def _tres(cpus: int, mem: int, nodes: int, gpus: int, billing: int | None, convert: bool) -> str:
    """``billing=1,cpu=1,gres/gpu=2,mem=1000M,node=1`` (names in alphabetical order)."""
    parts = [] if billing is None else [f"billing={billing}"]
    parts.append(f"cpu={cpus}")
    if gpus:
        parts.append(f"gres/gpu={gpus}")
    if mem:
        parts.append(f"mem={convert_mb(mem, convert)}")
    parts.append(f"node={nodes}")
    return ",".join(parts)


def _started(job: JobInfo) -> bool:
    return bool(job.start_time) and bool(job.nodes)


def _elapsed(start: float | None, end: float | None, now: float) -> int:
    if not start:
        return 0
    return max(0, int(end or now) - int(start))


def _reason(job: JobInfo) -> str:
    """``reason_prev`` when the controller keeps it, else the current reason, filtered."""
    prev = getattr(job, "reason_prev", None)
    if prev is not None:
        return prev
    return "None" if job.reason in _NOT_PREV_REASONS else job.reason


def _job_state(job: JobInfo) -> str:
    if job.state == "CANCELLED" and job.cancelled_by is not None:
        return f"CANCELLED by {job.cancelled_by}"
    return job.state


def _limit(job: JobInfo, raw: bool) -> str | None:
    if job.time_limit is None:
        return "UNLIMITED"
    if job.time_limit == 0:
        return None
    return str(job.time_limit) if raw else timefmt.fmt_limit_fixed(job.time_limit)


def _reserved(job: JobInfo, now: float) -> int:
    if not job.eligible_time:
        return 0
    return int(job.start_time or now) - int(job.eligible_time)


Value = str | int | float | None
if TYPE_CHECKING:
    _JobGetter = Callable[[JobInfo, Ctx], Value]
    _StepGetter = Callable[[JobInfo, StepInfo, Ctx], Value]


def _job_values() -> dict[str, _JobGetter]:
    elapsed = lambda j, c: _elapsed(j.start_time, j.end_time, c.now)  # noqa: E731
    return {
        "Account": lambda j, c: j.account,
        "AllocCPUS": lambda j, c: j.num_cpus,
        "NCPUS": lambda j, c: j.num_cpus,
        "ReqCPUS": lambda j, c: j.num_cpus,
        "AllocNodes": lambda j, c: str(len(j.nodes) if _started(j) else 0),
        "AllocTRES": lambda j, c: _tres(j.num_cpus, job_mem_mib(j), len(j.nodes), j.gpus, j.num_cpus,
                                         c.convert) if _started(j) else None,
        "ReqTRES": lambda j, c: _tres(j.num_cpus, job_mem_mib(j), j.num_nodes, j.gpus, j.num_cpus,
                                       c.convert),
        "Cluster": lambda j, c: c.cluster,
        "Comment": lambda j, c: j.comment,
        "Constraints": lambda j, c: j.constraint or "",
        "CPUTime": lambda j, c: elapsed(j, c) * j.num_cpus,
        "CPUTimeRAW": lambda j, c: elapsed(j, c) * j.num_cpus,
        "DerivedExitCode": lambda j, c: states.exit_code_str(j.derived_exit_code),
        "Elapsed": elapsed,
        "ElapsedRaw": elapsed,
        "Eligible": lambda j, c: j.eligible_time,
        "End": lambda j, c: j.end_time,
        "ExitCode": lambda j, c: _job_exit_code(j),
        "Flags": lambda j, c: "SchedMain" if j.start_time else "None",
        "GID": lambda j, c: j.gid,
        "Group": lambda j, c: j.group,
        "JobID": lambda j, c: job_id_text(j),
        "JobIDRaw": lambda j, c: str(j.job_id),
        "JobName": lambda j, c: j.name,
        "NNodes": lambda j, c: len(j.nodes) if _started(j) else j.num_nodes,
        "NodeList": lambda j, c: hostlist.compress_sorted(j.nodes) if j.nodes else "None assigned",
        "Partition": lambda j, c: j.partition,
        "Priority": lambda j, c: j.priority,
        "QOS": lambda j, c: j.qos,
        "QOSRAW": lambda j, c: 1 if j.qos == "normal" else None,
        "Reason": lambda j, c: _reason(j),
        "ReqCPUFreq": lambda j, c: "Unknown",
        "ReqCPUFreqGov": lambda j, c: "Unknown",
        "ReqCPUFreqMax": lambda j, c: "Unknown",
        "ReqCPUFreqMin": lambda j, c: "Unknown",
        "ReqMem": lambda j, c: convert_mb(job_mem_mib(j), c.convert) if job_mem_mib(j) else None,
        "ReqNodes": lambda j, c: str(j.num_nodes),
        "Reserved": lambda j, c: _reserved(j, c.now),
        "Restarts": lambda j, c: j.restarts,
        "RestartCauses": lambda j, c: getattr(j, "restart_causes", "") or None,
        "ResvCPU": lambda j, c: _reserved(j, c.now) * j.num_cpus,
        "ResvCPURAW": lambda j, c: _reserved(j, c.now) * j.num_cpus,
        "Start": lambda j, c: j.start_time,
        "State": lambda j, c: _job_state(j),
        "Submit": lambda j, c: j.submit_time,
        "Suspended": lambda j, c: 0,
        "SystemComment": lambda j, c: getattr(j, "system_comment", None),  # slurmlite.failures
        "SystemCPU": lambda j, c: "00:00:00",
        "UserCPU": lambda j, c: "00:00:00",
        "TotalCPU": lambda j, c: "00:00:00",
        "Timelimit": lambda j, c: _limit(j, False),
        "TimelimitRaw": lambda j, c: _limit(j, True),
        "UID": lambda j, c: j.uid,
        "User": lambda j, c: j.user,
        "WCKey": lambda j, c: "",
        "WCKeyID": lambda j, c: 0,
        "WorkDir": lambda j, c: j.work_dir,
    }  # fmt: skip


def _step_cpus(j: JobInfo, s: StepInfo) -> int:
    return s.cpus or j.num_cpus


def _step_alloc(j: JobInfo, s: StepInfo, convert: bool) -> str:
    on = [a for a in j.alloc if a.node in s.nodes]
    mem = s.mem or sum(a.mem for a in on)
    gpus = sum(len(a.gpus) for a in on)
    return _tres(_step_cpus(j, s), mem, len(s.nodes) or 1, gpus, None, convert)


def _step_values() -> dict[str, _StepGetter]:
    elapsed = lambda j, s, c: _elapsed(s.start_time, s.end_time or j.end_time, c.now)  # noqa: E731
    energy = lambda j, s, c: "energy=0"  # noqa: E731
    return {
        "Account": lambda j, s, c: j.account,
        "AllocCPUS": lambda j, s, c: _step_cpus(j, s),
        "NCPUS": lambda j, s, c: _step_cpus(j, s),
        "ReqCPUS": lambda j, s, c: _step_cpus(j, s),
        "AllocNodes": lambda j, s, c: str(len(s.nodes)),
        "AllocTRES": lambda j, s, c: _step_alloc(j, s, c.convert),
        "AveCPUFreq": lambda j, s, c: "0",
        "Cluster": lambda j, s, c: c.cluster,
        "ConsumedEnergy": lambda j, s, c: "0",
        "ConsumedEnergyRaw": lambda j, s, c: 0,
        "CPUTime": lambda j, s, c: elapsed(j, s, c) * _step_cpus(j, s),
        "CPUTimeRAW": lambda j, s, c: elapsed(j, s, c) * _step_cpus(j, s),
        "Elapsed": elapsed,
        "ElapsedRaw": elapsed,
        "Eligible": lambda j, s, c: s.start_time,
        "End": lambda j, s, c: s.end_time or j.end_time,
        "ExitCode": lambda j, s, c: _exit_code(s.exit_code),
        "JobID": lambda j, s, c: f"{job_id_text(j)}.{s.step_id}",
        "JobIDRaw": lambda j, s, c: f"{j.job_id}.{s.step_id}",
        "JobName": lambda j, s, c: s.name,
        "Layout": lambda j, s, c: "Block" if s.step_id.isdigit() else "Unknown",
        "NNodes": lambda j, s, c: len(s.nodes),
        "NodeList": lambda j, s, c: hostlist.compress_sorted(s.nodes) if s.nodes else "None assigned",
        "NTasks": lambda j, s, c: s.ntasks,
        "ReqCPUFreq": lambda j, s, c: "0",
        "ReqCPUFreqGov": lambda j, s, c: "0",
        "ReqCPUFreqMax": lambda j, s, c: "0",
        "ReqCPUFreqMin": lambda j, s, c: "0",
        "ReqNodes": lambda j, s, c: str(len(s.nodes)),
        "Start": lambda j, s, c: s.start_time,
        "State": lambda j, s, c: s.state,
        "Submit": lambda j, s, c: s.start_time,
        "Suspended": lambda j, s, c: 0,
        "SystemCPU": lambda j, s, c: "00:00:00",
        "UserCPU": lambda j, s, c: "00:00:00",
        "TotalCPU": lambda j, s, c: "00:00:00",
        "TRESUsageInAve": energy, "TRESUsageInTot": energy,
        "TRESUsageOutAve": energy, "TRESUsageOutTot": energy,
    }  # fmt: skip


_JOB = _job_values() | sacct_usage.JOB  # the measured columns: cli.sacct_usage
_STEP = _step_values() | sacct_usage.STEP


def row_values(
    columns: Sequence[Column], job: JobInfo, step: StepInfo | None, ctx: Ctx
) -> list[Value]:
    """The raw values of one row; None = unset (printed blank)."""
    if step is None:
        return [_JOB[c.name](job, ctx) if c.name in _JOB else None for c in columns]
    return [_STEP[c.name](job, step, ctx) if c.name in _STEP else None for c in columns]


# ---------------------------------------------------------------- printing


class Style(namedtuple("Style", "parsable delimiter", defaults=("", None))):  # noqa: PYI024
    """``parsable``: "" fixed width, "p" every field ends with |, "P" between fields;
    ``delimiter`` replaces the | (``--delimiter``)."""

    __slots__ = ()


def _cell(col: Column, value: Value) -> str:
    """One value as text, before padding (dates are cut to the width)."""
    if col.kind == "d":
        text = timefmt.fmt_timestamp(float(value) if value else None, none="Unknown")
        return text[: abs(col.width)]
    if value is None:
        return ""
    if col.kind == "t" and isinstance(value, int):
        return timefmt.fmt_fixed(value)
    return str(value)


def _fixed(col: Column, value: Value) -> str:
    width = abs(col.width)
    if value is None and col.kind != "d":  # unset: blank, at least one space
        return justify(" "[:width] if col.kind == "s" else " ", col.width)
    text = _cell(col, value)
    return justify(cut_plus(text, width) if col.kind == "s" else text, col.width)


def _sep(style: Style) -> str:
    return "|" if style.delimiter is None else style.delimiter


def header_lines(columns: Sequence[Column], style: Style) -> list[str]:
    """The header line, plus the dashes line in fixed-width mode."""
    return fields_header(columns, style.parsable, _sep(style))


def render_row(columns: Sequence[Column], values: Sequence[Value], style: Style) -> str:
    """One job or step row, without the newline."""
    if style.parsable:
        cells = [_cell(c, v) for c, v in zip(columns, values, strict=True)]
        return join(cells, style.parsable, _sep(style))
    return "".join(_fixed(c, v) for c, v in zip(columns, values, strict=True))
