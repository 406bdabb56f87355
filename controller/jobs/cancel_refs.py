"""``scancel`` by job reference (``57``, ``57_9``, ``57_[1-3]``).

Each reference is resolved by ``controller.jobs.targets``; every row found
is cancelled as a plain job is (``JobService._cancel_one``) and its result
names the reference's task (``job="57_9"``).  A task index still in the
master's remainder is split off by the resolver and cancelled as its own
row: it never runs, and ``squeue -j 57`` then shows ``57_[0-8]``, as after
Slurm's ``scancel 57_9`` (golden ``52_squeue_after_cancel_pending``).  An
unknown index is ``ESLURM_INVALID_JOB_ID`` (silent in plain mode, as for a
plain job).
"""

from __future__ import annotations

from collections.abc import Callable

from controller.auth.callers import Caller, may_act_on
from controller.jobs.targets import resolve
from controller.store.models import JobRow
from slurmlite import errors
from slurmlite.jobref import JobRefError, parse_ref
from slurmlite.protocol import CancelRequest, CancelResult

CancelOne = Callable[..., None]


def cancel_refs(
    s, caller: Caller, req: CancelRequest, now: float, out, cancel_one: CancelOne
) -> None:  # type: ignore[no-untyped-def]
    """Cancel what ``req.refs`` name, appending one result per target to ``out.results``."""
    seen: set[int] = set()
    for text in dict.fromkeys(req.refs):
        try:
            ref = parse_ref(text)
        except JobRefError:
            out.results.append(_refused(0, text, errors.ESLURM_INVALID_JOB_ID))
            continue
        for t in resolve(s, ref, lambda master: may_act_on(caller, master.uid)):
            if t.row is None:
                out.results.append(_refused(ref.job_id, t.label, errors.ESLURM_INVALID_JOB_ID))
                continue
            if t.denied:
                out.results.append(_refused(t.row.id, t.label, errors.ESLURM_ACCESS_DENIED))
                continue
            if t.row.id in seen or not _matches(t.row, req):
                continue
            seen.add(t.row.id)
            before = len(out.results)
            cancel_one(s, caller, t.row, req, now, out)
            for r in out.results[before:]:
                r.job = t.label


def _matches(row: JobRow, req: CancelRequest) -> bool:
    """scancel's filters (``-u``, ``-n``, ``-p``, ``-t``) next to ids: all must hold."""
    if req.user and row.user != req.user and str(row.uid) != req.user:
        return False
    if req.name and row.name != req.name:
        return False
    if req.partition and row.partition != req.partition:
        return False
    return not (req.states and row.state not in req.states)


def _refused(job_id: int, label: str, code: int) -> CancelResult:
    return CancelResult(job_id, errors.message(code), code, job=label)
