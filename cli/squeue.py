"""squeue: show the jobs the controller knows, as Slurm 22.05's squeue does.

Pipeline (each step a pure function, ``main`` only does I/O)::

    options -> Query -> client.get_jobs(all_states=True)
            -> select_rows (filters, partial arrays, pending-array rows)
            -> sort_rows -> squeue_format.row_line per row

Filters follow Slurm's ``_filter_job``: ``-j`` ids (``57`` matches the whole
array, ``57_5`` one task), ``-A``/``-q``/``-n`` (case-insensitive), ``-t``
(default: pending, running, suspended, completing), ``-w``, ``-u``/``--me``,
``-p``.  A single ``-j`` id that the controller does not know is an error
(``slurm_load_jobs error: Invalid job id specified``, exit 1, even with
``-h``); a known but finished job is just filtered out.  ``--json``
(:func:`show_json`) keeps the same jobs and prints them as v0.0.38 records
(``cli/json_jobs.py``), unsorted and unfolded.

Sorting (``-S``, ``SQUEUE_SORT``, default ``P,t,-p``): letters are applied
last to first, each a stable sort (Slurm uses glibc's ``qsort``, a stable
top-down merge sort).  Before them squeue always sorts by start time, latest
first, with a comparator that puts jobs without a start time last *and* calls
every pair of them "greater" -- so the merge sort reverses their order
(:func:`start_order` computes that outcome directly).  That quirk is what
gives real squeue's order of equal-priority pending jobs: jobs 51..59 in
submission order come out ``55 59 58 57 53 52`` (golden
``50_squeue_default.txt``).

Facts from Slurm 22.05 ``src/squeue/`` (spec §8.1), in our own words.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import time
from collections.abc import Sequence

from cli import squeue_format as sf
from cli.common import (
    answered_info,
    argv_or_default,
    error,
    get_client,
    parse_options,
    perror,
    reported,
    user_words,
)
from cli.squeue_bulk import load_jobs, needed_fields, rows_text
from cli.squeue_format import Row, attr
from cli.squeue_sort import sort_letters, sort_rows
from slurmlite import hostlist, states
from slurmlite.errors import CommandLineError, SlurmError
from slurmlite.taskranges import format_task_ranges, parse_task_ranges

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from typing import Any

if TYPE_CHECKING:  # jobs are JobInfo-shaped views (cli.client.Record) at run time
    from slurmlite.protocol import JobInfo

PROG = "squeue"
clock = time.time  # the only clock read; tests replace it
VALID_STATES = (
    "PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,"
    "BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,"
    "REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED"
)


class Query:
    """What to show and how: the folded command line.

    The class attributes are the defaults; :func:`build_query` sets the rest.
    """

    job_ids: list[tuple[int, int | None]] | None = None
    uids: set[int] | None = None
    user_names: set[str] | None = None
    names: list[str] | None = None
    partitions: list[str] | None = None
    accounts: list[str] | None = None
    qos: list[str] | None = None
    licenses: list[str] | None = None
    reservation: str | None = None
    states: set[str] | None = None  # None: the default set
    all_states: bool = False
    nodes: set[str] | None = None
    array: bool = False  # -r
    array_unique: bool = False
    sort: str | None = None
    format: str | None = None  # -o
    format_long: str | None = None  # -O
    header: bool = True
    long: bool = False
    iterate: int = 0
    verbose: int = 0
    convert: bool = True

    def __init__(self, **values: Any) -> None:
        for name, value in values.items():
            if not hasattr(Query, name):
                raise TypeError(f"Query has no field {name!r}")
            setattr(self, name, value)

    @property
    def single_job(self) -> int | None:
        return self.job_ids[0][0] if self.job_ids and len(self.job_ids) == 1 else None


# ---------------------------------------------------------------- filtering


def parse_job_list(text: str) -> list[tuple[int, int | None]]:
    """``"50,57_5"`` -> ``[(50, None), (57, 5)]``; bad id -> CommandLineError (``Invalid job id: X``)."""
    out: list[tuple[int, int | None]] = []
    for word in (w for w in text.split(",") if w):
        m = re.match(r"\s*([+-]?\d+)(?:_(\d*))?", word)  # strtol-like: "12x" is 12
        if m is None or int(m.group(1)) <= 0:
            raise CommandLineError([f"{PROG}: error: Invalid job id: {word}"])
        task = m.group(2)
        out.append((int(m.group(1)), None if task is None else int(task or 0)))
    return out


def _in(value: str | None, wanted: Sequence[str]) -> bool:
    return value is not None and value.lower() in {w.lower() for w in wanted}


def _match_ids(row: Row, ids: Sequence[tuple[int, int | None]]) -> bool:
    """``-j``: whole jobs/arrays, single tasks, or part of a pending array row."""
    job = row.job
    hits: list[int] = []
    for job_id, task in ids:
        if task is None and job_id in (job.job_id, job.array_job_id):
            return True
        if task is not None and job.array_job_id == job_id:
            if task == row.array_task_id:
                return True
            if row.array_task_str and task in parse_task_ranges(row.array_task_str):
                hits.append(task)
    if not hits:
        return False
    if len(set(hits)) == 1:
        row.array_task_str, row.array_task_id = None, hits[0]
    else:
        row.array_task_str = format_task_ranges(hits)
    return True


def keep(row: Row, q: Query) -> bool:
    """Slurm's ``_filter_job``: True when the row is shown."""
    job = row.job
    if q.job_ids is not None and not _match_ids(row, q.job_ids):
        return False
    if q.licenses is not None and not set(str(attr(job, "licenses") or "").split(",")) & set(
        q.licenses
    ):
        return False
    if q.accounts is not None and not _in(job.account, q.accounts):
        return False
    if q.qos is not None and not _in(job.qos, q.qos):
        return False
    if not q.all_states:
        wanted = states.DEFAULT_SQUEUE_STATES if q.states is None else q.states
        if not states.job_matches_states(job.state, job.flags, wanted):
            return False
    if q.nodes is not None and not q.nodes & set(job.nodes):
        return False
    if q.uids is not None and job.uid not in q.uids and job.user not in (q.user_names or ()):
        return False
    if q.reservation is not None and attr(job, "reservation") != q.reservation:
        return False
    if q.names is not None and not _in(job.name, q.names):
        return False
    if q.partitions is not None and not set(job.partition.split(",")) & set(q.partitions):
        return False
    return True


