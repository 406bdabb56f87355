"""Why a job that is not pending ended, and what to change (``slurmlite explain N``).

``controller.sched.explain_job`` answers a finished (or running) job with
one line, ``job 7 is FAILED since <when> on n1``; this module adds the
lines under it: ``why:`` (the job's SystemComment, ``slurmlite.failures``,
or the exit status) and ``fix:`` (what to change in the next submission).
The efficiency lines follow (``explain_job._efficiency``).  Example::

    job 7 is FAILED since 2026-11-30T12:00:01 on n1
      why: launch failed on n1: cannot open --output file /home/u/nosuchdir/slurm-7.out: No such file or directory
      fix: the directory `nosuchdir` does not exist on n1; create it or point --output at one that does

Pure text from the row: no query, nothing written.
"""

from __future__ import annotations

import errno
import os
import pwd
import re
import signal

from controller.store.models import JobRow
from slurmlite.failures import OpenFailure, read_open_failure
from slurmlite.timefmt import fmt_fixed

_USED = re.compile(r"used (\S+) of ")


def ended_lines(row: JobRow) -> str:
    """The ``why:``/``fix:`` lines of a job that is not pending, each on a new line, indented."""
    pairs = _why_and_fix(row)
    return "".join(f"\n  {word}: {text}" for word, text in pairs if text)


def _why_and_fix(row: JobRow) -> list[tuple[str, str]]:
    comment = row.system_comment or ""
    if row.state in ("RUNNING", "SUSPENDED"):
        return [("last run", comment)] if comment else []
    if row.state == "COMPLETED":
        return [("why", "it completed: the batch script exited with status 0")]
    if row.state == "CANCELLED":
        return [("why", f"cancelled by {_who(row)}"), ("fix", _cancel_fix(row))]
    if row.state == "TIMEOUT":
        limit = fmt_fixed((row.time_limit or 0) * 60)
        why = comment or f"time limit {limit} reached"
        return [("why", why), ("fix", f"ask for more --time than {limit}, or save progress and requeue")]  # fmt: skip
    if row.state == "OUT_OF_MEMORY":
        used = _USED.search(comment)
        fix = f"ask for more --mem (it used {used[1]})" if used else "ask for more --mem"
        return [("why", comment or "the kernel's OOM killer ended it"), ("fix", fix)]
    if row.state == "NODE_FAIL":
        why = comment or "a node of the job failed"
        fix = "the node failed, not the job: resubmit it (with --requeue it is requeued by itself)"
        return [("why", why), ("fix", fix)]
    if row.state == "FAILED":
        return _failed(row, comment)
    return [("why", comment)] if comment else []


def _failed(row: JobRow, comment: str) -> list[tuple[str, str]]:
    opened = read_open_failure(comment)
    if opened is not None:
        return [("why", comment), ("fix", _open_fix(row, opened))]
    if comment.startswith("prolog "):
        fix = "the node's Prolog failed, not the job: an administrator must fix it and resume the node; then resubmit"  # fmt: skip
        return [("why", comment), ("fix", fix)]
    if comment:
        return [("why", comment), ("fix", "see the node's log for the details, then resubmit")]
    status = row.exit_code or 0
    if status & 0x7F:
        sig = status & 0x7F
        name = _signal_name(sig)
        why = f"the batch script was killed by signal {sig}{f' ({name})' if name else ''}"
        return [("why", why), ("fix", "find out what killed it in its output file (StdOut)")]
    why = f"the batch script exited with status {status >> 8}"
    return [("why", why), ("fix", "its last command failed: read its output file (StdOut)")]


def _open_fix(row: JobRow, f: OpenFailure) -> str:
    """What to change for a file the job could not open on ``f.node``."""
    directory = os.path.dirname(f.path) or "/"
    shown = _shown(directory, row.work_dir)
    option = f.option
    if option == "--output" and not row.std_out:  # the default file, in the work directory
        option = "--chdir (or --output)"
    if f.why == os.strerror(errno.ENOENT) and f.option != "--input":
        return (
            f"the directory `{shown}` does not exist on {f.node}; "
            f"create it or point {option} at one that does"
        )
    if f.why == os.strerror(errno.ENOENT):
        return f"the file `{_shown(f.path, row.work_dir)}` does not exist on {f.node}; create it or fix --input"  # fmt: skip
    if f.why == os.strerror(errno.ENOTDIR):
        return f"`{shown}` is not a directory on {f.node} (it, or a directory above it, is a file); point {option} at a directory"  # fmt: skip
    if f.why == os.strerror(errno.EACCES):
        return (
            f"user {row.user} may not create or open files in `{shown}` on {f.node}; "
            f"change its permissions or point {option} at a directory {row.user} can write"
        )
    return f"make `{_shown(f.path, row.work_dir)}` usable on {f.node} or point {option} elsewhere"


def _shown(path: str, work_dir: str) -> str:
    """A path as the user likely wrote it: relative to the work directory when inside it."""
    if work_dir and path.startswith(work_dir.rstrip("/") + "/"):
        return os.path.relpath(path, work_dir)
    return path


def _who(row: JobRow) -> str:
    uid = row.cancelled_by
    if uid is None:
        return "a user or an administrator (not recorded)"
    if uid == row.uid:
        return f"its owner {row.user}"
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _cancel_fix(row: JobRow) -> str:
    if row.start_time is None:
        return "nothing ran; resubmit it if the cancel was a mistake"
    return "nothing to change in the job; resubmit it if the cancel was a mistake"


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return ""
