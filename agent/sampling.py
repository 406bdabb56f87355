"""Sampling what each running job uses, and summing it up for the controller.

Every ``JobAcctGatherFrequency`` seconds (slurm.conf; default 30, 0 = off)
the agent takes one *round*: for every batch run it watches, one reading of
its CPU time and memory (``agent.usage_probe``: the job's cgroup, else
``/proc``) and of the GPUs it holds (``agent.gres.sampling``: NVML, or the
fake GPUs' state file).  GPUs are read once per round, however many jobs
hold them.  One more sample is taken the moment the job's process ends
(``BatchRun.on_end``: its zombie and cgroup still hold the last figures),
and that summary travels in the run's completion.

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
also written to the run's spool directory (``usage.json``) after each
round, so an agent restarted under a running job carries on counting instead
of starting again from zero (which the controller would take as older).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.gres import GpuDevice, device_indices
from agent.gres.sampling import GpuReading, GpuSampler, gpu_sampler
from agent.usage_probe import JobReading, ProcTable, read_job
from slurmlite.clock import Clock, system_clock
from slurmlite.usage import GpuUsage, UsageSummary

if TYPE_CHECKING:
    from agent.daemon import AgentState
    from agent.running import BatchRun

log = logging.getLogger("slurmd.sampling")
FILE = "usage.json"


@dataclass
class _Run:
    proc: BatchRun
    gpus: list[int]
    summary: UsageSummary
    ended: bool = False  # the end sample is taken


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
    """The agent's sampling duty (module doc): track runs, take rounds, hand out summaries."""

    def __init__(
        self,
        gpus: GpuSampler,
        frequency: float,
        clock: Clock = system_clock,
        probe: Any = read_job,
        devices: Sequence[GpuDevice] = (),
    ) -> None:
        self.gpus, self.frequency, self.clock, self.probe = gpus, frequency, clock, probe
        self.devices = list(devices)  # the node's GPUs: jobs' GPU numbers -> machine indices
        self.runs: dict[tuple[int, int], _Run] = {}
        self._lock = threading.Lock()  # a run's end hook may fire on a waiting thread

    @classmethod
    def of(cls, state: AgentState) -> UsageSampler:
        freq = state.cfg.job_acct_gather_frequency
        return cls(gpu_sampler(state.gpu_source, state.gpus), freq, state.clock, devices=state.gpus)

    # ------------------------------------------------------------ runs

    def track(self, job_id: int, restarts: int, proc: BatchRun, gpus: list[int] | None) -> None:
        """Watch a run holding the node's GPUs ``gpus`` (as the order numbers them;
        ``agent.gres.device_indices``); None (an adopted run): as its ``usage.json`` says."""
        if not self.frequency:
            return
        summary, saved = _load(proc.job_dir, job_id, restarts)
        devices = saved if gpus is None else device_indices(gpus, self.devices)
        run = _Run(proc, list(devices), summary)
        with self._lock:
            self.runs[(job_id, restarts)] = run
        proc.on_end = lambda p, key=(job_id, restarts): self.ended(key)

    def ended(self, key: tuple[int, int]) -> None:
        """The end sample, once (the job's process just ended; its zombie is still there)."""
        with self._lock:
            run = self.runs.get(key)
            if run is None or run.ended:
                return
            run.ended = True
            self._sample([run], ProcTable())

    def finish(self, job_id: int, restarts: int) -> UsageSummary | None:
        """Stop watching the run; its final summary (None: never sampled)."""
        with self._lock:
            run = self.runs.pop((job_id, restarts), None)
        if run is None or not run.summary.samples:
            return None
        return run.summary

    def summaries(self) -> list[UsageSummary]:
        """The running jobs' summaries so far (those sampled at least once)."""
        with self._lock:
            return [r.summary for _, r in sorted(self.runs.items()) if r.summary.samples]

    # ---------------------------------------------------------- rounds

    def sample(self) -> int:
        """One round over every run still going; how many were sampled."""
        with self._lock:
            runs = [r for r in self.runs.values() if not r.ended]
            self._sample(runs, ProcTable())
        for run in runs:
            _save(run)
        return len(runs)

    def _sample(self, runs: list[_Run], procs: ProcTable) -> None:
        wanted = sorted({i for r in runs for i in r.gpus})
        readings = self.gpus.sample(wanted) if wanted else {}
        now = self.clock()
        for run in runs:
            cg = run.proc.cgroup
            job = self.probe(run.proc.pid, cg.path if cg else None, cg.version if cg else 0, procs)
            mine = {i: readings[i] for i in run.gpus if i in readings}
            fold(run.summary, now, job, mine)

    async def sample_forever(self) -> None:
        if not self.frequency:
            return
        while True:
            await asyncio.sleep(self.frequency)
            try:
                self.sample()
            except Exception:  # a probe's surprise must not end the agent's sampling
                log.exception("event=sample_failed: usage of this round is skipped")


def _load(job_dir: Path, job_id: int, restarts: int) -> tuple[UsageSummary, list[int]]:
    """The run's saved summary and GPUs (a fresh summary when none is saved for this run)."""
    try:
        data = json.loads((job_dir / FILE).read_text())
        s = data["summary"]
        if s["job_id"] == job_id and s["restarts"] == restarts:
            s["gpus"] = [GpuUsage(**g) for g in s.get("gpus", [])]
            return UsageSummary(**s), [int(i) for i in data.get("gpus", [])]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return UsageSummary(job_id=job_id, restarts=restarts), []


def _save(run: _Run) -> None:
    data = {"gpus": run.gpus, "summary": dataclasses.asdict(run.summary)}
    path = run.proc.job_dir / FILE
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:  # the run's directory went away (it ended meanwhile)
        pass
