"""squeue's path for big queues: ask only for the fields a listing reads, lay out many rows fast.

With 10,000 pending jobs, ``squeue`` spent its time on data it never
printed and on per-cell function calls.  Here:

* ``NEEDS`` / ``SORT_NEEDS`` / ``ROW_NEEDS`` / ``FILTER_NEEDS`` say which
  ``JobInfo`` fields each column, sort letter and filter reads, and
  :func:`needed_fields` joins them for one listing; :func:`load_jobs` asks
  the controller for just those (``GET /v1/jobs?fields=...``), as
  ``namedtuple`` rows.  ``tests/cli/test_squeue_needs.py`` renders every
  column and sort from full jobs and from projected rows and fails on any
  difference, so a table cannot fall behind the getters.
* :func:`rows_text` prints all rows column by column with one format
  string per line (what ``squeue_format.row_line`` prints row by row).

Worked example: the default listing (``%.18i %.9P %.8j %.8u %.2t %.10M
%.6D %R``, sorted ``P,t,-p``) asks for 15 of JobInfo's ~60 fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cli.common import get_client
from cli.format_codes import Column
from cli.squeue_format import FIELDS, Ctx, Row, reason_list, shows_reason

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from typing import Any

# The JobInfo fields each column reads (squeue_format.FIELDS), so that squeue asks
# the controller for those alone (10,000 pending jobs: ~1.5 MB to parse instead of ~9 MB).  A
# column missing here reads nothing of the job.  tests/cli/test_squeue_needs.py
# traces every getter over varied jobs and fails if one reads a field not listed.
NEEDS: dict[str, tuple[str, ...]] = {
    "account": ("account",), "accruetime": ("eligible_time",), "allocnodes": ("alloc_node",),
    "allocsid": ("alloc_sid",),
    "arrayjobid": ("array_job_id", "job_id"), "batchhost": ("batch_host",),
    "command": ("command",), "comment": ("comment",), "cpus-per-task": ("cpus_per_task",),
    "dependency": ("dependency",), "derivedec": ("derived_exit_code",),
    "eligibletime": ("eligible_time",),
    "endtime": ("end_time", "start_time", "state", "time_limit"), "exit_code": ("exit_code",),
    "excnodes": ("exc_nodes",), "feature": ("constraint",), "groupid": ("gid",),
    "groupname": ("group", "gid"), "jobarrayid": ("array_job_id", "job_id"), "jobid": ("job_id",),
    "lastschedeval": ("last_sched_eval",), "maxcpus": ("num_cpus",),
    "maxnodes": ("nodes_max", "num_nodes"), "mem-per-tres": ("mem_per_gpu",),
    "mincpus": ("cpus_per_task",), "minmemory": ("mem_per_cpu", "mem_per_node"), "name": ("name",),
    "nice": ("nice",), "nodelist": ("nodes",), "ntpernode": ("ntasks_per_node",),
    "numcpus": ("num_cpus",), "numnodes": ("num_nodes",), "numtasks": ("num_tasks",),
    "oversubscribe": ("exclusive",), "partition": ("partition",),
    "pendingtime": ("start_time", "submit_time"), "priority": ("priority",),
    "prioritylong": ("priority",), "qos": ("qos",), "reason": ("reason", "state_desc"),
    "reasonlist": ("flags", "nodes", "reason", "state", "state_desc"), "reqnodes": ("req_nodes",),
    "requeue": ("requeue",), "restartcnt": ("restarts",), "schednodes": ("sched_nodes", "state"),
    "starttime": ("eligible_time", "reason", "sched_start", "start_time", "state"),
    "state": ("flags", "state"), "statecompact": ("flags", "state"),
    "stderr": ("job_id", "std_err", "std_out", "work_dir"), "stdin": ("std_in",),
    "stdout": ("job_id", "std_out", "work_dir"), "submittime": ("submit_time",),
    "timeleft": ("end_time", "start_time", "state", "time_limit"), "timelimit": ("time_limit",),
    "timeused": ("end_time", "start_time", "state"), "tres-per-job": ("tres_per_job",),
    "tres-per-node": ("tres_per_node",), "userid": ("uid",), "username": ("user",),
    "workdir": ("work_dir",),
}  # fmt: skip

# JobInfo fields each sort letter reads (as NEEDS for columns; letters not
# listed read nothing); "S" is start_order's.
SORT_NEEDS: dict[str, tuple[str, ...]] = {
    "B": ("batch_host",), "C": ("num_cpus",), "D": ("num_nodes",),
    "e": ("end_time", "start_time", "state", "time_limit"), "g": ("group",), "G": ("gid",),
    "i": ("array_job_id", "job_id"), "j": ("name",), "l": ("time_limit",),
    "L": ("end_time", "start_time", "state", "time_limit"),
    "m": ("mem_per_cpu", "mem_per_node"), "M": ("end_time", "start_time", "state"),
    "N": ("nodes",), "p": ("priority",), "Q": ("priority",), "P": ("partition",),
    "t": ("flags", "state"), "T": ("flags", "state"), "u": ("user",), "U": ("uid",),
    "V": ("submit_time",), "S": ("eligible_time", "reason", "sched_start", "start_time", "state"),
}  # fmt: skip
# what folding array tasks, the state filter and the default order read of every job
ROW_NEEDS = (
    "job_id", "array_job_id", "array_task_id", "array_task_str", "state", "flags", "reason",
    "state_desc", "name", "partition", "start_time", "sched_start", "eligible_time",
)  # fmt: skip
# what each other filter of ``keep`` reads, asked for only when that filter is given
FILTER_NEEDS: dict[str, tuple[str, ...]] = {
    "accounts": ("account",), "qos": ("qos",), "nodes": ("nodes",), "uids": ("uid", "user"),
}  # fmt: skip


def needed_fields(columns: list[Column], letters: Iterable[str], q: Any = None) -> list[str]:
    """The JobInfo fields a listing reads: its columns, its sort ``letters`` (as
    ``squeue.parse_sort`` gives them) and the filters ``q`` (a ``squeue.Query``) sets."""
    wanted = dict.fromkeys(ROW_NEEDS)
    for name, needs in FILTER_NEEDS.items():
        if q is not None and getattr(q, name) is not None:
            wanted.update(dict.fromkeys(needs))
    for column in columns:
        wanted.update(dict.fromkeys(NEEDS.get(column.key, ())))
    for letter in letters:
        wanted.update(dict.fromkeys(SORT_NEEDS.get(letter, ())))
    return list(wanted)


def load_jobs(fields: list[str]) -> list[Any]:
    """Every job the controller shows, as light tuples with just ``fields``.

    ``namedtuple`` rows: building 10,000 of them costs a few ms, where
    dataclasses or dicts would cost tens.
    """
    from collections import namedtuple

    names, rows = get_client("squeue").get_job_rows(fields, all_states=True)
    make = namedtuple("Job", names)._make  # type: ignore[misc]  # noqa: PYI024
    return [make(row) for row in rows]


def rows_text(rows: Sequence[Row], columns: Sequence[Column], ctx: Ctx) -> str:
    """Every row's line (``row_line`` for each, newline-terminated), built fast.

    10,000 pending jobs are 80,000 cells, so the work goes column by column:
    one comprehension gets a column's values for all rows, and one format
    string made from the columns (``{0:>18.18}``: right-justified in 18 and
    cut to 18 -- what ``cell`` does) lays out each line in a single call.
    About three times faster than ``row_line`` per row; ``tests/cli`` checks
    that both print the same.
    """
    if not rows:
        return ""
    spec: list[str] = []
    values: list[list[str]] = []
    for col in columns:
        f = FIELDS.get(col.key)
        if f is not None:
            get, width, right = f.value, col.width, col.right
            none = "(null)" if width <= 0 or right or width >= 6 else ""
            vals = [none if (v := get(row, ctx)) is None else v for row in rows]
            i = len(values)
            if width <= 0:
                spec.append(f"{{{i}}}")
            elif not right:
                spec.append(f"{{{i}:<{width}.{width}}}")
            elif f.cut:
                spec.append(f"{{{i}:>{width}.{width}}}")
            elif get is reason_list:  # cut only where it shows a reason
                vals = [
                    v.rjust(width)[:width] if shows_reason(row.job) else v.rjust(width)
                    for v, row in zip(vals, rows, strict=True)
                ]
                spec.append(f"{{{i}}}")
            else:
                spec.append(f"{{{i}:>{width}}}")
            values.append(vals)
        spec.append(col.suffix.replace("{", "{{").replace("}", "}}"))
    line = ("".join(spec) + "\n").format
    return "".join([line(*cells) for cells in zip(*values, strict=True)])
