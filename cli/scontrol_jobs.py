"""scontrol's job verbs: hold, uhold, release, requeue, requeuehold, update JobId=.

What Slurm 22.05's scontrol does (``src/scontrol/update_job.c``), in our words:

* Each argument is a job id list (``7``, ``7,8``; ``JobId=``/``Job=`` may
  prefix it); hold and release also take ``Name=``/``JobName=`` (every job
  of that name).  Anything else: ``Invalid job id specified for job X``.
* Success prints nothing.  Each refused id prints ``<error> for job <id>``
  on stderr and the exit status becomes 1.  For hold/release an argument with
  a refusal also ends with ``slurm_suspend error: <error>`` (Slurm reuses
  the suspend label), e.g. alice releasing an admin hold::

      Access/permission denied for job 55
      slurm_suspend error: Access/permission denied

* ``update JobId=7 TimeLimit=30 Name=x Comment=y Partition=p Requeue=0``:
  one request for all the changes; ``-Q`` silences the per-job lines, not
  the exit status.  A value we cannot read is refused before anything is
  sent (``scontrol: error: Invalid TimeLimit value``).

Which changes are allowed (a user may lower but, unless the job is still
pending, not raise a time limit...) is the controller's business
(``controller.jobs.operations``).  ``Priority=N`` takes 0 to 4294967293 (0 holds the
job; anything else -> ``scontrol: error: Invalid Priority value: X``);
``Nice=N`` reads a number as ``strtoll`` does (``Nice=abc`` is 0) within
+/-2147483645, and a bare ``Nice`` means ``Nice=100``.
"""

from __future__ import annotations

import os
import re
import signal
import sys

from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.jobwords import split_words

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# update keys we take: (tag, min prefix length, field); "name" also for JobName
UPDATE_KEYS = (
    ("TimeLimit", 5, "time_limit"), ("Name", 2, "name"), ("JobName", 4, "name"),
    ("Comment", 3, "comment"), ("Partition", 2, "partition"), ("Requeue", 4, "requeue"),
    ("Priority", 2, "priority"), ("Nice", 2, "nice"), ("Dependency", 1, "dependency"),
    ("StartTime", 2, "begin_time"), ("NumNodes", 8, "nodes"),
    ("ArrayTaskThrottle", 10, "array_throttle"),
)  # fmt: skip
NICE_LIMIT = 2**31 - 3  # Slurm's NICE_OFFSET - 3
PRIORITY_MAX = 0xFFFFFFFD  # below NO_VAL, as scontrol's parse_uint32 wants
# Slurm update keys slurmlite does not change yet
LATER = (
    ("ReqNodes", 8), ("NumCPUs", 6),
    ("NumTasks", 8), ("MinMemoryNode", 10), ("MinMemoryCPU", 10), ("QOS", 2),
    ("Account", 1), ("EndTime", 2), ("Deadline", 3),
    ("Features", 1), ("Gres", 2), ("NodeList", 8), ("ReqNodeList", 8), ("ExcNodeList", 3),
    ("WorkDir", 2), ("StdOut", 6), ("TimeMin", 5), ("CPUsPerTask", 9), ("Licenses", 1),
    ("ReservationName", 3), ("AdminComment", 6),
)  # fmt: skip


def keyword(tag: str, word: str, min_len: int) -> bool:
    return len(tag) >= min_len and word.lower().startswith(tag.lower())


def verb_of(tag: str) -> str | None:
    """The job verb a keyword names, as scontrol matches them (``rel`` -> release)."""
    low = tag.lower()
    if keyword(tag, "requeue", 3):
        return "requeue"
    if keyword(tag, "requeuehold", 11):
        return "requeuehold"
    if low[:5] in ("holdu", "uhold"):
        return "uhold"
    if low[:4] == "hold":
        return "hold"
    return "release" if keyword(tag, "release", 3) else None


def run(session: Any, tag: str, verb: str, args: Sequence[str]) -> None:
    """``scontrol <verb> <args>`` for a ``verb_of`` verb."""
    if not args:
        session.fail(f"too few arguments for keyword:{tag}")
    elif verb.startswith("requeue"):
        JobVerbs(session).requeue(args, hold=verb == "requeuehold")
    else:
        JobVerbs(session).hold(verb, args)


