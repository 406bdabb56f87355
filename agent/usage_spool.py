"""Usage summaries that outlive the agent: saved after each round, taken back at start.

A summary is cumulative, and the controller keeps the one with most samples
(``controller.accounting.usage``): an agent that restarted and counted again
from zero would be ignored until it caught up, and then replace the totals
with smaller ones.  So each summary the sampler (``agent.sampling``) keeps
is written to the spool after every round, atomically (a temporary file,
then ``rename``), as JSON ``{"gpus": [...], "summary": {...}}``:

* a batch run's in its run directory, ``<spool>/job<ID>/usage.json``, which
  goes with the run once its completion is acknowledged;
* a job with only steps on this node (an allocation, a batch job's other
  node) in ``<spool>/usage/job_<ID>_<RESTARTS>.json``; its steps end with
  the agent, but the next step of the same allocation carries on from it.
  These files are removed when the sampler lets the summary go
  (``agent.sampling.DORMANT``), and a starting agent takes back at most
  that many, the most recent first.

Example: job 7 (an ``salloc``) ran one step on n2 (3 samples), the agent
restarted, a second step starts: the summary goes on at 4 samples.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from pathlib import Path

from slurmlite.usage import GpuUsage, UsageSummary

__all__ = ["FILE", "load", "remove", "save", "saved_steps", "step_file"]

FILE = "usage.json"  # a batch run's, in its run directory


def load(path: Path, job_id: int, restarts: int) -> tuple[UsageSummary, list[int]]:
    """The saved summary and GPUs of the run (a fresh summary when none is saved for it)."""
    try:
        data = json.loads(path.read_text())
        s = data["summary"]
        if s["job_id"] == job_id and s["restarts"] == restarts:
            s["gpus"] = [GpuUsage(**g) for g in s.get("gpus", [])]
            return UsageSummary(**s), [int(i) for i in data.get("gpus", [])]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return UsageSummary(job_id=job_id, restarts=restarts), []


def save(path: Path, summary: UsageSummary, gpus: list[int]) -> None:
    """Write atomically; a directory that went away (the run ended meanwhile) is no error."""
    data = {"gpus": gpus, "summary": dataclasses.asdict(summary)}
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass


def step_file(folder: Path, job_id: int, restarts: int) -> Path:
    return folder / f"job_{job_id}_{restarts}.json"


def remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def saved_steps(folder: Path, keep: int) -> list[tuple[UsageSummary, list[int]]]:
    """The step-only summaries saved in ``folder``, oldest first, at most ``keep`` (the
    rest, and unreadable files, are removed)."""
    found = []
    for path in folder.glob("job_*_*.json"):
        parts = path.stem.split("_")
        if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
            continue
        with contextlib.suppress(OSError):
            found.append((path.stat().st_mtime, path, int(parts[1]), int(parts[2])))
    readable = []
    for _, path, job_id, restarts in sorted(found):
        summary, gpus = load(path, job_id, restarts)
        if summary.samples:
            readable.append((path, summary, gpus))
        else:
            remove(path)
    for path, _, _ in readable[: max(0, len(readable) - keep)]:
        remove(path)
    return [(summary, gpus) for _, summary, gpus in readable[-keep:] if keep]