def combine_pending_arrays(rows: list[Row], unique: bool = False) -> list[Row]:
    """Fold pending tasks split off an array back into its ``57_[...]`` row.

    Tasks merge when name and partition match; differing reasons are joined
    into the row's description (``Priority,Resources``).  ``--array-unique``
    keeps them apart.
    """
    if unique:
        return rows
    out = list(rows)
    for meta in [r for r in rows if r.array_task_str and r.job.state == "PENDING"]:
        merged = [
            r for r in out
            if r is not meta and r.job.state == "PENDING" and r.array_task_id is not None
            and r.job.array_job_id == meta.job.array_job_id
            and r.job.name == meta.job.name and r.job.partition == meta.job.partition
        ]  # fmt: skip
        if not merged:
            continue
        ids = parse_task_ranges(meta.array_task_str or "")
        desc = sf.reason_text(meta.job)
        for task in merged:
            ids.append(task.array_task_id or 0)
            if task.job.reason != meta.job.reason and task.job.reason not in desc.split(","):
                desc += "," + task.job.reason
            out.remove(task)
        meta.array_task_str = format_task_ranges(ids)
        if desc != sf.reason_text(meta.job):
            meta.job = sf.with_changes(meta.job, state_desc=desc)
    return out


def select_rows(jobs: Sequence[JobInfo], q: Query) -> list[Row]:
    fields = getattr(jobs[0], "_fields", None) if jobs else None
    if fields is not None and "array_task_str" not in fields:
        # projected rows without task ranges (squeue's own listing): skip Row.of's
        # per-job lookup of an attribute these rows cannot have
        made = [Row(job, None, job.array_task_id) for job in jobs]
    else:
        made = [Row.of(job) for job in jobs]
    if _only_state_filter(q):
        wanted = states.DEFAULT_SQUEUE_STATES if q.states is None else q.states
        match = states.job_matches_states
        rows = [r for r in made if q.all_states or match(r.job.state, r.job.flags, wanted)]
    else:
        rows = [row for row in made if keep(row, q)]
    return rows if q.array else combine_pending_arrays(rows, q.array_unique)