_TASK_REF = re.compile(r"\d+_(\d+|\[[\d,:%-]+\])")  # 57_3, 57_[1-3,7]


def parse_ids(text: str) -> list[int | str] | None:
    """``"7,8,9_2"`` -> [7, 8, "9_2"] (``JobId=``/``Job=`` prefix allowed): job ids, and
    array task references as text (the controller resolves them); otherwise None."""
    for prefix in ("jobid=", "job="):
        if text[: len(prefix)].lower() == prefix:
            text = text[len(prefix) :]
    words = split_words(text.replace(" ", ","))
    if not words or not all(w.isdigit() or _TASK_REF.fullmatch(w) for w in words):
        return None
    return [int(w) if w.isdigit() else w for w in words]


class JobVerbs:
    """The verbs over one scontrol ``Session`` (its client, quiet flag and exit status)."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def _say(self, line: str) -> None:
        """A refusal: exit status 1, the line unless ``-Q``."""
        self.session.exit_code = 1
        if not self.session.quiet:
            print(line, file=sys.stderr)

    def _report(self, results: list[Any]) -> int:
        """Print ``<error> for job <id>`` per refused id; the last errno (0: none)."""
        last = 0
        for r in results:
            if r.errno:
                who = getattr(r, "job", None) or r.job_id
                self._say(f"{r.error or errors.message(r.errno)} for job {who}")
                last = r.errno
        return last

    def _send(self, call: Any, ids: list[int], *args: Any) -> int:
        try:
            return self._report(call(ids, *args))
        except SlurmError as exc:  # nothing reached the jobs: each id hears why
            for job_id in ids:
                self._say(f"{exc} for job {job_id}")
            return exc.code

    # ------------------------------------------------------ hold/release

    def hold(self, verb: str, args: Sequence[str]) -> None:
        """``verb``: ``hold``, ``uhold`` or ``release``; one pass per argument."""
        client = self.session.client()
        for arg in args:
            ids = parse_ids(arg)
            ids = self._ids_by_name(arg) if ids is None else ids
            if ids is None:
                last = errors.ESLURM_INVALID_JOB_ID
                self._say(f"{errors.message(last)} for job {arg}")
            elif not ids:
                last = 0  # no job of that name: nothing to do, as in Slurm
            elif verb == "release":
                last = self._send(client.release_jobs, ids)
            else:
                last = self._send(client.hold_jobs, ids, verb == "uhold")
            if last:
                self._say(f"slurm_suspend error: {errors.message(last)}")

    def _ids_by_name(self, arg: str) -> list[int] | None:
        """``Name=x`` / ``JobName=x``: the ids of the jobs called x (None: not such a word)."""
        tag, eq, name = arg.partition("=")
        if not eq or tag.lower() not in ("name", "jobname"):
            return None
        jobs = self.session.client().get_jobs(names=[name])
        return [j.job_id for j in jobs]

    # ----------------------------------------------------------- requeue

    def requeue(self, args: Sequence[str], hold: bool) -> None:
        verb = "requeuehold" if hold else "requeue"
        flags = [a for a in args if a.lower() == "incomplete" or a.lower().startswith("state=")]
        if flags:
            self._say(f"scontrol: error: {verb} {flags[0]} is not supported yet")
            return
        client = self.session.client()
        ride_out_own_kill(args)
        for arg in args:
            ids = parse_ids(arg)
            if ids is None:
                self._say(f"{errors.message(errors.ESLURM_INVALID_JOB_ID)} for job {arg}")
            else:
                self._send(client.requeue_jobs, ids, hold)

    # ------------------------------------------------------------ update

    def update(self, args: Sequence[str]) -> None:
        try:
            ids_text, changes = parse_update(args)
        except ValueError as exc:
            self.session.fail(*str(exc).split("\n"))
            return
        ids = parse_ids(ids_text)
        if ids is None:
            self._say(f"{errors.message(errors.ESLURM_INVALID_JOB_ID)} for job {ids_text}")
            return
        self._send(self.session.client().update_jobs, ids, changes)


def ride_out_own_kill(args: Sequence[str]) -> None:
    """A job requeueing itself (``scontrol requeue $SLURM_JOB_ID`` in its script, as
    submitit's preemption handler runs it): the requeue terminates the job, this
    scontrol included.  It ignores that SIGTERM so it still reports the outcome (exit 0,
    which submitit checks); SIGKILL after KillWait ends it all the same."""
    env = os.environ
    own = {env.get("SLURM_JOB_ID", "")}
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        own.add(f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}")
    own.discard("")
    words = {w for arg in args for w in arg.rpartition("=")[2].split(",")}
    if own & words:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def parse_update(args: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """``["JobId=7", "TimeLimit=1:00:00", "Comment=x"]`` -> ``("7", {"time_limit": 60,
    "comment": "x"})``.  Raises ValueError with scontrol's message lines."""
    ids: str | None = None
    changes: dict[str, Any] = {}
    words = list(args)
    i = 0
    while i < len(words):
        word = words[i]
        tag, eq, val = word.partition("=")
        if not eq and keyword(tag, "Nice", 2):  # a bare Nice: nice 100, as nice(1)
            changes["nice"] = 100
            i += 1
            continue
        if not eq:
            if i + 1 >= len(words):
                raise ValueError(f"Invalid input: {word}\nRequest aborted")
            val, i = words[i + 1], i + 1
        i += 1
        if tag.endswith(("+", "-")):
            raise ValueError(f"scontrol: error: {tag}= is not supported yet")
        if keyword(tag, "JobId", 3):
            ids = val
            continue
        field = next((f for name, n, f in UPDATE_KEYS if keyword(tag, name, n)), None)
        if field is None:
            later = next((name for name, n in LATER if keyword(tag, name, n)), None)
            if later is not None:
                raise ValueError(f"scontrol: error: update {later}= is not supported yet")
            raise ValueError(f"Update of this parameter is not supported: {word}\nRequest aborted")
        changes[field] = _value(field, val)
    if "nodes" in changes:
        changes["nodes_min"], changes["nodes_max"] = changes.pop("nodes")
    if not changes:
        raise ValueError("No changes specified")
    if ids is None:
        if "name" in changes:
            raise ValueError("scontrol: error: update JobName= without JobId= is not supported yet")
        raise ValueError("scontrol: error: No job ID specified")
    return ids, changes


def _value(field: str, val: str) -> Any:
    if field == "time_limit":
        if val[:1] in ("+", "-") and val.lower() != "-1":
            raise ValueError(f"scontrol: error: TimeLimit={val[0]}N is not supported yet")
        from slurmlite.resources import parse_time_limit

        try:
            minutes = parse_time_limit(val)
        except ValueError:
            raise ValueError("scontrol: error: Invalid TimeLimit value") from None
        return "UNLIMITED" if minutes is None else minutes
    if field == "begin_time":
        import time

        from slurmlite.timefmt import parse_datetime

        try:
            return parse_datetime(val, time.time(), past=False)
        except ValueError as exc:
            raise ValueError(f"scontrol: error: {exc}") from None
    if field == "nodes":
        from slurmlite.resources import parse_node_count

        try:
            return parse_node_count(val)
        except ValueError:
            raise ValueError(f"scontrol: error: Invalid NumNodes value: {val}") from None
    if field == "array_throttle":
        if not val.isdigit() or int(val) > 2**31 - 1:
            raise ValueError(f"scontrol: error: Invalid ArrayTaskThrottle value: {val}")
        return int(val)
    if field == "requeue":
        if not val.isdigit() or int(val) > 65535:
            raise ValueError(f"scontrol: error: Invalid Requeue value: {val}")
        return int(val) > 0
    if field == "priority":
        text = val.strip()
        if not text.lstrip("+-").isdigit() or not 0 <= int(text) <= PRIORITY_MAX:
            raise ValueError(f"scontrol: error: Invalid Priority value: {val}")
        return int(text)
    if field == "nice":
        m = re.match(r"\s*([+-]?\d+)", val)  # strtoll: the leading number, else 0
        nice = int(m.group(1)) if m else 0
        if abs(nice) > NICE_LIMIT:
            raise ValueError(
                f"scontrol: error: Nice value out of range (+/- {NICE_LIMIT}). Value ignored"
            )
        return nice
    return val
