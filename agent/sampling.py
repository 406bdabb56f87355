"""Sampling what each running job uses, and summing it up for the controller.

Every ``JobAcctGatherFrequency`` seconds (slurm.conf; default 30, 0 = off)
the agent takes one *round*: for every job with something running on this
node -- its batch run (batch host), the tasks of its steps (every node of
an ``srun``: a multi-node batch job's other nodes, ``salloc`` and
``srun --pty`` allocations, which have no batch run) -- one reading of the
CPU time and memory of all of them together (``agent.usage_probe``: the
batch run's cgroup, else ``/proc``; ``agent.step_usage``: the steps' share
that the batch reading does not hold) and of the GPUs the job holds here
(``agent.gres.sampling``: NVML, or the fake GPUs' state file; the batch
run's and every step's GPUs).  GPUs are read once per round, however many
jobs hold them, and ``/proc`` is walked once per round for all jobs.  One
more sample is taken the moment the batch process ends (``BatchRun.on_end``:
its zombie and cgroup still hold the last figures) and the moment a step
ends on this node (``step_ended``: its tasks are reaped, their CPU time
known); the summary travels in that completion.

A job without a batch run here keeps its summary between steps (``srun``
after ``srun`` in one ``salloc``): a new step goes on counting where the
last one left, as the controller keeps only the summary with most samples.
Between steps nothing of the job runs here and it is not sampled (its
GPUs are not read either); the last ``DORMANT`` such summaries are kept.

Each reading is folded into the run's :class:`~slurmlite.usage.UsageSummary`:

* ``samples += 1``; ``first_sample``/``last_sample`` are the round's time;
* ``cpu_seconds`` is the largest cumulative CPU time read so far;
* memory: ``rss_sum_bytes += now`` (the mean is ``rss_sum / samples``),
  ``max_rss_bytes = max(peak so far, now, the kernel's peak)``;
* per GPU: the same sums and maxima of utilization, memory used and power.

Worked example: a job on GPUs 0-1, three rounds with GPU 0 at 90, 80, 100 %
and GPU 1 at 0 % -> GPU 0 ``util_sum 270, util_max 100`` (mean 90 %), GPU 1
mean 0 %; ``seff`` then advises ``--gpus=1``.

Summaries are cumulative, so the controller keeps only the newest; they are
also written to the spool after each round (``agent.usage_spool``), so an
agent restarted under a running job carries on counting instead of starting
again from zero (which the controller would take as older), and a job that
had only steps here goes on from its saved summary with its next step.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.gres import GpuDevice, device_indices
from agent.gres.sampling import GpuReading, GpuSampler, gpu_sampler
from agent.step_usage import add_readings, kept_cpu, read_steps
from agent.usage_probe import JobReading, ProcTable, read_job
from agent.usage_spool import FILE, load, remove, save, saved_steps, step_file
from slurmlite.clock import Clock, system_clock
from slurmlite.usage import GpuUsage, UsageSummary

if TYPE_CHECKING:
    from agent.daemon import AgentState
    from agent.running import BatchRun
    from agent.steps import StepRun

log = logging.getLogger("slurmd.sampling")
DORMANT = 256  # summaries kept for jobs with nothing running here (module doc)

Key = tuple[int, int]  # (job id, restarts)


@dataclass
class _Job:
    """One job's run on this node: what runs of it here, and its summary."""

    summary: UsageSummary
    gpus: list[int]  # the machine's GPU indices the job holds here
    batch: BatchRun | None = None
    steps: list[StepRun] = field(default_factory=list)  # running (or just ended) here
    kept_cpu: float = 0.0  # CPU time of ended steps that no reading sees again
    ended: bool = False  # the batch run's end sample is taken

    @property
    def running(self) -> bool:
        return bool(self.steps) or (self.batch is not None and not self.ended)

    def add_gpus(self, indices: list[int]) -> None:
        self.gpus = sorted(set(self.gpus) | set(indices))


