"""sacct: accounting records of jobs and steps, as Slurm 22.05's sacct shows them.

Pipeline (``main`` does the I/O; :mod:`cli.sacct_format` prints)::

    options -> time window -> columns -> client.get_accounting()
            -> select (jobs, users, names, states, window) -> sort -> rows

Which jobs (spec §8.3, facts from slurmdbd's job query):

* ``-j 50,57_3,69.0`` (repeatable): ``N`` matches job N and every task of
  array N, ``N_i`` one task, ``N.step`` only that step's row;
* users: ``-u`` names or uids (``-1`` = everyone), ``-a``/``-j``/root: all,
  else the caller's own jobs; ``--name`` (case-insensitive, like the
  database's collation);
* time window, default midnight today .. now; with ``-j`` epoch .. now; with
  ``-s`` (no ``-j``) the instant now.  Without ``-s`` a job is listed when it
  was eligible before the end and had not ended before the start (with
  ``-j``: submitted before the end); with ``-s`` it must have been in that
  state during the window (finished states: ended inside it).

The store is asked for no more than that can show: the ``-j`` job ids and,
without ``-s``, jobs not ended before the window's start (so today's sacct
reads today's rows of a years-long history); the rules above then run here.

Rows come in submit-time order (then array id, task id, job id).  A job the
store does not know gives just the header, exit 0.
"""

from __future__ import annotations

import os
import pwd
import re
import sys
import time
from collections import namedtuple
from collections.abc import Sequence

from cli import sacct_format as af
from cli.common import exit_from, get_client, parse_options, print_version
from slurmlite import states, timefmt
from slurmlite.errors import CommandLineError, SlurmError
from slurmlite.options import SACCT

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)

if TYPE_CHECKING:  # records are client Records (tests: these dataclasses)
    from slurmlite.getopt import ParsedOptions
    from slurmlite.protocol import JobInfo, StepInfo

PROG = "sacct"
_UNACCOUNTED = {"COMPLETING", "CONFIGURING", "RESV_DEL_HOLD", "REQUEUE_FED", "REQUEUE_HOLD",
                "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED"}  # fmt: skip
_FLAG_STATES = {"REQUEUE": ("REQUEUED", "RQ"), "RESIZING": ("RESIZING", "RS"),
                "REVOKED": ("REVOKED", "RV")}  # fmt: skip
# pending reasons that mean "not eligible yet" (no eligible time)
_NOT_ELIGIBLE = {"JobHeldUser", "JobHeldAdmin", "Dependency", "BeginTime",
                 "DependencyNeverSatisfied"}  # fmt: skip


class Selector(namedtuple("Selector", "job_id task step", defaults=(None, None))):  # noqa: PYI024
    """One ``-j`` item: job (or array) id (int), array task (int or None), step
    ("batch", "0"... or None).  A plain namedtuple: ``typing`` costs start-up time."""

    __slots__ = ()


class Selection:
    """Which jobs and steps to list (module doc); filled in by ``run``."""

    __slots__ = ("selectors", "uids", "user_names", "names", "states", "start", "end")

    def __init__(
        self,
        selectors: list[Selector] | None = None,
        uids: set[int] | None = None,  # None: every user
        user_names: set[str] | None = None,
        names: set[str] | None = None,
        states: list[str] | None = None,
        start: float = 0.0,
        end: float = 0.0,
    ) -> None:
        self.selectors, self.uids, self.user_names = selectors, uids, user_names
        self.names, self.states, self.start, self.end = names, states, start, end


# ------------------------------------------------------------------ parsing


def _leading_int(text: str) -> int:
    m = re.match(r"\d*", text)
    return int(m.group(0)) if m and m.group(0) else 0


def parse_job_list(text: str) -> list[Selector]:
    """``"50,57_3,69.batch"`` -> selectors; ``Bad job/step specified`` -> CommandLineError."""
    out: list[Selector] = []
    for word in (w.strip() for w in text.split(",")):
        if not word:
            continue
        if not word[0].isdigit():
            raise CommandLineError([f"{PROG}: fatal: Bad job/step specified: {word}"])
        job, dot, step_text = word.partition(".")
        step = None
        if dot:
            if step_text in ("batch", "extern", "interactive"):
                step = step_text
            elif step_text[:1].isdigit():
                step = str(_leading_int(step_text))
            else:
                raise CommandLineError([f"{PROG}: fatal: Bad step specified: {job}"])
        task = None
        if "_" in job:
            job, _, task_text = job.partition("_")
            if not task_text[:1].isdigit():
                raise CommandLineError([f"{PROG}: fatal: Bad job array element specified: {job}"])
            task = _leading_int(task_text)
        selector = Selector(_leading_int(job), task, step)
        if selector not in out:
            out.append(selector)
    return out


