"""The warning signal before a time limit: ``sbatch --signal=[B:]SIG[@secs]``.

A job that asked for one gets ``SIG`` once per run, in the first loop pass
at or after ``end_time - secs``: to every step's tasks on all its nodes
(Slurm's default target; the batch shell is left alone), or, with ``B:``,
to the batch shell only (so its ``trap`` runs; its children are not
signalled).  Training code uses the time to checkpoint and requeue itself
(submitit asks for ``--signal=USR2@90``).

Invariant: a run is warned at most once.  ``warned_run`` records the run
(``restarts``) that was warned, so a requeued job, whose ``restarts`` grew,
is warned again in its new run, as Slurm clears its "sent" flag on requeue.

Worked example: ``--time=10 --signal=USR2@90`` starting at t=1000 ends at
t=1600; the pass at t=1510.3 (the first with ``1600 - 90 <= now``) sends
SIGUSR2 to the steps and sets ``warned_run = 0``; later passes send nothing.
A job without a limit (``end_time`` NULL) is never warned.

Reference: spec §1.6 (``--signal``), the sbatch(1) man page.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_, select

from controller.nodes.agent_client import AgentOrder
from controller.store.models import JobRow
from controller.store.rows import split_list


def due_warnings(s: Any, now: float) -> list[AgentOrder]:
    """Mark the running jobs whose warning is due as warned; the signal orders for them."""
    q = select(JobRow).where(
        JobRow.state == "RUNNING",
        JobRow.warn_signal.is_not(None),
        JobRow.end_time.is_not(None),
        JobRow.end_time - JobRow.warn_time <= now,
        or_(JobRow.warned_run.is_(None), JobRow.warned_run != JobRow.restarts),
    )
    orders: list[AgentOrder] = []
    for row in s.scalars(q):
        row.warned_run = row.restarts
        nodes = [row.batch_host] if row.warn_batch else split_list(row.nodes)
        for node in nodes:
            if node:
                orders.append(
                    AgentOrder(
                        "signal",
                        row.id,
                        node,
                        row.restarts,
                        signal=row.warn_signal,
                        batch_only=row.warn_batch,
                    )
                )
    return orders