# every Query attribute ``keep`` filters on besides the state; a filter added to
# ``keep`` must be named here (tests/cli/test_squeue_main.py reads keep's source to check)
KEEP_FILTERS = ("job_ids", "licenses", "accounts", "qos", "nodes", "uids")
KEEP_FILTERS += ("reservation", "names", "partitions")


def _only_state_filter(q: Query) -> bool:
    """True when ``keep`` would test the job's state alone (the usual ``squeue``)."""
    return all(getattr(q, name) is None for name in KEEP_FILTERS)


# ---------------------------------------------------------------- the command


def _list(text: str | None) -> list[str] | None:
    return None if text is None else [w for w in text.split(",") if w]


def build_query(args: Any) -> Query:
    """Fold parsed options (``slurmlite.getopt.ParsedOptions``) into a Query."""
    q = Query(header=not args.flag("noheader"), array=args.flag("array"))
    q.array_unique = args.flag("array_unique")
    q.long, q.verbose = args.flag("long"), args.count("verbose")
    q.convert = not args.flag("noconvert")
    q.format, q.format_long, q.sort = args.get("format"), args.get("Format"), args.get("sort")
    if q.long and q.format is not None:
        raise CommandLineError(
            [
                f"{PROG}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. "
                "Please remove one and retry."
            ]
        )
    if q.format is not None and q.format_long is not None:
        raise CommandLineError([f"{PROG}: error: -O (--Format) is incompatible with -o (--format)"])
    positionals = list(args.positionals)
    jobs = args.get("jobs")
    if args.has("jobs") and jobs is None and positionals:
        jobs = positionals.pop(0)
    if positionals:
        from cli.help import text  # late: the usage is rendered from the option table

        usage = text(PROG, "usage").rstrip("\n")
        raise CommandLineError([f"{PROG}: error: Unrecognized option: {positionals[0]}", usage])
    if jobs is not None:
        q.job_ids = parse_job_list(jobs)
    if args.has("iterate"):
        text = args.get("iterate")
        q.iterate = int(text) if re.fullmatch(r"\s*\d+", text or "") else 0
        if q.iterate <= 0:
            raise CommandLineError([f"{PROG}: error: --iterate={text}"])
    users = str(os.geteuid()) if args.flag("me") else args.get("user")
    if users is not None:
        q.uids, q.user_names = user_words(users)
    q.names, q.accounts = _list(args.get("name")), _list(args.get("accounts"))
    q.partitions, q.qos = _list(args.get("partition")), _list(args.get("qos"))
    q.licenses, q.reservation = _list(args.get("licenses")), args.get("reservation")
    if args.get("nodelist") is not None:
        try:
            q.nodes = set(hostlist.expand(args.get("nodelist")))
        except ValueError:
            raise CommandLineError(
                [f"{PROG}: error: '{args.get('nodelist')}' invalid entry for --nodelist"]
            ) from None
    state_text = args.get("states")
    if args.flag("start"):
        q.format = q.format if q.format is not None else sf.START_FORMAT
        q.sort = q.sort or "S"
        state_text = state_text if state_text is not None else "PD"
    if state_text is not None:
        try:
            wanted = states.parse_job_states(state_text)
        except ValueError as exc:
            raise CommandLineError(
                [
                    f"{PROG}: error: {exc}",
                    f"{PROG}: error: Valid job states include: {VALID_STATES}",
                ]
            ) from None
        q.all_states, q.states = wanted is None, wanted
    return q


