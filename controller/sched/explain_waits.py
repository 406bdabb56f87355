"""What a pending job waits for besides resources: its dependency and begin time.

``slurmlite explain`` prints these as "Waits for:" lines, one per element of
the dependency still unmet, each with the state of its target and, for a
running target with a time limit, when it is expected to end at the latest::

    afterok:41 — job 41 is RUNNING, expected to end by 2026-12-04T14:02:00
    singleton — another job named "train" of alice is RUNNING or queued first
    begin time 2026-12-04T16:00:00 (--begin)

The targets are read as the pass reads them (``deps.target_groups``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from controller.sched.deps import target_groups
from controller.store.models import JobRow
from slurmlite.dependency import Dep, stored
from slurmlite.timefmt import fmt_timestamp


def waits_for(s: Session, row: JobRow, now: float) -> list[str]:
    """The readable waits of pending ``row`` (empty when it waits for nothing of these)."""
    out: list[str] = []
    deps = stored(row.dependency)
    if deps is not None and deps.elements:
        ids = sorted({e.job_id for e in deps.elements if e.job_id})
        groups = target_groups(s.connection(), ids) if ids else {}
        how = " (any one of these)" if deps.any_of and len(deps.elements) > 1 else ""
        mark = "(failed: can never be met) " if row.dep_failed else ""
        for e in deps.elements:
            out.append(
                f"{e.text()}{how} — {mark}{_target_text(e, groups[e.job_id].rows if e.job_id in groups else [], row)}"
            )
    if row.eligible_time is not None and row.eligible_time > now:
        out.append(f"begin time {fmt_timestamp(row.eligible_time)} (--begin)")
    return out


def _target_text(e: Dep, rows: list[Any], job: JobRow) -> str:
    if e.kind == "singleton":
        return f'another job named "{job.name}" of {job.user} is running or queued first'
    if not rows:
        return f"job {e.job_id} is not known (it counts as ended)"
    if len(rows) > 1 or rows[0].array_job_id:
        states = sorted({r.state for r in rows})
        pending = " with tasks not yet started" if any(r.array_pending for r in rows) else ""
        return f"array {e.job_id} is {'/'.join(states)}{pending}"
    r = rows[0]
    text = f"job {e.job_id} is {r.state}"
    if r.state == "RUNNING" and r.start_time is not None and r.time_limit:
        text += f", expected to end by {fmt_timestamp(r.start_time + r.time_limit * 60)}"
    if e.kind == "after" and e.minutes:
        text += f" (then {e.minutes} min after its start)"
    return text
