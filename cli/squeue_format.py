"""squeue's columns: the field table, ``-o``/``-O`` parsing, cell padding.

Pure functions only (no I/O, no clock: ``now`` is a parameter), so sinfo-like
commands and tests can reuse them.  Facts from Slurm 22.05 (``squeue/opts.c``,
``print.c``, ``sort.c``; spec §8.1), written in our own words.

Formats
-------
``-o "%.18i %.9P %R"``: text before the first ``%`` is printed as is; each
``%[.][width]<letter><literal text>`` is one column followed by its literal
text (so separators belong to the column on their left).  ``%%`` does not
print a percent sign: empty pieces between ``%`` are skipped.  An unknown
letter is reported (``Invalid job format specification: X``) and its piece is
printed literally.  ``-O "Name:.10 ,State"`` names columns; without
``:width`` a column is 20 wide and left justified; text after the width is its
suffix.  The default output is ``-O`` style:
``jobarrayid:.18 ,partition:.9 ,name:.8 ,username:.8 ,statecompact:.2 ,
timeused:.10 ,numnodes:.6 ,reasonlist:0``.

Cells (C printf semantics, the part users notice)
------------------------------------------------
* width 0: the whole value;
* left justified: cut to ``width`` and padded with spaces (always cut);
* right justified (``.``): padded on the left; cut to ``width`` (keeping the
  left part) except for "uncut" fields -- times (%M %l %L) and node lists
  (%N, node side of %R), which may overflow.
* a missing string prints ``(null)`` (or nothing when left justified narrower
  than 6, as glibc does).  Example: ``cell("big-running", 8, True)`` ->
  ``"big-runn"``; ``cell("0:09", 10, True)`` -> ``"      0:09"``.

Arrays
------
A pending job array is one row, ``57_[0-9%2]`` (``Row.array_task_str``);
``-r`` expands it to ``57_0`` ... ``57_9`` (:func:`expand_array_rows`).
Sorting and filtering live in ``cli/squeue.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from cli.format_codes import Column, pad, parse_letters, parse_names
from cli.jobtimes import end_after, expected_end, start_time, time_used
from slurmlite import hostlist, states, timefmt
from slurmlite.taskranges import parse_task_ranges

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from typing import Any

if TYPE_CHECKING:  # jobs are JobInfo-shaped views (cli.client.Record) at run time
    from slurmlite.protocol import JobInfo

NO_VAL = 4294967294  # Slurm's "not set" for 32-bit ids (pending array task id)
UNITS = "KMGTP"
DEFAULT_FORMAT2 = (
    "jobarrayid:.18 ,partition:.9 ,name:.8 ,username:.8 ,statecompact:.2 ,"
    "timeused:.10 ,numnodes:.6 ,reasonlist:0"
)
LONG_FORMAT2 = (
    "jobarrayid:.18 ,partition:.9 ,name:.8 ,username:.8 ,state:.8 ,"
    "timeused:.10 ,timelimit:.9 ,numnodes:.6 ,reasonlist:0"
)
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"


class Row:
    """One output line: a job plus what squeue changed about it for display.

    ``array_task_str``: pending array tasks, e.g. ``"0-9%2"``.  (Plain
    classes here, not dataclasses: importing ``dataclasses`` costs a command
    ~10 ms of start-up; see ``cli/client.py``.)
    """

    __slots__ = ("job", "array_task_str", "array_task_id")

    def __init__(
        self, job: JobInfo, array_task_str: str | None = None, array_task_id: int | None = None
    ) -> None:
        self.job, self.array_task_str, self.array_task_id = job, array_task_str, array_task_id

    @classmethod
    def of(cls, job: JobInfo) -> Row:
        task_str = attr(job, "array_task_str") if job.state == "PENDING" else None
        return cls(job, task_str, job.array_task_id)


class Ctx:
    """What every cell may need: the time, and ``convert=False`` with --noconvert
    (memory in plain MB)."""

    __slots__ = ("now", "convert")

    def __init__(self, now: float, convert: bool = True) -> None:
        self.now, self.convert = now, convert


Getter = Callable[[Row, Ctx], "str | None"]


class Field:
    """A column kind: header, value getter, and whether right-justified values
    (``cut``) and the header (``header_cut``) are cut to the width."""

    __slots__ = ("header", "value", "cut", "header_cut")

    def __init__(self, header: str, value: Getter, cut: bool = True, header_cut: bool = True):
        self.header, self.value, self.cut, self.header_cut = header, value, cut, header_cut


# ------------------------------------------------------------------ helpers


def attr(obj: Any, name: str, default: Any = None) -> Any:
    """Optional JobInfo attributes the protocol may grow (dependency, ...)."""
    return getattr(obj, name, default)


def with_changes(job: Any, **changes: Any) -> Any:
    """A copy of ``job`` (a row tuple, a Record or a wire dataclass) with some attributes changed."""
    if hasattr(job, "_replace"):
        return job._replace(**changes)
    from cli.client import Record

    return Record({**vars(job), **changes})


def cell(text: str | None, width: int, right: bool, cut: bool = True) -> str:
    """Pad/cut one value the way squeue's ``printf`` calls do (None: ``(null)``)."""
    if text is None:
        text = "(null)" if width <= 0 or right or width >= 6 else ""
    return pad(text, width, right, cut)


