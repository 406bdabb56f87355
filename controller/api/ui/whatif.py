"""What if I asked for N GPUs now?  A dry run of the scheduling pass.

The dashboard's what-if page (``controller/api/ui/plan.py``) asks this module
the question ``sbatch --test-only`` asks (``willrun.py``), for a request
made of a few numbers: GPUs, a time limit, a partition, optionally nodes
and CPUs per task.  Nothing is stored and no job id is taken: the request is

1. validated as a submission is (``SubmitValidator.validate``: an unknown
   partition, account or QOS, a limit over the QOS -> ``SlurmError``, which
   the page shows; a request no node of the partition can ever hold ->
   ``WhatIf.never``);
2. turned into the pending job it would be (its priority as at submission,
   submit time now, id ``PROBE``: after every real job in a tie), added to
   a fresh snapshot (``gather.take``, copies of the store's rows);
3. handed to ``slurmlite.scheduler.explain``: the same pure pass the loop
   runs (backfill, with ``bf_max_job_test`` raised to reach the probe, as
   ``willrun.examining`` does), read for the probe: starts now (where), or
   its estimate, the jobs in its way (``Blocker``: running jobs whose end
   frees its nodes, higher jobs reserved there) and verified suggestions.

"Not now" and "never" stay apart: ``starts_now``, ``start`` (an estimate
within ``bf_window``), ``start is None`` with ``reason`` (it would wait
without a start in view, e.g. behind an UNLIMITED job or a DOWN
partition) and ``never`` (refused: it could not run as asked).

Example: n1 and n2 with 2 GPUs each, jobs 7 and 8 holding all four until
10:00 (now 9:00): ``what_if(..., gpus=2, 1 h)`` -> starts_now False,
start 10:00, nodes ("n1",), behind (Blocker(7, "running", ...)).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from controller.jobs.validate import RowView
from controller.sched import gather
from controller.sched.apply import bf_window
from controller.sched.gather import pending_job
from controller.sched.willrun import examining
from slurmlite.protocol import JobSubmit
from slurmlite.protocol_policy import Blocker, Suggestion
from slurmlite.resources import gpu_fields
from slurmlite.scheduler.explain import explain
from slurmlite.timefmt import fmt_limit_fixed
from slurmlite.wire_limits import INT32_MAX

if TYPE_CHECKING:
    from controller.auth.callers import Caller
    from controller.context import Controller

PROBE = INT32_MAX  # the probe's job id: no real job has it, and it sorts last


@dataclass(frozen=True)
class Ask:
    """The what-if form's request.  ``minutes`` None: UNLIMITED; ``partition`` None:
    the default partition; ``nodes``/``cpus`` None: not given."""

    gpus: int
    minutes: int | None
    partition: str | None = None
    nodes: int | None = None
    cpus: int | None = None

    def submit(self) -> JobSubmit:
        """The submission ``sbatch`` would send for :meth:`command`."""
        gpus = gpu_fields(None, None, str(self.gpus)) if self.gpus else {}
        return JobSubmit(
            script="#!/bin/sh\n",
            name="what-if",
            work_dir="/",
            submit_dir="/",
            submit_host="dashboard",
            partition=self.partition,
            nodes_min=self.nodes,
            nodes_max=self.nodes,
            cpus_per_task=self.cpus,
            time_limit=self.minutes,
            time_unlimited=self.minutes is None,
            **gpus,  # type: ignore[arg-type]
        )

    def command(self) -> str:
        """The same question on the command line: ``sbatch --test-only ...``."""
        words = ["sbatch", "--test-only"]
        if self.partition:
            words.append(f"-p {self.partition}")
        if self.gpus:
            words.append(f"--gpus={self.gpus}")
        if self.nodes:
            words.append(f"-N {self.nodes}")
        if self.cpus:
            words.append(f"-c {self.cpus}")
        words.append(f"--time={fmt_limit_fixed(self.minutes)}")
        return " ".join(words) + " job.sh"


@dataclass(frozen=True)
class WhatIf:
    """The answer (see the module docstring for the four cases)."""

    now: float
    partition: str
    starts_now: bool = False
    start: float | None = None
    nodes: tuple[str, ...] = ()
    behind: tuple[Blocker, ...] = ()
    reason: str = ""
    reason_text: str = ""
    never: str | None = None
    suggestions: tuple[Suggestion, ...] = field(default_factory=tuple)


def what_if(ctl: Controller, caller: Caller, ask: Ask, now: float) -> WhatIf:
    """Where and when ``ask`` would start if ``caller`` submitted it at ``now``.

    Raises ``SlurmError`` for what ``sbatch`` would be refused (unknown
    partition, ...).  Reads the store; writes nothing."""
    req = ask.submit()
    plan = ctl.validator.validate(caller, req)
    partition = plan.partition.name
    if plan.error is not None:
        return WhatIf(now, partition, never=plan.error.full)
    values = ctl.validator.build_values(PROBE, caller, req, plan, now)
    probe = dataclasses.replace(pending_job(RowView(values)), held=None, begin_time=None)
    snap, _ = gather.take(ctl.db, ctl.cfg, ctl.nodes, now, extra=(probe,))
    policy = examining(snap, PROBE, ctl.policy)
    answer = explain(snap, policy, PROBE)
    start = answer.estimated_start
    if start is not None and not answer.starts_now and start > now + bf_window(policy):
        start = None  # beyond the window: shown as no estimate, as squeue --start does
    return WhatIf(
        now=now,
        partition=partition,
        starts_now=answer.starts_now,
        start=now if answer.starts_now else start,
        nodes=tuple(answer.planned_nodes) if start is not None or answer.starts_now else (),
        behind=tuple(answer.blockers),
        reason=answer.reason,
        reason_text=answer.reason_text,
        suggestions=tuple(s for s in answer.suggestions if s.start < (start or float("inf"))),
    )
