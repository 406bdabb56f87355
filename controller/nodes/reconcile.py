"""Reconciling what a node says it holds with what the store says runs there.

Every registration and heartbeat carries the jobs the agent *holds*
(``running_jobs``): those it runs, and those whose completion it has not yet
had acknowledged (an agent re-sends those until they are).  A job that the
store has RUNNING on that node as batch host, but the node does not list,
has vanished: the agent was restarted and found nothing of it (node
rebooted, spool lost, its wrapper killed).  No completion will ever come.

Rule: a vanished job gets a grace period of ``2 x heartbeat + 1`` seconds
(at least 5), counted from the first report that omits it, to cover a launch
still in flight when that report was built.  A report that lists it again,
or a completion, ends the suspicion; otherwise, at the next pass, the job is
treated like a job on a failed node: requeued when it allows it, else
``NODE_FAIL``.  A job ended but still ``COMPLETING`` there is released the
same way.  And when a node *registers* listing a job that the store does not
have RUNNING there, that run is told to terminate: it was requeued while the
agent was away (and must not run twice), or it was being cancelled or timed
out when the agent died (the kill sequence died with it).  An agent answers
"not running" when all it holds of the job is a completion to deliver.
A job's other nodes may hold it too (its srun steps run there): a node of a
running job is never told to terminate it.  Allocations without a batch
script (srun, salloc) are not expected on their first node: nothing runs
there unless a step does.

Example: heartbeat 1 s, grace 5 s.  Job 7 RUNNING on n1 (restarts 0); n1's
agent restarts without it and registers at t=100 listing ``[]`` -> suspect
until 105; a heartbeat at 101 also omits it; at the pass after 105, job 7 is
PENDING (BeginTime), restarts 1.

A controller that was stalled (``NodeService`` notices a long gap between
liveness checks) gives every suspect a fresh grace from its resume
(``extend``): the report that would have cleared the suspicion may still be
queued, and a pause must not make a running job look vanished.

A run the agent *fenced* (killed because it was cut off from the
controller, ``agent.cutoff``) is lost the same way, without a grace: its
completion, marked ``fenced``, makes it due at once (``lost``) if the store
still has that run RUNNING there, so it is requeued or ends NODE_FAIL rather
than being recorded with the kill's exit status.

Suspicions live in memory: after a controller restart the next report
rebuilds them.  Slurm does the same through the job list in its node
registration message (``slurmctld``'s handling of missing batch jobs).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.rows import split_list

__all__ = ["Reconciler"]


@dataclass(frozen=True)
class Vanished:
    job_id: int
    restarts: int
    node: str


class Reconciler:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._suspects: dict[tuple[int, int], tuple[str, float]] = {}  # -> (node, deadline)
        self._strays: list[Vanished] = []
        self._lock = threading.Lock()  # reports come from API threads, the loop reads

    def report(
        self, node: str, listed: Iterable[int], now: float, grace: float, registering: bool
    ) -> None:
        """Node ``node`` holds exactly ``listed``; compare with the store."""
        held = set(listed)
        with self.db.read() as s:
            q = select(JobRow).where(
                JobRow.batch_host == node,
                JobRow.allocation.is_(False),  # srun/salloc jobs: nothing runs unless steps do
                # flags > '': an index range first, so the OR is two index searches, not a scan
                (JobRow.state == "RUNNING")
                | ((JobRow.flags > "") & JobRow.flags.like("%COMPLETING%")),
            )
            # a CONFIGURING job waits for PrologSlurmctld: no node holds it yet
            rows = [(r.id, r.restarts) for r in s.scalars(q) if not _configuring(r)]
            strays = []
            if registering:
                for job_id in sorted(held):
                    row = s.get(JobRow, job_id)
                    here = split_list(row.nodes) if row is not None else []
                    if row is not None and (row.state != "RUNNING" or node not in here):
                        strays.append(Vanished(job_id, row.restarts, node))
        with self._lock:
            for job_id, restarts in rows:
                if job_id in held:
                    self._suspects.pop((job_id, restarts), None)
                else:
                    self._suspects.setdefault((job_id, restarts), (node, now + grace))
            self._strays += strays

    def lost(self, job_id: int, restarts: int, node: str, now: float) -> None:
        """Run ``restarts`` of ``job_id`` is gone from ``node`` for sure: due at ``now``."""
        with self._lock:
            self._suspects[(job_id, restarts)] = (node, now)

    def extend(self, deadline: float) -> None:
        """No suspect's grace ends before ``deadline`` (after a controller stall)."""
        with self._lock:
            for key, (node, old) in self._suspects.items():
                self._suspects[key] = (node, max(old, deadline))

    def due(self, now: float) -> dict[int, Vanished]:
        """Suspects whose grace is over (forgotten here; the caller re-checks the store)."""
        out: dict[int, Vanished] = {}
        with self._lock:
            for (job_id, restarts), (node, deadline) in list(self._suspects.items()):
                if deadline <= now:
                    del self._suspects[(job_id, restarts)]
                    out[job_id] = Vanished(job_id, restarts, node)
        return out

    def take_strays(self) -> list[Vanished]:
        """Runs to terminate on the node that listed them (each returned once)."""
        with self._lock:
            strays, self._strays = self._strays, []
        return strays


def vanished_here(row: JobRow, vanished: dict[int, Vanished]) -> bool:
    """Is ``row`` (as stored now) the very run that ``due`` reported?"""
    v = vanished.get(row.id)
    return v is not None and v.restarts == row.restarts and v.node == row.batch_host


def lost_nodes(row: JobRow, down: Iterable[str], vanished: dict[int, Vanished]) -> set[str]:
    """The job's nodes that failed it: DOWN ones, plus its batch host if it vanished there."""
    lost = set(split_list(row.nodes)) & set(down)
    if vanished_here(row, vanished) and row.batch_host:
        lost.add(row.batch_host)
    return lost


def _configuring(row: JobRow) -> bool:
    return row.state == "RUNNING" and "CONFIGURING" in row.flags