def convert_mb(mb: float, convert: bool = True) -> str:
    """Megabytes with Slurm's exact unit scaling: 1000 -> 1000M, 2048 -> 2G, 2560 -> 2.50G."""
    if int(mb) == 0:
        return "0"
    unit = 1  # index into "KMGTP": start at M
    if convert:
        while mb >= 1024 and int(mb) % 512 == 0 and unit < len(UNITS) - 1:
            mb /= 1024
            unit += 1
    return f"{int(mb)}{UNITS[unit]}" if mb == int(mb) else f"{mb:.2f}{UNITS[unit]}"


def node_list(names: Sequence[str]) -> str:
    return hostlist.compress_sorted(names) if names else ""


def _sched_nodes(row: Row, ctx: Ctx) -> str | None:
    """``%Y``: the nodes the scheduler plans the pending job on, ``(null)`` without."""
    if row.job.state != "PENDING":
        return None
    return node_list(attr(row.job, "sched_nodes") or ()) or None


def shows_reason(job: JobInfo) -> bool:
    """``%R`` shows ``(Reason)`` for pending and failed-ish jobs not completing."""
    if "COMPLETING" in job.flags:
        return False
    return job.state in ("PENDING", "TIMEOUT", "OUT_OF_MEMORY", "DEADLINE", "FAILED") or (
        "STAGE_OUT" in job.flags
    )


def reason_text(job: JobInfo) -> str:
    return job.state_desc or job.reason


def job_id_text(row: Row) -> str:
    job = row.job
    if row.array_task_str:
        return f"{job.array_job_id}_[{row.array_task_str}]"
    if row.array_task_id is not None:
        return f"{job.array_job_id}_{row.array_task_id}"
    return str(job.job_id)


def is_array(row: Row) -> bool:
    return bool(row.array_task_str) or row.array_task_id is not None


def min_memory(job: JobInfo) -> float:
    return job.mem_per_cpu or job.mem_per_node or 0


def _ts(value: float | None, none: str = "N/A") -> str:
    return "NONE" if value == math.inf else timefmt.fmt_timestamp(value, none)


def _end(row: Row, ctx: Ctx) -> str:
    job = row.job
    end = expected_end(job)
    if end is None and job.state == "PENDING" and (start := start_time(job)):
        end = end_after(start, job.time_limit)  # expected to start: its begin time, an estimate
    if job.time_limit is None and end is not None and end > ctx.now:
        return "NONE"
    return _ts(end)


def _left(row: Row, ctx: Ctx) -> str:
    if row.job.time_limit is None:
        return "UNLIMITED"
    return timefmt.fmt_compact(row.job.time_limit * 60 - time_used(row.job, ctx.now))


def reason_list(row: Row, ctx: Ctx) -> str:
    job = row.job
    return f"({reason_text(job)})" if shows_reason(job) else node_list(job.nodes)


def _std(row: Row, which: str) -> str:
    job = row.job
    path = getattr(job, which) or (job.std_out if which == "std_err" else None)
    return path or f"{job.work_dir}/slurm-{job.job_id}.out"


def _pending_secs(job: JobInfo, now: float) -> int:
    """Start - submit once started, else now - submit."""
    start = job.start_time if job.start_time and job.start_time < now else now
    return int(start) - int(job.submit_time)


def _na(value: Any) -> str:
    return "N/A" if value in (None, "") else str(value)


def _f(header: str, value: Getter, cut: bool = True, header_cut: bool = True) -> Field:
    return Field(header, value, cut, header_cut)