def fold(s: UsageSummary, now: float, job: JobReading, gpus: dict[int, GpuReading]) -> None:
    """Add one round's readings to ``s`` (module doc)."""
    s.samples += 1
    s.first_sample = now if s.first_sample is None else s.first_sample
    s.last_sample = now
    s.cpu_seconds = max(s.cpu_seconds, job.cpu_seconds or 0.0)
    mem = job.mem_bytes or 0
    s.rss_sum_bytes += mem
    s.max_rss_bytes = max(s.max_rss_bytes, mem, job.mem_peak_bytes or 0)
    held = {g.index: g for g in s.gpus}
    for index, r in sorted(gpus.items()):
        g = held.get(index)
        if g is None:
            g = held[index] = GpuUsage(index=index)
            s.gpus.append(g)
        g.samples += 1
        g.util_sum += r.util
        g.util_max = max(g.util_max, r.util)
        g.mem_sum_mib += r.mem_used_mib
        g.mem_max_mib = max(g.mem_max_mib, r.mem_used_mib)
        g.mem_total_mib = r.mem_total_mib or g.mem_total_mib
        if r.power_w is not None:
            g.power_sum_w = (g.power_sum_w or 0.0) + r.power_w
            g.power_max_w = max(g.power_max_w or 0.0, r.power_w)


