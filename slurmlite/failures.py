"""Why a run ended, in words: the job's ``SystemComment`` (slurmlite's addition).

Slurm keeps a job's ``Reason`` to a fixed vocabulary (``JobLaunchFailure``,
``TimeLimit``, ``NodeDown``...), and the details are in the node's log.
slurmlite also writes one sentence with the details on the job itself, in
the field Slurm calls ``SystemComment`` (``scontrol show job``, ``sacct -o
SystemComment``, the ``--json`` outputs' ``system_comment``).  This module
words those sentences, once, for the agent (launch and prolog failures) and
the controller (OOM, time limit, node failure), and reads the launch
sentence back for ``slurmlite explain`` (``controller.sched.explain_ended``).

The sentences::

    launch failed on n1: cannot open --output file /home/u/nosuchdir/slurm-7.out: No such file or directory
    prolog /etc/slurm/prolog.sh failed on n2 with exit 3
    out of memory on n1: used 2048M of --mem=2G
    time limit 00:01:00 reached after 00:01:00 of run time
    node n2 stopped answering at 2026-11-30T12:00:00 (no heartbeat for 00:05:00); job requeued

A job requeued after a failure keeps its sentence until its next run ends.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass

from slurmlite.timefmt import fmt_fixed, fmt_timestamp

# the wrapper's words for the file it could not open -> the sbatch option that names it
STREAM_OPTION = {"input": "--input", "output": "--output", "error": "--error"}

_LAUNCH = re.compile(r"^launch failed on (?P<node>\S+): cannot open (?P<opt>--\w+) file (?P<path>.+): (?P<why>[^:]+)$")  # fmt: skip


def launch_failed(node: str, what: str) -> str:
    """``launch failed on n1: <what>``; ``what`` is the agent's words for the cause."""
    return f"launch failed on {node}: {what}"


def cannot_open(stream: str, path: str, why: str) -> str:
    """``cannot open --output file /x/y: No such file or directory``."""
    return f"cannot open {STREAM_OPTION.get(stream, stream)} file {path}: {why}"


def prolog_failed(path: str, node: str, why: str) -> str:
    """``why`` as ``slurmlite.sitescript`` says it: "exit status 3", "timed out after 60 s"..."""
    if why.startswith("exit status "):
        return f"prolog {path} failed on {node} with exit {why.removeprefix('exit status ')}"
    return f"prolog {path} failed on {node}: {why}"


def megabytes(mb: int) -> str:
    """Slurm's memory words: ``2048`` -> ``2G``, ``500`` -> ``500M``."""
    return f"{mb // 1024}G" if mb and mb % 1024 == 0 else f"{mb}M"


def memory_asked(mem_per_node: int | None, mem_per_cpu: int | None, cpus: int) -> str:
    """The job's memory request as the user wrote it: ``--mem=2G``, ``--mem-per-cpu=1G x 4``."""
    if mem_per_cpu:
        return f"--mem-per-cpu={megabytes(mem_per_cpu)} x {cpus} CPUs"
    if mem_per_node:
        return f"--mem={megabytes(mem_per_node)}"
    return "the node's memory"


def out_of_memory(node: str, used_bytes: int, asked: str) -> str:
    """``out of memory on n1: used 2048M of --mem=2G`` (``used`` unknown: left out)."""
    used = f"used {round(used_bytes / 2**20)}M of " if used_bytes else "over "
    return f"out of memory on {node}: {used}{asked}"


def time_limit(limit_minutes: int, ran_seconds: float) -> str:
    """``time limit 00:01:00 reached after 00:01:02 of run time``."""
    ran = fmt_fixed(max(0, int(ran_seconds)))
    return f"time limit {fmt_fixed(limit_minutes * 60)} reached after {ran} of run time"


def node_stopped(node: str, last_heard: float, silent: float) -> str:
    """``node n2 stopped answering at <time> (no heartbeat for 00:05:00)``."""
    return (
        f"node {node} stopped answering at {fmt_timestamp(last_heard)} "
        f"(no heartbeat for {fmt_fixed(max(0, int(silent)))})"
    )


def node_lost_run(node: str) -> str:
    """The node answers but no longer has the job (its agent lost the run)."""
    return f"node {node} no longer had the job running (its agent lost the run)"


def with_outcome(cause: str, requeued: bool) -> str:
    return f"{cause}; job {'requeued' if requeued else 'failed'}"


def errno_text(code: int) -> str:
    return os.strerror(code)


def missing_part(path: str) -> tuple[str, int] | None:
    """Why ``path`` cannot be created for a reason a shell words as "Directory
    nonexistent": the first ancestor that is missing (ENOENT) or is not a
    directory (ENOTDIR), with that errno; None when every ancestor is a directory."""
    parent = os.path.dirname(path) or "."
    parts: list[str] = []
    while parent not in parts:
        parts.append(parent)
        parent = os.path.dirname(parent)
    for part in reversed(parts):  # from the root down
        if not os.path.lexists(part):
            return part, errno.ENOENT
        if not os.path.isdir(part):
            return part, errno.ENOTDIR
    return None


@dataclass(frozen=True)
class OpenFailure:
    """A launch that failed because a file could not be opened, read back."""

    node: str
    option: str  # --output, --error, --input
    path: str
    why: str  # the errno text


def read_open_failure(comment: str | None) -> OpenFailure | None:
    """The parts of a ``launch failed ... cannot open ...`` sentence (None: another kind)."""
    m = _LAUNCH.match(comment or "")
    if m is None:
        return None
    return OpenFailure(m["node"], m["opt"], m["path"], m["why"])