def _j(name: str, default: Any = None) -> Getter:
    """Getter for a plain (possibly absent) attribute, None printing ``(null)``."""

    def get(row: Row, ctx: Ctx) -> str | None:
        value = attr(row.job, name, default)
        return None if value is None else str(value)

    return get


# name -> Field; short letters and -O names both point here
FIELDS: dict[str, Field] = {
    "account": _f("ACCOUNT", _j("account")),
    "accruetime": _f("ACCRUE_TIME", lambda r, c: _ts(attr(r.job, "accrue_time", r.job.eligible_time))),
    "allocnodes": _f("ALLOC_NODES", lambda r, c: attr(r.job, "alloc_node", attr(r.job, "submit_host"))),
    "allocsid": _f("ALLOC_SID", lambda r, c: str(attr(r.job, "alloc_sid", 0))),
    "arrayjobid": _f("ARRAY_JOB_ID", lambda r, c: str(r.job.array_job_id if is_array(r) else r.job.job_id)),
    "arraytaskid": _f("ARRAY_TASK_ID", lambda r, c: r.array_task_str or _na(r.array_task_id)),
    "associd": _f("ASSOC_ID", lambda r, c: str(attr(r.job, "assoc_id", 0))),
    "batchflag": _f("BATCH_FLAG", lambda r, c: str(int(attr(r.job, "batch_flag", True)))),
    "batchhost": _f("EXEC_HOST", lambda r, c: r.job.batch_host or "n/a"),
    "boardspernode": _f("BOARDS_PER_NODE", lambda r, c: "N/A"),
    "burstbuffer": _f("BURST_BUFFER", _j("burst_buffer")),
    "burstbufferstate": _f("BURST_BUFFER_STATE", _j("burst_buffer_state")),
    "cluster": _f("CLUSTER", _j("cluster")),
    "clusterfeature": _f("CLUSTER_FEATURES", _j("cluster_features")),
    "command": _f("COMMAND", _j("command")),
    "comment": _f("COMMENT", _j("comment")),
    "container": _f("CONTAINER", _j("container")),
    "contiguous": _f("CONTIGUOUS", lambda r, c: "0"),
    "cores": _f("CORES_PER_SOCKET", lambda r, c: "*"),
    "corespec": _f("CORE_SPEC", lambda r, c: "N/A"),
    "cpus-per-task": _f("CPUS_PER_TASK", lambda r, c: _na(r.job.cpus_per_task)),
    "cpus-per-tres": _f("CPUS_PER_TRES", lambda r, c: _na(attr(r.job, "cpus_per_tres"))),
    "deadline": _f("DEADLINE", lambda r, c: _ts(attr(r.job, "deadline"))),
    "delayboot": _f("DELAY_BOOT", lambda r, c: "0:00"),
    "dependency": _f("DEPENDENCY", _j("dependency")),
    "derivedec": _f("DERIVED_EC", lambda r, c: str(r.job.derived_exit_code or 0)),
    "eligibletime": _f("ELIGIBLE_TIME", lambda r, c: _ts(r.job.eligible_time)),
    "endtime": _f("END_TIME", _end),
    "exit_code": _f("EXIT_CODE", lambda r, c: str(r.job.exit_code or 0)),
    "excnodes": _f("EXC_NODES", lambda r, c: node_list(r.job.exc_nodes)),
    "feature": _f("FEATURES", _j("constraint")),
    "groupid": _f("GROUP", lambda r, c: str(r.job.gid)),
    "groupname": _f("GROUP", lambda r, c: r.job.group or str(r.job.gid)),
    "jobarrayid": _f("JOBID", lambda r, c: job_id_text(r)),
    "jobid": _f("JOBID", lambda r, c: str(r.job.job_id)),
    "lastschedeval": _f("LAST_SCHED_EVAL", lambda r, c: _ts(r.job.last_sched_eval)),
    "licenses": _f("LICENSES", _j("licenses")),
    "maxcpus": _f("MAX_CPUS", lambda r, c: str(r.job.num_cpus)),
    "maxnodes": _f("MAX_NODES", lambda r, c: str(r.job.nodes_max or r.job.num_nodes)),
    "mcslabel": _f("MCSLABEL", _j("mcs_label")),
    "mem-per-tres": _f("MEM_PER_TRES", lambda r, c: _na(r.job.mem_per_gpu and f"gres:gpu:{r.job.mem_per_gpu}")),
    "mincpus": _f("MIN_CPUS", lambda r, c: str(max(r.job.cpus_per_task, 1))),
    "minmemory": _f("MIN_MEMORY", lambda r, c: convert_mb(min_memory(r.job), c.convert)),
    "mintime": _f("TIME_MIN", lambda r, c: "0:00"),
    "mintmpdisk": _f("MIN_TMP_DISK", lambda r, c: "0"),
    "name": _f("NAME", lambda r, c: r.job.name),
    "network": _f("NETWORK", _j("network")),
    "nice": _f("NICE", lambda r, c: str(r.job.nice)),
    "nodelist": _f("NODELIST", lambda r, c: node_list(r.job.nodes), cut=False, header_cut=False),
    "ntpernode": _f("NTASKS_PER_NODE", lambda r, c: _na(r.job.ntasks_per_node)),
    "ntpercore": _f("NTASKS_PER_CORE", lambda r, c: "N/A"),
    "ntpersocket": _f("NTASKS_PER_SOCKET", lambda r, c: "N/A"),
    "ntperboard": _f("NTASKS_PER_BOARD", lambda r, c: "N/A"),
    "numcpus": _f("CPUS", lambda r, c: str(r.job.num_cpus)),
    "numnodes": _f("NODES", lambda r, c: str(r.job.num_nodes)),
    "numtasks": _f("TASKS", lambda r, c: str(r.job.num_tasks)),
    "oversubscribe": _f("OVER_SUBSCRIBE", lambda r, c: "NO" if r.job.exclusive else "OK"),
    "partition": _f("PARTITION", lambda r, c: r.job.partition),
    "pendingtime": _f("PENDING_TIME", lambda r, c: str(_pending_secs(r.job, c.now))),
    "prefer": _f("PREFER", _j("prefer")),
    "priority": _f("PRIORITY", lambda r, c: f"{r.job.priority / 0xFFFFFFFF:16.14f}"),
    "prioritylong": _f("PRIORITY", lambda r, c: str(r.job.priority)),
    "qos": _f("QOS", lambda r, c: r.job.qos),
    "reason": _f("REASON", lambda r, c: reason_text(r.job)),
    "reasonlist": _f("NODELIST(REASON)", reason_list, cut=False, header_cut=False),
    "reboot": _f("REBOOT", lambda r, c: "0"),
    "reqnodes": _f("REQ_NODES", lambda r, c: node_list(r.job.req_nodes)),
    "requeue": _f("REQUEUE", lambda r, c: str(int(r.job.requeue))),
    "reservation": _f("RESERVATION", _j("reservation")),
    "restartcnt": _f("RESTART_COUNT", lambda r, c: str(r.job.restarts)),
    "schednodes": _f("SCHEDNODES", _sched_nodes, cut=False, header_cut=False),
    "sct": _f("S:C:T", lambda r, c: "*:*:*"),
    "sockets": _f("SOCKETS_PER_NODE", lambda r, c: "*"),
    "starttime": _f("START_TIME", lambda r, c: _ts(start_time(r.job))),
    "state": _f("STATE", lambda r, c: states.job_state_long(r.job.state, r.job.flags)),
    "statecompact": _f("ST", lambda r, c: states.job_state_compact(r.job.state, r.job.flags)),
    "stderr": _f("STDERR", lambda r, c: _std(r, "std_err")),
    "stdin": _f("STDIN", lambda r, c: r.job.std_in or "/dev/null"),
    "stdout": _f("STDOUT", lambda r, c: _std(r, "std_out")),
    "submittime": _f("SUBMIT_TIME", lambda r, c: _ts(r.job.submit_time)),
    "threads": _f("THREADS_PER_CORE", lambda r, c: "*"),
    "timeleft": _f("TIME_LEFT", _left, cut=False),
    "timelimit": _f("TIME_LIMIT", lambda r, c: timefmt.fmt_limit_compact(r.job.time_limit), cut=False),
    "timeused": _f("TIME", lambda r, c: "0:00" if r.job.state == "PENDING" else timefmt.fmt_compact(time_used(r.job, c.now)), cut=False),
    "tres-alloc": _f("TRES_ALLOC", lambda r, c: _na(attr(r.job, "tres_alloc"))),
    "tres-per-job": _f("TRES_PER_JOB", lambda r, c: _na(r.job.tres_per_job)),
    "tres-per-node": _f("TRES_PER_NODE", lambda r, c: _na(r.job.tres_per_node)),
    "tres-per-socket": _f("TRES_PER_SOCKET", lambda r, c: "N/A"),
    "tres-per-task": _f("TRES_PER_TASK", lambda r, c: "N/A"),
    "tres-bind": _f("TRES_BIND", lambda r, c: "N/A"),
    "tres-freq": _f("TRES_FREQ", lambda r, c: "N/A"),
    "userid": _f("UID", lambda r, c: str(r.job.uid)),
    "username": _f("USER", lambda r, c: r.job.user),
    "wckey": _f("WCKEY", _j("wckey")),
    "workdir": _f("WORK_DIR", lambda r, c: r.job.work_dir),
}  # fmt: skip
LONG_ALIASES = {
    "gres": "tres-per-node",
    "shared": "oversubscribe",
    "cpuspertask": "cpus-per-task",
    "tres": "tres-alloc",
}