def parse_states(texts: Sequence[str]) -> list[str]:
    """``-s`` words (long or compact, any case) -> base state or flag names."""
    out: list[str] = []
    for word in (w.strip() for text in texts for w in text.split(",")):
        if not word:
            continue
        up = word.upper()
        name = next((s for s in states.JOB_STATES
                     if up in (s, states.job_state_compact(s, ()))), None)  # fmt: skip
        name = name or next((f for f, names in _FLAG_STATES.items() if up in names), None)
        if name is None:
            if up in _UNACCOUNTED or up in ("CG", "CF", "SO", "ST", "SE", "SI", "RF", "RH", "RD"):
                raise CommandLineError(
                    [f"{PROG}: fatal: job state {word} is not supported / accounted"]
                )
            raise CommandLineError([f"{PROG}: fatal: unrecognized job state value '{word}'"])
        if name not in out:
            out.append(name)
    return out


def resolve_users(texts: Sequence[str]) -> tuple[set[int], set[str]] | None:
    """``-u`` words -> (uids, names); ``-1`` -> None (every user)."""
    uids: set[int] = set()
    names: set[str] = set()
    for word in (w.strip() for text in texts for w in text.split(",")):
        if word == "-1":
            return None
        if not word:
            continue
        if word.isdigit():
            uids.add(int(word))
            continue
        names.add(word)
        try:
            uids.add(pwd.getpwnam(word).pw_uid)
        except KeyError:
            pass  # the store may know users this host does not
    return uids, names


def midnight(now: float) -> float:
    tm = time.localtime(now)
    return time.mktime((tm.tm_year, tm.tm_mon, tm.tm_mday, 0, 0, 0, 0, 0, -1))


def window(start: float | None, end: float | None, has_jobs: bool, has_states: bool,
           now: float) -> tuple[float, float]:  # fmt: skip
    """Slurm's default -S/-E (module doc); 0 means the epoch."""
    if has_states:
        if not start and not has_jobs:
            start = now
        if start and not end:
            end = start
    elif not has_jobs and not start:
        start = midnight(now)
    return start or 0.0, end or now


# ---------------------------------------------------------------- selection


def _eligible(job: JobInfo) -> float | None:
    if job.eligible_time:
        return job.eligible_time
    if job.start_time:
        return job.start_time
    if job.reason in _NOT_ELIGIBLE:
        return None
    return job.submit_time


def _in_state(job: JobInfo, state: str, start: float, end: float) -> bool:
    if state in _FLAG_STATES:
        return state in job.flags
    if job.state != state and state not in ("PENDING", "RUNNING"):
        return False
    t_start, t_end = job.start_time or 0, job.end_time or 0
    if state == "PENDING":
        eligible = _eligible(job)
        if not eligible or eligible >= end:
            return False
        if t_start:
            return start < t_start
        return start < t_end if t_end else job.state == "PENDING"
    if state == "RUNNING":
        if not t_start or t_start >= end:
            return False
        return start < t_end if t_end else job.state == "RUNNING"
    if state == "SUSPENDED":
        return True
    return bool(t_end) and start <= t_end <= end


def _in_window(job: JobInfo, sel: Selection) -> bool:
    if sel.states:
        return any(_in_state(job, s, sel.start, sel.end) for s in sel.states)
    ended_after_start = not job.end_time or job.end_time >= sel.start
    if sel.selectors:
        return job.submit_time < sel.end and ended_after_start
    eligible = _eligible(job)
    return eligible is not None and eligible < sel.end and ended_after_start


def _steps_for(job: JobInfo, sel: Selection) -> tuple[bool, set[str] | None] | None:
    """(show the job row, steps wanted or None for all); None: job not asked for."""
    if not sel.selectors:
        return True, None
    wanted: set[str] = set()
    for s in sel.selectors:
        if s.job_id not in (job.job_id, job.array_job_id):
            continue
        if s.task is not None and s.task != job.array_task_id:
            continue
        if s.step is None:
            return True, None
        wanted.add(s.step)
    return (False, wanted) if wanted else None


def select(jobs: Sequence[JobInfo], sel: Selection) -> list[tuple[JobInfo, bool, list[StepInfo]]]:
    """Jobs to print, each with: show its own row? which step rows."""
    out = []
    for job in jobs:
        picked = _steps_for(job, sel)
        if picked is None or not _in_window(job, sel):
            continue
        if (
            sel.uids is not None
            and job.uid not in sel.uids
            and job.user not in (sel.user_names or ())
        ):
            continue
        if sel.names is not None and job.name.lower() not in sel.names:
            continue
        show, wanted = picked
        steps = [
            s for s in job.steps
            if (wanted is None or s.step_id in wanted)
            and (s.start_time or 0) <= sel.end
            and (not s.end_time or s.end_time >= sel.start)
        ]  # fmt: skip
        out.append((job, show, steps))
    out.sort(key=lambda t: (t[0].submit_time, t[0].array_job_id or 0,
                            af.NO_VAL if t[0].array_task_id is None else t[0].array_task_id,
                            t[0].job_id))  # fmt: skip
    return out


# -------------------------------------------------------------------- main


def _field_text(opts: ParsedOptions) -> str:
    text = ""
    if opts.flag("brief"):
        text += af.BRIEF_FIELDS + ","
    if opts.flag("long"):
        text += af.LONG_FIELDS + ","
    for item in opts.list("format"):
        text += item + ","
    return text or af.DEFAULT_FIELDS + ","