class UsageSampler:
    """The agent's sampling duty (module doc): track jobs, take rounds, hand out summaries."""

    def __init__(
        self,
        gpus: GpuSampler,
        frequency: float,
        clock: Clock = system_clock,
        probe: Any = read_job,
        devices: Sequence[GpuDevice] = (),
        spool: Path | None = None,
    ) -> None:
        self.gpus, self.frequency, self.clock, self.probe = gpus, frequency, clock, probe
        self.devices = list(devices)  # the node's GPUs: jobs' GPU numbers -> machine indices
        self.runs: dict[Key, _Job] = {}  # jobs with something running here
        self.dormant: OrderedDict[Key, _Job] = OrderedDict()  # step-only jobs between steps
        self._lock = threading.Lock()  # a run's end hook may fire on a waiting thread
        self.spool = spool  # where step-only jobs' summaries are saved (agent.usage_spool)
        if spool is not None and self.frequency:
            spool.mkdir(mode=0o700, parents=True, exist_ok=True)  # the jobs' figures: ours
            for summary, gpus in saved_steps(spool, DORMANT):
                self.dormant[(summary.job_id, summary.restarts)] = _Job(summary, gpus)

    @classmethod
    def of(cls, state: AgentState) -> UsageSampler:
        freq = state.cfg.job_acct_gather_frequency
        gpus = gpu_sampler(state.gpu_source, state.gpus)
        return cls(gpus, freq, state.clock, devices=state.gpus, spool=state.spool / "usage")

    # ------------------------------------------------------------ batch runs

    def track(self, job_id: int, restarts: int, proc: BatchRun, gpus: list[int] | None) -> None:
        """Watch a batch run holding the node's GPUs ``gpus`` (as the order numbers them;
        ``agent.gres.device_indices``); None (an adopted run): as its ``usage.json`` says."""
        if not self.frequency:
            return
        summary, saved = load(proc.job_dir / FILE, job_id, restarts)
        devices = saved if gpus is None else device_indices(gpus, self.devices)
        with self._lock:
            job = self._job((job_id, restarts), summary)
            job.batch, job.ended = proc, False
            job.add_gpus(list(devices))
        proc.on_end = lambda p, key=(job_id, restarts): self.ended(key)

    def ended(self, key: Key) -> None:
        """The batch run's end sample, once (its process just ended; its zombie is still there)."""
        with self._lock:
            job = self.runs.get(key)
            if job is None or job.ended:
                return
            self._sample([job], ProcTable())
            job.ended = True

    def finish(self, job_id: int, restarts: int) -> UsageSummary | None:
        """Stop watching the batch run's job; its final summary (None: never sampled)."""
        with self._lock:
            job = self.runs.pop((job_id, restarts), None)
        if job is None or not job.summary.samples:
            return None
        return job.summary

    # ------------------------------------------------------------ steps

    def track_step(self, run: StepRun) -> None:
        """Count a step that started here with its job (``agent.steptable``)."""
        if not self.frequency:
            return
        launch = run.launch
        key = (launch.job_id, launch.restarts)
        with self._lock:
            job = self._job(key, UsageSummary(job_id=key[0], restarts=key[1]))
            job.steps.append(run)
            job.add_gpus(device_indices(launch.gpus, self.devices))

    def step_ended(self, run: StepRun) -> UsageSummary | None:
        """The step ended here: the job's end sample with it, then the step is let go; the
        job's summary for the step's completion (None: not sampled)."""
        key = (run.launch.job_id, run.launch.restarts)
        with self._lock:
            job = self.runs.get(key)
            if job is None or run not in job.steps:
                return None
            try:
                self._sample([job], ProcTable())
            finally:  # the step is let go even if the sample failed
                job.kept_cpu += kept_cpu(run, job.batch.cgroup if job.batch else None)
                job.steps.remove(run)
                if not job.running and job.batch is None:
                    del self.runs[key]
                    self.dormant[key] = job
                    while len(self.dormant) > DORMANT:
                        gone, _ = self.dormant.popitem(last=False)
                        if self.spool is not None:
                            remove(step_file(self.spool, *gone))
            self._save(key, job)
            return copy.deepcopy(job.summary)

    def _job(self, key: Key, fresh: UsageSummary) -> _Job:
        """The record of ``key``: running, dormant, or made with ``fresh`` (lock held)."""
        job = self.runs.get(key) or self.dormant.pop(key, None)
        if job is None:
            job = _Job(fresh, [])
        elif fresh.samples > job.summary.samples:  # an adopted run's saved summary
            job.summary = fresh
        self.runs[key] = job
        return job

    # ---------------------------------------------------------- reporting

    def summaries(self) -> list[UsageSummary]:
        """The running jobs' summaries so far (those sampled at least once)."""
        with self._lock:
            return [j.summary for _, j in sorted(self.runs.items()) if j.summary.samples]

    # ---------------------------------------------------------- rounds

    def sample(self) -> int:
        """One round over every job still running here; how many were sampled."""
        with self._lock:
            jobs = {k: j for k, j in self.runs.items() if j.running}
            self._sample(list(jobs.values()), ProcTable())
        for key, job in jobs.items():
            self._save(key, job)
        return len(jobs)

    def _save(self, key: Key, job: _Job) -> None:
        """The job's summary to its file (``agent.usage_spool``)."""
        if job.batch is not None:
            save(job.batch.job_dir / FILE, job.summary, job.gpus)
        elif self.spool is not None:
            save(step_file(self.spool, *key), job.summary, job.gpus)

    def _sample(self, jobs: list[_Job], procs: ProcTable) -> None:
        wanted = sorted({i for j in jobs for i in j.gpus})
        readings = self.gpus.sample(wanted) if wanted else {}
        now = self.clock()
        for job in jobs:
            mine = {i: readings[i] for i in job.gpus if i in readings}
            fold(job.summary, now, self._read(job, procs), mine)

    def _read(self, job: _Job, procs: ProcTable) -> JobReading:
        """All of the job's processes here as one reading (``agent.step_usage``)."""
        reading = JobReading(None, None)
        cg = job.batch.cgroup if job.batch is not None else None
        if job.batch is not None and not job.ended:
            b = job.batch
            reading = self.probe(b.pid, cg.path if cg else None, cg.version if cg else 0, procs)
        if job.steps:
            reading = add_readings(reading, read_steps(job.steps, cg, procs))
        if job.kept_cpu:
            reading = add_readings(reading, JobReading(job.kept_cpu, None))
        return reading

    async def sample_forever(self) -> None:
        if not self.frequency:
            return
        while True:
            await asyncio.sleep(self.frequency)
            try:
                self.sample()
            except Exception:  # a probe's surprise must not end the agent's sampling
                log.exception("event=sample_failed: usage of this round is skipped")