SHORT: dict[str, str] = {
    "a": "account", "A": "jobid", "b": "tres-per-node", "B": "batchhost", "c": "mincpus",
    "C": "numcpus", "d": "mintmpdisk", "D": "numnodes", "e": "endtime", "E": "dependency",
    "f": "feature", "F": "arrayjobid", "g": "groupname", "G": "groupid", "h": "oversubscribe",
    "H": "sockets", "i": "jobarrayid", "I": "cores", "j": "name", "J": "threads",
    "k": "comment", "K": "arraytaskid", "l": "timelimit", "L": "timeleft", "m": "minmemory",
    "M": "timeused", "n": "reqnodes", "N": "nodelist", "o": "command", "O": "contiguous",
    "p": "priority", "P": "partition", "q": "qos", "Q": "prioritylong", "r": "reason",
    "R": "reasonlist", "S": "starttime", "t": "statecompact", "T": "state", "u": "username",
    "U": "userid", "v": "reservation", "V": "submittime", "w": "wckey", "W": "licenses",
    "x": "excnodes", "X": "corespec", "y": "nice", "Y": "schednodes", "z": "sct",
    "Z": "workdir",
}  # fmt: skip


# ------------------------------------------------------------------ parsing
# The grammar and the Column are cli.format_codes'; a column's key is its name in FIELDS.

