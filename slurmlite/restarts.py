"""Why a job was restarted: one cause per requeue, kept with the job (slurmlite extension).

Slurm counts restarts (``Restarts=`` in ``scontrol show job``, squeue's
``%restartcnt``) but forgets why each happened.  slurmlite keeps one cause
per restart, oldest first, in the job's ``restart_causes`` column, shown by
``sacct -o RestartCauses`` and ``scontrol show job`` (``RestartCauses=``).
Each cause is ``kind:detail``, causes are joined with ``,``; the kinds are
lower case, unlike Slurm's reason names, so they are never mistaken for
one (nor matched by a ``grep Requeue`` of ``scontrol show job``):

========================  ==================================================
``node_fail:<node>``      the node went DOWN (silent for ``SlurmdTimeout``)
                          or stopped listing the job (its agent lost it)
``requeue:<user>``        ``scontrol requeue``/``requeuehold`` by that user
``prolog:<node>``         the node's ``Prolog`` failed or timed out; the job
                          was requeued held (``JobHeldAdmin``)
``prolog_slurmctld``      the controller's ``PrologSlurmctld`` failed
``retry:<exit code>``     a workload run failed and had retries left
                          (``max_retries``, ``controller.runs.retries``)
``idle_gpus``             its GPUs stayed idle (``SlurmliteIdleGpuPolicy``
                          with ``action=requeue``, ``slurmlite.idlegpus``)
========================  ==================================================

Worked example: job 7 lost node n1, then its owner alice requeued it, then
n2's prolog failed::

    >>> text = add_cause("", NODE_FAIL, "n1")
    >>> text = add_cause(text, REQUEUE, "alice")
    >>> add_cause(text, PROLOG, "n2")
    'node_fail:n1,requeue:alice,prolog:n2'
    >>> launch_failures('node_fail:n1,requeue:alice,prolog:n2')
    1

Only the last :data:`KEEP` causes are kept (a job requeued by its own
preemption handler thousands of times stays small); ``Restarts`` keeps the
full count.  ``launch_failures`` counts the causes that ``MaxBatchRequeue``
limits: prolog failures, on a node or on the controller.
"""

from __future__ import annotations

__all__ = ["IDLE_GPUS", "KEEP", "NODE_FAIL", "PROLOG", "PROLOG_SLURMCTLD", "REQUEUE", "RETRY", "add_cause", "causes",
           "launch_failures"]  # fmt: skip

NODE_FAIL = "node_fail"
REQUEUE = "requeue"
PROLOG = "prolog"
PROLOG_SLURMCTLD = "prolog_slurmctld"
RETRY = "retry"
IDLE_GPUS = "idle_gpus"
KINDS = (NODE_FAIL, REQUEUE, PROLOG, PROLOG_SLURMCTLD, RETRY, IDLE_GPUS)
# how the run a restart ended shows in the job's history (``job_runs.state``); a retry's
# is the state it failed with
ENDED_AS = {
    NODE_FAIL: "NODE_FAIL",
    REQUEUE: "REQUEUED",
    PROLOG: "FAILED",
    PROLOG_SLURMCTLD: "FAILED",
    IDLE_GPUS: "REQUEUED",
}
_LAUNCH_FAILURES = (PROLOG, PROLOG_SLURMCTLD)
KEEP = 64  # causes kept per job, the latest


def causes(text: str | None) -> list[str]:
    """The stored text as a list, oldest first (``""``/``None`` -> ``[]``)."""
    return [c for c in (text or "").split(",") if c]


def add_cause(text: str | None, kind: str, detail: str = "") -> str:
    """``text`` with one more cause at the end; commas in ``detail`` become ``_``."""
    if kind not in KINDS:
        raise ValueError(f"unknown restart cause: {kind!r}")
    item = f"{kind}:{detail.replace(',', '_')}" if detail else kind
    return ",".join([*causes(text), item][-KEEP:])


def launch_failures(text: str | None) -> int:
    """How many of the kept causes were failed launches (prologs)."""
    return sum(c.split(":", 1)[0] in _LAUNCH_FAILURES for c in causes(text))
