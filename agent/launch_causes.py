"""The cause of a failed start, from the wrapper's report, for the job's ``SystemComment``.

A start fails when the job, as its user, cannot open one of its files
(``agent.wrapper``: the ``FAIL_MARK`` line names the stream and the path,
and the shell's own message just before it says why).  The shell's words
are not always the system's: dash says "Directory nonexistent" both for a
missing directory and for a path through a plain file, and "No such file"
for a missing input.  Those are replaced by the errno text the agent finds
by looking at the path itself (``slurmlite.failures.missing_part``), so
the job's record says what ``ls`` would::

    slurmlite-launch-failed=cannot open output file /home/u/nosuchdir/slurm-7.out
    -> cannot open --output file /home/u/nosuchdir/slurm-7.out: No such file or directory
"""

from __future__ import annotations

import errno
import os
import re

from agent.confine import LaunchError
from agent.scripts import PrologError
from agent.wrapper import FAIL_MARK, PID_MARK
from slurmlite.failures import cannot_open, errno_text, launch_failed, missing_part

_OPEN = re.compile(r"^cannot open (?P<stream>\w+) file (?P<path>.*)$")
# the shell's words that stand for "some part of the path is missing"
_VAGUE = ("Directory nonexistent", "No such file", "nonexistent directory")


def open_cause(lines: list[str]) -> str | None:
    """``cannot open --output file <path>: <errno text>``, or None (not a file's fault)."""
    lines = [line.strip() for line in lines if line.strip()]
    marked = [i for i, line in enumerate(lines) if line.startswith(FAIL_MARK)]
    if not marked:
        return None
    m = _OPEN.match(lines[marked[-1]][len(FAIL_MARK) :])
    if m is None:
        return None
    before = [line for line in lines[: marked[0]] if not line.startswith(PID_MARK)]
    shell_why = before[-1].rsplit(": ", 1)[-1] if before else ""
    return cannot_open(m["stream"], m["path"], why_not(m["path"], shell_why))


def why_not(path: str, shell_why: str) -> str:
    """The errno text for a path the job could not open (the shell's words otherwise)."""
    if shell_why and shell_why not in _VAGUE:
        return shell_why
    part = missing_part(path)
    if part is not None:
        return errno_text(part[1])
    if not os.path.lexists(path):
        return errno_text(errno.ENOENT)
    return shell_why or "cannot be opened"


def launch_cause(node: str, e: LaunchError) -> str:
    """The ``SystemComment`` of a run that never started on ``node`` because of ``e``."""
    if isinstance(e, PrologError) and e.cause:
        return e.cause  # a whole sentence already: "prolog <path> failed on <node> ..."
    return launch_failed(node, e.cause or e.detail or str(e))
