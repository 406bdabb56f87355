"""The tail of a job's output on its page: read here, else asked of the batch host.

The job's stdout (and its stderr, when ``--error`` names another file) is
written by the agent on the batch host, at the paths the launch used
(``controller.sched.launch.output_paths``: ``--output`` with ``%j``,
``%x``... expanded on the batch host's name).  The page shows the end of
each, to the job's owner only (the caller checks; operators have the host):

1. **here** first: on one host, or with a shared file system, the file is
   readable on the controller's host (``slurmlite.filetail.read_tail``: no
   symlink followed, a regular file of the job's user only -- the
   controller may be root and the path is the user's choice);
2. **else the batch host's agent**, with a signed ``TailSpec`` (op
   ``tail``, ``Signer.tail``) naming the job, its run, its user and the
   paths derived here; the agent reads them by the same rules, as the
   job's user (``agent.tail``).  The request runs on the event loop while
   this page's worker thread waits at most ``AGENT_TIMEOUT_S``; an agent
   that does not answer in time, cannot be reached or refuses leaves the
   page saying so ("output not available (node unreachable)"), never
   failing it.

Example: job 7 of alice on n2, ``slurm-7.out`` of 100 KiB, not on the
controller's disk -> n2's agent answers its last ``TAIL`` bytes from the
first whole line; n2 down -> "output not available (node unreachable)".
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from anyio.from_thread import run as run_on_loop

from controller.context import Controller
from controller.nodes.agent_client import AgentError
from controller.sched.launch import output_paths
from controller.store.models import JobRow
from slurmlite.filetail import read_tail
from slurmlite.protocol import TailSpec

log = logging.getLogger("slurmctld.ui")

TAIL = 16 * 1024  # bytes shown at most, per file
AGENT_TIMEOUT_S = 3.0  # how long the page waits for the batch host
UNREACHABLE = "output not available (node unreachable)"

Tails = list[tuple[str, str]]  # (path, its tail) of each file shown


def output_tail(ctl: Controller, row: JobRow) -> tuple[Tails, str]:
    """(the files' tails, or [] and why there is none); from a page's worker thread."""
    if not row.batch_host:
        return [], "the job has not started on a node yet"
    if row.allocation:
        return [], "an allocation (salloc, srun) has no batch output file"
    out, err, _ = output_paths(row, row.batch_host)
    paths = [out] if err == out else [out, err]
    local = [(p, read_tail(p, row.uid, TAIL)) for p in paths]
    here = [(p, text) for p, text in local if text is not None]
    if len(here) == len(paths):
        return here, ""
    try:
        files = run_on_loop(_ask_batch_host, ctl, row, paths)
    except (AgentError, TimeoutError) as e:
        log.info("event=output_tail_unavailable job=%s node=%s error=%r", row.id, row.batch_host, e)
        return here, UNREACHABLE  # what was readable here is still shown
    tails = [(f["path"], f["data"]) for f in files if f.get("found")]
    if not tails:
        return [], f"{out} is not a readable file of the job's user on {row.batch_host}"
    return tails, ""


async def _ask_batch_host(ctl: Controller, row: JobRow, paths: list[str]) -> list[dict[str, Any]]:
    to = ctl.nodes.address(row.batch_host or "")
    if to is None:
        raise AgentError(f"node {row.batch_host} is not in the store")
    spec = TailSpec("", row.id, row.restarts, row.uid, row.gid, paths, TAIL)
    ctl.signer.tail(spec, to.node, ctl.clock())
    return await asyncio.wait_for(ctl.agents.tail(to, spec), AGENT_TIMEOUT_S)