def run(argv: Sequence[str]) -> int:
    opts = parse_options(SACCT, argv)
    if opts.flag("version"):
        print_version()
        return 0
    now = time.time()
    if opts.flag("long") and opts.has("format") and opts.sources.get("format") != "env":
        raise CommandLineError([f"{PROG}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. "
                   "Please remove one and retry."])  # fmt: skip
    selectors: list[Selector] = []
    for text in opts.list("jobs"):
        selectors += parse_job_list(text)
    wanted_states = parse_states(opts.list("state")) if opts.has("state") else []
    times: dict[str, float | None] = {}
    for key in ("starttime", "endtime"):
        times[key] = None
        if opts.has(key):
            try:
                times[key] = timefmt.parse_datetime(opts.get(key), now)
            except ValueError as exc:
                raise CommandLineError([str(exc)]) from None
    start, end = window(
        times["starttime"], times["endtime"], bool(selectors), bool(wanted_states), now
    )
    if start > end:
        show = lambda t: timefmt.fmt_timestamp(t, none="Unknown")  # noqa: E731
        raise CommandLineError(
            [
                f"{PROG}: error: Start time ({show(start)}) requested is after end time ({show(end)})."
            ]
        )
    needs_store = not (opts.flag("help") or opts.flag("usage") or opts.flag("helpformat"))
    client = None
    if needs_store:
        try:
            client = get_client(PROG)
        except SlurmError as exc:
            raise CommandLineError(
                [f"{PROG}: error: Problem talking to the database: {exc}"]
            ) from None
    columns = af.parse_fields(_field_text(opts))
    if opts.positionals:
        raise CommandLineError(
            [
                f"{PROG}: error: Unknown arguments:",
                *(f"{PROG}: error:  {w}" for w in opts.positionals),
            ]
        )
    if opts.flag("help") or opts.flag("usage"):
        from cli.help import show  # late: only --help/--usage load the help pages

        show(PROG, "help" if opts.flag("help") else "usage")
        return 0
    if opts.flag("helpformat"):
        print(af.helpformat_text(), end="")
        return 0
    assert client is not None
    sel = Selection(selectors=selectors or None, states=wanted_states or None, start=start, end=end)
    server_users = _choose_users(opts, sel, bool(selectors))
    if opts.has("name"):
        names = [n.strip() for text in opts.list("name") for n in text.split(",") if n.strip()]
        sel.names = {n.lower() for n in names}
    try:
        jobs = client.get_accounting(
            job_ids=sorted({s.job_id for s in selectors}) or None,
            users=server_users,
            names=sorted(sel.names) if sel.names else None,
            start=_store_start(sel),
        )
    except SlurmError as exc:
        raise CommandLineError([f"{PROG}: error: Problem talking to the database: {exc}"]) from None
    if opts.flag("json"):  # the same selection; format options ignored (cli/json_out.py)
        return _print_json([job for job, _show, _steps in select(jobs, sel)], client)
    style = af.Style(parsable="P" if opts.flag("parsable2") else "p" if opts.flag("parsable") else "",
                     delimiter=opts.get("delimiter"))  # fmt: skip
    ctx = af.Ctx(now=now, cluster=client.config.cluster_name)
    lines = [] if opts.flag("noheader") else af.header_lines(columns, style)
    no_steps = opts.flag("allocations")
    for job, show, steps in select(jobs, sel):
        if show:
            lines.append(af.render_row(columns, af.row_values(columns, job, None, ctx), style))
        for step in [] if no_steps else steps:
            lines.append(af.render_row(columns, af.row_values(columns, job, step, ctx), style))
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _print_json(jobs: Sequence[JobInfo], client: object) -> int:
    from cli import json_out
    from cli.json_sacct import job_record

    cluster = client.config.cluster_name  # type: ignore[attr-defined]
    json_out.write(json_out.document("slurmdb", jobs=[job_record(j, cluster) for j in jobs]))
    return 0


def _store_start(sel: Selection) -> float | None:
    """The start the store may filter on: it returns jobs not ended before it, a superset
    of what ``select`` keeps without ``-s`` (with ``-s``, a state's own rule decides)."""
    return sel.start if sel.start and not sel.states else None


def _choose_users(opts: ParsedOptions, sel: Selection, has_jobs: bool) -> list[str] | None:
    """Fill the user filter of ``sel``; return the names the store may filter on."""
    users = resolve_users(opts.list("user")) if opts.has("user") else ()
    uid = my_uid()
    if users is None or opts.flag("allusers") or (users == () and (has_jobs or uid == 0)):
        return None  # every user
    if users == ():
        name = _user_name(uid)
        sel.uids, sel.user_names = {uid}, {name} if name else set()
        return [name] if name else None
    sel.uids, sel.user_names = users
    numeric = any(w.strip().isdigit() for text in opts.list("user") for w in text.split(","))
    return None if numeric else sorted(sel.user_names)


def my_uid() -> int:
    """The caller's uid (a seam for tests)."""
    return os.getuid()


def _user_name(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def main(argv: Sequence[str] | None = None) -> None:
    exit_from(run, argv)


if __name__ == "__main__":
    main()