def columns_for(q: Query) -> tuple[list[sf.Column], list[str]]:
    if q.format is not None:
        return sf.parse_format(q.format)
    if q.format_long is not None:
        return sf.parse_format_long(q.format_long)
    return sf.parse_format_long(sf.LONG_FORMAT2 if q.long else sf.DEFAULT_FORMAT2)


def date_line(now: float) -> str:
    """``Mon Nov 30 02:29:19 2026`` (C locale, as squeue -l prints it)."""
    return time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now))


def unknown_single_job(q: Query, jobs: Sequence[Any]) -> bool:
    """A single ``-j`` id the controller does not know: report it (exit 1, even with -h)."""
    single = q.single_job
    if single is None or any(single in (j.job_id, j.array_job_id) for j in jobs):
        return False
    perror("slurm_load_jobs error", "Invalid job id specified")
    return True


def show_once(q: Query, out: Any, now: float) -> int:
    """Load, filter, sort and print once; return the exit status.

    The cyclic garbage collector is paused meanwhile: the tens of thousands of
    rows and strings a big queue makes hold no cycles, and its passes over them
    cost ~5 ms at 10,000 jobs; reference counting still frees them.
    """
    gc.disable()
    try:
        return _show_once(q, out, now)
    finally:
        gc.enable()


def _show_once(q: Query, out: Any, now: float) -> int:
    columns, problems = columns_for(q)
    try:
        jobs = load_jobs(needed_fields(columns, sort_letters(q.sort), q))
    except SlurmError as exc:
        perror("slurm_load_jobs error", exc)
        return 1
    if unknown_single_job(q, jobs):
        return 1
    for problem in problems:
        error(PROG, problem)
    ctx = sf.Ctx(now=now, convert=q.convert)
    if q.header:
        out.write(sf.header_line(columns) + "\n")
    rows = select_rows(jobs, q)
    try:
        rows = sort_rows(rows, q.sort, now)
    except ValueError as exc:
        out.flush()
        error(PROG, str(exc))
        return 1
    if q.array:
        rows = sf.expand_array_rows(rows)
    out.write(rows_text(rows, columns, ctx))
    return 0


def show_json(q: Query) -> int:
    """``--json``: one v0.0.38 record per job the filters keep, in the controller's order;
    pending array tasks stay apart (no folding into ``57_[...]`` rows)."""
    from cli import json_out
    from cli.json_jobs import job_record

    try:
        client = get_client(PROG)
        jobs = client.get_jobs(all_states=True)
    except SlurmError as exc:
        perror("slurm_load_jobs error", exc)
        return 1
    if unknown_single_job(q, jobs):
        return 1
    cluster = client.config.cluster_name
    kept = [job_record(job, cluster) for job in jobs if keep(Row.of(job), q)]
    json_out.write(json_out.document("slurm", jobs=kept))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from slurmlite.options import SQUEUE

    args = parse_options(SQUEUE, argv_or_default(argv))
    if answered_info(args, PROG):
        return 0
    try:
        q = build_query(args)
    except CommandLineError as exc:
        return reported(exc)
    if args.flag("json"):  # filters apply; format, sort and -i do not (cli/json_out.py)
        return show_json(q)
    status = 0
    while True:
        now = clock()
        if q.header and (q.iterate or q.verbose or q.long):
            sys.stdout.write(date_line(now) + "\n")
        status = show_once(q, sys.stdout, now) or status
        if not q.iterate:
            return status
        sys.stdout.write("\n")
        sys.stdout.flush()
        time.sleep(q.iterate)


if __name__ == "__main__":
    raise SystemExit(main())
