"""What a failed ``Prolog`` or ``Epilog`` on a node does to the job and the node.

The agent runs the node's ``Prolog`` before the batch script and its
``Epilog`` after the job (``agent.scripts``) and says in the run's
completion which of them failed (``JobCompletion.failed_script``: non-zero
exit, killed, or past ``PrologEpilogTimeout``).  Slurm's consequences:

* **Prolog failed**: nothing of the job ran.  The node is drained with
  reason ``Prolog error`` (it stays out of service until an operator
  resumes it), and the job is requeued (``controller.sched.requeue``,
  cause ``prolog:<node>``) and held by an administrator: ``JobHeldAdmin``,
  "launch failed requeued held", until an operator releases it.  A job
  whose launches failed ``MaxBatchRequeue`` times already ends FAILED
  (``JobLaunchFailure``) instead.  Slurm requeues whatever the job's
  ``--requeue`` setting says: nothing of it has run.
* **Epilog failed**: the job ended as it ended; the node is drained with
  reason ``Epilog error``.

Example: ``MaxBatchRequeue=1``.  Job 7's prolog fails on n1 -> n1 DRAIN
"Prolog error", job 7 PENDING JobHeldAdmin, restarts 1, causes
``prolog:n1``.  Released, it fails again on n2 -> FAILED, JobLaunchFailure
(one launch failure was already allowed), n2 drained too.

The drains are returned, not written: the caller applies them after its
commit, through the node service (the node rows' only writer).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from controller.sched.requeue import requeue_failed_launch
from slurmlite.restarts import PROLOG

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from controller.store.models import JobRow
    from slurmlite.config import Config
    from slurmlite.protocol import JobCompletion

log = logging.getLogger("slurmctld.jobs")
PROLOG_ERROR, EPILOG_ERROR = "Prolog error", "Epilog error"  # Slurm's drain reasons


def prolog_failed(
    s: Session, cfg: Config, row: JobRow, node: str, msg: JobCompletion, now: float
) -> bool:
    """If ``msg`` says the run of ``row`` never started because its prolog on ``node``
    failed, apply that (module doc) and return True."""
    if msg.failed_script != "prolog" or row.state != "RUNNING":
        return False
    row.system_comment = msg.cause or f"prolog failed on {node}"  # kept while requeued held
    requeue_failed_launch(s, cfg, row, now, PROLOG, node, f"{PROLOG_ERROR} on {node}")
    if row.state == "FAILED":
        row.exit_code = msg.exit_code
    return True


def drain_for(msg: JobCompletion) -> str | None:
    """The drain reason a completion asks for, if a script of the node failed."""
    return {"prolog": PROLOG_ERROR, "epilog": EPILOG_ERROR}.get(msg.failed_script or "")


def drain_after(
    node: str,
    msgs: list[JobCompletion],
    changed: list[bool],
    drain: Callable[[str, str], None] | None,
) -> None:
    """Drain ``node`` once for each kind of script failure its new reports name."""
    for reason in sorted(
        {r for m, c in zip(msgs, changed, strict=True) if c and (r := drain_for(m))}
    ):
        log.warning("event=node_drained node=%s reason=%r", node, reason)
        if drain is not None:
            drain(node, reason)