_EVERY_LETTER = "|".join(f"%{chr(c)}" for c in [*range(ord("a"), ord("z") + 1),
                                                 *range(ord("A"), ord("Z") + 1)])  # fmt: skip


def parse_format(fmt: str) -> tuple[list[Column], list[str]]:
    """``-o`` text -> columns plus error messages for unknown letters (``%all``: every
    letter squeue knows, the others skipped silently)."""
    return parse_letters(fmt, SHORT, "job", every=_EVERY_LETTER)


def _long_key(name: str) -> str | None:
    key = name.lower()
    key = "numtasks" if key.startswith("numtasks") else LONG_ALIASES.get(key, key)
    return key if key in FIELDS and key != "excnodes" else None  # -O has no ExcNodes


def parse_format_long(fmt: str) -> tuple[list[Column], list[str]]:
    """``-O`` text (``name[:[.]width[suffix]]`` comma list) -> columns, errors."""
    return parse_names(fmt, _long_key)


# ---------------------------------------------------------------- rendering


def header_line(columns: Sequence[Column]) -> str:
    parts = []
    for col in columns:
        f = FIELDS.get(col.key)
        if f is not None:
            parts.append(cell(f.header, col.width, col.right, f.header_cut))
        parts.append(col.suffix)
    return "".join(parts)


def row_line(row: Row, columns: Sequence[Column], ctx: Ctx) -> str:
    parts = []
    for col in columns:
        f = FIELDS.get(col.key)
        if f is not None:
            cut = f.cut or (f.value is reason_list and shows_reason(row.job))
            parts.append(cell(f.value(row, ctx), col.width, col.right, cut))
        parts.append(col.suffix)
    return "".join(parts)


# ------------------------------------------------------------------- arrays


def expand_array_rows(rows: Sequence[Row]) -> list[Row]:
    """``-r``: one row per pending array task, in place of the combined row."""
    out: list[Row] = []
    for row in rows:
        if row.array_task_str:
            for task in parse_task_ranges(row.array_task_str):
                out.append(Row(row.job, None, task))
        else:
            out.append(row)
    return out
