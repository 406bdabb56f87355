"""The agent's duties towards job steps, mixed into ``agent.daemon.AgentState``.

* ``check_step_job``: a step of a job whose batch script runs here must
  belong to that run (same restart count): a step signed for a run that was
  requeued since must not start next to the new one.  A job that does not
  run here is taken on the credential's word: an allocation (``salloc``,
  ``srun`` outside a job: the controller launches nothing for it), or a
  node of a batch job other than its batch host.
* ``start_step``: the NDJSON stream of a started step, or of one
  ``{"error": ...}`` line when it cannot start -- the node's part of the
  step is then reported at once as a launch failure (raw status 53,
  ``JobLaunchFailure``, as a batch launch failure), so the controller does
  not wait for it.
* ``signal_steps``: what a ``SignalSpec`` means for the job's steps here
  (``AgentState.signal`` handles the batch script):

  =====================  =================================================
  order                  the step tasks
  =====================  =================================================
  terminate              the kill sequence, with the step's cancel line
  signal (default)       the signal: Slurm's default target is the steps
  signal, ``full``       the signal (with the batch shell and its children)
  signal, ``batch_only`` nothing
  =====================  =================================================

  An allocation job has no batch run here: a terminate for it ends its
  steps, and the cgroup made for them goes with the last one.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from agent.confine import LaunchError
from agent.orders import OrderRefused
from agent.stepio import encode_event
from agent.steps import cancel_message
from agent.steptable import StepTable
from slurmlite.clock import Clock
from slurmlite.protocol import JobCompletion, SignalSpec, StepLaunch

__all__ = ["StepDuties"]

log = logging.getLogger("slurmd")


class StepDuties:
    """The step half of the agent's state (a mixin of ``AgentState``)."""

    name: str
    jobs: dict[tuple[int, int], Any]
    steps: StepTable
    clock: Clock  # Unix seconds

    def _queue(self, msg: JobCompletion) -> None:
        raise NotImplementedError  # CompletionSpool spools and reports

    def check_step_job(self, job_id: int, restarts: int) -> None:
        """``OrderRefused`` when this node runs another run of the job."""
        runs = sorted(r for j, r in self.jobs if j == job_id)
        if runs and restarts not in runs:
            raise OrderRefused(
                f"job {job_id} runs here with restart count {runs[-1]}, not {restarts}"
            )

    async def start_step(self, launch: StepLaunch) -> AsyncIterator[bytes]:
        """Start the node's tasks of the step: the answer's stream."""
        batch = self.jobs.get((launch.job_id, launch.restarts))
        cgroup = batch.proc.cgroup if batch is not None else None
        try:
            run = await self.steps.start(launch, cgroup)
        except LaunchError as e:
            log.warning(
                "event=step_failed step=%s.%s node=%s error=%r",
                launch.job_id,
                launch.step_id,
                self.name,
                str(e),
            )
            now = self.clock()
            self._queue(
                JobCompletion(
                    node=self.name,
                    job_id=launch.job_id,
                    restarts=launch.restarts,
                    step_id=str(launch.step_id),
                    exit_code=e.exit_status,
                    start_time=now,
                    end_time=now,
                    launch_failed=True,
                    reason=e.reason,
                    detail=e.detail,
                )
            )
            return _one_line({"error": e.detail or str(e)})
        return run.stream()

    def signal_steps(self, spec: SignalSpec, covered: bool = False) -> int:
        """Apply ``spec`` to the job's steps here (table in the module docstring); how many.

        ``covered``: a terminate whose kill sequence already reaches the steps
        (the batch run's cgroup holds them): the steps only get their line, so
        that no task gets each signal twice."""
        runs = [r for r in self.steps.of_job(spec.job_id, spec.restarts) if r.ended is None]
        if spec.signal is None:
            for run in runs:
                line = cancel_message(
                    spec.job_id, run.launch.step_id, self.name, spec.message, self.clock()
                )
                if covered:
                    run.announce(line)
                else:
                    run.cancel(spec.kill_wait, line)
        elif not spec.batch_only:
            for run in runs:
                run.signal(spec.signal)
        else:
            return 0
        return len(runs)


async def _one_line(event: dict[str, Any]) -> AsyncIterator[bytes]:
    yield encode_event(event)
